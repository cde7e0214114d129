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
* Every ``SchedulerTimeSlice`` seconds (``_timeslicer_thread`` after ``_slice_sleep``), a partition
  with a job outside its active row cycles (``_cycle_job_list``): the jobs that were *active* (made so
  by the previous cycle's ``_build_active_row``) move to the back of the list, keeping their order; the
  fillers become inactive but keep their place; then ``_build_active_row`` fills the row from the
  front of the list, each job that fits made active; the running jobs outside it are suspended
  (``_suspend_job``) and the suspended ones inside it resumed (``_resume_job``). So a job that started
  running as a filler runs on for a second slice before it is moved back, and the jobs suspended
  longest come first.

A suspended job keeps its cores and memory (gang.c's ``job_suspend`` is not indefinite: the select
plugin keeps the job's resources), so the cluster state does not change; it makes no progress, and
its end moves by the time it spent suspended (job_mgr.c ``_job_suspend_op``, as for
:mod:`djsb.model.suspension`). The timeslicer thread starts with slurmctld: the model puts its wakes
at the multiples of ``SchedulerTimeSlice`` on its clock, after the job ends of that instant and before
its passes, and only while some partition has a suspended job (another wake changes nothing). A wake
that suspends or resumes jobs moves their ends, so the next periodic passes run (they plan with them).
The invariant checker counts a suspended job's CPUs as given back, as for any suspension (it checks
less on its nodes while it is suspended).

The model knows slots, not cores: a job of a partition of two rows or more is given, on each of its
nodes, the cores the fewest of the partitions' running jobs hold (the lowest first), as cons_tres fills
idle cores first (``_job_test`` step 1), then its partition's rows in turn (step 4): exact while jobs
take whole rows of a node, an approximation when rows are rebuilt after jobs of several sizes end.

Left aside: gang.c's "shadows": a job of a higher PriorityTier partition does not suspend the
lower-tier jobs whose cores it shares here; preemption by suspension (``PreemptMode=SUSPEND,GANG``)
is :mod:`djsb.model.suspension`'s, and a job it (or ``scontrol suspend``) suspended is out of the
rotation until it resumes, as under a shadow. A job suspended by the rotation is not preempted, and
``scontrol suspend``, ``resume`` and resize refuse it. GS_CPU, GS_SOCKET and GS_NODE
(``SelectTypeParameters`` other than CR_Core) are not modelled, nor heterogeneous jobs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from djsb.model.cluster_state import ClusterState
from djsb.model.job import SimJob
from djsb.model.scheduler import SchedulerConfig

NO_ACTIVE, ACTIVE, FILLER = range(3)
"""A job's ``row_state`` (gang.c's GS_NO_ACTIVE, GS_ACTIVE, GS_FILLER)."""


@dataclass(slots=True, eq=False)
class Entry:
    """One job of a partition's list (gang.c's ``gs_job``): its cores per node as bit masks, its row
    state, and whether the gang scheduler holds it suspended (``sig_state`` GS_SUSPEND)."""

    job: SimJob
    cores: dict[int, int]
    row: int = NO_ACTIVE
    suspended: bool = False


@dataclass(slots=True)
class Changes:
    """What one call of the gang scheduler did: the jobs it suspended and those it resumed."""

    suspend: list[SimJob] = field(default_factory=list)
    resume: list[SimJob] = field(default_factory=list)


def in_rotation(job: SimJob) -> bool:
    """Whether the rotation may run or suspend ``job``: not suspended by anything else (a preemptor,
    ``scontrol suspend``), which keeps it out as a shadow would."""
    return job.suspended_since is None or job.sliced


class TimeSlicer:
    """Each sharing partition's job list and active row, and the timeslicer's wakes."""

    def __init__(self, shares: Sequence[int], node_cores: Sequence[int], time_slice: float) -> None:
        """``shares``: each partition's rows (OverSubscribe's N, or 1); ``node_cores``: each node's cores."""
        self.lists: dict[int, list[Entry]] = {p: [] for p, rows in enumerate(shares) if rows >= 2}
        """By partition index, its running jobs in gang.c's list order (partitions of one row have
        no job outside their active row: the model keeps none of them)."""
        self.node_cores = node_cores
        self.holders: dict[int, list[int]] = {}
        """By node, how many of the listed jobs hold each of its cores."""
        self.time_slice = time_slice
        self.wake = float("inf")
        """The timeslicer's next wake the model has pushed (inf: none)."""

    def tracks(self, job: SimJob) -> bool:
        """Whether ``job``'s partition may slice (two rows or more)."""
        return job.part.index in self.lists

    def next_wake(self, now: float) -> float:
        """The timeslicer's first wake after ``now`` (``_slice_sleep``'s period from the clock's 0)."""
        slice_ = self.time_slice
        return (now // slice_ + 1) * slice_

    def pending(self) -> bool:
        """Whether a partition has a job outside its active row (``_timeslicer_thread`` cycles it)."""
        return any(_outside(entry) for jobs in self.lists.values() for entry in jobs)

    def _cores(self, job: SimJob) -> dict[int, int]:
        """The cores ``job`` gets on each of its nodes: those the fewest listed jobs hold, lowest
        first; counted as held."""
        cores = {}
        for node, slots in job.alloc:
            held = self.holders.setdefault(node, [0] * self.node_cores[node])
            chosen = sorted(range(len(held)), key=lambda core: (held[core], core))[:slots]
            mask = 0
            for core in chosen:
                held[core] += 1
                mask |= 1 << core
            cores[node] = mask
        return cores

    def start(self, job: SimJob) -> Changes:
        """``job`` started (or resumed from elsewhere): ``_add_job_to_part``."""
        jobs = self.lists[job.part.index]
        entry = Entry(job, self._cores(job))
        jobs.append(entry)
        changes = Changes()
        if _fits(entry, _active_row(jobs, entry)):
            entry.row = FILLER
        else:
            entry.suspended = True
            changes.suspend.append(job)
        return changes

    def end(self, job: SimJob) -> Changes:
        """``job`` ended: ``_remove_job_from_part``, then ``_update_active_row`` of its partition."""
        jobs = self.lists[job.part.index]
        entry = next(entry for entry in jobs if entry.job is job)
        jobs.remove(entry)
        for node, mask in entry.cores.items():
            held = self.holders[node]
            for core in range(len(held)):
                if mask >> core & 1:
                    held[core] -= 1
        return _update_active_row(jobs)

    def cycle(self) -> Changes:
        """The timeslicer's wake: ``_cycle_job_list`` on each partition with a job outside its row."""
        changes = Changes()
        for p, jobs in self.lists.items():
            if any(_outside(entry) for entry in jobs):
                self.lists[p] = _cycle_job_list(jobs, changes)
        return changes


def time_slicer(state: ClusterState, config: SchedulerConfig) -> TimeSlicer | None:
    """The time-slicer of a replay under ``config`` on ``state``'s cluster: None without GANG or
    without a partition whose jobs may share cores."""
    shares = [part.spec.share for part in state.partitions]
    if not config.gang_scheduling or max(shares, default=1) < 2:
        return None
    return TimeSlicer(shares, state.node_cores, config.time_slice)


def _outside(entry: Entry) -> bool:
    """Whether ``entry`` is outside its partition's active row (``jobs_active < num_jobs``)."""
    return entry.suspended or not in_rotation(entry.job)


def _fits(entry: Entry, row: dict[int, int]) -> bool:
    """Whether ``entry``'s cores share none with the active ``row`` (``job_fits_into_cores``)."""
    return all(not mask & row.get(node, 0) for node, mask in entry.cores.items())


def _add(entry: Entry, row: dict[int, int]) -> None:
    """Add ``entry``'s cores to the active ``row`` (``_add_job_to_active``)."""
    for node, mask in entry.cores.items():
        row[node] = row.get(node, 0) | mask


def _active_row(jobs: Sequence[Entry], but: Entry | None = None) -> dict[int, int]:
    """The cores of the jobs in the active row (active or fillers), ``but`` one."""
    row: dict[int, int] = {}
    for entry in jobs:
        if entry.row != NO_ACTIVE and entry is not but and in_rotation(entry.job):
            _add(entry, row)
    return row


def _update_active_row(jobs: list[Entry]) -> Changes:
    """``_update_active_row`` with new jobs: the active jobs, then the fillers, keep the row; then
    each job outside it that fits, in list order, joins it as a filler and resumes."""
    changes = Changes()
    row = _active_row(jobs)
    for entry in jobs:
        if entry.row == NO_ACTIVE and in_rotation(entry.job) and _fits(entry, row):
            _add(entry, row)
            entry.row = FILLER
            if entry.suspended:
                entry.suspended = False
                changes.resume.append(entry.job)
    return changes


def _cycle_job_list(jobs: list[Entry], changes: Changes) -> list[Entry]:
    """``_cycle_job_list``: the active jobs to the back (in their order), the fillers inactive in
    place, the row rebuilt from the front (``_build_active_row``), then the suspensions and resumes.
    The reordered list."""
    order = [entry for entry in jobs if entry.row != ACTIVE]
    order += [entry for entry in jobs if entry.row == ACTIVE]
    row: dict[int, int] = {}
    for entry in order:
        entry.row = NO_ACTIVE
        if in_rotation(entry.job) and _fits(entry, row):
            _add(entry, row)
            entry.row = ACTIVE
    for entry in order:
        if entry.row == NO_ACTIVE and not entry.suspended and in_rotation(entry.job):
            entry.suspended = True
            changes.suspend.append(entry.job)
    for entry in order:
        if entry.row == ACTIVE and entry.suspended:
            entry.suspended = False
            changes.resume.append(entry.job)
    return order
