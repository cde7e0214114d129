"""The pending jobs of a replay, in the order Slurm's passes walk them, with the counters the passes
test without walking them.

The order is each job's ``sort_key`` (preemptors first under preempt/qos, partition PriorityTier,
priority, submit time, job id; see :class:`~djsb.model.job.SimJob`). A job joins when it becomes
eligible and leaves when it starts or is cancelled; a pass's starts are taken out of the list
together at the end of the pass (the pass walks the list), their counters at once. The counters: the
queued cores (the utilisation timeline's), each partition's least need among its queued jobs
(whether any queued job could fit the free capacity, which decides whether a pass can start
anything), the same per partition and planned duration (whether any could fit a backfill plan's
capacity over its planned run), and per partition the queued jobs whose placement depends on more
than the partition's unit count (:meth:`JobQueue.plans_nodes`), whose partitions the profile planner
plans node by node.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Callable, Hashable, Iterator, Sequence
from itertools import islice
from operator import attrgetter, lt
from typing import Generic, TypeVar

from djsb.model.cluster_state import ClusterState, PartitionState
from djsb.model.job import SimJob
from djsb.model.reasons import NONE, PRIORITY, RESOURCES, PassRecord

K = TypeVar("K", bound=Hashable)


class Needs(Generic[K]):
    """How many jobs of a set need each number of units, per group (a partition, or a partition and
    a planned duration), and each group's least need. Per partition it says whether some job of
    the set could fit the free capacity (ignoring node shapes), the necessary condition of every
    start (:meth:`ClusterState.allocate` refuses a job needing more than its partition's free
    units); per planned duration too, whether some job could fit a plan's least capacity over its
    run."""

    def __init__(self) -> None:
        self.counts: dict[K, dict[int, int]] = {}
        self.least: dict[K, int] = {}  # per group with jobs in the set: their least need

    def copy(self) -> Needs[K]:
        """An independent copy (a pass consumes it as it walks the queue)."""
        other: Needs[K] = Needs()
        other.counts = {key: dict(counts) for key, counts in self.counts.items()}
        other.least = dict(self.least)
        return other

    def add(self, key: K, need: int) -> None:
        """A job of group ``key`` needing ``need`` units joins the set."""
        counts = self.counts.setdefault(key, {})
        counts[need] = counts.get(need, 0) + 1
        least = self.least.get(key)
        if least is None or need < least:
            self.least[key] = need

    def remove(self, key: K, need: int) -> None:
        """A job of group ``key`` needing ``need`` units leaves the set."""
        counts = self.counts[key]
        counts[need] -= 1
        if not counts[need]:
            del counts[need]
            if need == self.least[key]:
                if counts:
                    self.least[key] = min(counts)
                else:
                    del self.least[key]

    def fit(self: Needs[int], parts: Sequence[PartitionState]) -> bool:
        """Could a job of the set (grouped by partition) fit the free capacity of its partition now?
        (Asked before every pass and at every job a pass walks: a loop, not ``any`` over a generator.)"""
        for p, least in self.least.items():
            if least <= parts[p].free:
                return True
        return False


class NeedsLeft(Generic[K]):
    """The needs of a set (``base``) but the jobs a pass has walked, copying a group's counts when
    the pass walks one of its jobs: a pass mostly walks a few jobs of a queue holding many groups.
    ``base`` may lose only jobs the pass walked meanwhile (its starts)."""

    def __init__(self, base: Needs[K]) -> None:
        self.base = base
        self.walked: dict[K, Needs[K]] = {}  # the groups a walked job belongs to, each its own copy

    def remove(self, key: K, need: int) -> None:
        """The pass walked a job of group ``key`` needing ``need`` units."""
        group = self.walked.get(key)
        if group is None:
            group = self.walked[key] = Needs()
            group.counts[key] = dict(self.base.counts[key])
            group.least[key] = self.base.least[key]
        group.remove(key, need)

    def least(self) -> Iterator[tuple[K, int]]:
        """Each group with jobs left and their least need."""
        walked = self.walked
        for key, least in self.base.least.items():
            group = walked.get(key)
            if group is None:
                yield key, least
            elif key in group.least:
                yield key, group.least[key]

    def fit(self: NeedsLeft[int], parts: Sequence[PartitionState]) -> bool:
        """:meth:`Needs.fit` of the jobs left."""
        return any(least <= parts[p].free for p, least in self.least())


class JobQueue:
    """The pending jobs on ``state``; ``node_memory``: whether the cluster's nodes give their memory
    (then a job asking memory is placed by node memory too)."""

    def __init__(self, state: ClusterState, node_memory: bool) -> None:
        self.state = state
        self.node_memory = node_memory
        self.jobs: list[SimJob] = []
        self.cores = 0
        self.needs: Needs[int] = Needs()
        """The queued jobs' needs per partition, out of it as soon as a job starts."""
        self.needs_by_plan: Needs[tuple[int, float]] = Needs()
        """The same per partition and planned duration (``SimJob.plan``)."""
        self.node_jobs = [0] * len(state.partitions)  # queued jobs planned node by node, per partition
        self.shaped = 0  # queued jobs laid out as tasks per node (JobShape)
        self.record = PassRecord()
        """The main passes' record, for the pending reasons of the jobs they did not reach."""

    def add(self, job: SimJob) -> None:
        """An eligible job joins the queue at its place in the order (its priority is set)."""
        jobs = self.jobs
        if not jobs or jobs[-1].sort_key <= job.sort_key:
            jobs.append(job)
        else:
            insort(jobs, job, key=_sort_key)
        self.cores += job.trace.cpus
        p = job.part.index
        self.needs.add(p, job.need)
        self.needs_by_plan.add((p, job.plan), job.need)
        self.node_jobs[p] += self.plans_nodes(job)
        self.shaped += job.shape is not None
        job.queued = self.record.passes

    def cancel(self, job: SimJob) -> None:
        """A pending job is cancelled: out of the list and the counters."""
        self.jobs.remove(job)
        self.started(job)

    def started(self, job: SimJob) -> None:
        """A job starts: out of the counters now, out of the list at :meth:`remove_started`."""
        self.cores -= job.trace.cpus
        p = job.part.index
        self.node_jobs[p] -= self.plans_nodes(job)
        self.shaped -= job.shape is not None
        self.needs.remove(p, job.need)
        self.needs_by_plan.remove((p, job.plan), job.need)
        stopped = self.record.stopped  # a pass that stopped before reaching it gave it Priority (PassRecord)
        if stopped > job.queued and stopped > job.tested and (job.reason is NONE or job.reason is RESOURCES):
            job.reason = PRIORITY

    def remove_started(self, started: set[int]) -> None:
        """Take the jobs a pass started (their ids) out of the list; they are mostly at its head."""
        jobs = self.jobs
        k = 0
        while k < len(jobs) and jobs[k].job_id in started:
            k += 1
        if k == len(started):
            del jobs[:k]
        else:
            self.jobs = [j for j in jobs if j.job_id not in started]

    def reorder(self) -> bool:
        """Sort the list again after a priority recomputation; say whether the order changed.

        Sort keys are unique (they end with the job id), so the order changes exactly when the
        keys are out of order, which is checked first: most recomputations keep the order."""
        keys = list(map(_sort_key, self.jobs))
        if all(map(lt, keys, islice(keys, 1, None))):
            return False
        self.jobs.sort(key=_sort_key)
        return True

    def something_fits(self) -> bool:
        """Could any queued job fit the free capacity of its partition (ignoring node shapes)?"""
        return self.needs.fit(self.state.partitions)

    def plans_nodes(self, job: SimJob) -> bool:
        """Whether a job's placement depends on more than its partition's unit count (node memory
        when the nodes and the job give it, GPUs, a node count on a non-exclusive partition, a task
        layout or node list, a partition whose cores may be shared, keeps spare cores, shares nodes or
        caps its CPUs per node, whole nodes asked by ``--exclusive``)."""
        part, trace = job.part, job.trace
        if job.shape is not None or trace.gpus is not None or part.forced or part.keeps_spare \
                or part.overlaps or part.spec.max_cpus_per_node is not None or trace.exclusive:
            return True
        memory = self.node_memory and bool(trace.memory_mb)
        return not part.exclusive and (trace.nodes is not None or memory)

    def node_level_partitions(self) -> set[int]:
        """Partitions whose reservations are all planned node by node: those with a queued job whose
        placement depends on its nodes, and the partitions sharing their nodes (a unit-count
        reservation made there would not see which nodes the others keep)."""
        parts = self.state.partitions
        return {q for p, count in enumerate(self.node_jobs) if count for q in (p, *parts[p].overlaps)}


_sort_key: Callable[[SimJob], tuple[float, float, float, int]] = attrgetter("sort_key")
