"""What a replay produced, as DataFrames: one row per started job, the utilisation timeline and
the rejected jobs, with the run's counters.

Built once, at the end of :meth:`~djsb.model.simulation.Simulation.run`, from the finished
:class:`~djsb.model.job.SimJob` records; the core keeps nothing else per job.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import pandas as pd

from djsb.jobs.hostlist import compress_hostlist
from djsb.model.job import FACTOR_NAMES, SimJob
from djsb.model.node_service import OUTAGE_COLUMNS, NodeService
from djsb.model.timeline import with_busy_gpus


@dataclass
class SimulationResult:
    """What a run produced: one row per started job, the utilisation timeline, counters."""

    jobs: pd.DataFrame
    utilisation: pd.DataFrame
    rejected: pd.DataFrame
    total_cores: int
    stats: dict[str, int] = field(default_factory=dict)
    total_gpus: int = 0
    """The machine's GPUs (0: it has none, and the jobs table has no ``gpus`` column)."""
    out_of_service: pd.DataFrame | None = None
    """With node events: one row per time a node was out of service (columns
    :data:`~djsb.model.node_service.OUTAGE_COLUMNS`), and the jobs table has ``state`` and ``requeues``
    columns; None without node events."""

    @property
    def killed(self) -> int:
        """Number of jobs killed at their time limit."""
        return int(self.jobs["killed"].sum()) if len(self.jobs) else 0


def build_result(finished: Sequence[SimJob], rejected: Sequence[tuple[int, str]], node_names: Sequence[str],
                 utilisation: pd.DataFrame, total_cores: int, stats: dict[str, int],
                 total_gpus: int = 0, service: NodeService | None = None,
                 preemption: bool = False, suspension: bool = False) -> SimulationResult:
    """The result of a run that finished ``finished`` and rejected ``rejected`` (job id, reason); on a
    machine with GPUs (``total_gpus``) the jobs table says how many each held (``gpus``) and the
    utilisation how many were held (``busy_gpus``); with node events (``service``) or
    ``preemption``, each job's state, requeues and last preemptor, with ``suspension`` (SUSPEND,GANG,
    or GANG's time-slicing) when a preemption last suspended it and its time suspended in all, and
    with node events the outages."""
    done = sorted(finished, key=lambda j: j.job_id)
    # Each list becomes a Series (a typed array) at once: the lists of boxed numbers of every
    # column together would double the result's peak memory on a full trace.
    columns = _job_columns(done, node_names, total_gpus > 0, service is not None or preemption, suspension)
    jobs = pd.DataFrame({name: pd.Series(values) if done else values for name, values in columns})
    rejected_frame = pd.DataFrame(rejected, columns=["job_id", "reason"])
    counters = dict(stats, killed=int(jobs["killed"].sum()), backfilled=int(jobs["backfilled"].sum()),
                    rejected=len(rejected_frame))
    if total_gpus > 0:
        utilisation = with_busy_gpus(utilisation, jobs)
    outages = pd.DataFrame(sorted(service.outages, key=itemgetter(2)), columns=list(OUTAGE_COLUMNS)) \
        if service is not None else None  # by start
    return SimulationResult(jobs, utilisation, rejected_frame, total_cores, counters, total_gpus, outages)


def _hostlists(jobs: list[SimJob], names: Sequence[str]) -> list[str]:
    """Each job's nodes in Slurm's hostlist notation (``n[0-31],n40``), one item per run."""
    pieces: dict[tuple[int, int], str] = {}  # the jobs of a trace reuse few runs
    lists = []
    for job in jobs:
        items = []
        for first, count, _ in job.alloc.runs:
            piece = pieces.get((first, count))
            if piece is None:
                piece = pieces[(first, count)] = compress_hostlist(list(names[first:first + count]))
            items.append(piece)
        lists.append(",".join(items))
    return lists


def _job_columns(done: list[SimJob], node_names: Sequence[str], gpus: bool = False,
                 events: bool = False, suspension: bool = False) -> Iterator[tuple[str, list[Any]]]:
    """The jobs table's columns in order, one list at a time (so only one is alive at once); with
    ``gpus``, the GPUs each job held after its CPUs; with ``events`` (a machine that changes, or
    preemption), each job's state, requeues and last preemptor (``preempted_by``: the job that last
    suspended it, too); with ``suspension``, ``suspended_at`` (when a preemption last suspended it,
    None: never) and ``suspended_s`` (its time suspended in all, by a preemption or by time-slicing,
    by which its end moved); ``reason``
    is the pending reason a job had last before it started, as Slurm names it
    (:mod:`djsb.model.reasons`), ``sacct_reason`` the last of a limit's, which sacct keeps (None when
    none held it)."""
    traces = [j.trace for j in done]
    yield "job_id", [t.job_id for t in traces]
    yield "user", [t.user for t in traces]
    yield "account", [t.account for t in traces]
    yield "partition", [j.part.spec.name for j in done]
    yield "qos", [j.qos.name for j in done]
    yield "cpus", [t.cpus for t in traces]
    if gpus:
        yield "gpus", [sum(map(sum, j.alloc.gpus)) if j.alloc.gpus is not None else 0 for j in done]
    yield "nodes", _hostlists(done, node_names)
    submit = [t.submit for t in traces]
    start: list[Any] = [j.start for j in done]  # a finished job has both times
    end: list[Any] = [j.end for j in done]
    yield "submit", submit
    yield "eligible", [j.eligible for j in done]
    yield "start", start
    yield "end", end
    yield "wait", [s - t for s, t in zip(start, submit, strict=True)]
    yield "run_time", [e - s for e, s in zip(end, start, strict=True)]
    yield "requested_time", [j.limit for j in done]
    yield "priority_at_start", [j.priority_at_start for j in done]
    for name in FACTOR_NAMES:
        yield f"factor_{name}", [j.factors_at_start.get(name, math.nan) for j in done]
    yield "killed", [j.killed for j in done]
    if events:
        yield "state", [j.state for j in done]
        yield "requeues", [j.requeues for j in done]
        yield "preempted_by", [j.preempted_by for j in done]
    if suspension:
        yield "suspended_at", [j.suspended_at for j in done]
        yield "suspended_s", [j.suspended_total for j in done]
    yield "backfilled", [j.backfilled for j in done]
    yield "reason", [j.reason for j in done]
    yield "sacct_reason", [j.sacct_reason for j in done]
