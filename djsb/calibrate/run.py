"""``djsb calibrate CONFIG``: one workload on a real Slurm and on the model, side by side.

The file::

    seed: 1
    workload:                 # a trace window, scaled in CPUs and time ...
      swf: ../tests/fixtures/calibrate/kth_window.swf
      start: 0                # first job submitted at or after this trace second (or a Slurm time)
      count: 32
      cpu_scale: 1.0          # CPUs (rounded, at least 1) and times scaled as djsb/workloads/window.py does
      time_scale: 1.0         # submissions, run and requested times alike
      memory_scale: 0.15      # optional: each job asks its record's memory per CPU times this
                              # (nodes with less memory per core than the trace's machine); without
                              # it the jobs ask none of their own
      at_time_limit: run      # run (default): every job ends under its limit; kill: a job whose
                              # record runs past its requested time runs past its limit on Slurm,
                              # which kills it (djsb.calibrate.slurm_replay.slurm_ready)
    # ... or {generator: poisson_exponential, params: {...}} with the same scaling keys
    slurm:
      partition: oversub      # the partition the jobs run in and the model is built from
      runs: 2                 # replays on Slurm; the second gives Slurm's own run-to-run spread
      work_dir: /tmp/djsb-calibrate   # batch scripts and outputs of the sleep jobs (on the login node)
      ssh: {host: cluster}    # optional: a login node, as job_module.ssh (djsb/remote/); default this machine
      poll_interval: 2        # seconds between two squeue (or a Slurm time, 0:02)
      accounts: [a1, a2, a3]  # optional: each trace user's jobs go to one of these (round-robin, --account)
      qos: [normal, debug]    # optional: each trace user's jobs go to one of these QoS (round-robin, --qos)
      partitions: [oversub, half]   # optional: each trace user's jobs go to one of these
                              # (round-robin, --partition; a job one cannot take, its limit or its
                              # CPUs, to the next that can); the model takes them all
    model:                    # optional: any policy.scheduler option, over what Slurm's answers give
      bf_will_run: true       # on by default here: backfill planned as sched/backfill plans
      node_select: cons_tres  # on by default here: nodes chosen as select/cons_tres chooses
      start_latency: 0
    watch_draws: 8            # optional: extra model replays, each pass drawn within its sdiag
                              # bracket, whose range a note gives (djsb/calibrate/watch_draws.py); 0: none

Steps: the jobs are made Slurm-ready (:func:`~djsb.calibrate.slurm_replay.slurm_ready`: limits in
whole minutes) and replayed ``runs`` times on Slurm through the Slurm job module
(:mod:`djsb.calibrate.slurm_replay`); the model's scheduler and cluster come from ``scontrol show
config`` / ``partition`` / ``node`` (:mod:`djsb.calibrate.slurm_config`), with the options that plan
as sched/backfill does turned on unless ``model`` says otherwise. The model replays run 1's
submissions (when sbatch returned) and run times as Slurm recorded them, and its main and
backfill passes when Slurm's ran (watched through sdiag: :mod:`djsb.calibrate.pass_watch`; if
sdiag shows none, as the model runs them, backfill at the phase of Slurm's last pass) and, under
priority/multifactor, recomputes the priorities at the phase at which Slurm's decay thread was seen
to (squeue: :mod:`djsb.calibrate.recompute_watch`), so only scheduling decisions differ; it runs on
Slurm's clock (Unix seconds: Slurm rounds reservations and batches its will-run test on multiples
of 60 and 30 s of it). Under priority/multifactor with a fair-share weight the model also takes
the association tree and shares from ``sacctmgr show associations`` and the usage the
associations had when run 1 started from ``sshare`` (asked before and after every replay; the
model's jobs are the submitting user's in their accounts), and the usage each side accrued is
compared (:mod:`djsb.calibrate.fairshare`). Nothing the calibration runs needs more than a
user's rights (sbatch, squeue, sacct, scancel of its own jobs, scontrol show, sdiag, sshare,
sacctmgr show); a command the cluster refuses is one line naming it and what it was needed for.

Written to the output directory: ``slurm_N.csv``, ``model.csv``,
``jobs.csv`` (per job: every side's start, wait and backfilled flag), ``passes.csv`` (per run and
scheduler, each pass seen and its uncertainty; the decay thread's runs as scheduler ``priority``),
``usage.csv`` (fair share: each association's
usage on both sides), ``comparison.json`` (model vs each run, run N vs run 1, the range of model vs
run 1 over the replays with drawn passes), ``timeline.png``
(every job's run as a bar, one panel per side) and ``report.html`` (all of it on one page, with
Slurm's answers the model was built from). The directory is also what ``--resume`` continues
(:mod:`djsb.calibrate.run_dir`: a ledger of the submissions, each finished replay, Slurm's
answers).
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from djsb.calibrate.compare import Comparison, compare, per_job
from djsb.calibrate.fairshare import end_charge_note, snapshot, usage_at, usage_table
from djsb.calibrate.pass_watch import SCHEDULERS, PassWatch
from djsb.calibrate.recompute_watch import DECAY_THREAD, PENDING_PRIORITIES, RecomputeWatch
from djsb.calibrate.run_dir import CalibrationDir, ledger_name
from djsb.calibrate.slurm_config import (
    ASSOCIATIONS_COMMAND,
    QOS_COMMAND,
    SHOW_CONFIG_COMMAND,
    SLURM_LIKE,
    SSHARE_COMMAND,
    cluster_spec,
    last_backfill_cycle,
    parse_associations,
    parse_qos,
    parse_show_config,
    priority_plugin,
    scheduler_config,
)
from djsb.calibrate.slurm_replay import KILLED, replay_on_slurm, slurm_ready
from djsb.calibrate.watch_draws import DEFAULT_DRAWS, drawn_passes, spread_figures, spread_line
from djsb.config import SSHConfig, read_ssh
from djsb.errors import ConfigError, RunError, one_line
from djsb.jobs.api import JobModule
from djsb.jobs.loader import load_job_module
from djsb.jobs.scheduler_base import SchedulerModule
from djsb.jobs.scontrol import parse_show_records
from djsb.model import ClusterSpec, SchedulerConfig, Simulation
from djsb.model.cluster import QosSpec
from djsb.model.priority.base import PriorityPlugin
from djsb.plotting import plt, save
from djsb.remote.connect import open_remote
from djsb.report.calibration import write_calibration_html
from djsb.simulate import AT_TIME_LIMIT, GENERATORS, scheduler_overrides
from djsb.transport import LocalTransport, Transport
from djsb.workloads.job import TraceJob
from djsb.workloads.swf import read_swf
from djsb.workloads.window import background_window
from djsb.yamlnodes import (
    Located,
    as_duration,
    as_int,
    as_number,
    as_str,
    check_arguments,
    load_yaml,
    one_of,
    read_fields,
)

SECOND_BELOW = 0.999
"""The latest instant within a recorded second (Slurm's times are whole seconds)."""
WINDOW_FIELDS: dict[str, Callable[[Located], Any]] = {
    "start": lambda n: as_duration(n, unit="s"), "count": lambda n: as_int(n, 1),
    "cpu_scale": lambda n: as_number(n, 0, strict=True),
    "time_scale": lambda n: as_number(n, 0, strict=True),
    "memory_scale": lambda n: as_number(n, 0, strict=True), "at_time_limit": one_of(*AT_TIME_LIMIT),
}


@dataclass(frozen=True)
class SlurmModel:
    """The model of a running Slurm: its partition's nodes, its scheduler options and a factory of
    its priority plugin (a plugin holds one run's state)."""

    cluster: ClusterSpec
    scheduler: SchedulerConfig
    priority: Callable[[], PriorityPlugin]
    associations: tuple[tuple[str, str], ...] = ()
    """Every (user, account) of Slurm's tree, those without jobs too (they hold shares)."""


@dataclass(frozen=True)
class Calibration:
    """A validated calibration file."""

    jobs: list[TraceJob]
    partition: str
    runs: int = 2
    work_dir: str = "/tmp/djsb-calibrate"
    ssh: SSHConfig | None = None
    poll_interval: float = 2.0
    model: dict[str, Any] = dataclasses.field(default_factory=dict)
    seed: int = 0
    accounts: tuple[str, ...] = ()
    qos: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()
    watch_draws: int = DEFAULT_DRAWS
    """Extra model replays, every pass drawn within its sdiag bracket (:mod:`~djsb.calibrate.watch_draws`)."""

    @property
    def memory_margin(self) -> float | None:
        """The Slurm module's memory margin: none when the jobs ask for their own memory (the model
        must see what Slurm counts), else the module's default."""
        return 0.0 if any(job.memory_mb is not None for job in self.jobs) else None


def load_calibration(path: Path) -> Calibration:
    """Read and check a calibration file (nothing runs)."""
    root = load_yaml(path)
    root.check_keys(frozenset({"seed", "workload", "slurm", "model", "watch_draws"}))
    seed_node, draws_node = root.get("seed"), root.get("watch_draws")
    seed = as_int(seed_node) if seed_node is not None else 0
    draws = as_int(draws_node, 0) if draws_node is not None else DEFAULT_DRAWS
    workload, slurm = root.get("workload"), root.get("slurm")
    if workload is None or slurm is None:
        raise root.error("missing section 'workload' or 'slurm'")
    fields = read_fields(slurm, {"partition": as_str, "runs": lambda n: as_int(n, 1), "work_dir": as_str,
                                 "ssh": read_ssh, "accounts": _names, "qos": _names, "partitions": _names,
                                 "poll_interval": lambda n: as_duration(n, unit="s", strict=True)},
                         ("partition",))
    model_node = root.get("model")
    model = scheduler_overrides(model_node) if model_node is not None else {}
    window = _workload(workload, path.resolve().parent, seed)
    at_limit = workload.get("at_time_limit")
    jobs = slurm_ready(window, kill=at_limit is not None and one_of(*AT_TIME_LIMIT)(at_limit) == "kill")
    jobs = with_accounts(jobs, fields.get("accounts", ()))
    return Calibration(dealt_by_user(jobs, fields.get("qos", ()), "qos"), seed=seed, model=model,
                       watch_draws=draws, **fields)


def _names(node: Located) -> tuple[str, ...]:
    if not isinstance(node.value, list) or not node.value:
        raise node.error(f"expected a list of one or more Slurm {node.key.rsplit('.', 1)[-1]}")
    return tuple(as_str(item) for item in node.value)


def with_accounts(jobs: list[TraceJob], accounts: tuple[str, ...]) -> list[TraceJob]:
    """The jobs with each trace user's jobs in one of ``accounts`` (:func:`dealt_by_user`; none:
    the jobs keep their records' accounts, and Slurm charges the submitting user's default
    account)."""
    return dealt_by_user(jobs, accounts, "account")


def dealt_by_user(jobs: list[TraceJob], values: tuple[str, ...], field: str) -> list[TraceJob]:
    """The jobs with ``field`` (account, qos) set to one of ``values`` for each trace user's jobs,
    the users taken in order of their first job and dealt round-robin (no values: unchanged)."""
    if not values:
        return jobs
    users = list(dict.fromkeys(job.user for job in jobs))
    value = {user: values[i % len(values)] for i, user in enumerate(users)}
    return [dataclasses.replace(job, **{field: value[job.user]}) for job in jobs]  # type: ignore[arg-type]


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


def _workload(node: Located, base: Path, seed: int) -> list[TraceJob]:
    """The workload section's jobs: a trace or a generator, then the window and its scaling."""
    fields = read_fields(node, {"swf": as_str, "generator": as_str, "params": lambda n: n, **WINDOW_FIELDS})
    if ("swf" in fields) == ("generator" in fields):
        raise node.error("give exactly one of 'swf' (a trace) or 'generator'")
    if "swf" in fields:
        jobs = read_swf(base / fields["swf"]).replayable_jobs()
    else:
        name = fields["generator"]
        if name not in GENERATORS:
            raise node.error(f"unknown generator {name!r} (choose from {', '.join(GENERATORS)})")
        params_node = fields.get("params")
        params = params_node.plain() if params_node is not None else {}
        if params_node is not None:
            check_arguments(params_node, GENERATORS[name], params)
        try:
            jobs = GENERATORS[name](**{"seed": seed, **params})
        except (TypeError, ConfigError) as exc:
            raise (params_node or node).error(f"bad parameters for {name}: {exc}") from None
    window = background_window(jobs, start=fields.get("start", 0.0), count=fields.get("count"),
                               cpu_scale=fields.get("cpu_scale", 1.0),
                               time_scale=fields.get("time_scale", 1.0))
    if not window:
        raise node.error("the window holds no job")
    scale = fields.get("memory_scale")
    if scale is not None and any(job.memory_mb is None for job in window):
        missing = next(k for k, job in enumerate(window) if job.memory_mb is None)
        raise node.mapping()["memory_scale"].error(
            f"the window's job {missing + 1} records no memory to scale")
    return [dataclasses.replace(scaled_durations(job, fields.get("time_scale", 1.0)),
                                memory_mb=None if scale is None or job.memory_mb is None
                                else job.memory_mb * scale) for job in window]


def scaled_durations(job: TraceJob, time_scale: float) -> TraceJob:
    """A job's run and requested times scaled like its submission (background_window scales only
    the submissions: the load's shape; a calibration shrinks the whole replay)."""
    requested = None if job.requested_time is None else job.requested_time * time_scale
    return dataclasses.replace(job, run_time=job.run_time * time_scale, requested_time=requested)


def model_config(show_config: dict[str, str], overrides: dict[str, Any]) -> SchedulerConfig:
    """The model's scheduler: Slurm's options, planned as sched/backfill plans, then ``overrides``."""
    return dataclasses.replace(scheduler_config(show_config), **{**SLURM_LIKE, **overrides})


def model_replay(jobs: list[TraceJob], reference: pd.DataFrame, model: SlurmModel, seed: int,
                 passes: dict[str, list[float]] | None = None,
                 priority: PriorityPlugin | None = None) -> pd.DataFrame:
    """The model's replay of ``jobs`` with the submissions and run times Slurm recorded in
    ``reference`` (the jobs' limits kept; submissions from :func:`submission_times`, run times
    from :func:`run_times`, so a job Slurm killed past its limit runs until Slurm killed it), in the
    replay table's form (index job_id). With the replay's ``origin`` column the model runs on
    Slurm's clock (see the module docstring); ``passes`` (``main`` / ``backfill``: seconds from
    the origin) are the instants of that scheduler's passes, when given, up to the last of them
    (after it the model passes as configured). ``priority``: the
    plugin to replay with (default a new one of ``model``'s), which keeps the replay's state (the
    fair-share usage it accrued)."""
    origin = float(reference["origin"].iloc[0]) if "origin" in reference else 0.0
    submits = submission_times(reference).to_dict()
    runs = run_times(jobs, reference).to_dict()
    recorded = [dataclasses.replace(job, submit=origin + float(submits[job.job_id]),
                                    run_time=float(runs[job.job_id]))
                for job in jobs if job.job_id in submits]
    times = {name: [origin + t for t in instants] for name, instants in (passes or {}).items()}
    scheduler = dataclasses.replace(model.scheduler, extend_limit=True)
    result = Simulation(recorded, model.cluster, scheduler, priority or model.priority(), seed=seed,
                        start=origin, pass_times=times, associations=model.associations).run()
    table = result.jobs.set_index("job_id")[["submit", "start", "end", "backfilled"]].sort_index()
    table[["submit", "start", "end"]] -= origin
    return table


def submission_times(reference: pd.DataFrame) -> pd.Series:
    """When each job of a Slurm replay was submitted: when sbatch returned (``sent``) within the
    second Slurm recorded (``submit``, whole seconds), else that second itself."""
    if "sent" not in reference:
        return reference["submit"]
    return reference["sent"].clip(lower=reference["submit"], upper=reference["submit"] + SECOND_BELOW)


def run_times(jobs: list[TraceJob], reference: pd.DataFrame) -> pd.Series:
    """How long each job of a Slurm replay ran: its sleep plus the launch overhead of the replay's
    jobs on average. Slurm's start and end are whole seconds, so one job's end - start is its run
    time give or take a second (a sleep of 4 s recorded as 5 s would end after a pass it ended
    before), while over many jobs, whose starts fall anywhere within their second, the mean of
    (end - start - sleep) is the mean overhead (srun and the batch script around the sleep). A job
    Slurm killed at its limit ran what Slurm recorded: its kill came at Slurm's time-limit check,
    not at the end of its sleep."""
    recorded = reference["end"] - reference["start"]
    sleeps = pd.Series({job.job_id: job.run_time for job in jobs}).reindex(recorded.index)
    killed = reference["state"] == KILLED if "state" in reference else pd.Series(False, index=recorded.index)
    overhead = max(0.0, float((recorded - sleeps)[~killed].mean())) if not killed.all() else 0.0
    return (sleeps + overhead).where(~killed, recorded)


def answer_or_none(module: SchedulerModule, argv: tuple[str, ...] | list[str]) -> str | None:
    """``argv``'s answer, or None if it failed (PrivateData may hide sdiag or squeue from a user);
    the watches of the replay go on without it."""
    answer = module.run(shlex.join(argv), check=False)
    return answer.stdout if answer.returncode == 0 else None


def with_backfill_phase(scheduler: SchedulerConfig,
                        module: SchedulerModule) -> tuple[SchedulerConfig, list[str]]:
    """``scheduler`` with its backfill passes at the phase of Slurm's (``sdiag``'s last backfill
    cycle), or unchanged with a note when sdiag does not say."""
    answer = answer_or_none(module, ["sdiag"])
    when = last_backfill_cycle(answer) if answer is not None else None
    if when is None or scheduler.bf_interval <= 0:
        return scheduler, ["sdiag gave no backfill cycle time: the model's backfill passes keep phase 0"]
    return dataclasses.replace(scheduler, bf_phase=math.fmod(when, scheduler.bf_interval)), []


def plot_timelines(replays: dict[str, pd.DataFrame], path: Path) -> None:
    """Every job's run as a bar (submit marked), one panel per replay, on one time axis."""
    fig, axes = plt.subplots(len(replays), 1, figsize=(10, 2.2 + 0.12 * len(next(iter(replays.values()))) *
                                                      len(replays)), sharex=True, squeeze=False)
    for ax, (name, replay) in zip(axes[:, 0], replays.items(), strict=True):
        ax.barh(replay.index, replay["end"] - replay["start"], left=replay["start"], height=0.7)
        ax.scatter(replay["submit"], replay.index, marker="|", color="black", s=30)
        ax.set_ylabel(f"{name}\njob")
        ax.invert_yaxis()
    axes[-1, 0].set_xlabel("seconds from the replay's start (bars: run; ticks: submission)")
    fig.tight_layout()
    save(fig, path, dpi=110)


def describe(label: str, comparison: Comparison) -> str:
    """One line of a comparison's figures."""
    c = comparison
    return (f"{label}: tau {c.tau:.2f}, start error mean {c.start_error_mean:.1f} s, "
            f"median {c.start_error_median:.1f} s, max {c.start_error_max:.1f} s; mean wait "
            f"{c.mean_wait_b:.1f} s vs {c.mean_wait_a:.1f} s ({c.mean_wait_error:+.1%}); "
            f"backfilled {len(c.backfilled_b)} vs {len(c.backfilled_a)}")


class CommandDenied(RunError):
    """A Slurm command the calibration needs failed on the cluster (denied, missing, unreachable)."""


def ask(module: SchedulerModule, argv: tuple[str, ...] | list[str], needed_for: str) -> str:
    """``argv``'s answer where the jobs run; a one-line :class:`CommandDenied` naming the command,
    Slurm's own words and what it was needed for when it fails (none needs more than a user's
    rights, but a site's PrivateData or a missing slurmdbd may refuse it)."""
    answer = module.run(shlex.join(argv), check=False)
    if answer.returncode != 0:
        said = one_line(answer.stderr or answer.stdout) or f"exit status {answer.returncode}"
        raise CommandDenied(f"{' '.join(argv[:3])} failed ({said}); the calibration needs it for "
                            f"{needed_for}")
    return answer.stdout


def fair_share_used(config: dict[str, str]) -> bool:
    """Whether Slurm's priority has a fair-share term (then associations and usage are read)."""
    return (config.get("PriorityType") == "priority/multifactor"
            and config.get("PriorityWeightFairShare", "0") not in ("0", "", "(null)"))


def slurm_model(module: SchedulerModule, run_dir: CalibrationDir, calibration: Calibration,
                usage: dict[tuple[str, str], float] | None,
                decay_runs: list[tuple[float, float]]) -> tuple[SlurmModel, list[str]]:
    """The cluster, scheduler and priority plugin the model takes from the running Slurm (its
    answers as saved in ``run_dir`` when the calibration started), and notes on what it could not
    take. ``usage``: the associations' RawUsage when the replay the model follows started;
    ``decay_runs``: when its decay thread was seen recomputing the priorities (brackets of Unix
    seconds)."""
    config = parse_show_config(run_dir.slurm_text("show_config", lambda: ask(
        module, SHOW_CONFIG_COMMAND, "the model's scheduler")))
    cluster = slurm_cluster(module, run_dir, calibration)
    associations = None
    if fair_share_used(config):
        associations = parse_associations(run_dir.slurm_text("associations", lambda: ask(
            module, ASSOCIATIONS_COMMAND, "the fair-share tree (accounts, users and shares)")))
    priority, notes = priority_plugin(config, associations, usage, decay_runs)
    notes += end_charge_note(config) if associations is not None else []
    pairs = associations.pairs if associations is not None else ()
    return SlurmModel(cluster, model_config(config, calibration.model), priority, pairs), notes


def slurm_cluster(module: SchedulerModule, run_dir: CalibrationDir, calibration: Calibration) -> ClusterSpec:
    """The calibration's partitions (``partitions``, else ``partition``) with their nodes as
    ``scontrol show partition`` / ``node`` give them, and the QoS of ``sacctmgr show qos`` when
    the jobs ask for some (each answer saved in ``run_dir`` when first asked)."""
    def show(what: str) -> str:
        return run_dir.slurm_text(f"show_{what}", lambda: ask(module, ["scontrol", "show", what],
                                                              "the model's cluster and scheduler"))

    names = calibration.partitions or (calibration.partition,)
    qos: tuple[QosSpec, ...] = (QosSpec("normal"),)
    if calibration.qos:
        qos = parse_qos(run_dir.slurm_text("qos", lambda: ask(module, QOS_COMMAND, "the QoS the jobs ask")))
    return cluster_spec(parse_show_records(show("partition")), parse_show_records(show("node")), names[0],
                        names[1:], qos)


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


def job_modules(calibration: Calibration, module: SchedulerModule) -> Callable[[TraceJob], JobModule]:
    """The module that submits each job: ``module`` for a job of its partition with no account or
    QoS of its own, else one with the job's --partition, --account and --qos (made once each)."""
    made: dict[tuple[str, str | None, str | None], JobModule] = {}

    def module_of(job: TraceJob) -> JobModule:
        key = (job.partition or calibration.partition, job.account if calibration.accounts else None, job.qos)
        if key == (calibration.partition, None, None):
            return module
        if key not in made:
            made[key] = slurm_module(key[0], module.transport, key[1], calibration.memory_margin, key[2])
        return made[key]
    return module_of


def late_start_notes(jobs: list[TraceJob], model: pd.DataFrame, passes: dict[str, list[float]]) -> list[str]:
    """The jobs the model started after Slurm's last watched pass, in passes of its own (it lags
    behind Slurm there, so those passes are the configuration's, not Slurm's), and the jobs it never
    started, which the comparison leaves out. ``passes``: each scheduler's watched passes, in
    seconds from the origin like ``model``'s starts."""
    notes = []
    last = max((max(times) for times in passes.values() if times), default=None)
    if last is not None:
        late = model.index[model["start"] > last].tolist()
        if late:
            notes.append(f"the model started {len(late)} job(s) after Slurm's last watched pass "
                         f"({last:.1f} s), in passes of its own as the configuration runs them: "
                         f"job(s) {', '.join(map(str, late))}")
    missing = sorted({job.job_id for job in jobs} - set(model.index))
    if missing:
        notes.append(f"the model never started {len(missing)} of {len(jobs)} jobs; left out of the "
                     f"comparison: job(s) {', '.join(map(str, missing))}")
    return notes


def kill_note(jobs: list[TraceJob], replay: pd.DataFrame) -> list[str]:
    """How many jobs Slurm killed at their limits in ``replay``, and how long after their limits
    (its time-limit check runs every 30 s: slurmctld.h PERIODIC_TIMEOUT)."""
    killed = replay[replay["state"] == KILLED] if "state" in replay else replay.iloc[:0]
    if killed.empty:
        return []
    limits = pd.Series({job.job_id: job.requested_time for job in jobs}).reindex(killed.index)
    late = killed["end"] - killed["start"] - limits
    return [f"Slurm killed {len(killed)} job(s) at their limits, {late.min():.0f}-{late.max():.0f} s after "
            f"them (mean {late.mean():.1f} s); the model's runs of those end where Slurm's did"]


def submitter(module: SchedulerModule, run_dir: CalibrationDir) -> tuple[str, str]:
    """The user the jobs run as and its default account (sacctmgr), as saved when the calibration
    started: the association of a job without an account of its own."""
    user = run_dir.slurm_text("user", lambda: ask(module, ["id", "-un"], "the user the jobs run as")).strip()
    default = run_dir.slurm_text("default_account", lambda: ask(
        module, ["sacctmgr", "--noheader", "--parsable2", "show", "user", user, "format=DefaultAccount"],
        "the account of the jobs without one")).strip()
    return user, default


def fair_share_snapshot(module: SchedulerModule, when: str) -> pd.DataFrame:
    """sshare's usage now, as :func:`djsb.calibrate.fairshare.snapshot` rows."""
    return snapshot(when, time.time(), ask(module, SSHARE_COMMAND, "the fair-share usage before and after "
                                                                    "each replay"))


def replay_run(calibration: Calibration, module: SchedulerModule, run_dir: CalibrationDir, run: int,
               module_of: Callable[[TraceJob], JobModule], fair_share: bool, multifactor: bool) -> None:
    """Replay ``run`` on Slurm and save it with its passes, under multifactor the decay thread's
    runs (as passes of :data:`DECAY_THREAD`) and, under fair share, sshare's usage before and after."""
    before = fair_share_snapshot(module, "before") if fair_share else None
    watch = PassWatch(lambda: answer_or_none(module, ["sdiag"]))
    recomputes = RecomputeWatch(lambda: answer_or_none(module, PENDING_PRIORITIES))

    def look() -> None:
        watch.look()
        if multifactor:
            recomputes.look()

    replay = replay_on_slurm(calibration.jobs, module, calibration.work_dir,
                             poll_interval=calibration.poll_interval, watch=look, log=run_dir,
                             name=lambda job: ledger_name(run, job.job_id), module_of=module_of)
    origin = float(replay["origin"].iloc[0])
    seen = [(name, t, u) for name, times in watch.passes.items() for t, u in times]
    seen += [(DECAY_THREAD, (low + high) / 2, (high - low) / 2) for low, high in recomputes.runs]
    passes = pd.DataFrame([{"run": run, "scheduler": name, "time": t - origin, "uncertainty": u}
                           for name, t, u in seen], columns=["run", "scheduler", "time", "uncertainty"])
    extras = {"passes": passes}
    if before is not None:
        extras["sshare"] = pd.concat([before, fair_share_snapshot(module, "after")], ignore_index=True)
    run_dir.save_run(run, replay, extras)


def slurm_module(partition: str, transport: Transport, account: str | None = None,
                 memory_margin: float | None = None, qos: str | None = None) -> SchedulerModule:
    """DJSB's Slurm job module (through the registry) over ``transport``, limits as asked;
    ``account``, ``qos``: its jobs' --account and --qos; ``memory_margin``: its option (None: its
    default)."""
    options: dict[str, Any] = {"partition": partition, "time_factor": 1.0, "time_margin": 0.0}
    options.update({key: value for key, value in (("account", account), ("memory_margin", memory_margin),
                                                  ("qos", qos)) if value is not None})
    module = load_job_module("slurm", options, transport)
    if not isinstance(module, SchedulerModule):
        raise RunError(f"the slurm job module is a {type(module).__name__}, not a command-based module")
    return module


def run_calibration(config_path: Path, out_dir: Path, *, runs: int | None = None,
                    module: SchedulerModule | None = None) -> str:
    """Replay on Slurm (``runs`` times, default the file's) and on the model; write the outputs
    into ``out_dir`` (a new calibration directory) and return the summary lines."""
    calibration = load_calibration(config_path)
    run_dir = CalibrationDir.create(out_dir, config_path, runs or calibration.runs, calibration.jobs)
    return _connected(calibration, run_dir, module)


def resume_calibration(out_dir: Path, *, module: SchedulerModule | None = None) -> str:
    """Continue the calibration in ``out_dir``: cancel what its interrupted replay left queued or
    running, keep its finished replays, do the others, then the model and the report."""
    run_dir = CalibrationDir.resume(out_dir)
    calibration = load_calibration(run_dir.config)
    run_dir.check_jobs(calibration.jobs)
    return _connected(calibration, run_dir, module)


def _connected(calibration: Calibration, run_dir: CalibrationDir, module: SchedulerModule | None) -> str:
    """:func:`_calibrate` with the Slurm module (``module``, else one here or over SSH)."""
    try:
        if module is not None:
            return _calibrate(calibration, module, run_dir)
        ssh = calibration.ssh
        transport = LocalTransport() if ssh is None else open_remote(ssh, str(run_dir.config))
        try:
            return _calibrate(calibration, slurm_module(calibration.partition, transport,
                                                        memory_margin=calibration.memory_margin), run_dir)
        finally:
            transport.close()
    finally:
        run_dir.release()


def _calibrate(calibration: Calibration, module: SchedulerModule, run_dir: CalibrationDir) -> str:
    """The replays not yet finished, then the model's replay of the first and the outputs."""
    cancelled = run_dir.cancel_left_behind(module)
    notes = [f"cancelled {len(cancelled)} job(s) an interrupted replay left: "
             f"{', '.join(s.describe() for s in cancelled)}"] if cancelled else []
    ask(module, ["mkdir", "-p", calibration.work_dir], "the sleep jobs' scripts and outputs")
    cluster = slurm_cluster(module, run_dir, calibration)
    fitted, memory_notes = within_nodes(in_partitions(calibration.jobs, cluster), cluster)
    calibration = dataclasses.replace(calibration, jobs=fitted)
    notes += memory_notes
    config = parse_show_config(run_dir.slurm_text("show_config", lambda: ask(
        module, SHOW_CONFIG_COMMAND, "the model's scheduler")))
    fair_share = fair_share_used(config)
    user, default_account = submitter(module, run_dir) if fair_share or calibration.qos else ("", "")
    finished = run_dir.finished_runs()
    for run in range(1, run_dir.runs + 1):
        if run not in finished:
            replay_run(calibration, module, run_dir, run, job_modules(calibration, module), fair_share,
                       config.get("PriorityType") == "priority/multifactor")
    replays = {f"slurm_{run}": table for run, table in run_dir.finished_runs().items()}
    notes += kill_note(calibration.jobs, replays["slurm_1"])
    passes = pd.concat([run_dir.run_table(run, "passes") for run in range(1, run_dir.runs + 1)],
                       ignore_index=True)
    passes.to_csv(run_dir.path / "passes.csv", index=False)
    first = passes[passes["run"] == 1]
    origin = float(replays["slurm_1"]["origin"].iloc[0])
    decay = first[first["scheduler"] == DECAY_THREAD]
    decay_runs = [(origin + t - u, origin + t + u)
                  for t, u in zip(decay["time"], decay["uncertainty"], strict=True)]
    sshare = run_dir.run_table(1, "sshare") if fair_share else None
    slurm, model_notes = slurm_model(module, run_dir, calibration,
                                     usage_at(sshare, "before") if sshare is not None else None, decay_runs)
    notes += model_notes
    observed = {name: first.loc[first["scheduler"] == name, "time"].tolist() for name in SCHEDULERS}
    if not observed["main"]:
        notes.append("sdiag showed no main scheduler pass: the model's run at submissions, job ends and "
                     "every sched_interval")
    if not observed["backfill"] and "bf_phase" not in calibration.model:
        scheduler, phase_notes = with_backfill_phase(slurm.scheduler, module)
        slurm = dataclasses.replace(slurm, scheduler=scheduler)
        notes += ["sdiag showed no backfill pass during the replay: the model's passes are periodic",
                  *phase_notes]
    jobs = calibration.jobs
    if fair_share or calibration.qos:
        # the model's associations are Slurm's: the submitting user in each job's account (and its
        # QoS limits per user are that user's)
        jobs = [dataclasses.replace(job, user=user, account=job.account if calibration.accounts
                                    else default_account) for job in jobs]
    priority = slurm.priority()
    watched = {name: times for name, times in observed.items() if times}
    model = model_replay(jobs, replays["slurm_1"], slurm, calibration.seed, passes=watched, priority=priority)
    notes += late_start_notes(jobs, model, watched)
    rng = random.Random(calibration.seed)
    draws = [model_replay(jobs, replays["slurm_1"], slurm, calibration.seed, priority=slurm.priority(),
                          passes=drawn_passes(first, list(watched), rng))
             for _ in range(calibration.watch_draws if watched else 0)]
    replays = {"slurm_1": replays["slurm_1"], "model": model,
               **{name: r for name, r in replays.items() if name != "slurm_1"}}
    return write_outputs(run_dir, replays, slurm, priority, notes, passes, observed,
                         usage_table(sshare, priority) if sshare is not None else None, draws)


def write_outputs(run_dir: CalibrationDir, replays: dict[str, pd.DataFrame], slurm: SlurmModel,
                  priority: PriorityPlugin, notes: list[str], passes: pd.DataFrame,
                  observed: dict[str, list[float]], usage: pd.DataFrame | None,
                  draws: list[pd.DataFrame]) -> str:
    """The model's and Slurm's tables, the comparisons, the timelines and report.html; the summary
    lines. ``draws``: the model's replays with drawn pass instants, whose range goes in a note."""
    out_dir = run_dir.path
    for name, replay in replays.items():
        replay.to_csv(out_dir / f"{name}.csv")
    jobs = per_job(replays)
    jobs.to_csv(out_dir / "jobs.csv")
    comparisons = {f"{name} vs slurm_1": compare(replays["slurm_1"], replay)
                   for name, replay in replays.items() if name != "slurm_1"}
    others = [name for name in replays if name not in ("slurm_1", "model")]
    comparisons.update({f"model vs {name}": compare(replays[name], replays["model"]) for name in others})
    drawn = [compare(replays["slurm_1"], replay) for replay in draws]
    if drawn:
        notes = [*notes, spread_line("model vs slurm_1 with its passes drawn", drawn)]
    first = passes[passes["run"] == 1]
    lines = [*notes, *(f"the model's {name} passes: the {len(times)} Slurm ran in run 1 (within "
                       f"{first.loc[first['scheduler'] == name, 'uncertainty'].max():.2f} s)"
                       for name, times in observed.items() if times),
             *(describe(label, c) for label, c in comparisons.items())]
    summary: dict[str, Any] = {"scheduler": dataclasses.asdict(slurm.scheduler), "priority": priority.name,
                               "notes": notes, **{label: c.as_dict() for label, c in comparisons.items()}}
    if drawn:
        summary["model vs slurm_1, passes drawn"] = spread_figures(drawn)
    if usage is not None:
        usage.to_csv(out_dir / "usage.csv", index=False)
        accrued = float(usage["slurm_accrued"].sum())
        summary["usage"] = {"slurm_accrued": accrued, "model_accrued": float(usage["model_accrued"].sum()),
                            "max_difference": float(usage["difference"].abs().max()) if len(usage) else 0.0}
        lines.append(f"fair-share usage accrued in run 1: Slurm {accrued:.0f} CPU-s, model "
                     f"{summary['usage']['model_accrued']:.0f} CPU-s (largest difference of one association "
                     f"{summary['usage']['max_difference']:.0f})")
    (out_dir / "comparison.json").write_text(json.dumps(summary, indent=2, default=str))
    plot_timelines(replays, out_dir / "timeline.png")
    write_calibration_html(out_dir, comparisons={label: c.as_dict() for label, c in comparisons.items()},
                           jobs=jobs, usage=usage, notes=notes, slurm_texts=run_dir.slurm_texts(),
                           scheduler=dataclasses.asdict(slurm.scheduler), priority=priority.name)
    return "\n".join([*lines, f"results in {out_dir}"])
