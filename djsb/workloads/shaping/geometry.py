"""A job's geometry and a partition's geometry limits (paper 003 sec. 3).

A job's *geometry* is the product of the CPU cores it asks for and its time limit (003 sec. 1). A
partition admits cores in [min_cpus, max_cpus] and time limits up to max_time (Figure 1 of 003);
max_cpus is also capped by the cores the partition's nodes have. Shaping changes the ratio of the
two factors and keeps their product: with linear speed-up (003 sec. 3), X times the cores
divides the time limit, and the run time, by X.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from djsb.workloads.job import TraceJob


@dataclass(frozen=True, slots=True)
class Limits:
    """What one partition admits: ``min_cpus`` .. ``max_cpus`` cores, time limits up to ``max_time``."""

    name: str
    min_cpus: int
    max_cpus: int
    max_time: float | None

    def why_not(self, cpus: int, time: float | None) -> str:
        """Why a request of ``cpus`` cores and ``time`` s does not fit ('' when it fits)."""
        if cpus < self.min_cpus:
            return f"{cpus} CPUs below {self.name}'s minimum {self.min_cpus}"
        if cpus > self.max_cpus:
            return f"{cpus} CPUs above {self.name}'s maximum {self.max_cpus}"
        if self.max_time is not None and time is not None and time > self.max_time:
            return f"time limit {time:g} s above {self.name}'s MaxTime {self.max_time:g} s"
        return ""

    def fits(self, cpus: int, time: float | None) -> bool:
        """Does a request of ``cpus`` cores and ``time`` s fit?"""
        return not self.why_not(cpus, time)


def geometry(job: TraceJob) -> float:
    """Cores x time limit in core-seconds (cores x run time when the job gives no limit)."""
    return job.cpus * (job.requested_time if job.requested_time is not None else job.run_time)


def reshaped(job: TraceJob, cpus: int, partition: str) -> TraceJob:
    """``job`` on ``cpus`` cores in ``partition``, time limit and run time scaled by old / new cores.

    The job no longer asks for a node count (its cores spread as the partition places them).
    """
    scale = job.cpus / cpus
    limit = job.requested_time * scale if job.requested_time is not None else None
    return dataclasses.replace(job, cpus=cpus, nodes=None, partition=partition, requested_time=limit,
                               run_time=job.run_time * scale)


def cores_within(job: TraceJob, limits: Limits) -> int | None:
    """The core count nearest the job's own at which its geometry fits ``limits`` (None: none does).

    The time limit must come down to max_time, so the job needs at least geometry / max_time cores.
    """
    lowest = limits.min_cpus
    if limits.max_time is not None and job.requested_time is not None:
        lowest = max(lowest, math.ceil(geometry(job) / limits.max_time))
        while lowest <= limits.max_cpus and not limits.fits(lowest, geometry(job) / lowest):
            lowest += 1  # float rounding of the division
    if lowest > limits.max_cpus:
        return None
    return min(max(job.cpus, lowest), limits.max_cpus)
