"""The ``will_run`` planner: a backfill pass as Slurm's sched/backfill makes it.

Each job tested, in queue order, starts now if the select plugin's will-run test
(:mod:`djsb.model.will_run`) says so on the nodes no reservation keeps over its run, else reserves
whole nodes from its planned start, trying later starts past reserved slots (backfill.c
``TRY_LATER``). It plans with each job's time limit itself (sched/backfill rounds only
reservations, to ``bf_resolution``) and counts a running job's start in whole seconds, as
slurmctld's ``time_t`` start plus the limit is the end its will-run test expects. Its reservations
are not given to the invariant checker, whose plan invariants this heuristic does not keep (see
:mod:`djsb.model.will_run`); the checker still checks every start. ``bf_will_run: true`` selects it.
"""

from __future__ import annotations

import math
from collections.abc import Hashable

from djsb.model.allocation import allocate, shares_cores
from djsb.model.array_resv import array_reservations
from djsb.model.backfill.planner import BACKFILL_PLANNERS, BackfillPlanner, BackfillView, FreeCapacity
from djsb.model.cluster import ClusterState
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
        running = list(view.holdings())
        test = WillRunTest(view.state, [(self.expected_end(job), alloc, memory, job.job_id, job.part.index)
                                        for job, alloc, memory in running],
                           now, cfg.kill_wait, [job.job_id for job, _, _ in running if shares_cores(job)])
        reserved: dict[int, int] = {}
        left = UnreservedCapacity(view, space) if not view.queue.shaped else None
        arrays = array_reservations(cfg.bf_max_job_array_resv, view.array_tasks)
        for job in self.candidates(view, left, arrays):
            found = self._try_later(job, space, test, now, horizon)
            if found is None:
                continue
            start, alloc = found
            if start <= now and view.limits.blocks(job, alloc):
                continue  # a QoS TRES limit holds it: neither a start nor a reservation (backfill.c)
            if start <= now:
                view.start(job, alloc)
                test.started((self.expected_end(job), job.alloc, job.memory, job.job_id, job.part.index),
                             shares_cores(job))
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
    node count, memory and GPUs: :meth:`~djsb.model.cluster.ClusterState.allocate`); None for a
    shaped job, whose layout is recorded on the job as it is placed."""
    if job.shape is not None:
        return None
    trace = job.trace
    return job.part.index, trace.cpus, trace.nodes, trace.memory_mb, trace.gpus, trace.exclusive
