"""DJSB's rate model: memory-bound STREAM-like MPI+OpenMP jobs sharing nodes (djsb/appmodel.py).

Per node, the runnable threads are the CPUs held by the running jobs that have a
:class:`~djsb.model.shape.JobShape` (a shaped job runs one thread per CPU it holds, so a shrunk
job runs fewer threads per task). A shaped job's rate is its throughput now over its throughput
alone at its full thread count on the same nodes (roofline node bandwidth, processor sharing,
slowest task), times the time-slicing efficiency while one of its nodes has more runnable threads
than cores: points 1-4 of djsb/appmodel.py. A stalled job (after a resume) still counts as
runnable, since its threads re-synchronise.

Jobs without a shape (a background trace, paper 001's "busy cluster") are foreign codes whose
memory behaviour the trace does not record: they progress at rate 1 (their trace run time), hold
cores (so a DJSB job cannot take them without oversubscribing) and draw no modelled node
bandwidth. This keeps the trace's own run times and the benchmark's calibration independent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from djsb import appmodel
from djsb.model.cluster import ClusterState
from djsb.model.job import SimJob


@dataclass(frozen=True)
class StreamRates:
    """Node bandwidth parameters of :mod:`djsb.appmodel` (GB/s) and the time-slicing efficiency."""

    core_bandwidth: float
    memory_bandwidth: float
    timeslice_efficiency: float = 1.0

    def rates(self, active: Sequence[SimJob], state: ClusterState, now: float) -> list[float]:
        """Each active job's rate (see the module docstring)."""
        runnable: dict[int, int] = {}
        for job in active:
            if job.shape is not None:
                for node, cpus in job.alloc:
                    runnable[node] = runnable.get(node, 0) + cpus
        return [self._rate(job, runnable, state) for job in active]

    def _rate(self, job: SimJob, runnable: dict[int, int], state: ClusterState) -> float:
        if job.shape is None or job.tasks is None:
            return 1.0
        cores = state.node_cores
        placed = list(zip(job.alloc, job.tasks, strict=True))
        full = job.shape.cpus_per_task
        threads = max(1, min(cpus // tasks for (_, cpus), tasks in placed))
        now = appmodel.task_throughput(threads, [self._speed(runnable[node], cores[node])
                                                 for node, _ in job.alloc])
        alone = appmodel.task_throughput(full, [self._speed(tasks * full, cores[node])
                                                for (node, _), tasks in placed])
        oversubscribed = any(runnable[node] > cores[node] for node, _ in job.alloc)
        return appmodel.progress_rate(now, alone, oversubscribed=oversubscribed,
                                      timeslice_efficiency=self.timeslice_efficiency)

    def _speed(self, runnable: int, cores: int) -> float:
        return appmodel.thread_speed(runnable, cores, self.core_bandwidth, self.memory_bandwidth)
