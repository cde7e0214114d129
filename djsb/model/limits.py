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
running jobs (reasons QOSGrpJobsLimit, MaxJobsPerAccount, QOSMaxJobsPerUserLimit), and MaxWall.
After placing it (``acct_policy_job_runnable_post_select``, ``_qos_job_runnable_post_select``, with
the TRES of the nodes picked, node_scheduler.c ``select_nodes``): GrpTRES, MaxTRESPerJob,
MaxTRESPerNode (the job's TRES divided by its node count), MaxTRESPerAccount, MaxTRESPerUser, each
TRES by TRES in Slurm's order (:mod:`djsb.model.tres`). The node count of GrpTRES, MaxTRESPerAccount
and MaxTRESPerUser counts distinct nodes: a node already held by the QoS (user, account) counts
once (``_get_unique_job_node_cnt``). A job held by a limit is skipped by every pass, not blocking its
partition (job_scheduler.c: ESLURM_ACCOUNTING_POLICY leaves ``fail_by_part`` false), and backfill
checks the same (backfill.c ``_attempt_backfill`` calls both). A job's TRES are counted as they were
at its start until it ends (a resize or a suspension does not change them).

A throttled job array (sbatch ``--array=...%N``) is held the same way before placing a task: at
most N of its tasks run at once (job_scheduler.c ``build_job_queue`` leaves a task out of the queue
while ``max_run_tasks`` of its array run, reason JobArrayTaskLimit).

The model counts ``cpu`` as the job's CPUs, ``mem`` as the memory it holds (0 when memory is not
modelled), ``node`` and ``gres/gpu`` from its placement.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from djsb.model.allocation import job_memory
from djsb.model.cluster import QosSpec
from djsb.model.job import SimJob
from djsb.model.placement import Placement
from djsb.model.reasons import ARRAY_TASK_LIMIT, MAX_WALL, NONE, RESERVATION
from djsb.model.tres import CPU, GPU, MEM, NODE, REASONS, Tres, over, vector
from djsb.workloads.job import TraceJob

NEVER_STARTED = "never started: "
"""How the result's rejected table begins the reason of a job accepted but never started."""
Vector = tuple[float, float, float, float]
UNLIMITED: Vector = (math.inf, math.inf, math.inf, math.inf)
QOS_REASONS = frozenset({MAX_WALL, "QOSGrpJobsLimit", "MaxJobsPerAccount", "QOSMaxJobsPerUserLimit",
                         *(reason for reasons in REASONS.values() for reason in reasons)})
"""The reasons a QoS limit gives, cleared when a pass finds the limit no longer holds."""
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
        self.has_tres = any(limit != UNLIMITED for limit in self.tres.values())
        self.distinct_nodes = any(math.isfinite(self.tres[kind][NODE]) for kind in ("grp", "per_account",
                                                                                      "per_user"))


class Usage:
    """What the running jobs of one user, account or QoS (of one QoS) hold: jobs, TRES, and the
    jobs on each node (the node TRES counts distinct nodes)."""

    __slots__ = ("jobs", "tres", "nodes")

    def __init__(self) -> None:
        self.jobs = 0
        self.tres = [0, 0, 0, 0]
        self.nodes: dict[int, int] = {}

    def need(self, tres: Tres, alloc: Placement, distinct: bool) -> Tres:
        """The TRES a job placed on ``alloc`` adds: its nodes not held already, with ``distinct``."""
        if not distinct:
            return tres
        nodes = self.nodes
        return tres[CPU], tres[MEM], sum(1 for node, _ in alloc if node not in nodes), tres[GPU]

    def held(self) -> Tres:
        """The TRES held now."""
        tres = self.tres
        return tres[CPU], tres[MEM], tres[NODE], tres[GPU]

    def add(self, tres: Tres, alloc: Placement, sign: int) -> None:
        self.jobs += sign
        for i in (CPU, MEM, GPU):
            self.tres[i] += sign * tres[i]
        nodes = self.nodes
        for node, _ in alloc:
            count = nodes.get(node, 0) + sign
            if count:
                nodes[node] = count
            else:
                del nodes[node]
        self.tres[NODE] = len(nodes)


def _held(job: SimJob, reason: str) -> bool:
    """Give ``job`` the reason a limit holds it for (the one sacct keeps too); True."""
    job.reason = job.sacct_reason = reason
    return True


def placed_tres(job: SimJob, alloc: Placement) -> Tres:
    """A job's TRES on ``alloc``: its CPUs, the memory it holds there, its nodes and GPUs."""
    memory = job_memory(job, alloc)
    gpus = sum(map(sum, alloc.gpus)) if alloc.gpus is not None else 0
    return job.trace.cpus, int(sum(memory)) if memory else 0, len(alloc), gpus


def _per_node(tres: Tres) -> Tres:
    """TRES per node: each divided by the node count (_validate_tres_limits_for_qos's divisor)."""
    nodes = max(1, tres[NODE])
    return tres[CPU] // nodes, tres[MEM] // nodes, 0, tres[GPU] // nodes


def least_tres(job: SimJob) -> Tres:
    """The fewest TRES a job may be placed with: its CPUs, memory, asked node count (else one, or
    what its tasks per node need) and the GPUs that asks (per node, per task or for the job)."""
    trace, shape = job.trace, job.shape
    tasks = shape.tasks if shape is not None else trace.cpus
    nodes = trace.nodes or 1
    if shape is not None and shape.tasks_per_node:
        nodes = max(nodes, -(-tasks // shape.tasks_per_node))
    if shape is not None and shape.memory_per_task is not None:
        memory = shape.memory_per_task * tasks
    else:
        memory = trace.memory_mb or 0
    gpus = 0
    if trace.gpus is not None:
        request = trace.gpus
        gpus = request.count * (nodes if request.per == "node" else tasks if request.per == "task" else 1)
    return trace.cpus, int(memory), nodes, gpus


class RunningLimits:
    """The QoS limits of one replay (of the QoS ``qos``), kept up to date by its submissions, starts
    and ends."""

    def __init__(self, qos: Iterable[QosSpec], jobs: Iterable[TraceJob] = ()) -> None:
        rules = [QosRules(q) for q in qos]
        self.arrays = any(job.array is not None for job in jobs)
        """Whether a job array of the replay is throttled (then the passes check it too)."""
        self.array_running: dict[int, int] = {}
        """Running tasks per throttled array job id."""
        self.pre = {r.qos.name: r for r in rules if r.counts}
        """The QoS limiting running jobs, by name (a job of another passes the pre-select check)."""
        self.post = {r.qos.name: r for r in rules if r.has_tres}
        """The QoS limiting running TRES, by name."""
        self.rules = {r.qos.name: r for r in rules}
        self.usage: dict[tuple[str, str, str], Usage] = {}
        """Per ("user", user, QoS), ("account", account, QoS) and ("qos", "", QoS)."""
        self.held: dict[int, Tres] = {}
        self.submitted: dict[tuple[str, str], int] = {}
        self.counted: set[int] = set()
        self.parked: dict[int, SimJob] = {}
        """Jobs that pend forever (over a limit by their own request), by id."""

    def _usage(self, kind: str, who: str, qos: str) -> Usage:
        key = (kind, who, qos)
        usage = self.usage.get(key)
        if usage is None:
            usage = self.usage[key] = Usage()
        return usage

    def _keys(self, job: SimJob) -> tuple[Usage, Usage, Usage]:
        name, trace = job.qos.name, job.trace
        return (self._usage("qos", "", name), self._usage("account", trace.account, name),
                self._usage("user", trace.user, name))

    # ------------------------------------------------------------- submission
    def submit(self, job: SimJob) -> str:
        """Why sbatch refuses ``job`` under its QoS ("" if it is accepted, then counted as submitted):
        _qos_policy_validate's checks, those of the job's own request only with DenyOnLimit."""
        qos = job.qos
        if qos.deny_on_limit:
            refusal = self._over_alone(job, ("per_account", "per_user", "grp", "per_job", "per_node"),
                                       wall_before="per_job")
            if refusal:
                return refusal
        limit = qos.max_submit_jobs_per_user
        if limit is not None:
            key = (job.trace.user, qos.name)
            if self.submitted.get(key, 0) + 1 > limit:
                return "QOSMaxSubmitJobPerUserLimit"
            self.submitted[key] = self.submitted.get(key, 0) + 1
            self.counted.add(job.job_id)
        return ""

    def requeued(self, job: SimJob) -> None:
        """A job that ended is back in the queue (its node went DOWN): it counts as submitted again."""
        limit = job.qos.max_submit_jobs_per_user
        if limit is not None and job.job_id not in self.counted:
            key = (job.trace.user, job.qos.name)
            self.submitted[key] = self.submitted.get(key, 0) + 1
            self.counted.add(job.job_id)

    def parks(self, job: SimJob) -> bool:
        """Whether ``job`` can never start under its QoS (its time limit over MaxWall, or its least
        TRES over a limit by itself): it is set aside with the reason, pending forever."""
        reason = self._over_alone(job, _USAGE_ORDER, wall_before="grp")
        if reason:
            job.reason = job.sacct_reason = reason
            self.parked[job.job_id] = job
        return bool(reason)

    def _over_alone(self, job: SimJob, kinds: Sequence[str], wall_before: str) -> str:
        """The reason of the first limit of ``kinds`` (MaxWall checked before ``wall_before``) that
        the job's least TRES exceed by themselves (per node: divided by its least node count, as
        _qos_policy_validate divides by the nodes asked), or ""."""
        qos = job.qos
        rules = self.rules.get(qos.name) or QosRules(qos)
        least = least_tres(job)
        for kind in kinds:
            if kind == wall_before and qos.max_wall is not None and job.limit > qos.max_wall:
                return MAX_WALL
            amounts = least if kind != "per_node" else _per_node(least)
            i = over(amounts, None, rules.tres[kind])
            if i >= 0:
                return REASONS[kind][i]
        return ""

    def withdrawn(self, job: SimJob) -> bool:
        """A pending job is cancelled: it no longer counts as submitted. Whether it was parked."""
        self._unsubmit(job)
        return self.parked.pop(job.job_id, None) is not None

    def _unsubmit(self, job: SimJob) -> None:
        if job.job_id in self.counted:
            self.counted.discard(job.job_id)
            self.submitted[(job.trace.user, job.qos.name)] -= 1

    def unstarted(self, queued: Sequence[SimJob]) -> list[tuple[int, str]]:
        """The jobs that never started at the end of a replay, with why: the parked ones by their
        reason, those still queued by their QoS reason (or Reservation: their reservation ended
        first, :mod:`djsb.model.reserved_jobs`) or as never finding resources."""
        return [(job.job_id, NEVER_STARTED + job.reason) for job in self.parked.values()] + [
            (job.job_id, NEVER_STARTED + job.reason if job.reason in QOS_REASONS or job.reason == RESERVATION
             else "could not be started (resources never free)") for job in queued]

    # ------------------------------------------------------------- passes
    def allows(self, job: SimJob) -> bool:
        """Whether its array's throttle and its QoS's running-job limits let ``job`` start now
        (pre-select); if not, the job gets the limit's reason. One that passes keeps the reason it
        showed (Slurm clears it in the same call that lets the job start, so squeue showed that
        reason last)."""
        array = job.trace.array
        if array is not None and self.array_running.get(array[0], 0) >= array[1]:
            job.reason = job.sacct_reason = ARRAY_TASK_LIMIT
            return False
        rules = self.pre.get(job.qos.name)
        if rules is None:
            return True
        qos, trace = job.qos, job.trace
        name = qos.name
        reason = NONE
        if qos.grp_jobs is not None and self._usage("qos", "", name).jobs >= qos.grp_jobs:
            reason = "QOSGrpJobsLimit"
        elif qos.max_jobs_per_account is not None and \
                self._usage("account", trace.account, name).jobs >= qos.max_jobs_per_account:
            reason = "MaxJobsPerAccount"
        elif qos.max_jobs_per_user is not None and \
                self._usage("user", trace.user, name).jobs >= qos.max_jobs_per_user:
            reason = "QOSMaxJobsPerUserLimit"
        if reason is NONE:
            return True
        job.reason = job.sacct_reason = reason
        return False

    def blocks(self, job: SimJob, alloc: Placement) -> bool:
        """Whether the QoS's TRES limits keep ``job`` placed on ``alloc`` from starting now
        (post-select); if so the job gets the limit's reason."""
        rules = self.post.get(job.qos.name)
        if rules is None:
            return False
        tres = placed_tres(job, alloc)
        usages = dict(zip(("grp", "per_account", "per_user"), self._keys(job), strict=True))
        for kind in _USAGE_ORDER:
            limit = rules.tres[kind]
            if limit == UNLIMITED:
                continue
            if kind == "per_job":
                i = over(tres, None, limit)
            elif kind == "per_node":
                i = over(_per_node(tres), None, limit)
            else:
                usage = usages[kind]
                need = usage.need(tres, alloc, rules.distinct_nodes)
                i = over(need, usage.held(), limit)
            if i >= 0:
                return _held(job, REASONS[kind][i])
        return False

    def held_now(self, job: SimJob) -> bool:
        """Whether the job's least TRES (its nodes left out: they may all be held already) with what
        its QoS's running jobs hold are over a limit, so it could start on no nodes now: backfill
        then neither starts nor reserves it (backfill.c ``_attempt_backfill`` skips a job
        ``acct_policy_job_runnable_post_select`` refuses). If so the job gets the limit's reason."""
        rules = self.post.get(job.qos.name)
        if rules is None:
            return False
        least = least_tres(job)
        amounts = (least[CPU], least[MEM], 0, least[GPU])
        for kind, usage in zip(("grp", "per_account", "per_user"), self._keys(job), strict=True):
            limit = rules.tres[kind]
            if limit != UNLIMITED:
                i = over(amounts, usage.held(), limit)
                if i >= 0:
                    return _held(job, REASONS[kind][i])
        return False

    # ------------------------------------------------------------- starts and ends
    def started(self, job: SimJob) -> None:
        """Count a job that starts (on ``job.alloc``)."""
        array = job.trace.array
        if array is not None:
            self.array_running[array[0]] = self.array_running.get(array[0], 0) + 1
        name = job.qos.name
        if name not in self.pre and name not in self.post:
            return
        tres = self.held[job.job_id] = placed_tres(job, job.alloc)
        for usage in self._keys(job):
            usage.add(tres, job.alloc, 1)

    def ended(self, job: SimJob) -> None:
        """Count a job that ends (finished, killed or cancelled while started)."""
        if self.counted:
            self._unsubmit(job)
        array = job.trace.array
        if array is not None:
            self.array_running[array[0]] -= 1
        tres = self.held.pop(job.job_id, None)
        if tres is not None:
            for usage in self._keys(job):
                usage.add(tres, job.alloc, -1)
