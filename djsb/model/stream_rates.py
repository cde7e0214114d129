"""DJSB's rate model: memory-bound STREAM-like MPI+OpenMP jobs sharing nodes (djsb/appmodel.py).

Per node, the runnable threads are the CPUs held by the running jobs that have a
:class:`~djsb.model.shape.JobShape` (a shaped job runs one thread per CPU it holds, so a shrunk
job runs fewer threads per task). A shaped job's rate is its throughput now over its throughput
alone at its full thread count on the same nodes (roofline node bandwidth, processor sharing,
slowest task), times the time-slicing efficiency while one of its nodes has more runnable threads
than cores: points 1-4 of djsb/appmodel.py. A stalled job (after a resume) still counts as
runnable, since its threads re-synchronise. With a cache size and a measured gain curve, each
node's bandwidth also depends on the bytes its runnable shaped jobs sweep (point 6): the sum of
their footprints on the node (tasks there x memory per task, the job's own input) now, the job's
own footprint alone; a suspended job's memory stays resident but is not swept.

Jobs without a shape (a background trace, paper 001's "busy cluster") are foreign codes whose
memory behaviour the trace does not record: they progress at rate 1 (their trace run time), hold
cores (so a DJSB job cannot take them without oversubscribing) and draw no modelled node
bandwidth. This keeps the trace's own run times and the benchmark's calibration independent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from djsb import appmodel
from djsb.model.cluster_state import ClusterState
from djsb.model.job import SimJob

MIB = 2**20
"""Bytes of the model's memory unit (JobShape.memory_per_task is in MiB, Slurm's --mem "MB")."""


@dataclass(frozen=True)
class StreamRates:
    """Node bandwidth parameters of :mod:`djsb.appmodel` (GB/s), the time-slicing efficiency, and
    the cache model: a node's last-level cache in bytes and the measured gain curve
    ((working set / cache, gain) points; empty: bandwidth independent of the working set)."""

    core_bandwidth: float
    memory_bandwidth: float
    timeslice_efficiency: float = 1.0
    cache_bytes: float = 0.0
    cache_curve: tuple[tuple[float, float], ...] = ()

    def rates(self, active: Sequence[SimJob], state: ClusterState, now: float) -> list[float]:
        """Each active job's rate (see the module docstring)."""
        runnable: dict[int, int] = {}
        swept: dict[int, float] = {}
        for job in active:
            if job.shape is not None:
                for node, cpus in job.alloc:
                    runnable[node] = runnable.get(node, 0) + cpus
                for node, footprint in self._footprints(job):
                    swept[node] = swept.get(node, 0.0) + footprint
        return [self._rate(job, runnable, swept, state) for job in active]

    def _rate(self, job: SimJob, runnable: dict[int, int], swept: dict[int, float],
              state: ClusterState) -> float:
        if job.shape is None or job.tasks is None:
            return 1.0
        cores = state.node_cores
        placed = list(zip(job.alloc, job.tasks, strict=True))
        full = job.shape.cpus_per_task
        threads = max(1, min(cpus // tasks for (_, cpus), tasks in placed))
        now = appmodel.task_throughput(threads, [self._speed(runnable[node], cores[node], swept.get(node, 0))
                                                 for node, _ in job.alloc])
        alone = appmodel.task_throughput(full, [self._speed(tasks * full, cores[node], footprint)
                                                for ((node, _), tasks), (_, footprint)
                                                in zip(placed, self._footprints(job), strict=True)])
        oversubscribed = any(runnable[node] > cores[node] for node, _ in job.alloc)
        return appmodel.progress_rate(now, alone, oversubscribed=oversubscribed,
                                      timeslice_efficiency=self.timeslice_efficiency)

    @staticmethod
    def _footprints(job: SimJob) -> list[tuple[int, float]]:
        """(node, bytes the job holds there): its tasks on the node x its memory per task (0 unknown)."""
        if job.shape is None or job.tasks is None:
            return []
        per_task = (job.shape.memory_per_task or 0.0) * MIB
        return [(node, tasks * per_task) for (node, _), tasks in zip(job.alloc, job.tasks, strict=True)]

    def _speed(self, runnable: int, cores: int, working_set: float) -> float:
        gain = appmodel.cache_gain(working_set, self.cache_bytes, self.cache_curve)
        return appmodel.thread_speed(runnable, cores, self.core_bandwidth, self.memory_bandwidth, gain)
