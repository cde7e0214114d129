"""QoS limits as Slurm 22.05 enforces them with ``AccountingStorageEnforce=limits`` (acct_policy.c).

At submission (``acct_policy_validate``, through ``_qos_policy_validate``): a user's
MaxSubmitJobsPerUser counts its pending and running jobs of the QoS, and one more is refused
(sbatch prints the reason, QOSMaxSubmitJobPerUserLimit). With the QoS flag DenyOnLimit
(``strict_checking``), a job whose own request is over a TRES limit (MaxTRESPerAccount,
MaxTRESPerUser, GrpTRES, MaxTRESPerJob, MaxTRESPerNode, in that order) or whose time limit is over
MaxWall is refused too; without it, such a job is accepted and pends forever: the model sets it
aside (:meth:`RunningLimits.parks`) with its reason, and the result lists it as never started.

At each scheduling pass, before placing a job (``acct_policy_job_runnable_pre_select``,
``_qos_job_runnable_pre_select``): GrpJobs, MaxJobsPerAccount, MaxJobsPerUser against the QoS's
running jobs (reasons QOSGrpJobsLimit, MaxJobsPerAccount, QOSMaxJobsPerUserLimit), and MaxWall
(against the job's limit times its QoS's UsageFactor with Flags=UsageFactorSafe, as the TRES-minutes
checks after placing it: :func:`~djsb.model.tres_minutes.checked_minutes`).
After placing it (``acct_policy_job_runnable_post_select``, ``_qos_job_runnable_post_select``, with
the TRES of the nodes picked, node_scheduler.c ``select_nodes``): GrpTRES, MaxTRESPerJob,
MaxTRESPerNode (the job's TRES divided by its node count), MaxTRESPerAccount, MaxTRESPerUser, each
TRES by TRES in Slurm's order (:mod:`djsb.model.tres`). The node count of GrpTRES, MaxTRESPerAccount
and MaxTRESPerUser counts distinct nodes: a node already held by the QoS (user, account) counts
once (``_get_unique_job_node_cnt``). A job held by a limit is skipped by every pass, not blocking its
partition (job_scheduler.c: ESLURM_ACCOUNTING_POLICY leaves ``fail_by_part`` false), and backfill
checks the same (backfill.c ``_attempt_backfill`` calls both). A job's TRES are counted as they were
at its start until it ends (a resize or a suspension does not change them).

A job of a partition with a QoS (slurm.conf ``QOS=``) is held by both QoS, each limit taken from
the first that sets it (:mod:`djsb.model.qos_order`, ``acct_policy_set_qos_order``), and counts in
the usage of both (``_adjust_limit_usage``): a QoS's usage counts every job it limits, whether
through the job's QoS or its partition's.

Association limits (``cluster.associations``) are checked after the QoS's, in the same calls
(:mod:`djsb.model.assoc_limits`).

A throttled job array (sbatch ``--array=...%N``) is held the same way before placing a task: at
most N of its tasks run at once (job_scheduler.c ``build_job_queue`` leaves a task out of the queue
while ``max_run_tasks`` of its array run, reason JobArrayTaskLimit).

The model counts ``cpu`` as the job's CPUs, ``mem`` as the memory it holds (0 when memory is not
modelled), ``node`` and ``gres/gpu`` from its placement.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence

from djsb.model.assoc_limits import ASSOC_REASONS, AssocLimits
from djsb.model.assoc_spec import AssocSpec
from djsb.model.cluster_spec import PartitionSpec, QosSpec
from djsb.model.job import SimJob
from djsb.model.placement import Placement
from djsb.model.qos_order import job_limits, qos_order
from djsb.model.reasons import ARRAY_TASK_LIMIT, MAX_WALL, RESERVATION
from djsb.model.tres import CPU, GPU, MEM, NODE, REASONS, Tres, over, vector
from djsb.model.tres_minutes import (
    MINUTE_REASONS,
    MinuteLimits,
    MinuteUsage,
    checked_limit,
    checked_minutes,
    job_minutes,
    limit_minutes,
)
from djsb.model.tres_usage import Usage, held, least_tres, per_node, placed_tres
from djsb.model.usage_reset import UsageReset
from djsb.workloads.job import TraceJob

NEVER_STARTED = "never started: "
"""How the result's rejected table begins the reason of a job accepted but never started."""
Vector = tuple[float, float, float, float]
UNLIMITED: Vector = (math.inf, math.inf, math.inf, math.inf)
QOS_REASONS = frozenset({MAX_WALL, "QOSGrpJobsLimit", "MaxJobsPerAccount", "QOSMaxJobsPerUserLimit",
                         *(reason for reasons in REASONS.values() for reason in reasons),
                         *(reason for reason in MINUTE_REASONS if reason.startswith("QOS"))})
"""The reasons a QoS limit gives, cleared when a pass finds the limit no longer holds."""
LIMIT_REASONS = QOS_REASONS | ASSOC_REASONS
"""The reasons a QoS or an association limit gives."""
_USAGE_ORDER = ("grp", "per_job", "per_node", "per_account", "per_user")
"""The TRES limits in the order _qos_job_runnable_post_select checks them."""


class QosRules:
    """One QoS's limits, compiled for the passes: which checks it has at all."""

    def __init__(self, qos: QosSpec) -> None:
        self.qos = qos
        self.tres = {"grp": vector(qos.grp_tres), "per_job": vector(qos.max_tres_per_job),
                     "per_node": vector(qos.max_tres_per_node),
                     "per_account": vector(qos.max_tres_per_account),
                     "per_user": vector(qos.max_tres_per_user)}
        self.counts = (qos.grp_jobs, qos.max_jobs_per_account, qos.max_jobs_per_user) != (None, None, None)
        self.minutes = MinuteLimits.of((qos.name,), qos.grp_tres_mins, qos.grp_tres_run_mins,
                                       qos.max_tres_mins_per_job, assoc=False)
        """Its TRES-minutes limits (:mod:`djsb.model.tres_minutes`; None: none)."""
        self.has_tres = any(limit != UNLIMITED for limit in self.tres.values()) or self.minutes is not None
        self.distinct_nodes = any(math.isfinite(self.tres[kind][NODE]) for kind in ("grp", "per_account",
                                                                                      "per_user"))


class Chain:
    """The QoS limits of a job of one QoS in one partition: its QoS's and its partition QoS's in
    Slurm's order, each without the limits one before it sets (:func:`~djsb.model.qos_order.job_limits`),
    as the passes check them (``steps``) and as the submission does (``submit_steps``)."""

    __slots__ = ("order", "steps", "submit_steps", "counts", "has_tres", "names", "deny", "charged")

    def __init__(self, own: QosSpec, partition: QosSpec | None, limited: Collection[str]) -> None:
        self.order = qos_order(own, partition)
        """The QoS whose limits hold the job, unmasked (what association limits a QoS sets skip)."""
        self.steps = tuple(QosRules(q) for q in job_limits(own, partition))
        self.submit_steps = tuple(QosRules(q) for q in job_limits(own, partition, submission=True))
        self.counts = any(rules.counts for rules in self.steps)
        self.has_tres = any(rules.has_tres for rules in self.steps)
        self.names = tuple(rules.qos.name for rules in self.steps if rules.qos.name in limited)
        """The QoS that count the job in their usage: those limiting some job at all."""
        self.deny = any(q.deny_on_limit for q in self.order)
        self.charged = tuple((q.name,) for q in self.order if q.grp_tres_mins or q.grp_tres_run_mins)
        """The QoS whose TRES-minutes usage a job charges: both, as ``_apply_new_usage`` charges them."""


class RunningLimits:
    """The QoS limits of one replay (of the QoS ``qos``, ``partitions`` naming theirs) and its
    association limits (``associations``, after the QoS's), kept up to date by its submissions,
    starts and ends."""

    def __init__(self, qos: Iterable[QosSpec], jobs: Iterable[TraceJob] = (),
                 partitions: Iterable[PartitionSpec] = (), associations: Sequence[AssocSpec] = (),
                 decay: tuple[float, float, float] | None = None, safe: bool = False,
                 start: float = 0.0, reset: UsageReset | None = None) -> None:
        """``decay``, ``safe``, ``start`` and ``reset``: the TRES-minutes usages' (:class:`MinuteUsage`)."""
        rules = [QosRules(q) for q in qos]
        by_name = {r.qos.name: r.qos for r in rules}
        self.arrays = any(job.array is not None for job in jobs)
        """Whether a job array of the replay is throttled (then the passes check it too)."""
        self.array_running: dict[int, int] = {}
        """Running tasks per throttled array job id."""
        self.assoc = AssocLimits(associations) if associations else None
        """The association limits (:mod:`djsb.model.assoc_limits`), checked after the QoS's."""
        self.pre = any(r.counts for r in rules) or (self.assoc is not None and self.assoc.counts)
        """Whether a QoS or association limits running jobs (else no job is checked before its placement)."""
        self.post = any(r.has_tres for r in rules) or (self.assoc is not None and self.assoc.has_tres)
        """Whether a QoS or association limits running TRES (else no job is checked after its placement)."""
        self.limited = frozenset(r.qos.name for r in rules if r.counts or r.has_tres)
        self.at_submission = self.assoc is not None or any(
            q.deny_on_limit or q.max_submit_jobs_per_user is not None for q in by_name.values())
        """Whether a QoS checks jobs at their submission (else :meth:`submit` accepts every job at once)."""
        self.partition_qos = {p.name: by_name[p.qos] for p in partitions if p.qos is not None}
        """Each partition's QoS, by partition name (none: every chain is its job's QoS alone)."""
        self.chains: dict[str | tuple[str, str], Chain] = {}
        """Per QoS name (per QoS and partition names when a partition has a QoS)."""
        self.usage: dict[tuple[str, str, str], Usage] = {}
        """Per ("user", user, QoS), ("account", account, QoS) and ("qos", "", QoS)."""
        self.held: dict[int, Tres] = {}
        self.submitted: dict[tuple[str, str], int] = {}
        self.counted: dict[int, tuple[str, ...]] = {}
        """The QoS whose MaxSubmitJobsPerUser count each job, by id."""
        self.parked: dict[int, SimJob] = {}
        """Jobs that pend forever (over a limit by their own request), by id."""
        no_decay = frozenset((q.name,) for q in by_name.values() if q.no_decay)
        minutes = any(r.minutes is not None for r in rules) or (
            self.assoc is not None and (self.assoc.has_minutes or self.assoc.has_wall))
        self.minutes = MinuteUsage(decay, safe, start, no_decay, reset) if minutes else None
        """The usages of the TRES-minutes limits and GrpWall (None: no QoS or association sets one)."""
        if self.assoc is not None:
            self.assoc.minutes = self.minutes

    def _chain(self, job: SimJob) -> Chain:
        """The limits of ``job``'s QoS and partition."""
        part = job.part.spec.name
        key: str | tuple[str, str] = job.qos.name if not self.partition_qos else (job.qos.name, part)
        chain = self.chains.get(key)
        if chain is None:
            chain = self.chains[key] = Chain(job.qos, self.partition_qos.get(part), self.limited)
        return chain

    def _usage(self, kind: str, who: str, qos: str) -> Usage:
        key = (kind, who, qos)
        usage = self.usage.get(key)
        if usage is None:
            usage = self.usage[key] = Usage()
        return usage

    def _keys(self, job: SimJob, name: str) -> tuple[Usage, Usage, Usage]:
        """What the running jobs of QoS ``name`` hold: all of them, ``job``'s account's, its user's."""
        trace = job.trace
        return (self._usage("qos", "", name), self._usage("account", trace.account, name),
                self._usage("user", trace.user, name))

    # ------------------------------------------------------------- submission
    def submit(self, job: SimJob) -> str:
        """Why sbatch refuses ``job`` under its QoS ("" if it is accepted, then counted as submitted):
        _qos_policy_validate's checks over each QoS of its chain, those of the job's own request only
        with DenyOnLimit (of either QoS), MaxSubmitJobsPerUser from the first QoS that sets it."""
        if not self.at_submission:
            return ""
        chain = self._chain(job)
        if chain.deny:
            refusal = self._over_alone(job, chain.submit_steps,
                                       ("per_account", "per_user", "grp", "per_job", "per_node"),
                                       wall_before="per_job", grp_minutes=True,
                                       limit=(job.limit, limit_minutes(job)))
            if refusal:
                return refusal
        user = job.trace.user
        for rules in chain.submit_steps:
            limit = rules.qos.max_submit_jobs_per_user
            if limit is not None and self.submitted.get((user, rules.qos.name), 0) + 1 > limit:
                return "QOSMaxSubmitJobPerUserLimit"
        if self.assoc is not None:
            refusal = self.assoc.submit(job, self.assoc.path(job, chain.order), chain.deny)
            if refusal:
                return refusal
        self._count_submitted(job)
        return ""

    def _count_submitted(self, job: SimJob) -> None:
        """Count ``job`` as submitted in each QoS of its chain whose MaxSubmitJobsPerUser limits some job
        (``_adjust_limit_usage`` with ACCT_POLICY_ADD_SUBMIT adds to both QoS)."""
        names = tuple(q.name for q in qos_order(job.qos, self.partition_qos.get(job.part.spec.name))
                      if q.max_submit_jobs_per_user is not None)
        if names:
            for name in names:
                key = (job.trace.user, name)
                self.submitted[key] = self.submitted.get(key, 0) + 1
            self.counted[job.job_id] = names

    def requeued(self, job: SimJob) -> None:
        """A job that ended is back in the queue (its node went DOWN): it counts as submitted again."""
        if self.at_submission and job.job_id not in self.counted:
            self._count_submitted(job)
        if self.assoc is not None:
            self.assoc.count_submitted(job)

    def parks(self, job: SimJob) -> bool:
        """Whether ``job`` can never start under its QoS (its time limit over MaxWall, or its least
        TRES over a limit by itself): it is set aside with the reason, pending forever."""
        chain = self._chain(job)
        reason = self._over_alone(job, chain.steps, _USAGE_ORDER, wall_before="grp",
                                  grp_minutes=self.minutes is not None and self.minutes.safe,
                                  limit=(checked_limit(job), checked_minutes(job)))
        if not reason and self.assoc is not None:
            reason = self.assoc.over_alone(job, self.assoc.path(job, chain.order))
        if reason:
            job.reason = job.sacct_reason = reason
            self.parked[job.job_id] = job
        return bool(reason)

    @staticmethod
    def _over_alone(job: SimJob, steps: Sequence[QosRules], kinds: Sequence[str], wall_before: str,
                    grp_minutes: bool, limit: tuple[float, int]) -> str:
        """The reason of the first limit of ``kinds`` of each QoS of ``steps`` in turn (MaxWall checked
        before ``wall_before``) that the job's least TRES exceed by themselves (per node: divided by
        its least node count, as _qos_policy_validate divides by the nodes asked), then of the first
        TRES-minutes limit its minutes exceed (:meth:`MinuteLimits.alone`, GrpTRESMins with
        ``grp_minutes``: safe limits at a pass, DenyOnLimit at submission), or "". ``limit``: the job's
        time limit in seconds and in minutes as the check sees it (at a pass, with UsageFactorSafe,
        times the factor: :func:`~djsb.model.tres_minutes.checked_minutes`)."""
        least = least_tres(job)
        seconds, minutes = limit
        for rules in steps:
            qos = rules.qos
            for kind in kinds:
                if kind == wall_before and qos.max_wall is not None and seconds > qos.max_wall:
                    return MAX_WALL
                amounts = least if kind != "per_node" else per_node(least)
                i = over(amounts, None, rules.tres[kind])
                if i >= 0:
                    return REASONS[kind][i]
        for rules in steps:
            if rules.minutes is not None and (
                    reason := rules.minutes.alone(job_minutes(least, minutes), grp_minutes)):
                return reason
        return ""

    def withdrawn(self, job: SimJob) -> bool:
        """A pending job is cancelled: it no longer counts as submitted. Whether it was parked."""
        self._unsubmit(job)
        return self.parked.pop(job.job_id, None) is not None

    def _unsubmit(self, job: SimJob) -> None:
        if self.assoc is not None:
            self.assoc.unsubmit(job)
        for name in self.counted.pop(job.job_id, ()):
            self.submitted[(job.trace.user, name)] -= 1

    def unstarted(self, queued: Sequence[SimJob]) -> list[tuple[int, str]]:
        """The jobs that never started at the end of a replay, with why: the parked ones by their
        reason, those still queued by their QoS reason (or Reservation: their reservation ended
        first, :mod:`djsb.model.reserved_jobs`) or as never finding resources."""
        return [(job.job_id, NEVER_STARTED + job.reason) for job in self.parked.values()] + [
            (job.job_id, NEVER_STARTED + job.reason if job.reason in LIMIT_REASONS | {RESERVATION}
             else "could not be started (resources never free)") for job in queued]

    # ------------------------------------------------------------- passes
    def allows(self, job: SimJob) -> bool:
        """Whether its array's throttle and its QoS's running-job limits let ``job`` start now
        (pre-select, each QoS of its chain in turn); if not, the job gets the limit's reason. One that
        passes keeps the reason it showed (Slurm clears it in the same call that lets the job start,
        so squeue showed that reason last)."""
        array = job.trace.array
        if array is not None and self.array_running.get(array[0], 0) >= array[1]:
            job.reason = job.sacct_reason = ARRAY_TASK_LIMIT
            return False
        chain = self._chain(job)
        if chain.counts and not self._qos_allow(job, chain):
            return False
        assoc = self.assoc
        return assoc is None or not assoc.counts or assoc.allows(job, assoc.path(job, chain.order))

    def _qos_allow(self, job: SimJob, chain: Chain) -> bool:
        """:meth:`allows` for the QoS of ``chain``."""
        trace = job.trace
        for rules in chain.steps:
            if not rules.counts:
                continue
            qos = rules.qos
            name = qos.name
            if qos.grp_jobs is not None and self._usage("qos", "", name).jobs >= qos.grp_jobs:
                return not held(job, "QOSGrpJobsLimit")
            if qos.max_jobs_per_account is not None and \
                    self._usage("account", trace.account, name).jobs >= qos.max_jobs_per_account:
                return not held(job, "MaxJobsPerAccount")
            if qos.max_jobs_per_user is not None and \
                    self._usage("user", trace.user, name).jobs >= qos.max_jobs_per_user:
                return not held(job, "QOSMaxJobsPerUserLimit")
        return True

    def blocks(self, job: SimJob, alloc: Placement) -> bool:
        """Whether the QoS's TRES limits keep ``job`` placed on ``alloc`` from starting now
        (post-select, each QoS of its chain in turn); if so the job gets the limit's reason."""
        chain = self._chain(job)
        if chain.has_tres and self._qos_block(job, alloc, chain):
            return True
        assoc = self.assoc
        return assoc is not None and assoc.has_tres and assoc.blocks(job, alloc, assoc.path(job, chain.order))

    def _qos_block(self, job: SimJob, alloc: Placement, chain: Chain) -> bool:
        """:meth:`blocks` for the QoS of ``chain``, each QoS's TRES limits in
        _qos_job_runnable_post_select's order: GrpTRESMins, GrpTRES, GrpTRESRunMins, MaxTRESMins,
        MaxTRESPerJob, MaxTRESPerNode, MaxTRESPerAccount, MaxTRESPerUser."""
        tres = placed_tres(job, alloc)
        minutes, usage_minutes = tres, self.minutes
        for rules in chain.steps:
            if not rules.has_tres:
                continue
            limits = rules.minutes if usage_minutes is not None else None
            if usage_minutes is not None and limits is not None:  # GrpTRESMins first, the rest after GrpTRES
                minutes = job_minutes(tres, checked_minutes(job))
                if reason := usage_minutes.holds(limits, minutes, job.qos.usage_factor == 0.0):
                    return held(job, reason)
            usages = dict(zip(("grp", "per_account", "per_user"), self._keys(job, rules.qos.name),
                              strict=True))
            for kind in _USAGE_ORDER:
                if usage_minutes is not None and limits is not None and kind == "per_job" and (
                        reason := usage_minutes.holds_running(limits, minutes, job.qos.usage_factor == 0.0)):
                    return held(job, reason)
                limit = rules.tres[kind]
                if limit == UNLIMITED:
                    continue
                if kind == "per_job":
                    i = over(tres, None, limit)
                elif kind == "per_node":
                    i = over(per_node(tres), None, limit)
                else:
                    usage = usages[kind]
                    need = usage.need(tres, alloc, rules.distinct_nodes)
                    i = over(need, usage.held(), limit)
                if i >= 0:
                    return held(job, REASONS[kind][i])
        return False

    def held_now(self, job: SimJob) -> bool:
        """Whether the job's least TRES (its nodes left out: they may all be held already) with what
        the running jobs of its QoS hold are over a limit, so it could start on no nodes now: backfill
        then neither starts nor reserves it (backfill.c ``_attempt_backfill`` skips a job
        ``acct_policy_job_runnable_post_select`` refuses). If so the job gets the limit's reason."""
        chain = self._chain(job)
        if chain.has_tres:
            least = least_tres(job)
            amounts = (least[CPU], least[MEM], 0, least[GPU])
            for rules in chain.steps:
                if rules.minutes is not None and self.minutes is not None:
                    minutes = job_minutes(least, checked_minutes(job))
                    cleared = job.qos.usage_factor == 0.0
                    if reason := (self.minutes.holds(rules.minutes, minutes, cleared)
                                  or self.minutes.holds_running(rules.minutes, minutes, cleared)):
                        return held(job, reason)
                for kind, usage in zip(("grp", "per_account", "per_user"), self._keys(job, rules.qos.name),
                                       strict=True):
                    limit = rules.tres[kind]
                    if limit != UNLIMITED:
                        i = over(amounts, usage.held(), limit)
                        if i >= 0:
                            return held(job, REASONS[kind][i])
        assoc = self.assoc
        return assoc is not None and assoc.has_tres and assoc.held_now(job, assoc.path(job, chain.order))

    # ------------------------------------------------------------- starts and ends
    def started(self, job: SimJob) -> None:
        """Count a job that starts (on ``job.alloc``) in the usage of each QoS of its chain."""
        array = job.trace.array
        if array is not None:
            self.array_running[array[0]] = self.array_running.get(array[0], 0) + 1
        if self.assoc is not None:
            self.assoc.started(job, self.assoc.path(job, self._chain(job).order))
        if self.minutes is not None:
            self._charge(job)
        if not self.limited:
            return
        names = self._chain(job).names
        if not names:
            return
        tres = self.held[job.job_id] = placed_tres(job, job.alloc)
        for name in names:
            for usage in self._keys(job, name):
                usage.add(tres, job.alloc, 1)

    def _charge(self, job: SimJob) -> None:
        """A job starts charging the TRES-minutes usages of its QoS and association levels that set
        a Grp TRES-minutes limit, and the wall usage of those that set GrpWall (one record for all:
        :meth:`MinuteUsage.began`)."""
        assert self.minutes is not None
        chain = self._chain(job)
        keys: tuple[tuple[str, ...], ...] = chain.charged
        walls: tuple[tuple[str, ...], ...] = ()
        if self.assoc is not None and (self.assoc.has_minutes or self.assoc.has_wall):
            path = self.assoc.path(job, chain.order)
            keys, walls = keys + path.charged, path.walled
        if keys or walls:
            self.minutes.began(job, placed_tres(job, job.alloc), keys, walls)

    def ended(self, job: SimJob, now: float | None = None) -> None:
        """Count a job that ends (finished, killed or cancelled while started) at ``now`` (its end)."""
        if self.minutes is not None:
            self.minutes.ended(job, now if now is not None else job.end if job.end is not None else 0.0)
        if self.counted:
            self._unsubmit(job)
        array = job.trace.array
        if array is not None:
            self.array_running[array[0]] -= 1
        if self.assoc is not None:
            self.assoc.ended(job, self.assoc.path(job, self._chain(job).order))
        tres = self.held.pop(job.job_id, None)
        if tres is not None:
            for name in self._chain(job).names:
                for usage in self._keys(job, name):
                    usage.add(tres, job.alloc, -1)
