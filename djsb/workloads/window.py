"""Windows of a workload: the slice of a trace an experiment replays, shifted to start at 0.

Two windows, the same operation (jobs of an interval of the trace, their submit times shifted):

* **The busiest week** a dynamic experiment replays (004 sec. 3.3.2). The thesis looked for "the
  most congested portions of the log" and settled on a Sunday-to-Sunday week (10/6/2012 - 17/6/2012
  of CEA-Curie), submitting its workflows on the Thursday and Friday at 10, 15 and 20 h (Table 3.24).
  Here the week is found automatically: among the weeks starting at a local Sunday midnight (from
  the SWF header's ``UnixStartTime`` and ``TimeZoneString``; without them, every 7 x 86400 s from the
  trace's start), the one whose submitted jobs ask the most work (sum of CPUs x run time: the demand
  that builds queues). The window replayed is that week plus ``warmup`` seconds before it (so the
  machine is already loaded), shifted so that the warm-up starts at 0: the week then starts at
  ``warmup`` on the run's clock.
* **Background load** next to a benchmark: the simulated job module runs DJSB's jobs on a busy
  cluster. It takes ``count`` jobs of a trace from the first one submitted at or after ``start``
  seconds, shifts them so that this instant becomes ``-warmup`` (the benchmark starts at 0, on a
  cluster already loaded by ``warmup`` seconds of arrivals), and optionally scales CPU counts and
  memory together (a trace from a machine of another size: memory per CPU is kept, also where a
  count rounds) and times (submit, run and requested times alike, which keeps the load's shape).
  Scaled CPU counts round to the nearest integer, at least 1.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from bisect import bisect_left
from collections.abc import Sequence
from itertools import accumulate
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from djsb.workloads.job import TraceJob
from djsb.workloads.swf import Workload
from djsb.yamlnodes import Located, as_duration, read_fields

DAY = 86400.0
WEEK = 7 * DAY
SUNDAY = 6  # datetime.weekday()


@dataclasses.dataclass(frozen=True, slots=True)
class Window:
    """The chosen week's ``start`` on the trace's clock, its ``length`` and the ``warmup`` before it;
    ``local_start`` names the start in the trace's local time (None without a time zone)."""

    start: float
    length: float
    warmup: float
    local_start: str | None


def week_starts(workload: Workload) -> list[float]:
    """Trace-clock times of the local Sunday midnights within the trace (every 7 days from 0 without a
    usable header)."""
    last = max((j.submit for j in workload.jobs), default=0.0)
    zone = _zone(workload)
    unix_start = workload.header_int("UnixStartTime")
    if zone is None or unix_start is None:
        return [k * WEEK for k in range(int(last // WEEK) + 1)]
    origin = unix_start + workload.time_origin
    day = dt.datetime.fromtimestamp(origin, zone).date()
    day += dt.timedelta(days=(SUNDAY - day.weekday()) % 7)
    starts = []
    while (start := dt.datetime.combine(day, dt.time(), zone).timestamp() - origin) <= last:
        if start >= 0:
            starts.append(start)
        day += dt.timedelta(days=7)
    return starts


def busiest(jobs: Sequence[TraceJob], starts: Sequence[float], length: float = WEEK) -> float:
    """The start whose ``length`` seconds hold the largest submitted work (CPUs x run time); the
    earliest on ties."""
    ordered = sorted(jobs, key=lambda j: j.submit)
    submits = [j.submit for j in ordered]
    work = [0.0, *accumulate(j.cpus * j.run_time for j in ordered)]

    def demand(start: float) -> float:
        return work[bisect_left(submits, start + length)] - work[bisect_left(submits, start)]

    return max(starts, key=lambda s: (demand(s), -s))


def window_jobs(jobs: Sequence[TraceJob], window: Window) -> list[TraceJob]:
    """Jobs submitted from ``warmup`` before the week to its end, shifted so the warm-up starts at 0."""
    first = window.start - window.warmup
    end = window.start + window.length
    return [dataclasses.replace(j, submit=j.submit - first) for j in jobs if first <= j.submit < end]


def read_window(node: Located, workload: Workload) -> Window:
    """A ``window: {start: busiest | SECONDS, length: 604800, warmup: 172800}`` section."""
    fields = read_fields(node, {"start": lambda n: n,
                                "length": lambda n: as_duration(n, unit="s", minimum=1.0),
                                "warmup": lambda n: as_duration(n, unit="s")})
    length = fields.get("length", WEEK)
    start_node = fields.get("start")
    if start_node is None or start_node.value == "busiest":
        start = busiest(workload.jobs, week_starts(workload), length)
    else:
        start = as_duration(start_node, unit="s")
    zone = _zone(workload)
    unix_start = workload.header_int("UnixStartTime")
    local = None
    if zone is not None and unix_start is not None:
        local = dt.datetime.fromtimestamp(unix_start + workload.time_origin + start, zone).isoformat()
    return Window(start, length, fields.get("warmup", 0.0), local)


def _zone(workload: Workload) -> ZoneInfo | None:
    name = workload.header.get("TimeZoneString")
    if not name:
        return None
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        return None


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
