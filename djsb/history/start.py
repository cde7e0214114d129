"""Where a replay of a recorded history starts: the jobs that ended before the instant (they only charge
fair share: :func:`usage_before`), those running at it (placed where the record put them) and those
pending at it (queued at it, eligible since their recorded Eligible time), and the clock's grid."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from djsb.jobs.hostlist import NO_NODES, expand_hostlist
from djsb.model import RunningAtStart
from djsb.workloads.job import RecordedOutcome, TraceJob
from djsb.workloads.swf import Workload


@dataclass(frozen=True)
class StartSplit:
    """The jobs of a history at the instant its replay starts: those replayed (submitted after it,
    or pending at it), those running at it (Start < start < End, by the record) and those ended by
    it."""

    replayed: list[TraceJob]
    running: list[TraceJob]
    ended: list[TraceJob]


def split_at_start(jobs: Sequence[TraceJob], recorded: Mapping[int, RecordedOutcome],
                   start: float) -> StartSplit:
    """``jobs`` split at ``start`` by their recorded start and end (start + run time); a job
    without a recorded start is replayed."""
    replayed, running, ended = [], [], []
    for job in jobs:
        outcome = recorded.get(job.job_id)
        if outcome is None or outcome.start >= start:
            replayed.append(job)
        elif outcome.start + job.run_time > start:
            running.append(job)
        else:
            ended.append(job)
    return StartSplit(replayed, running, ended)


def usage_before(jobs: Sequence[TraceJob], recorded: Mapping[int, RecordedOutcome], start: float,
                 half_life: float) -> dict[tuple[str, str], float]:
    """The RawUsage (CPU-seconds decayed to ``start``, halving every ``half_life``; 0: no decay) each
    (user, account) has at ``start`` from the part before it of ``jobs``' recorded runs, charged as
    the model charges a running job (:class:`~djsb.model.priority.accounts.AccountTree`): CPUs
    times the integral of 2^-((start - t) / half_life) over the run."""
    usage: dict[tuple[str, str], float] = {}
    for job in jobs:
        outcome = recorded.get(job.job_id)
        if outcome is None or outcome.start >= start:
            continue
        end = min(outcome.start + job.run_time, start)
        if half_life > 0:
            charge = half_life / math.log(2) * (2.0 ** ((end - start) / half_life)
                                                - 2.0 ** ((outcome.start - start) / half_life))
        else:
            charge = end - outcome.start
        key = (job.user, job.account)
        usage[key] = usage.get(key, 0.0) + job.cpus * charge
    return usage


def node_list(outcome: RecordedOutcome | None) -> list[str]:
    """The nodes a job ran on by its record (none when the dump does not say)."""
    text = "" if outcome is None else outcome.node_list
    if text in NO_NODES:
        return []
    try:
        return expand_hostlist(text, check=False)
    except ValueError:
        return []


def clock_step(resolution: float) -> float:
    """The step a replay's clock counts from a multiple of (on the Unix clock, at or before the
    first submission): bf_resolution in whole seconds. slurmctld counts whole seconds (``time_t``)
    and sched/backfill floors its reservations to multiples of bf_resolution on that clock
    (backfill.c ``start_time / backfill_resolution * backfill_resolution``); the model floors its
    own clock, so its floors are Slurm's only on a clock counted from such a multiple (the
    calibration runs on the Unix clock itself, for the same reason)."""
    return float(max(1, round(resolution)))


def running_at_start(running: Sequence[TraceJob],
                     recorded: Mapping[int, RecordedOutcome]) -> list[RunningAtStart]:
    """The jobs running at the replay's start, begun when and where the record says."""
    return [RunningAtStart(job, recorded[job.job_id].start, tuple(node_list(recorded[job.job_id])))
            for job in running]


def queued_at(job: TraceJob, outcome: RecordedOutcome | None, begin: float) -> TraceJob:
    """``job`` submitted to the model when Slurm recorded it eligible, if that was later, and not
    before the replay's start ``begin`` (the wait is still counted from its submission on both
    sides)."""
    eligible = job.submit if outcome is None or outcome.eligible is None else outcome.eligible
    queued = max(job.submit, eligible, begin)
    return job if queued == job.submit else dataclasses.replace(job, submit=queued)


def eligible_before(jobs: Sequence[TraceJob], workload: Workload, begin: float) -> dict[int, float]:
    """When each job pending at the replay's start ``begin`` became eligible, by the record (its
    Eligible, else its submission): the model ages it from there, as Slurm does."""
    found = {}
    for job in jobs:
        outcome = workload.recorded.get(job.job_id)
        eligible = outcome.eligible if outcome is not None and outcome.eligible is not None else job.submit
        if eligible < begin:
            found[job.job_id] = eligible
    return found
