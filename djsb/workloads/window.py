"""A window of a workload, shifted and scaled to run as background load next to a benchmark.

The simulated job module runs DJSB's jobs on a busy cluster: it takes ``count`` jobs
of a trace from the first one submitted at or after ``start`` seconds, shifts them so that this
instant becomes ``-warmup`` (the benchmark starts at 0, on a cluster already loaded by
``warmup`` seconds of arrivals), and optionally scales CPU counts and memory together (a trace
from a machine of another size: memory per CPU is kept, also where a count rounds) and times
(submit, run and requested times alike, which keeps the load's shape). Scaled CPU counts round
to the nearest integer, at least 1.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from djsb.workloads.job import TraceJob


def background_window(jobs: Sequence[TraceJob], *, start: float = 0.0, count: int | None = None,
                      warmup: float = 0.0, cpu_scale: float = 1.0, time_scale: float = 1.0,
                      first_id: int = 1) -> list[TraceJob]:
    """The window, renumbered from ``first_id``, without partition or QoS (one partition runs it)."""
    chosen = sorted((j for j in jobs if j.submit >= start), key=lambda j: (j.submit, j.job_id))
    if count is not None:
        chosen = chosen[:count]
    return [dataclasses.replace(
        job, job_id=first_id + k, submit=(job.submit - start) * time_scale - warmup,
        cpus=_scaled_cpus(job, cpu_scale), memory_mb=None if job.memory_mb is None
        else job.memory_mb / job.cpus * _scaled_cpus(job, cpu_scale),
        nodes=None, partition=None, qos=None, depends_on=())
        for k, job in enumerate(chosen)]


def _scaled_cpus(job: TraceJob, cpu_scale: float) -> int:
    return max(1, round(job.cpus * cpu_scale))
