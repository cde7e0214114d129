"""The model's side of a calibration: the running Slurm as the model sees it (:class:`SlurmModel`),
the jobs fitted to its partitions and nodes, and the model's replay of a Slurm replay's submissions
and run times (:func:`model_replay`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from djsb.calibrate.slurm_replay import KILLED
from djsb.calibrate.spec import dealt_by_user
from djsb.errors import ConfigError
from djsb.model import ClusterSpec, SchedulerConfig, Simulation, StartState
from djsb.model.dependency import Dependency
from djsb.model.priority.base import PriorityPlugin
from djsb.slurmsite.slurm_config import (
    SLURM_LIKE,
    scheduler_config,
)
from djsb.workloads.job import TraceJob

COMPLETED = "COMPLETED"
"""A job that ran to its end (Slurm's and the harness's name of the state)."""
SECOND_BELOW = 0.999
"""The latest instant within a recorded second (Slurm's times are whole seconds)."""



@dataclass(frozen=True)
class SlurmModel:
    """The model of a running Slurm: its partition's nodes, its scheduler options and a factory of
    its priority plugin (a plugin holds one run's state)."""

    cluster: ClusterSpec
    scheduler: SchedulerConfig
    priority: Callable[[], PriorityPlugin]
    associations: tuple[tuple[str, str], ...] = ()
    """Every (user, account) of Slurm's tree, those without jobs too (they hold shares)."""



def in_partitions(jobs: list[TraceJob], cluster: ClusterSpec) -> list[TraceJob]:
    """Each trace user's jobs in one of the cluster's partitions, dealt round-robin as
    :func:`dealt_by_user` deals; a job its partition cannot take (a limit above its MaxTime, more
    CPUs than its nodes have) goes to the next partition in order that can, as a user moves a job
    to a queue that takes it (one partition: unchanged)."""
    parts = cluster.partitions
    if len(parts) == 1:
        return jobs
    cores = {p.name: sum(n.cores for n in cluster.nodes if p.nodes is None or n.name in p.nodes)
             for p in parts}
    placed = []
    for job in dealt_by_user(jobs, tuple(p.name for p in parts), "partition"):
        first = next(k for k, p in enumerate(parts) if p.name == job.partition)
        assert job.requested_time is not None  # slurm_ready gave every job one
        limit = job.requested_time
        part = next((p for p in parts[first:] + parts[:first] if (p.max_time is None or limit <= p.max_time)
                     and job.cpus <= cores[p.name]), None)
        if part is None:
            raise ConfigError(f"job {job.job_id}: no partition of {', '.join(cores)} takes {job.cpus} CPUs "
                              f"for {limit:g} s", key="slurm.partitions")
        placed.append(dataclasses.replace(job, partition=part.name))
    return placed


CPU_CAPS = ("grp_tres", "max_tres_per_job", "max_tres_per_user", "max_tres_per_account")
"""The QoS limits on CPUs that a job asking more than one of them never gets past: it pends forever
(acct_policy.c ``_validate_tres_limits_for_qos``: QOSGrpCpuLimit, QOSMaxCpuPerJobLimit,
QOSMaxCpuPerUserLimit, QOSMaxCpuPerAccount), as the calibration's jobs are all one user's."""


def within_qos(jobs: list[TraceJob], cluster: ClusterSpec, order: tuple[str, ...]) -> list[TraceJob]:
    """The jobs dealt over the QoS ``order`` (:func:`dealt_by_user`), a job asking more CPUs than a
    CPU limit of its QoS (:data:`CPU_CAPS`) allows moved to the next QoS in order that takes it, as
    a user moves a job to a QoS that can run it (fewer than two QoS: unchanged)."""
    if len(order) < 2:
        return jobs
    caps = {qos.name: min((amount for limits in (getattr(qos, cap) for cap in CPU_CAPS)
                           for name, amount in limits if name == "cpu"), default=None)
            for qos in cluster.qos}
    placed = []
    for job in jobs:
        first = order.index(job.qos) if job.qos in order else 0
        name = next((name for name in order[first:] + order[:first]
                     if (cap := caps.get(name)) is None or job.cpus <= cap), None)
        if name is None:
            raise ConfigError(f"job {job.job_id}: no QoS of {', '.join(order)} takes {job.cpus} CPUs",
                              key="slurm.qos")
        placed.append(job if name == job.qos else dataclasses.replace(job, qos=name))
    return placed



def within_nodes(jobs: list[TraceJob], cluster: ClusterSpec) -> tuple[list[TraceJob], list[str]]:
    """The jobs with their memory per CPU at most the largest node's (a job asking more could never
    start, and sbatch refuses it; on the trace's machine it fitted), and a note of the memory the
    jobs ask."""
    asked = [job.memory_mb / job.cpus for job in jobs if job.memory_mb is not None]
    largest = max((node.memory_mb or 0.0 for node in cluster.nodes), default=0.0)
    if not asked or largest <= 0:
        return jobs, []
    capped = [dataclasses.replace(job, memory_mb=largest * job.cpus)
              if job.memory_mb is not None and job.memory_mb / job.cpus > largest else job for job in jobs]
    over = sum(per_cpu > largest for per_cpu in asked)
    median = float(pd.Series(asked).median())
    return capped, [f"memory: the jobs ask {min(asked):g}-{max(asked):g} MB per CPU (median {median:g}); "
                    f"{over} asking more than a node's {largest:g} MB ask that"]



def model_config(show_config: dict[str, str], overrides: dict[str, Any]) -> SchedulerConfig:
    """The model's scheduler: Slurm's options, planned as sched/backfill plans, then ``overrides``."""
    return dataclasses.replace(scheduler_config(show_config), **{**SLURM_LIKE, **overrides})



def model_replay(jobs: list[TraceJob], reference: pd.DataFrame, model: SlurmModel, seed: int,
                 passes: dict[str, list[float]] | None = None,
                 priority: PriorityPlugin | None = None,
                 dependencies: Mapping[int, Dependency] | None = None) -> pd.DataFrame:
    """The model's replay of ``jobs`` with the submissions and run times Slurm recorded in
    ``reference`` (the jobs' limits kept; submissions from :func:`submission_times`, run times
    from :func:`run_times`, so a job Slurm killed past its limit runs until Slurm killed it), in the
    replay table's form (index job_id). With the replay's ``origin`` column the model runs on
    Slurm's clock (see the module docstring); ``passes`` (``main`` / ``backfill``: seconds from
    the origin) are the instants of that scheduler's passes, when given, up to the last of them
    (after it the model passes as configured). ``priority``: the
    plugin to replay with (default a new one of ``model``'s), which keeps the replay's state (the
    fair-share usage it accrued); ``dependencies``: what jobs wait for, as they waited on Slurm."""
    origin = float(reference["origin"].iloc[0]) if "origin" in reference else 0.0
    submits = submission_times(reference).to_dict()
    runs = run_times(jobs, reference).to_dict()
    recorded = [dataclasses.replace(job, submit=origin + float(submits[job.job_id]),
                                    run_time=float(runs[job.job_id]))
                for job in jobs if job.job_id in submits]
    times = {name: [origin + t for t in instants] for name, instants in (passes or {}).items()}
    scheduler = dataclasses.replace(model.scheduler, extend_limit=True)
    result = Simulation(recorded, model.cluster, scheduler, priority or model.priority(), seed=seed,
                        start=StartState(origin, pass_times=times), associations=model.associations,
                        dependencies=dependencies).run()
    kept = ["submit", "start", "end", *[c for c in ("state", "requeues", "suspended_s") if c in result.jobs],
            "backfilled"]
    table = result.jobs.set_index("job_id")[kept].sort_index()
    table[["submit", "start", "end"]] -= origin
    return table



def submission_times(reference: pd.DataFrame) -> pd.Series:
    """When each job of a Slurm replay was submitted: when slurmctld's log says it queued the job
    (``ctld_submit``), else when sbatch returned (``sent``) within the second Slurm recorded
    (``submit``, whole seconds), else that second itself."""
    if "sent" not in reference:
        return _logged(reference, "ctld_submit", reference["submit"])
    returned = reference["sent"].clip(lower=reference["submit"], upper=reference["submit"] + SECOND_BELOW)
    return _logged(reference, "ctld_submit", returned)


def _logged(reference: pd.DataFrame, column: str, otherwise: pd.Series) -> pd.Series:
    """``reference[column]`` (from slurmctld's log) where it has a value, else ``otherwise``."""
    return reference[column].fillna(otherwise) if column in reference else otherwise



def run_times(jobs: list[TraceJob], reference: pd.DataFrame) -> pd.Series:
    """How long each job of a Slurm replay ran: its sleep plus the launch overhead of the replay's
    jobs on average. Slurm's start and end are whole seconds, so one job's end - start is its run
    time give or take a second (a sleep of 4 s recorded as 5 s would end after a pass it ended
    before), while over many jobs, whose starts fall anywhere within their second, the mean of
    (end - start - sleep) is the mean overhead (srun and the batch script around the sleep). A job
    Slurm killed at its limit ran what Slurm recorded: its kill came at Slurm's time-limit check,
    not at the end of its sleep. Where slurmctld's log gave a job's start and end (``ctld_start``,
    ``ctld_end``, to the millisecond), its run time is their difference, less the time it spent
    suspended (``ctld_suspended``), which the model adds as it suspends the job. A job Slurm cut short
    otherwise (preempted, its node failed, cancelled) runs its sleep plus the overhead: whether the
    model cuts it is the model's decision."""
    recorded = reference["end"] - reference["start"]
    sleeps = pd.Series({job.job_id: job.run_time for job in jobs}).reindex(recorded.index)
    state = reference["state"] if "state" in reference else pd.Series(COMPLETED, index=recorded.index)
    killed, completed = state == KILLED, state == COMPLETED
    overhead = max(0.0, float((recorded - sleeps)[completed].mean())) if completed.any() else 0.0
    estimated = (sleeps + overhead).where(~killed, recorded)
    if "ctld_end" not in reference:
        return estimated
    suspended = reference["ctld_suspended"].fillna(0.0) if "ctld_suspended" in reference else 0.0
    ran = reference["ctld_end"] - reference["ctld_start"] - suspended
    return ran.where(completed | killed).fillna(estimated)

