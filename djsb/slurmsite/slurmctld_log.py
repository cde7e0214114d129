"""When a slurmctld started and ended its jobs, to the millisecond, read from its log.

sacct gives Submit, Start and End to the whole second. slurmctld's log, at its default level (info),
stamps to the millisecond each submission (``_slurm_rpc_submit_batch_job: JobId=N InitPrio=...``),
each start by the main scheduler (``sched: Allocate JobId=N NodeList=...``), each start by the
backfill scheduler (``sched/backfill: _start_job: Started JobId=N in PART on NODES``) and each job's
end (``_job_complete: JobId=N done``). From them: how long each job held its CPUs,
whether Slurm started jobs at the events that freed room or on a clock (its background loop's
whole-second wake-ups), and how long after an end a waiting job started. Lines of other kinds are
skipped: a log holds many.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from djsb.errors import InputError
from djsb.jobs.hostlist import expand_hostlist
from djsb.workloads._textio import read_bounded
from djsb.workloads.sacct_columns import parse_sacct_time

STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?\]")
JOB = r"JobId=(?:\d+_\d+\((\d+)\)|(\d+))"
"""A job id as slurmctld logs it: ``N``, or ``A_T(N)`` for task T of array A (N: JobIDRaw)."""
MAIN = re.compile(rf"\bsched: Allocate {JOB} NodeList=(\S+)")
BACKFILL = re.compile(rf"\b_start_job: Started {JOB} in \S+ on (\S+)")
END = re.compile(rf"\b_job_complete: {JOB} done")
SUBMIT = re.compile(r"\b_slurm_rpc_submit_batch_job: JobId=(\d+) ")
"""A submission, by the job's id (an array's: its tasks are not logged one by one)."""
MAX_PASSES = 5_000_000
"""The most pass instants a replay rebuilds of one scheduler's clock (40 MB of floats; 58 days of
slurmctld's one-second main loop)."""
MAIN_LOOP_PERIOD = 1.0
"""Seconds between two wake-ups of slurmctld's background loop, which runs the main scheduler's
pass a submission or an end asked for (controller.c ``_slurmctld_background``: ten 100 ms sleeps,
then its work)."""


@dataclass(frozen=True)
class LoggedStart:
    """A job's start as slurmctld logged it: when (seconds, the log's local clock), by which
    scheduler (main or backfill), on which nodes."""

    job_id: int
    time: float
    scheduler: str
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class SchedulerLog:
    """The starts, ends and submissions of a slurmctld log, by job id (a job started again after a
    requeue keeps its first start and end)."""

    starts: dict[int, LoggedStart]
    ends: dict[int, float]
    submits: dict[int, float] = field(default_factory=dict)


def parse_scheduler_log(text: str, source: str = "slurmctld log", key: str = "log") -> SchedulerLog:
    """The starts, ends and submissions in ``text``, a slurmctld log; a line of one of them whose
    time stamp or node list cannot be read is an error naming ``source``, the line and ``key`` (the
    option that gave the log)."""
    starts: dict[int, LoggedStart] = {}
    ends: dict[int, float] = {}
    submits: dict[int, float] = {}
    for number, line in enumerate(text.splitlines(), 1):
        found = (MAIN.search(line), BACKFILL.search(line), END.search(line), SUBMIT.search(line))
        if not any(found):
            continue
        stamp = STAMP.match(line)
        at = parse_sacct_time(stamp.group(1) + (stamp.group(2) or "")) if stamp else None
        if at is None:
            raise InputError("no [YYYY-MM-DDThh:mm:ss.mmm] time stamp", source=source, line=number, key=key)
        main, backfill, end, submit = found
        if submit is not None:
            submits.setdefault(int(submit.group(1)), at)
            continue
        if end is not None:
            ends.setdefault(int(end.group(1) or end.group(2)), at)
            continue
        match, scheduler = (main, "main") if main is not None else (backfill, "backfill")
        assert match is not None
        job = int(match.group(1) or match.group(2))
        if job not in starts:
            try:
                nodes = tuple(expand_hostlist(match.group(3), check=False))
            except ValueError as exc:
                raise InputError(str(exc), source=source, line=number, key=key) from exc
            starts[job] = LoggedStart(job, at, scheduler, nodes)
    return SchedulerLog(starts, ends, submits)


def read_scheduler_log(path: Path) -> SchedulerLog:
    """:func:`parse_scheduler_log` of the log file at ``path`` (plain or gzip), its errors naming it."""
    text = read_bounded(path, what="a slurmctld log", key="--slurmctld-log")
    return parse_scheduler_log(text, str(path), "--slurmctld-log")


def pass_grid(instants: Sequence[float], period: float, together: float = 0.05) -> list[float]:
    """The instants of a pass clock of about ``period`` seconds that ran at ``instants`` (the log's
    starts by one scheduler: the passes that started something): the distinct instants (those
    within ``together`` of the previous one are one pass), and between two of them a whole number
    of periods apart the passes that started nothing, evenly spaced (the clock drifts: each loop
    adds its own work to its sleep)."""
    ticks: list[float] = []
    for instant in sorted(instants):
        if ticks and instant - ticks[-1] <= together:
            continue
        if ticks:
            gap = instant - ticks[-1]
            count = round(gap / period)
            ticks += [ticks[-1] + index * gap / count for index in range(1, count)]
        ticks.append(instant)
    return ticks


def pass_instants(log: SchedulerLog, bf_interval: float, span: tuple[float, float]) -> dict[str, list[float]]:
    """The instants of Slurm's passes in ``log`` over ``span`` (first, last: the log's clock), by
    scheduler (``main``: its background loop's wake-ups, about a second apart; ``backfill``: every
    ``bf_interval``), as :func:`pass_grid` rebuilds each clock from the starts it logged over that
    span; a scheduler that logged no start there has no clock to rebuild and is left out (its
    passes run as configured). A span of more than :data:`MAX_PASSES` passes of a clock is an
    InputError (before the instants are made): the log of a shorter window is needed."""
    first, last = span
    instants = {}
    for kind, period in (("main", MAIN_LOOP_PERIOD), ("backfill", bf_interval)):
        if (last - first) / period > MAX_PASSES:
            raise InputError(f"the dump spans {last - first:.0f} s: more than {MAX_PASSES:,} passes of "
                             f"Slurm's {kind} scheduler (every {period:g} s) to rebuild from its log; replay "
                             f"a shorter window (sacct -S/-E, or --start)", key="--slurmctld-log")
        logged = [start.time for start in log.starts.values()
                  if start.scheduler == kind and first <= start.time <= last]
        if logged:
            instants[kind] = pass_grid(logged, period)
    return instants


def on_clock_share(times: Sequence[float], tolerance: float = 0.05) -> float:
    """The share of successive distinct instants of ``times`` (more than 0.1 s apart) that lie a
    whole number of seconds apart, within ``tolerance``: near 1 when they fall on one whole-second
    clock, near 2 x ``tolerance`` when they fall at random."""
    ordered = sorted(times)
    gaps = [(later - earlier) % 1.0 for earlier, later in zip(ordered, ordered[1:], strict=False)
            if later - earlier > 0.1]
    if not gaps:
        return float("nan")
    return sum(1 for gap in gaps if gap <= tolerance or gap >= 1.0 - tolerance) / len(gaps)


def reuse_lags(log: SchedulerLog, eligible: Mapping[int, float], waited: float = 2.0) -> list[float]:
    """For each job of ``eligible`` (its eligible time, on the log's clock) that started at least
    ``waited`` seconds after it: the time from the last end, on one of its nodes, before its start
    to its start. The job waited for room, so this is how long the room freed there stayed idle."""
    ends_on: dict[str, list[float]] = {}
    for job, end in log.ends.items():
        start = log.starts.get(job)
        for node in start.nodes if start is not None else ():
            ends_on.setdefault(node, []).append(end)
    for times in ends_on.values():
        times.sort()
    lags = []
    for job, since in eligible.items():
        start = log.starts.get(job)
        if start is None or start.time - since < waited:
            continue
        before = [times[index - 1] for node in start.nodes
                  if (index := bisect.bisect_right(times := ends_on.get(node, []), start.time))]
        if before:
            lags.append(start.time - max(before))
    return lags


def lags_since_any_end(log: SchedulerLog, eligible: Mapping[int, float], waited: float = 2.0) -> list[float]:
    """For each job of ``eligible`` that started at least ``waited`` seconds after it: the time from
    the last end anywhere before its start to its start. Unlike :func:`reuse_lags` it does not depend
    on which nodes the job was given, so a replay that places jobs elsewhere compares with it."""
    ends = sorted(log.ends.values())
    lags = []
    for job, since in eligible.items():
        start = log.starts.get(job)
        if start is None or start.time - since < waited:
            continue
        index = bisect.bisect_right(ends, start.time)
        if index:
            lags.append(start.time - ends[index - 1])
    return lags
