"""Gang scheduling's time-slicing, as Slurm 22.05's gang scheduler (src/slurmctld/gang.c) does it with
``PreemptMode`` including GANG and select/cons_tres's core allocation (``gr_type`` GS_CORE).

On a partition of ``OverSubscribe=FORCE:N`` (or ``YES:N`` for jobs asking ``--oversubscribe``) up to N
jobs may be allocated the same cores. The gang scheduler keeps, per partition (``_build_parts``: one
``gs_part`` per partition, so jobs of different partitions are never sliced against each other), a
list of the partition's running jobs in the order they started and an *active row*: cores no two of
whose jobs share (``_job_fits_in_active_row``: ``job_fits_into_cores``). A job outside the active row
is suspended; every ``SchedulerTimeSlice`` seconds the rows rotate. The rules, function by function:

* A job starts (``gs_job_start`` -> ``_add_job_to_part``): it joins the end of its partition's list;
  if its cores fit the active row it runs on, a *filler* of the row, else it is suspended at once
  (its start time is still its start: Slurm started it, the gang scheduler suspended it).
* A job ends (``gs_job_fini`` -> ``_remove_job_from_part``, ``_update_all_active_rows`` ->
  ``_update_active_row``): it leaves the list, and the suspended jobs that now fit the active row, in
  list order, resume as fillers; the running ones run on.
* Every ``SchedulerTimeSlice`` seconds (``_timeslicer_thread`` after ``_slice_sleep``), each partition,
  highest PriorityTier first, whose row as last built holds fewer shadows and jobs than it has
  (``jobs_active < num_jobs + num_shadows``) cycles (``_cycle_job_list``): the jobs that were *active*
  (made so by the previous cycle's ``_build_active_row``) move to the back of the list, keeping their
  order; the fillers become inactive but keep their place; then ``_build_active_row`` fills the row
  with the shadows, then from the front of the list, each job that fits made active; the running jobs
  outside it are suspended (``_suspend_job``) and the suspended ones inside it resumed
  (``_resume_job``). So a job that started running as a filler runs on for a second slice before it
  is moved back, and the jobs suspended longest come first.
* Shadows (``_cast_shadow``, ``_clear_shadow``): every running job casts its cores on the rows of the
  partitions of a lower PriorityTier, which are built from them first (``_update_active_row``,
  ``_build_active_row``). A job of a higher tier placed on cores a lower-tier job holds (two sharing
  partitions over the same nodes: under gang_mode, cons_tres's ``_job_test`` step 3 leaves lower tiers'
  cores free) so suspends it until it ends or is suspended itself. A job taken out of its row while a
  shadow is cast on its partition (``num_shadows``, every running job of a higher tier counted,
  wherever it runs) is preempted instead of suspended if its PreemptMode is CANCEL or REQUEUE
  (``_preempt_job_queue``, ``_preempt_job_dequeue``: cancelled or requeued at once, without GraceTime).

A suspended job keeps its cores and memory (gang.c's ``job_suspend`` is not indefinite: the select
plugin keeps the job's resources), so the cluster state does not change; it makes no progress, and
its end moves by the time it spent suspended (job_mgr.c ``_job_suspend_op``, as for
:mod:`djsb.model.suspension`). The timeslicer thread starts with slurmctld: the model puts its wakes
at the multiples of ``SchedulerTimeSlice`` on its clock, after the job ends of that instant and before
its passes, and only while a partition with jobs would cycle (another wake changes nothing). A wake
that suspends, resumes or preempts jobs moves their ends, so the next periodic passes run (they plan
with them). The invariant checker counts a suspended job's CPUs as given back, as for any suspension
(it checks less on its nodes while it is suspended).

The model knows slots, not cores: a job of a partition of two rows or more is given, on each of its
nodes, the cores the fewest of the partitions' running jobs hold (the lowest first), as cons_tres fills
idle cores first (``_job_test`` step 1), then its partition's rows in turn (step 4): exact while jobs
take whole rows of a node, an approximation when rows are rebuilt after jobs of several sizes end.
Only the partitions of two rows or more are kept: the jobs of the others never share cores with one
another, and share none with the sliced partitions' (cons_common ``_verify_node_state``,
:mod:`djsb.model.partition_rows`) but through a preemption by suspension.

A job suspended by hand (``scontrol suspend``) leaves its partition's list and gives its cores back,
and the jobs that then fit the active row resume (job_mgr.c ``_job_suspend_op``: ``gs_job_fini``); at
its resume it joins the end of the list on the same cores, suspended at once if they are in the active
row's (``gs_job_start``). ``scontrol suspend`` and ``resume`` refuse a job the rotation suspended (Slurm
would hold it, priority 0, or resume it behind the gang scheduler's back), and a job of a sliced
partition is not resized (the model's DLB-DROM malleability, which Slurm has not).

:mod:`djsb.model.suspension` keeps the preemption by suspension (``PreemptMode=SUSPEND,GANG`` under
preempt/partition_prio or preempt/qos: a job that finds no room suspends the lower-tier jobs whose
cores it needs, which resume when it ends): a job it suspended is out of the rotation until then, as
under its preemptor's shadow, and is no shadow itself. Not modelled: the shadows of the jobs of
partitions of one row (they only overlap others through that preemption), a ONE_ROW job placed on a
lower tier's cores under GANG without preemption (cons_tres's ``_job_test`` lets it; the model's
placement keeps it to idle cores), a job the rotation suspended being preempted for another, GS_CPU,
GS_SOCKET and GS_NODE (``SelectTypeParameters`` other than CR_Core), heterogeneous jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from djsb.model.cluster_state import ClusterState
from djsb.model.job import SimJob
from djsb.model.scheduler import SchedulerConfig

NO_ACTIVE, ACTIVE, FILLER = range(3)
"""A job's ``row_state`` (gang.c's GS_NO_ACTIVE, GS_ACTIVE, GS_FILLER)."""


@dataclass(slots=True, eq=False)
class Entry:
    """One job of a partition's list (gang.c's ``gs_job``): its cores per node as bit masks, its row
    state, whether the gang scheduler holds it suspended (``sig_state`` GS_SUSPEND) and whether it
    queued it to be preempted (``_preempt_job_queue``: it ends at once)."""

    job: SimJob
    cores: dict[int, int]
    row: int = NO_ACTIVE
    suspended: bool = False
    preempted: bool = False


@dataclass(slots=True, eq=False)
class GangPart:
    """One partition as the gang scheduler keeps it (gang.c's ``gs_part``): its PriorityTier, its jobs
    in list order, and its active row as last built: ``jobs_active`` (the shadows and jobs added to
    it) and ``resmap`` (their cores by node)."""

    tier: int
    jobs: list[Entry] = field(default_factory=list)
    jobs_active: int = 0
    resmap: dict[int, int] = field(default_factory=dict)


@dataclass(slots=True)
class Changes:
    """What one call of the gang scheduler did: the jobs it suspended, resumed and preempted."""

    suspend: list[SimJob] = field(default_factory=list)
    resume: list[SimJob] = field(default_factory=list)
    preempt: list[SimJob] = field(default_factory=list)


def in_rotation(job: SimJob) -> bool:
    """Whether the rotation may run or suspend ``job``: not suspended by anything else (a preemptor,
    ``scontrol suspend``), which keeps it out as a shadow would."""
    return job.suspended_since is None or job.sliced


def _live(entry: Entry) -> bool:
    """Whether ``entry`` may run in its partition's active row: in rotation and not being preempted."""
    return not entry.preempted and in_rotation(entry.job)


def _casts(entry: Entry) -> bool:
    """Whether ``entry`` casts its shadow (``_cast_shadow``, ``_clear_shadow``): it runs."""
    return not entry.suspended and _live(entry)


class TimeSlicer:
    """Each sharing partition's job list and active row, and the timeslicer's wakes."""

    def __init__(self, partitions: Sequence[tuple[int, int]], node_cores: Sequence[int], time_slice: float,
                 running: Mapping[int, SimJob], stops: Callable[[SimJob], bool]) -> None:
        """``partitions``: each partition's rows (OverSubscribe's N, or 1) and PriorityTier;
        ``node_cores``: each node's cores; ``running``: the model's running jobs; ``stops``: whether a
        job's PreemptMode is CANCEL or REQUEUE (``slurm_job_preempt_mode``)."""
        self.parts = {p: GangPart(tier) for p, (rows, tier) in enumerate(partitions) if rows >= 2}
        """By partition index, the partitions whose jobs may share cores (the others have no job
        outside their active row but under a shadow, which :mod:`djsb.model.suspension` models)."""
        self.order = sorted(self.parts, key=lambda p: -self.parts[p].tier)
        """The partitions in ``_sort_partitions``' order: highest PriorityTier first."""
        self.node_cores = node_cores
        self.running = running
        self.stops = stops
        self.holders: dict[int, list[int]] = {}
        """By node, how many of the listed jobs hold each of its cores."""
        self.parked: dict[int, dict[int, int]] = {}
        """By job id, the cores of a job suspended by hand (``scontrol suspend``), which it takes
        again at its resume (its ``job_resrcs`` do not change)."""
        self.time_slice = time_slice
        self.wake = float("inf")
        """The timeslicer's next wake the model has pushed (inf: none)."""

    def tracks(self, job: SimJob) -> bool:
        """Whether ``job``'s partition may slice (two rows or more)."""
        return job.part.index in self.parts

    def next_wake(self, now: float) -> float:
        """The timeslicer's first wake after ``now`` (``_slice_sleep``'s period from the clock's 0)."""
        slice_ = self.time_slice
        return (now // slice_ + 1) * slice_

    def pending(self) -> bool:
        """Whether the next wake cycles a partition with jobs (``_timeslicer_thread``)."""
        return any(self._cycles(part) for part in self.parts.values())

    def _cycles(self, part: GangPart) -> bool:
        """``_timeslicer_thread``'s test: ``jobs_active < num_jobs + num_shadows`` (a partition with
        no job cycles to no effect)."""
        return bool(part.jobs) and part.jobs_active < len(part.jobs) + self._shadows(part)[1]

    def _cores(self, job: SimJob) -> dict[int, int]:
        """The cores ``job`` gets on each of its nodes: those it had if suspended by hand, else those
        the fewest listed jobs hold, lowest first; counted as held."""
        cores = self.parked.pop(job.job_id, None)
        if cores is None:
            cores = {}
            for node, slots in job.alloc:
                held = self.holders.setdefault(node, [0] * self.node_cores[node])
                chosen = sorted(range(len(held)), key=lambda core: (held[core], core))[:slots]
                cores[node] = sum(1 << core for core in chosen)
        self._hold(cores, 1)
        return cores

    def _hold(self, cores: dict[int, int], sign: int) -> None:
        """Count (``sign`` 1) or no longer count (-1) a job's ``cores`` as held."""
        for node, mask in cores.items():
            held = self.holders.setdefault(node, [0] * self.node_cores[node])
            for core in range(len(held)):
                if mask >> core & 1:
                    held[core] += sign

    def _shadows(self, part: GangPart) -> tuple[dict[int, int], int]:
        """The cores of the shadows cast on ``part``, and how many: the running jobs of the sliced
        partitions of a higher PriorityTier (``_cast_shadow``)."""
        cores: dict[int, int] = {}
        count = 0
        for other in self.parts.values():
            if other.tier > part.tier:
                for entry in other.jobs:
                    if _casts(entry):
                        _add(entry, cores)
                        count += 1
        return cores, count

    def _stop(self, entry: Entry, part: GangPart, changes: Changes) -> None:
        """Take a running job out of its row: preempted if its PreemptMode is CANCEL or REQUEUE and a
        shadow is cast on its partition (``num_shadows``, the jobs of the partitions that slice no
        job counted too), else suspended (gang.c, wherever it suspends)."""
        entry.suspended = True
        job = entry.job
        if self.stops(job) and (self._shadows(part)[1] or any(
                other.part.spec.priority_tier > part.tier and other.suspended_since is None
                and other.part.index not in self.parts for other in self.running.values())):
            entry.preempted = True
            changes.preempt.append(job)
        else:
            changes.suspend.append(job)

    def start(self, job: SimJob) -> Changes:
        """``job`` started (or was resumed by hand): ``_add_job_to_part`` against the active row as
        last built, then, if it runs, ``_update_all_active_rows`` (its shadow)."""
        part = self.parts[job.part.index]
        entry = Entry(job, self._cores(job))
        part.jobs.append(entry)
        changes = Changes()
        if part.jobs_active == 0 or _fits(entry, part.resmap):
            if part.jobs_active == 0:
                part.resmap = {}
            _add(entry, part.resmap)
            part.jobs_active += 1
            entry.row = FILLER
            self._update_all(changes)
        else:
            self._stop(entry, part, changes)
        return changes

    def end(self, job: SimJob, parked: bool = False) -> Changes:
        """``job`` ended, or was suspended by hand (``parked``: its cores kept for its resume):
        ``_remove_job_from_part``, then ``_update_all_active_rows``. A job suspended by hand that
        ends is only forgotten."""
        part = self.parts[job.part.index]
        entry = next((entry for entry in part.jobs if entry.job is job), None)
        if entry is None:
            self.parked.pop(job.job_id, None)
            return Changes()
        part.jobs.remove(entry)
        self._hold(entry.cores, -1)
        if parked:
            self.parked[job.job_id] = entry.cores
        changes = Changes()
        self._update_all(changes)
        return changes

    def cycle(self) -> Changes:
        """The timeslicer's wake: ``_cycle_job_list`` on each partition :meth:`_cycles` says, highest
        PriorityTier first."""
        changes = Changes()
        for p in self.order:
            part = self.parts[p]
            if self._cycles(part):
                self._cycle_job_list(part, changes)
        return changes

    def _update_all(self, changes: Changes) -> None:
        """``_update_all_active_rows``: each partition's row rebuilt, highest PriorityTier first."""
        for p in self.order:
            self._update_active_row(self.parts[p], changes)

    def _update_active_row(self, part: GangPart, changes: Changes) -> None:
        """``_update_active_row`` with new jobs: the shadows, then the active jobs, then the fillers
        keep the row, those no longer fitting taken out (:meth:`_stop`); then each job outside it
        that fits, in list order, joins it as a filler and resumes."""
        row, count = self._shadows(part)
        for state in (ACTIVE, FILLER):
            for entry in part.jobs:
                if entry.row != state or not _live(entry):
                    continue
                if _fits(entry, row):
                    _add(entry, row)
                    count += 1
                else:
                    if not entry.suspended:
                        self._stop(entry, part, changes)
                    entry.row = NO_ACTIVE
        for entry in part.jobs:
            if entry.row == NO_ACTIVE and _live(entry) and _fits(entry, row):
                _add(entry, row)
                count += 1
                entry.row = FILLER
                if entry.suspended:
                    entry.suspended = False
                    changes.resume.append(entry.job)
        part.resmap, part.jobs_active = row, count

    def _cycle_job_list(self, part: GangPart, changes: Changes) -> None:
        """``_cycle_job_list``: the active jobs to the back (in their order), the fillers inactive in
        place, the row rebuilt from the shadows and the front of the list (``_build_active_row``),
        then the running jobs outside it taken out (:meth:`_stop`) and the suspended ones inside
        resumed."""
        order = [entry for entry in part.jobs if entry.row != ACTIVE]
        order += [entry for entry in part.jobs if entry.row == ACTIVE]
        part.jobs = order
        row, count = self._shadows(part)
        for entry in order:
            entry.row = NO_ACTIVE
            if _live(entry) and _fits(entry, row):
                _add(entry, row)
                entry.row = ACTIVE
                count += 1
        part.resmap, part.jobs_active = row, count
        for entry in order:
            if entry.row == NO_ACTIVE and not entry.suspended and _live(entry):
                self._stop(entry, part, changes)
        for entry in order:
            if entry.row == ACTIVE and entry.suspended:
                entry.suspended = False
                changes.resume.append(entry.job)


def time_slicer(state: ClusterState, config: SchedulerConfig, running: Mapping[int, SimJob],
                stops: Callable[[SimJob], bool]) -> TimeSlicer | None:
    """The time-slicer of a replay under ``config`` on ``state``'s cluster (``running`` and ``stops``
    as :class:`TimeSlicer` takes them): None without GANG or without a partition whose jobs may
    share cores."""
    shares = [part.spec.share for part in state.partitions]
    if not config.gang_scheduling or max(shares, default=1) < 2:
        return None
    return TimeSlicer([(part.spec.share, part.spec.priority_tier) for part in state.partitions],
                      state.node_cores, config.time_slice, running, stops)


def _fits(entry: Entry, row: dict[int, int]) -> bool:
    """Whether ``entry``'s cores share none with the active ``row`` (``job_fits_into_cores``)."""
    return all(not mask & row.get(node, 0) for node, mask in entry.cores.items())


def _add(entry: Entry, row: dict[int, int]) -> None:
    """Add ``entry``'s cores to the active ``row`` (``_add_job_to_active``)."""
    for node, mask in entry.cores.items():
        row[node] = row.get(node, 0) | mask
