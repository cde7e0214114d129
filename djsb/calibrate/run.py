"""``djsb calibrate CONFIG``: one workload on a real Slurm and on the model, side by side.

The file::

    seed: 1
    workload:                 # a trace window, scaled in CPUs and time ...
      swf: ../tests/fixtures/calibrate/kth_window.swf
      start: 0                # first job submitted at or after this trace second
      count: 32
      cpu_scale: 1.0          # CPUs (rounded, at least 1) and times scaled as djsb/workloads/window.py does
      time_scale: 1.0         # submissions, run and requested times alike
    # ... or {generator: poisson_exponential, params: {...}} with the same scaling keys
    slurm:
      partition: oversub      # the partition the jobs run in and the model is built from
      runs: 2                 # replays on Slurm; the second gives Slurm's own run-to-run spread
      work_dir: /tmp/djsb-calibrate   # batch scripts and outputs of the sleep jobs (on the login node)
      ssh: {host: cluster}    # optional: a login node, as job_module.ssh (djsb/remote/); default this machine
      poll_interval: 2
    model:                    # optional: any policy.scheduler option, over what Slurm's answers give
      bf_will_run: true       # on by default here: backfill planned as sched/backfill plans
      node_select: cons_tres  # on by default here: nodes chosen as select/cons_tres chooses
      start_latency: 0

Steps: the jobs are made Slurm-ready (:func:`~djsb.calibrate.slurm_replay.slurm_ready`: limits in
whole minutes) and replayed ``runs`` times on Slurm through the Slurm job module
(:mod:`djsb.calibrate.slurm_replay`); the model's scheduler and cluster come from ``scontrol show
config`` / ``partition`` / ``node`` (:mod:`djsb.calibrate.slurm_config`), with the options that plan
as sched/backfill does turned on unless ``model`` says otherwise. The model replays run 1's
submissions (when sbatch returned) and run times as Slurm recorded them, and its main and
backfill passes when Slurm's ran (watched through sdiag: :mod:`djsb.calibrate.pass_watch`; if
sdiag shows none, as the model runs them, backfill at the phase of Slurm's last pass), so only
scheduling decisions differ; it runs on
Slurm's clock (Unix seconds: Slurm rounds reservations and batches its will-run test on multiples
of 60 and 30 s of it). Written to the output directory: ``slurm_N.csv``, ``model.csv``,
``jobs.csv`` (per job: every side's start, wait and backfilled flag), ``passes.csv`` (per run and
scheduler, each pass seen and its uncertainty), ``comparison.json`` (model vs each run, run N vs
run 1) and ``timeline.png`` (every job's run as a bar, one panel per side).
"""

from __future__ import annotations

import dataclasses
import json
import math
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from djsb.calibrate.compare import Comparison, compare, per_job
from djsb.calibrate.pass_watch import SCHEDULERS, PassWatch
from djsb.calibrate.slurm_config import (
    cluster_spec,
    last_backfill_cycle,
    parse_show_config,
    priority_plugin,
    scheduler_config,
)
from djsb.calibrate.slurm_replay import replay_on_slurm, slurm_ready
from djsb.config import SSHConfig, read_ssh
from djsb.errors import ConfigError, RunError
from djsb.jobs.registry import load_job_module
from djsb.jobs.scheduler_base import SchedulerModule
from djsb.jobs.scontrol import parse_show_records
from djsb.model import ClusterSpec, SchedulerConfig, Simulation
from djsb.model.priority.base import PriorityPlugin
from djsb.plotting import plt, save
from djsb.remote.connect import open_remote
from djsb.simulate import GENERATORS, scheduler_overrides
from djsb.transport import LocalTransport, Transport
from djsb.workloads.job import TraceJob
from djsb.workloads.swf import read_swf
from djsb.workloads.window import background_window
from djsb.yamlnodes import Located, as_int, as_number, as_str, check_arguments, load_yaml, read_fields

SECOND_BELOW = 0.999
"""The latest instant within a recorded second (Slurm's times are whole seconds)."""
SLURM_LIKE = {"bf_will_run": True, "node_select": "cons_tres"}
"""Model options on by default in a calibration: the backfill plan and node choice as Slurm makes them."""
WINDOW_FIELDS: dict[str, Callable[[Located], Any]] = {
    "start": as_number, "count": lambda n: as_int(n, 1), "cpu_scale": lambda n: as_number(n, 0, strict=True),
    "time_scale": lambda n: as_number(n, 0, strict=True),
}


@dataclass(frozen=True)
class SlurmModel:
    """The model of a running Slurm: its partition's nodes, its scheduler options and a factory of
    its priority plugin (a plugin holds one run's state)."""

    cluster: ClusterSpec
    scheduler: SchedulerConfig
    priority: Callable[[], PriorityPlugin]


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


def load_calibration(path: Path) -> Calibration:
    """Read and check a calibration file (nothing runs)."""
    root = load_yaml(path)
    root.check_keys(frozenset({"seed", "workload", "slurm", "model"}))
    seed_node = root.get("seed")
    seed = as_int(seed_node) if seed_node is not None else 0
    workload, slurm = root.get("workload"), root.get("slurm")
    if workload is None or slurm is None:
        raise root.error("missing section 'workload' or 'slurm'")
    fields = read_fields(slurm, {"partition": as_str, "runs": lambda n: as_int(n, 1), "work_dir": as_str,
                                 "ssh": read_ssh,
                                 "poll_interval": lambda n: as_number(n, 0, strict=True)}, ("partition",))
    model_node = root.get("model")
    model = scheduler_overrides(model_node) if model_node is not None else {}
    return Calibration(slurm_ready(_workload(workload, path.resolve().parent, seed)), seed=seed,
                       model=model, **fields)


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
    return [scaled_durations(job, fields.get("time_scale", 1.0)) for job in window]


def scaled_durations(job: TraceJob, time_scale: float) -> TraceJob:
    """A job's run and requested times scaled like its submission (background_window scales only
    the submissions: the load's shape; a calibration shrinks the whole replay)."""
    requested = None if job.requested_time is None else job.requested_time * time_scale
    return dataclasses.replace(job, run_time=job.run_time * time_scale, requested_time=requested)


def model_config(show_config: dict[str, str], overrides: dict[str, Any]) -> SchedulerConfig:
    """The model's scheduler: Slurm's options, planned as sched/backfill plans, then ``overrides``."""
    return dataclasses.replace(scheduler_config(show_config), **{**SLURM_LIKE, **overrides})


def model_replay(jobs: list[TraceJob], reference: pd.DataFrame, model: SlurmModel, seed: int,
                 passes: dict[str, list[float]] | None = None) -> pd.DataFrame:
    """The model's replay of ``jobs`` with the submissions and run times Slurm recorded in
    ``reference`` (the jobs' limits kept; submissions from :func:`submission_times`, run times
    from :func:`run_times`), in the
    replay table's form (index job_id). With the replay's ``origin`` column the model runs on
    Slurm's clock (see the module docstring); ``passes`` (``main`` / ``backfill``: seconds from
    the origin) are the only instants of that scheduler's passes, when given."""
    origin = float(reference["origin"].iloc[0]) if "origin" in reference else 0.0
    submits = submission_times(reference).to_dict()
    runs = run_times(jobs, reference).to_dict()
    recorded = [dataclasses.replace(job, submit=origin + float(submits[job.job_id]),
                                    run_time=float(runs[job.job_id]))
                for job in jobs if job.job_id in submits]
    times = {name: [origin + t for t in instants] for name, instants in (passes or {}).items()}
    result = Simulation(recorded, model.cluster, model.scheduler, model.priority(), seed=seed, start=origin,
                        pass_times=times).run()
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
    (end - start - sleep) is the mean overhead (srun and the batch script around the sleep)."""
    recorded = reference["end"] - reference["start"]
    sleeps = pd.Series({job.job_id: job.run_time for job in jobs}).reindex(recorded.index)
    overhead = max(0.0, float((recorded - sleeps).mean()))
    return sleeps + overhead


def slurm_model(module: SchedulerModule, partition: str,
                overrides: dict[str, Any]) -> tuple[SlurmModel, list[str]]:
    """The cluster, scheduler and priority plugin the model takes from the running Slurm, and notes
    on what it could not take."""
    def show(*what: str) -> str:
        return module.run(shlex.join(["scontrol", "show", *what])).stdout

    config = parse_show_config(show("config"))
    cluster = cluster_spec(parse_show_records(show("partition")), parse_show_records(show("node")), partition)
    priority, notes = priority_plugin(config)
    return SlurmModel(cluster, model_config(config, overrides), priority), notes


def sdiag(module: SchedulerModule) -> str | None:
    """``sdiag``'s answer, or None if it failed (PrivateData may hide it from a user)."""
    answer = module.run(shlex.join(["sdiag"]), check=False)
    return answer.stdout if answer.returncode == 0 else None


def with_backfill_phase(scheduler: SchedulerConfig,
                        module: SchedulerModule) -> tuple[SchedulerConfig, list[str]]:
    """``scheduler`` with its backfill passes at the phase of Slurm's (``sdiag``'s last backfill
    cycle), or unchanged with a note when sdiag does not say."""
    answer = sdiag(module)
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


def slurm_module(partition: str, transport: Transport) -> SchedulerModule:
    """DJSB's Slurm job module (through the registry) over ``transport``, limits as asked."""
    module = load_job_module("slurm", {"partition": partition, "time_factor": 1.0, "time_margin": 0.0},
                             transport)
    if not isinstance(module, SchedulerModule):
        raise RunError(f"the slurm job module is a {type(module).__name__}, not a command-based module")
    return module


def run_calibration(config_path: Path, out_dir: Path, *, runs: int | None = None,
                    module: SchedulerModule | None = None) -> str:
    """Replay on Slurm (``runs`` times, default the file's) and on the model; write the outputs and
    return the summary lines."""
    calibration = load_calibration(config_path)
    if module is not None:
        return _calibrate(calibration, module, out_dir, runs or calibration.runs)
    ssh = calibration.ssh
    transport = LocalTransport() if ssh is None else open_remote(ssh, str(config_path))
    try:
        return _calibrate(calibration, slurm_module(calibration.partition, transport), out_dir,
                          runs or calibration.runs)
    finally:
        transport.close()


def _calibrate(calibration: Calibration, module: SchedulerModule, out_dir: Path, runs: int) -> str:
    """:func:`run_calibration` once the Slurm module is there."""
    module.transport.run(shlex.join(["mkdir", "-p", calibration.work_dir]), timeout=30)
    slurm, notes = slurm_model(module, calibration.partition, calibration.model)
    out_dir.mkdir(parents=True, exist_ok=True)
    replays: dict[str, pd.DataFrame] = {}
    passes: list[dict[str, Any]] = []
    for run in range(1, runs + 1):
        watch = PassWatch(lambda: sdiag(module))
        replay = replays[f"slurm_{run}"] = replay_on_slurm(calibration.jobs, module, calibration.work_dir,
                                                           poll_interval=calibration.poll_interval,
                                                           watch=watch.look)
        origin = float(replay["origin"].iloc[0])
        passes += [{"run": run, "scheduler": name, "time": t - origin, "uncertainty": u}
                   for name, seen in watch.passes.items() for t, u in seen]
    observed = {name: [p["time"] for p in passes if p["run"] == 1 and p["scheduler"] == name]
                for name in SCHEDULERS}
    if not observed["main"]:
        notes.append("sdiag showed no main scheduler pass: the model's run at submissions, job ends and "
                     "every sched_interval")
    if not observed["backfill"] and "bf_phase" not in calibration.model:
        scheduler, phase_notes = with_backfill_phase(slurm.scheduler, module)
        slurm = dataclasses.replace(slurm, scheduler=scheduler)
        notes += ["sdiag showed no backfill pass during the replay: the model's passes are periodic",
                  *phase_notes]
    pd.DataFrame(passes, columns=["run", "scheduler", "time", "uncertainty"]).to_csv(out_dir / "passes.csv",
                                                                                    index=False)
    model = model_replay(calibration.jobs, replays["slurm_1"], slurm, calibration.seed,
                         passes={name: times for name, times in observed.items() if times})
    replays = {"slurm_1": replays["slurm_1"], "model": model,
               **{name: r for name, r in replays.items() if name != "slurm_1"}}
    for name, replay in replays.items():
        replay.to_csv(out_dir / f"{name}.csv")
    per_job(replays).to_csv(out_dir / "jobs.csv")
    comparisons = {f"{name} vs slurm_1": compare(replays["slurm_1"], replay)
                   for name, replay in replays.items() if name != "slurm_1"}
    if runs > 1:
        comparisons.update({f"model vs {name}": compare(replay, model) for name, replay in replays.items()
                            if name.startswith("slurm_") and name != "slurm_1"})
    (out_dir / "comparison.json").write_text(json.dumps(
        {"scheduler": dataclasses.asdict(slurm.scheduler), "priority": slurm.priority().name, "notes": notes,
         **{label: c.as_dict() for label, c in comparisons.items()}}, indent=2, default=str))
    plot_timelines(replays, out_dir / "timeline.png")
    replayed = [f"the model's {name} passes: the {len(times)} Slurm ran in run 1 (within "
                f"{max(p['uncertainty'] for p in passes if p['run'] == 1 and p['scheduler'] == name):.2f} s)"
                for name, times in observed.items() if times]
    return "\n".join([*notes, *replayed, *(describe(label, c) for label, c in comparisons.items()),
                      f"results in {out_dir}"])
