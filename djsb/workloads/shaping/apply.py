"""Fit a workload to a partition layout: route each job, shape the misfits, list what changed.

Paper 003 sec. 5.3-5.4: the before-change workload replayed under the after-change layout, with
or without shaping. :func:`shape_workload` returns the jobs to replay and one
:class:`ShapingRecord` per job it moved to another partition, reshaped or rejected, with the
geometry before and after (``shaped.csv`` of ``djsb simulate``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from djsb.workloads.job import TraceJob
from djsb.workloads.shaping.geometry import Limits
from djsb.workloads.shaping.policy import SHAPING_POLICIES, ShapingPolicy

RECORD_COLUMNS = ("job_id", "action", "partition_before", "cpus_before", "time_limit_before",
                  "run_time_before", "partition_after", "cpus_after", "time_limit_after", "run_time_after",
                  "reason")


@dataclass(frozen=True, slots=True)
class ShapingRecord:
    """One job that did not stay as recorded: ``before`` and ``after`` (None when rejected).

    ``action``: ``moved`` (same geometry, another partition), ``shaped`` (new geometry) or
    ``rejected`` (fits nowhere, even shaped); ``reason`` says why it did not fit as recorded.
    """

    action: str
    before: TraceJob
    after: TraceJob | None
    reason: str = ""

    def row(self) -> tuple[object, ...]:
        """The record as a row of :data:`RECORD_COLUMNS`."""
        b, a = self.before, self.after
        after = (a.partition, a.cpus, a.requested_time, a.run_time) if a is not None else (None,) * 4
        return (b.job_id, self.action, b.partition, b.cpus, b.requested_time, b.run_time, *after, self.reason)


def home(job: TraceJob, layout: Sequence[Limits]) -> tuple[Limits | None, str]:
    """Where the job fits unchanged: its own partition if the layout has it, else the first that fits.

    Without a fit, the reason names each partition's objection.
    """
    own = [p for p in layout if p.name == job.partition]
    candidates = own or list(layout)
    for limits in candidates:
        if limits.fits(job.cpus, job.requested_time):
            return limits, ""
    objections = (p.why_not(job.cpus, job.requested_time) for p in candidates)
    return None, "fits no partition: " + "; ".join(objections)


def fit_job(job: TraceJob, layout: tuple[Limits, ...],
            policy: ShapingPolicy) -> tuple[TraceJob | None, ShapingRecord | None]:
    """The job as it is replayed (None: rejected) and its record (None: it stays as recorded).

    A job without a partition takes the first that fits, as Slurm gives it the default one,
    without a record.
    """
    limits, misfit = home(job, layout)
    if limits is not None:
        placed = dataclasses.replace(job, partition=limits.name)
        if job.partition in (None, limits.name):
            return placed, None
        return placed, ShapingRecord("moved", job, placed)
    shaped = SHAPING_POLICIES.get(policy.policy)(job, layout, policy)
    if isinstance(shaped, str):
        return None, ShapingRecord("rejected", job, None, f"{misfit}; {shaped}")
    action = "shaped" if shaped.cpus != job.cpus else "moved"  # same cores: the geometry is unchanged
    return shaped, ShapingRecord(action, job, shaped, misfit)


def shape_workload(jobs: Sequence[TraceJob], layout: tuple[Limits, ...],
                   policy: ShapingPolicy) -> tuple[list[TraceJob], list[ShapingRecord]]:
    """The jobs to replay under ``layout`` (in trace order) and the record of every job changed."""
    kept: list[TraceJob] = []
    records: list[ShapingRecord] = []
    for job in jobs:
        placed, record = fit_job(job, layout, policy)
        if placed is not None:
            kept.append(placed)
        if record is not None:
            records.append(record)
    return kept, records


def records_frame(records: Sequence[ShapingRecord]) -> pd.DataFrame:
    """The records as a table of :data:`RECORD_COLUMNS` (shaped.csv)."""
    return pd.DataFrame([r.row() for r in records], columns=list(RECORD_COLUMNS))
