"""A ``djsb calibrate`` file, read and checked into a :class:`Calibration` (nothing runs).

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
      gpus:                   # optional: GPU requests given to the jobs (the cluster's nodes need GPUs:
        share: 0.5            # the model reads them from scontrol show node), drawn with the file's
        counts: [1, 2]        # seed: round(share x jobs) jobs, picked at random, each asking one of
        per: [node, job]      # counts (uniformly) per node (--gpus-per-node, the default), per job
        type: a100            # (--gpus) or per task (--gpus-per-task; a job has one task per CPU),
                              # one of per's list (uniformly) for each; type optional (none: any
                              # GPU). Without the key no job asks a GPU
      arrays: {share: 0.1, tasks: [2, 4], throttle: [1, 2]}  # optional: job arrays and
      dependencies: {share: 0.2, kinds: [afterok, afterany]}   # dependency chains (job_links.py)
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
      requeue: false          # optional: true submits every job --requeue (run again after a
                              # preemption under REQUEUE or a node failure; default --no-requeue)
    model:                    # optional: any policy.scheduler option, over what Slurm's answers give
      bf_will_run: true       # on by default here: backfill planned as sched/backfill plans
      node_select: cons_tres  # on by default here: nodes chosen as select/cons_tres chooses
      start_latency: 0
    watch_draws: 8            # optional: extra model replays, each pass drawn within its sdiag
                              # bracket, whose range a note gives (djsb/calibrate/watch_draws.py); 0: none
    machine:                  # optional: nodes drained and resumed, reservations, during each replay
      node_events: [{at: 30, nodes: m2, state: DRAIN}, {at: 150, nodes: m2, state: RESUME}]
      reservations: [{name: djsb_cal, nodes: m4, start: 60, duration: 120, flags: "MAINT,IGNORE_JOBS"}]
                              # (djsb/calibrate/machine_changes.py; needs an operator's rights)
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from djsb.calibrate.job_links import drawn_dependencies, with_arrays
from djsb.calibrate.machine_changes import MachineChanges, read_machine
from djsb.calibrate.slurm_replay import slurm_ready
from djsb.calibrate.watch_draws import DEFAULT_DRAWS
from djsb.config import SSHConfig, read_ssh
from djsb.jobs.names import slurm_name
from djsb.model.dependency import Dependency
from djsb.model.sections import scheduler_overrides
from djsb.simulate.experiment import AT_TIME_LIMIT
from djsb.workloads.gpus import GpuRequest
from djsb.workloads.job import TraceJob
from djsb.workloads.source import SOURCE_KEYS, read_source
from djsb.workloads.window import background_window
from djsb.yamlnodes import (
    Located,
    as_bool,
    as_duration,
    as_int,
    as_number,
    as_str,
    load_yaml,
    one_of,
    read_fields,
)

WINDOW_FIELDS: dict[str, Callable[[Located], Any]] = {
    "start": lambda n: as_duration(n, unit="s"), "count": lambda n: as_int(n, 1),
    "cpu_scale": lambda n: as_number(n, 0, strict=True),
    "time_scale": lambda n: as_number(n, 0, strict=True),
    "memory_scale": lambda n: as_number(n, 0, strict=True), "at_time_limit": one_of(*AT_TIME_LIMIT),
    "gpus": lambda n: n,  # read by _gpus once the window is known
    "arrays": lambda n: n, "dependencies": lambda n: n,  # read by job_links once the jobs are Slurm's
}
MAX_GPUS = 64
"""The most GPUs one draw of ``workload.gpus.counts`` may ask (per node, job or task): more than any
node of a mini-cluster has, and a bound on what a typo can ask of a real cluster."""



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
    requeue: bool = False
    """Whether every job is submitted ``--requeue`` (else ``--no-requeue``), and replayed so by the model."""
    watch_draws: int = DEFAULT_DRAWS
    """Extra model replays, every pass drawn within its sdiag bracket (:mod:`~djsb.calibrate.watch_draws`)."""
    machine: MachineChanges = MachineChanges()
    """Nodes taken out of service and back, and reservations, during each replay
    (:mod:`~djsb.calibrate.machine_changes`)."""
    dependencies: Mapping[int, Dependency] = dataclasses.field(default_factory=dict)
    """What each job waits for, by job id (:mod:`~djsb.calibrate.job_links`; none: nothing)."""

    @property
    def memory_margin(self) -> float | None:
        """The Slurm module's memory margin: none when the jobs ask for their own memory (the model
        must see what Slurm counts), else the module's default."""
        return 0.0 if any(job.memory_mb is not None for job in self.jobs) else None



def load_calibration(path: Path) -> Calibration:
    """Read and check a calibration file (nothing runs)."""
    root = load_yaml(path)
    root.check_keys(frozenset({"seed", "workload", "slurm", "model", "watch_draws", "machine"}))
    seed_node, draws_node = root.get("seed"), root.get("watch_draws")
    seed = as_int(seed_node) if seed_node is not None else 0
    draws = as_int(draws_node, 0) if draws_node is not None else DEFAULT_DRAWS
    workload, slurm = root.get("workload"), root.get("slurm")
    if workload is None or slurm is None:
        raise root.error("missing section 'workload' or 'slurm'")
    fields = read_fields(slurm, {"partition": as_str, "runs": lambda n: as_int(n, 1), "work_dir": as_str,
                                 "ssh": read_ssh, "accounts": _names, "qos": _names, "partitions": _names,
                                 "requeue": as_bool,
                                 "poll_interval": lambda n: as_duration(n, unit="s", strict=True)},
                         ("partition",))
    model_node = root.get("model")
    model = scheduler_overrides(model_node) if model_node is not None else {}
    window = _workload(workload, path.resolve().parent, seed)
    at_limit = workload.get("at_time_limit")
    kill = at_limit is not None and one_of(*AT_TIME_LIMIT)(at_limit) == "kill"
    jobs = with_accounts(slurm_ready(window, kill=kill), fields.get("accounts", ()))
    arrays, linked = workload.get("arrays"), workload.get("dependencies")
    jobs = with_arrays(jobs, arrays, seed) if arrays is not None else jobs
    dependencies = drawn_dependencies(jobs, linked, seed, kill) if linked is not None else {}
    machine_node = root.get("machine")
    machine = read_machine(machine_node) if machine_node is not None else MachineChanges()
    jobs = [dataclasses.replace(job, requeue=bool(fields.get("requeue", False))) for job in jobs]
    return Calibration(dealt_by_user(jobs, fields.get("qos", ()), "qos"), seed=seed, model=model,
                       watch_draws=draws, machine=machine, dependencies=dependencies, **fields)



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



def _workload(node: Located, base: Path, seed: int) -> list[TraceJob]:
    """The workload section's jobs: a trace or a generator, then the window and its scaling."""
    fields = read_fields(node, {**SOURCE_KEYS, **WINDOW_FIELDS})
    jobs = read_source(node, base, seed).jobs
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
    scaled = [dataclasses.replace(scaled_durations(job, fields.get("time_scale", 1.0)),
                                  memory_mb=None if scale is None or job.memory_mb is None
                                  else job.memory_mb * scale) for job in window]
    gpus = fields.get("gpus")
    return scaled if gpus is None else with_gpus(scaled, gpus, seed)


def with_gpus(jobs: list[TraceJob], node: Located, seed: int) -> list[TraceJob]:
    """The jobs with ``workload.gpus``'s requests: ``round(share x len(jobs))`` jobs picked at random,
    each asking a count drawn uniformly from ``counts``, per one of ``per`` (node, job or task; drawn
    uniformly when a list), of ``type``; the draws come from ``random.Random(seed)``, so one file
    always gives the same jobs the same GPUs."""
    fields = read_fields(node, {"share": lambda n: as_number(n, 0, strict=True), "counts": _gpu_counts,
                                "per": _gpu_per, "type": _gpu_type},
                         ("share", "counts"))
    if fields["share"] > 1:
        raise node.mapping()["share"].error(f"must be at most 1 (all the jobs), got {fields['share']:g}")
    draw = random.Random(seed)
    chosen = sorted(draw.sample(range(len(jobs)), round(fields["share"] * len(jobs))))
    asked = {k: GpuRequest(draw.choice(fields["counts"]), draw.choice(fields.get("per", ("node",))),
                           fields.get("type")) for k in chosen}
    return [dataclasses.replace(job, gpus=asked[k]) if k in asked else job for k, job in enumerate(jobs)]


def _gpu_per(node: Located) -> tuple[str, ...]:
    """``per``: node, job or task, or a non-empty list of them."""
    read = one_of("node", "job", "task")
    if isinstance(node.value, list):
        if not node.value:
            raise node.error("expected node, job, task or a non-empty list of them")
        return tuple(read(item) for item in node.value)
    return (read(node),)


def _gpu_counts(node: Located) -> tuple[int, ...]:
    if not isinstance(node.value, list) or not node.value:
        raise node.error("expected a non-empty list of GPU counts")
    counts = tuple(as_int(item, 1) for item in node.value)
    if max(counts) > MAX_GPUS:
        raise node.error(f"a count above {MAX_GPUS} GPUs: {max(counts)}")
    return counts


def _gpu_type(node: Located) -> str:
    try:
        return slurm_name(as_str(node))
    except ValueError as error:
        raise node.error(str(error)) from None


def scaled_durations(job: TraceJob, time_scale: float) -> TraceJob:
    """A job's run and requested times scaled like its submission (background_window scales only
    the submissions: the load's shape; a calibration shrinks the whole replay)."""
    requested = None if job.requested_time is None else job.requested_time * time_scale
    return dataclasses.replace(job, run_time=job.run_time * time_scale, requested_time=requested)

