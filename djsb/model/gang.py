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

A job suspended by hand (``scontrol suspend``) leaves its partition's list and gives its cores back,
and the jobs that then fit the active row resume (job_mgr.c ``_job_suspend_op``: ``gs_job_fini``); at
its resume it joins the end of the list on the same cores, suspended at once if they are in the active
row's (``gs_job_start``). ``scontrol suspend`` and ``resume`` refuse a job the rotation suspended (Slurm
would hold it, priority 0, or resume it behind the gang scheduler's back), and a job of a sliced
partition is not resized (the model's DLB-DROM malleability, which Slurm has not).

Left aside: gang.c's "shadows" (``_cast_shadow``: every running job of a partition casts its cores
on the active rows of the partitions of lower PriorityTier, whose overlapped jobs are suspended, or
preempted under CANCEL or REQUEUE). :mod:`djsb.model.suspension` is what the model has of them: under
``PreemptMode=SUSPEND,GANG`` with preempt/partition_prio or preempt/qos, a job that finds no room
suspends the lower-tier jobs it needs the cores of, which resume when it ends; such a job is out of
the rotation until then (as under its preemptor's shadow), and so is one suspended by hand. Not
modelled: a higher-tier job placed on cores a lower-tier job shares (two partitions of FORCE:N
over the same nodes) suspending it, shadows under PreemptMode GANG without SUSPEND, and the counters
of ``_timeslicer_thread``'s test (``jobs_active < num_jobs + num_shadows``) when shadows change
between wakes. A job the rotation suspended is not preempted. GS_CPU, GS_SOCKET and GS_NODE
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
        self.parked: dict[int, dict[int, int]] = {}
        """By job id, the cores of a job suspended by hand (``scontrol suspend``), which it takes
        again at its resume (its ``job_resrcs`` do not change)."""
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

    def end(self, job: SimJob, parked: bool = False) -> Changes:
        """``job`` ended, or was suspended by hand (``parked``: its cores kept for its resume):
        ``_remove_job_from_part``, then ``_update_active_row`` of its partition. A job suspended by
        hand that ends is only forgotten."""
        jobs = self.lists[job.part.index]
        entry = next((entry for entry in jobs if entry.job is job), None)
        if entry is None:
            self.parked.pop(job.job_id, None)
            return Changes()
        jobs.remove(entry)
        self._hold(entry.cores, -1)
        if parked:
            self.parked[job.job_id] = entry.cores
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
