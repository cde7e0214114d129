"""Association limits as Slurm 22.05 enforces them with ``AccountingStorageEnforce=limits``
(acct_policy.c), after the QoS limits of :mod:`djsb.model.limits`.

A job's association is its user's in its account (in its partition when the user has an association
of that partition: :meth:`AssocTree.partition_of <djsb.model.assoc_spec.AssocTree.partition_of>`,
assoc_mgr.c ``assoc_mgr_fill_in_assoc``); the path up the tree is that association, its account, the
account's parents and ``root`` (:class:`~djsb.model.assoc_spec.AssocTree`). Each
check walks the path as acct_policy.c's ``while (assoc_ptr)`` loops do: the Grp limits at every
level, the per-job and per-user limits at the user association only (inherited from the nearest
ancestor that sets them, as slurmdbd propagates them). A limit the job's QoS (its own or its
partition's, :mod:`djsb.model.qos_order`) sets already is skipped: ``qos_rec`` holds the QoS
limits imposed, and ``_validate_tres_usage_limits_for_assoc`` / ``_validate_tres_limits_for_assoc``
skip a TRES it holds (GrpTRES by the QoS's GrpTRES, MaxTRES by its MaxTRESPerJob, MaxTRESPerNode by
its MaxTRESPerNode), GrpJobs by the QoS's GrpJobs, MaxJobs by its MaxJobsPerAccount or
MaxJobsPerUser, MaxSubmitJobs by its MaxSubmitJobsPerUser, MaxWall by its MaxWall (the model's QoS
have no GrpSubmitJobs nor GrpWall, so the association's are never skipped).

- At submission (``_acct_policy_validate``, level by level): GrpSubmitJobs counts the pending and
  running jobs below each level (``used_submit_jobs``, AssocGrpSubmitJobsLimit), MaxSubmitJobs the user
  association's (AssocMaxSubmitJobLimit); one more is refused. With DenyOnLimit (``strict_checking``)
  a job whose own request is over GrpTRES, MaxTRES or MaxTRESPerNode (``_validate_tres_limits_for_assoc``),
  or whose limit is over GrpWall or MaxWall (``_validate_time_limit``), is refused too.
- Before placing a job (``acct_policy_job_runnable_pre_select``): at each level GrpJobs
  (AssocGrpJobsLimit) then GrpWall: the level's ``grp_used_wall`` in whole minutes at or over it, or
  with safe limits that plus the job's limit over it (AssocGrpWallLimit; the usage is
  :meth:`MinuteUsage.holds_wall <djsb.model.tres_minutes.MinuteUsage.holds_wall>`'s, decayed by the
  decay thread); at the user association MaxJobs (AssocMaxJobsLimit), and a limit over MaxWall holds
  the job forever (AssocMaxWallDurationPerJobLimit). The job's limit is times its QoS's UsageFactor
  when that QoS has Flags=UsageFactorSafe (:func:`~djsb.model.tres_minutes.checked_minutes`), here and
  in the TRES-minutes checks after placing it; not at submission.
- After placing it (``acct_policy_job_runnable_post_select``): GrpTRES at each level, its node count
  counting distinct nodes (``_get_unique_job_node_cnt`` on the association's ``grp_node_bitmap``;
  AssocGrpCpuLimit, AssocGrpMemLimit, AssocGrpNodeLimit, AssocGrpGRES), MaxTRES per job at the user
  association (AssocMaxCpuPerJobLimit...), then MaxTRESPerNode there: the job's TRES divided by its
  node count (AssocMaxCpuPerNode, AssocMaxMemPerNode, AssocMaxGRESPerNode). A job over one by its own
  request pends forever.
- GrpTRESMins and GrpTRESRunMins at each level, MaxTRESMins at the user association, in the same
  walks (by the TRES a QoS sets too): :mod:`djsb.model.tres_minutes`.

``_adjust_limit_usage`` counts a running job at every level of its path (``used_jobs``,
``grp_used_tres``), which the model does for every job once associations are declared.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from djsb.model.assoc_spec import AssocSpec, AssocTree, wall_minutes
from djsb.model.cluster_spec import QosSpec
from djsb.model.job import SimJob
from djsb.model.placement import Placement
from djsb.model.tres import CPU, GPU, MEM, Tres, TresLimits, over, vector
from djsb.model.tres_minutes import ASSOC_REASONS as MINUTE_ASSOC
from djsb.model.tres_minutes import (
    MinuteLimits,
    MinuteUsage,
    checked_limit,
    checked_minutes,
    job_minutes,
    limit_minutes,
)
from djsb.model.tres_usage import Usage, held, least_tres, per_node, placed_tres

GRP_JOBS = "AssocGrpJobsLimit"
MAX_JOBS = "AssocMaxJobsLimit"
MAX_WALL = "AssocMaxWallDurationPerJobLimit"
MAX_SUBMIT = "AssocMaxSubmitJobLimit"
GRP_TRES = ("AssocGrpCpuLimit", "AssocGrpMemLimit", "AssocGrpNodeLimit", "AssocGrpGRES")
MAX_TRES = ("AssocMaxCpuPerJobLimit", "AssocMaxMemPerJob", "AssocMaxNodePerJobLimit", "AssocMaxGRESPerJob")
MAX_TRES_PER_NODE = ("AssocMaxCpuPerNode", "AssocMaxMemPerNode", "AssocMaxUnknownPerNode",
                     "AssocMaxGRESPerNode")
GRP_SUBMIT = "AssocGrpSubmitJobsLimit"
GRP_WALL = "AssocGrpWallLimit"
"""Slurm's job_state_reason_string of each association limit (by TRES index for the TRES limits:
``_get_tres_state_reason`` of WAIT_ASSOC_GRP_UNK, WAIT_ASSOC_MAX_UNK_PER_JOB, WAIT_ASSOC_MAX_UNK_PER_NODE)."""
ASSOC_REASONS = frozenset({GRP_JOBS, MAX_JOBS, MAX_WALL, GRP_WALL, *GRP_TRES, *MAX_TRES, *MAX_TRES_PER_NODE,
                           *(reason for reasons in MINUTE_ASSOC.values() for reason in reasons)})
"""The reasons an association limit gives a pending job."""
Key = tuple[str, ...]
"""An association's usage key: (user, account) for a user's, (user, account, partition) for a user's
of one partition, ("", account) for an account's."""


def _without(limits: TresLimits, taken: set[str]) -> tuple[float, float, float, float]:
    """``limits`` as a vector, the TRES in ``taken`` (set by a QoS) unlimited."""
    return vector(tuple((name, amount) for name, amount in limits if name not in taken))


class AssocPath:
    """The association limits holding the jobs of one user in one account (of ``partition``, its
    association's: :meth:`AssocTree.partition_of`) under one set of QoS:
    each level's GrpJobs, GrpSubmitJobs, GrpWall (minutes) and GrpTRES (user association first, ``root``
    last) and the user association's own or inherited MaxJobs, MaxSubmitJobs, MaxWall, MaxTRES and
    MaxTRESPerNode, less what the QoS set."""

    __slots__ = ("keys", "grp_jobs", "grp_submit", "grp_wall", "grp_tres", "max_jobs", "max_submit",
                 "max_wall", "max_tres", "max_tres_pn", "minutes", "charged", "walled", "counts_submits")

    def __init__(self, tree: AssocTree, user: str, account: str, qos: Sequence[QosSpec],
                 partition: str | None = None) -> None:
        specs = tree.path(user, account, partition)
        self.keys: tuple[Key, ...] = (tree.user_key(user, account, partition),
                                      *(("", name) for name in tree.ancestors(account)))
        grp_jobs_set = any(q.grp_jobs is not None for q in qos)
        grp_tres_set = {name for q in qos for name, _ in q.grp_tres}
        self.grp_jobs = tuple(None if spec is None or grp_jobs_set else spec.grp_jobs for spec in specs)
        self.grp_tres = tuple(_without(spec.grp_tres if spec is not None else (), grp_tres_set)
                              for spec in specs)
        self.grp_submit = tuple(None if spec is None else spec.grp_submit_jobs for spec in specs)
        self.grp_wall = tuple(None if spec is None or spec.grp_wall is None else wall_minutes(spec.grp_wall)
                              for spec in specs)
        self.walled = tuple(key for key, wall in zip(self.keys, self.grp_wall, strict=True)
                            if wall is not None)
        """The levels whose wall usage a job charges: those setting GrpWall."""

        def inherited(name: str, skip: bool) -> Any:
            return None if skip else tree.inherited(user, account, name, partition)

        self.max_jobs: int | None = inherited("max_jobs", any(
            q.max_jobs_per_account is not None or q.max_jobs_per_user is not None for q in qos))
        self.max_submit: int | None = inherited("max_submit_jobs",
                                                any(q.max_submit_jobs_per_user is not None for q in qos))
        self.max_wall: float | None = inherited("max_wall", any(q.max_wall is not None for q in qos))
        max_tres = tree.inherited(user, account, "max_tres_per_job", partition) or ()
        self.max_tres = _without(max_tres, {name for q in qos for name, _ in q.max_tres_per_job})
        max_pn = tree.inherited(user, account, "max_tres_per_node", partition) or ()
        self.max_tres_pn = _without(max_pn, {name for q in qos for name, _ in q.max_tres_per_node})
        """MaxTRESPerNode less the TRES the QoS's MaxTRESPerNode sets (``qos_rec.max_tres_pn_ctld``)."""
        self.counts_submits = self.max_submit is not None or any(n is not None for n in self.grp_submit)
        """Whether GrpSubmitJobs or MaxSubmitJobs holds the path (then a submission is checked)."""
        taken = ({name for q in qos for name, _ in q.grp_tres_mins},
                 {name for q in qos for name, _ in q.grp_tres_run_mins},
                 {name for q in qos for name, _ in q.max_tres_mins_per_job})
        max_mins = tree.inherited(user, account, "max_tres_mins_per_job", partition) or ()
        self.minutes = tuple(MinuteLimits.of(key, spec.grp_tres_mins if spec is not None else (),
                                             spec.grp_tres_run_mins if spec is not None else (),
                                             max_mins if level == 0 else (), True, taken)
                             for level, (key, spec) in enumerate(zip(self.keys, specs, strict=True)))
        """Each level's TRES-minutes limits (:mod:`djsb.model.tres_minutes`), less the QoS's."""
        self.charged = tuple(key for key, spec in zip(self.keys, specs, strict=True)
                             if spec is not None and (spec.grp_tres_mins or spec.grp_tres_run_mins))
        """The levels whose usage a job charges: those setting a Grp TRES-minutes limit."""


class AssocLimits:
    """The association limits of one replay, kept up to date by its submissions, starts and ends."""

    def __init__(self, specs: Sequence[AssocSpec]) -> None:
        self.tree = AssocTree(specs)
        self.paths: dict[tuple[int, str, str, str | None], AssocPath] = {}
        self.usage: dict[Key, Usage] = {}
        self.held: dict[int, Tres] = {}
        self.submitted: dict[Key, int] = {}
        self.counted: dict[int, tuple[Key, ...]] = {}
        """The keys each job counts in as submitted, by id."""
        self.has_wall = any(s.grp_wall is not None for s in specs)
        """Whether an association sets GrpWall (checked against :mod:`djsb.model.tres_minutes`' usage)."""
        self.counts = self.has_wall or any(s.grp_jobs is not None or s.max_jobs is not None for s in specs)
        """Whether an association limits running jobs or wall time (then :meth:`allows` is asked)."""
        self.has_minutes = any(s.grp_tres_mins or s.grp_tres_run_mins or s.max_tres_mins_per_job
                               for s in specs)
        """Whether an association sets a TRES-minutes limit (:mod:`djsb.model.tres_minutes`)."""
        self.has_tres = self.has_minutes or any(s.grp_tres or s.max_tres_per_job or s.max_tres_per_node
                                                for s in specs)
        """Whether an association limits TRES (then :meth:`blocks` and :meth:`held_now` are asked)."""
        self.grp_submits = any(s.grp_submit_jobs is not None for s in specs)
        """Whether an association sets GrpSubmitJobs (then a job counts as submitted at every level)."""
        self.submits = self.grp_submits or any(s.max_submit_jobs is not None for s in specs)
        self.levels: dict[Key, tuple[Key, ...]] = {}
        """The keys of each user association's path, for the submitted counts."""
        self.minutes: MinuteUsage | None = None
        """The usages the TRES-minutes limits are checked against (set by :class:`RunningLimits
        <djsb.model.limits.RunningLimits>`, shared with the QoS)."""

    def path(self, job: SimJob, qos: tuple[QosSpec, ...]) -> AssocPath:
        """The limits of ``job``'s association under its QoS ``qos``."""
        trace = job.trace
        part = self.tree.partition_of(trace.user, trace.account, job.part.spec.name) if self.tree.partitions \
            else None
        key = (id(qos), trace.user, trace.account, part)
        found = self.paths.get(key)
        if found is None:
            found = self.paths[key] = AssocPath(self.tree, trace.user, trace.account, qos, part)
        return found

    def _usage(self, key: Key) -> Usage:
        usage = self.usage.get(key)
        if usage is None:
            usage = self.usage[key] = Usage()
        return usage

    # ------------------------------------------------------------- submission
    def submit(self, job: SimJob, path: AssocPath, strict: bool) -> str:
        """Why sbatch refuses ``job`` ("" if accepted, then counted as submitted), in
        ``_acct_policy_validate``'s walk: at each level GrpSubmitJobs, and with ``strict`` (DenyOnLimit)
        the job's own request over GrpTRES, GrpTRESMins, GrpTRESRunMins or its limit over GrpWall; at the
        user association MaxSubmitJobs, and with ``strict`` MaxTRES, MaxTRESPerNode, MaxTRESMins, MaxWall."""
        if strict or path.counts_submits:
            refusal = self._refusal(job, path, strict)
            if refusal:
                return refusal
        self.count_submitted(job)
        return ""

    def _refusal(self, job: SimJob, path: AssocPath, strict: bool) -> str:
        """:meth:`submit`'s checks, in Slurm's order."""
        least = least_tres(job) if strict else (0, 0, 0, 0)
        minutes = job_minutes(least, limit_minutes(job)) if strict else least
        for level, key in enumerate(path.keys):
            if strict and (i := over(least, None, path.grp_tres[level])) >= 0:
                return GRP_TRES[i]
            limit = path.grp_submit[level]
            if limit is not None and self.submitted.get(key, 0) + 1 > limit:
                return GRP_SUBMIT
            limits = path.minutes[level] if self.has_minutes else None
            if strict and limits is not None and (reason := limits.alone(minutes, True, ("grp", "run"))):
                return reason
            wall = path.grp_wall[level]
            if strict and wall is not None and limit_minutes(job) > wall:
                return GRP_WALL
            if level:
                continue
            if strict and (i := over(least, None, path.max_tres)) >= 0:
                return MAX_TRES[i]
            if strict and (i := over(per_node(least), None, path.max_tres_pn)) >= 0:
                return MAX_TRES_PER_NODE[i]
            if path.max_submit is not None and self.submitted.get(key, 0) + 1 > path.max_submit:
                return MAX_SUBMIT
            if strict and limits is not None and (reason := limits.alone(minutes, True, ("per_job",))):
                return reason
            if strict and path.max_wall is not None and job.limit > path.max_wall:
                return MAX_WALL
        return ""

    def count_submitted(self, job: SimJob) -> None:
        """Count ``job`` in its associations' submitted jobs (``used_submit_jobs``, which
        ``_adjust_limit_usage`` adds at every level; the user association's alone when no level sets
        GrpSubmitJobs)."""
        if self.submits and job.job_id not in self.counted:
            trace, tree = job.trace, self.tree
            own = tree.user_key(trace.user, trace.account, tree.partition_of(trace.user, trace.account,
                                                                              job.part.spec.name))
            keys = self.levels.get(own)
            if keys is None:
                above = tree.ancestors(trace.account) if self.grp_submits else ()
                keys = self.levels[own] = (own, *(("", name) for name in above))
            for key in keys:
                self.submitted[key] = self.submitted.get(key, 0) + 1
            self.counted[job.job_id] = keys

    def unsubmit(self, job: SimJob) -> None:
        """A job that ended or was cancelled no longer counts as submitted."""
        for key in self.counted.pop(job.job_id, ()):
            self.submitted[key] -= 1

    def over_alone(self, job: SimJob, path: AssocPath) -> str:
        """The reason of the first limit the job exceeds by itself at a pass, or "": pre-select's first
        (with safe limits its limit over a level's GrpWall, MaxWall at the user association after its
        GrpWall), then post-select's: GrpTRES at the user association, MaxTRES, MaxTRESPerNode, GrpTRES
        above, then the TRES-minutes limits level by level (:meth:`MinuteLimits.alone`: GrpTRESMins only
        with safe limits)."""
        safe = self.minutes is not None and self.minutes.safe
        minutes, seconds = checked_minutes(job), checked_limit(job)
        if self.has_wall and safe:
            for level, wall in enumerate(path.grp_wall):
                if wall is not None and minutes > wall:
                    return GRP_WALL
                if level == 0 and path.max_wall is not None and seconds > path.max_wall:
                    return MAX_WALL
        elif path.max_wall is not None and seconds > path.max_wall:
            return MAX_WALL
        least = least_tres(job)
        for level, limit in enumerate(path.grp_tres):
            i = over(least, None, limit)
            if i >= 0:
                return GRP_TRES[i]
            if level == 0:
                i = over(least, None, path.max_tres)
                if i >= 0:
                    return MAX_TRES[i]
                i = over(per_node(least), None, path.max_tres_pn)
                if i >= 0:
                    return MAX_TRES_PER_NODE[i]
        if self.has_minutes:
            minutes_used = job_minutes(least, minutes)
            for limits in path.minutes:
                reason = limits.alone(minutes_used, safe) if limits is not None else ""
                if reason:
                    return reason
        return ""

    # ------------------------------------------------------------- passes
    def allows(self, job: SimJob, path: AssocPath) -> bool:
        """Whether GrpJobs and GrpWall at each level and MaxJobs let ``job`` start now (pre-select); if
        not, the job gets the limit's reason."""
        usages = self.minutes if self.has_wall else None
        for level, key in enumerate(path.keys):
            limit = path.grp_jobs[level]
            if limit is not None and self._usage(key).jobs >= limit:
                return not held(job, GRP_JOBS)
            wall = path.grp_wall[level] if usages is not None else None
            if usages is not None and wall is not None and (
                    reason := usages.holds_wall(key, wall, checked_minutes(job), GRP_WALL)):
                return not held(job, reason)
            if level == 0 and path.max_jobs is not None and \
                    self._usage(key).jobs >= path.max_jobs:
                return not held(job, MAX_JOBS)
        return True

    def blocks(self, job: SimJob, alloc: Placement, path: AssocPath) -> bool:
        """Whether GrpTRES at each level, MaxTRES or MaxTRESPerNode keep ``job`` placed on ``alloc`` from
        starting now (post-select); if so the job gets the limit's reason. Each level's TRES-minutes limits in
        acct_policy_job_runnable_post_select's order: GrpTRESMins before GrpTRES, GrpTRESRunMins and
        (at the user association) MaxTRESMins after it."""
        tres = placed_tres(job, alloc)
        usages = self.minutes if self.has_minutes else None
        minutes = job_minutes(tres, checked_minutes(job)) if usages is not None else tres
        for level, key in enumerate(path.keys):
            limits = path.minutes[level] if usages is not None else None
            if usages is not None and limits is not None and (
                    reason := usages.holds(limits, minutes, job.qos.usage_factor == 0.0)):
                return held(job, reason)
            usage = self._usage(key)
            i = over(usage.need(tres, alloc, True), usage.held(), path.grp_tres[level])
            if i >= 0:
                return held(job, GRP_TRES[i])
            if usages is not None and limits is not None and (
                    reason := usages.holds_running(limits, minutes, job.qos.usage_factor == 0.0)):
                return held(job, reason)
            if level == 0:
                i = over(tres, None, path.max_tres)
                if i >= 0:
                    return held(job, MAX_TRES[i])
                i = over(per_node(tres), None, path.max_tres_pn)
                if i >= 0:
                    return held(job, MAX_TRES_PER_NODE[i])
        return False

    def held_now(self, job: SimJob, path: AssocPath) -> bool:
        """Whether the job's least TRES (its nodes left out) with what runs below each level are over
        that level's GrpTRES, so it could start on no nodes now (then backfill skips it)."""
        least = least_tres(job)
        amounts = (least[CPU], least[MEM], 0, least[GPU])
        usages = self.minutes if self.has_minutes else None
        minutes = job_minutes(least, checked_minutes(job)) if usages is not None else least
        for level, key in enumerate(path.keys):
            limits = path.minutes[level] if usages is not None else None
            if usages is not None and limits is not None and (
                    reason := usages.holds(limits, minutes, job.qos.usage_factor == 0.0)
                    or usages.holds_running(limits, minutes, job.qos.usage_factor == 0.0)):
                return held(job, reason)
            i = over(amounts, self._usage(key).held(), path.grp_tres[level])
            if i >= 0:
                return held(job, GRP_TRES[i])
        return False

    # ------------------------------------------------------------- starts and ends
    def started(self, job: SimJob, path: AssocPath) -> None:
        """Count a job that starts at every level of its path."""
        tres = self.held[job.job_id] = placed_tres(job, job.alloc)
        for key in path.keys:
            self._usage(key).add(tres, job.alloc, 1)

    def ended(self, job: SimJob, path: AssocPath) -> None:
        """Count a job that ends (finished, killed or cancelled while started)."""
        self.unsubmit(job)
        tres = self.held.pop(job.job_id, None)
        if tres is not None:
            for key in path.keys:
                self._usage(key).add(tres, job.alloc, -1)

