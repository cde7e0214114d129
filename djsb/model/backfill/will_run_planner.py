"""The ``will_run`` planner: a backfill pass as Slurm's sched/backfill makes it.

Each job tested, in queue order, starts now if the select plugin's will-run test
(:mod:`djsb.model.will_run`) says so on the nodes no reservation keeps over its run, else reserves
whole nodes from its planned start, trying later starts past reserved slots (backfill.c
``TRY_LATER``). It plans with each job's time limit itself (sched/backfill rounds only
reservations, to ``bf_resolution``) and counts a running job's start in whole seconds, as
slurmctld's ``time_t`` start plus the limit is the end its will-run test expects. Its reservations
are not given to the invariant checker, whose plan invariants this heuristic does not keep (see
:mod:`djsb.model.will_run`); the checker still checks every start. ``bf_will_run: true`` selects it.

With preemption on, a job that may preempt running jobs is tested as sched/backfill tests it
(backfill.c ``_try_sched`` passes ``slurm_find_preemptable_jobs`` to the will-run test): cons_common
job_test.c ``_will_run_test`` tries it as things are, then with every job it may preempt gone
(``_build_cr_job_list``: all they hold, or their cores alone for a job it would suspend), and only
then removes the other running jobs in batches, so a preemptor is planned over the jobs it may
preempt and its reservation keeps later jobs off their cores. A start now (``_start_job``:
``select_nodes``, cons_common ``_run_now``) starts it if it fits as things are, else preempts for it
as the main pass does (:mod:`djsb.model.preemption`, :mod:`djsb.model.suspension`); when that leaves
it waiting for the preempted jobs to end, the start failed and the pass reserves the nodes the
will-run test found, from now over its limit ("planned start of ... failed", reserved "based upon
original state"). A running job being preempted is expected to end at its grace time's end
(preempt.c ``_job_check_grace_internal``). Such a pass walks the queue to its depth (a preemptor may
start where nothing fits the free capacity).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

from djsb.model.allocation import allocate, shares_cores
from djsb.model.array_resv import array_reservations
from djsb.model.backfill.planner import BACKFILL_PLANNERS, BackfillPlanner, BackfillView, FreeCapacity
from djsb.model.cluster_state import ClusterState
from djsb.model.job import SimJob
from djsb.model.placement import Placement
from djsb.model.queue import NeedsLeft
from djsb.model.will_run import NodeSpace, WillRunTest


@BACKFILL_PLANNERS.register("will_run")
class WillRunPlanner(BackfillPlanner):
    """sched/backfill's pass with the will-run test (see the module docstring)."""

    def plan_duration(self, limit: float) -> float:
        """The limit itself: sched/backfill plans with it and rounds only reservations."""
        return limit

    def expected_end(self, job: SimJob) -> float:
        """The planned end with the start counted in whole seconds (slurmctld's ``time_t``)."""
        assert job.start is not None
        return super().expected_end(job) - (job.start - math.floor(job.start))

    def run(self, view: BackfillView) -> None:
        cfg, now = self.config, view.now
        space = NodeSpace(now, cfg.bf_resolution)
        horizon = now + cfg.bf_window
        for begin, end, nodes in view.windows(horizon):
            space.reserve(sorted(nodes), begin, end)  # job_test_resv keeps them from every job
        test = self._will_run_test(view)
        preemption = view.preemption
        preemptors: dict[frozenset[tuple[int, bool]], WillRunTest] = {}
        reserved: dict[int, int] = {}
        left = UnreservedCapacity(view, space) if not view.queue.shaped and preemption is None else None
        arrays = array_reservations(cfg.bf_max_job_array_resv, view.array_tasks)
        for job in self.candidates(view, left, arrays, walk_all=preemption is not None):
            gone = preemption.gone(job) if preemption is not None else ()
            if gone:
                key = frozenset((other.job_id, cpus_only) for other, cpus_only in gone)
                if key not in preemptors:
                    preemptors[key] = self._will_run_test(view, gone)
                found = self._try_later(job, space, preemptors[key], now, horizon)
            else:
                found = self._try_later(job, space, test, now, horizon)
            if found is None:
                continue
            start, alloc = found
            if start <= now and view.limits.blocks(job, alloc):
                continue  # a QoS TRES limit holds it: neither a start nor a reservation (backfill.c)
            preempted = False
            if start <= now and gone:
                assert preemption is not None
                usable, _ = space.scan(job.part.node_ids, now, now + job.plan)
                excluded = job.part.members - usable  # _start_job: the nodes reserved over its run
                placed = allocate(job, view.state.without(excluded) if excluded else view.state) \
                    or preemption.run_now(job, excluded, None)
                if placed is None:
                    preempted = True  # the jobs it waits for end: the start "failed", its nodes reserved
                    test = self._will_run_test(view)  # the preempted jobs' ends moved to now
                    preemptors.clear()
                elif view.limits.blocks(job, placed):
                    continue
                else:
                    alloc = placed
            if start <= now and not preempted:
                view.start(job, alloc)
                test.started((self.ends_by(job), job.alloc, job.memory, job.job_id, job.part.index),
                             shares_cores(job))
                preemptors.clear()  # their states were copied before this start
            elif reserved.get(job.part.index, 0) < view.max_reservations \
                    and not view.limits.blocks(job, alloc):  # no reservation for a job the QoS holds
                reserved[job.part.index] = reserved.get(job.part.index, 0) + 1
                space.reserve(alloc, start, start + job.plan)
                if arrays is not None:
                    arrays.reserved(job)
            else:
                continue
            if left is not None:
                left.changed()

    def _will_run_test(self, view: BackfillView, gone: Sequence[tuple[SimJob, bool]] = ()) -> WillRunTest:
        """The will-run test of the pass's running jobs; ``gone``: of a preemptor, on a copy of the
        state without the jobs it may preempt (all they hold, or their CPUs alone for a job it would
        suspend), which are not among the jobs it removes in batches (cons_common job_test.c
        ``_build_cr_job_list``, then ``_will_run_test``'s test "with all preemptable jobs gone")."""
        state = view.state
        if gone:
            state = state.copy()
            for other, cpus_only in gone:
                state.commit(other.alloc, other.cpus, None if cpus_only else other.memory, sign=-1,
                             part=other.part, shares=shares_cores(other))
                if not cpus_only:
                    state.commit_gpus(other.alloc, sign=-1)
        left_out = {other.job_id for other, _ in gone}
        running = [held for held in view.holdings() if held[0].job_id not in left_out]
        return WillRunTest(state, [(self.ends_by(job), alloc, memory, job.job_id, job.part.index)
                                   for job, alloc, memory in running], view.now, self.config.kill_wait,
                           [job.job_id for job, _, _ in running if shares_cores(job)])

    def _try_later(self, job: SimJob, space: NodeSpace, test: WillRunTest, now: float,
                   horizon: float) -> tuple[float, Placement] | None:
        """A job's start and nodes in a will-run pass, trying later starts past reserved slots
        (backfill.c ``TRY_LATER``); None if it gets neither a start now nor a reservation."""
        nodes = job.part.node_ids
        key = _request(job)
        slots = job.trace.cpus if job.shape is None else 0  # a trace job takes its CPUs in free slots
        later: float | None = now
        while later is not None:
            start_res = later
            usable, later = space.scan(nodes, start_res, start_res + job.plan)
            found = test.test(usable, lambda view: allocate(job, view), key, slots)
            if found is None:
                continue
            start, alloc = max(found[0], start_res), found[1]
            if start <= now:
                return now, alloc
            if later is not None and start > later:
                continue
            if start > horizon:
                return None
            if space.overlaps(alloc, start, start + job.plan):
                later = start if start > start_res else None
                continue
            return start, alloc
        return None


class UnreservedCapacity:
    """:class:`~djsb.model.backfill.planner.Startable` of a will-run pass over trace jobs: a job can
    start now only if it fits its partition's free capacity (:class:`FreeCapacity`) and, but on an
    exclusive partition, the free slots of its partition's nodes that no reservation of the pass
    keeps over its planned run from now add up to its CPUs (:meth:`WillRunPlanner._try_later` scans
    those nodes first and its will-run test tries a placement now only then; a try past a reserved
    slot starts later). Jobs are grouped by partition and planned duration (the queue's
    ``needs_by_plan``, whose units are CPUs on a partition that is not exclusive); a group's free
    slots are counted again only after the pass started a job or reserved nodes."""

    def __init__(self, view: BackfillView, space: NodeSpace) -> None:
        self.free = FreeCapacity(NeedsLeft(view.queue.needs), view.state.partitions)
        self.left = NeedsLeft(view.queue.needs_by_plan)
        self.state: ClusterState = view.state
        self.space = space
        self.now = view.now
        self.offered: dict[tuple[int, float], int] = {}

    def changed(self) -> None:
        """The pass started a job or reserved nodes: free slots are counted again."""
        self.offered.clear()

    def remove(self, job: SimJob) -> None:
        """The pass reached ``job``."""
        self.free.remove(job)
        self.left.remove((job.part.index, job.plan), job.need)

    def any(self) -> bool:
        """Could a job not walked yet start now?"""
        if not self.free.any():
            return False
        parts = self.state.partitions
        for group, least in self.left.least():
            part = parts[group[0]]
            if least > part.free:
                continue
            if part.exclusive or least <= self._offered(group):
                return True
        return False

    def _offered(self, group: tuple[int, float]) -> int:
        """The free slots of the partition's nodes no reservation keeps over ``group``'s planned run."""
        offered = self.offered.get(group)
        if offered is None:
            p, plan = group
            usable, _ = self.space.scan(self.state.partitions[p].node_ids, self.now, self.now + plan)
            node_free = self.state.node_free
            offered = self.offered[group] = sum(f for f in map(node_free.__getitem__, usable) if f > 0)
        return offered


def _request(job: SimJob) -> Hashable | None:
    """What a trace job's allocation depends on besides the cluster state (its partition, CPUs,
    node count, memory and GPUs: :meth:`~djsb.model.cluster_state.ClusterState.allocate`); None for a
    shaped job, whose layout is recorded on the job as it is placed."""
    if job.shape is not None:
        return None
    trace = job.trace
    return job.part.index, trace.cpus, trace.nodes, trace.memory_mb, trace.gpus, trace.exclusive
