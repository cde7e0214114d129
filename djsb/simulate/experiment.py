"""A ``djsb simulate`` config, read and checked into an :class:`Experiment` (nothing runs).

The file has four sections and an optional fifth, ``workflow`` (every time is a number of seconds,
quoted or not, or a Slurm time such as ``1:30:00`` or ``1-00:00:00``: djsb.yamlnodes.parse_duration;
relative paths are resolved against the config file's directory)::

    seed: 1
    workload:            # a trace ...
      swf: ../shared/data/traces/KTH-SP2-1996-2.1-cln.swf.gz
      limit: 5000                  # optional: first N jobs
      window: {start: busiest, length: 604800, warmup: 172800}   # optional: a week of the trace
                                   # (djsb/workloads/window.py), the warm-up starting at 0
      keep_partitions: false       # default: every job goes to the first partition
    # ... or a generator: {generator: poisson_exponential, params: {n_jobs: ..., ...}}
      estimate: requested          # the jobs' time limits: requested (default), runtime (perfect
                                   # estimates), runtime_factor (with estimate_factor: F) or
                                   # partition_max; see djsb/workloads/estimate.py
      at_time_limit: run           # run (default): jobs run their recorded time, none is killed;
                                   # kill: Slurm kills a job at its time limit
      shaping: {policy: target, partition: cpu_long}   # optional, paper 003 sec. 3: jobs go to
                                   # their own partition or the first that fits; a job fitting none
                                   # is rejected (policy: reject), reshaped toward a partition
                                   # (target) or by {policy: factor, factor: 2}; see
                                   # djsb/workloads/shaping/ (shaped.csv lists every job changed)
    cluster:
      nodes: [{count: 100, cores: 1, memory_mb: 1024, prefix: n}]
      partitions: [{name: batch, min_cpus: 1, max_cpus: 64, max_time: 86400, oversubscribe: "NO", ...}]
      # or layout: sdumont_2018, a named set of partitions (djsb/model/layouts.py)
      qos: [{name: normal, priority: 0, max_jobs_per_user: 10}]
    policy:
      preset: marenostrum4         # optional; the sections below override it
      priority: {plugin: multifactor, weights: {age: 1000, fairshare: 10000}, fairshare: fair_tree}
      # or {plugin: fifo}, or {plugin: psp_aging, time_step: 150} (paper 000); each plugin reads
      # its own options (a registered reader in its file under djsb/model/priority/)
      scheduler: {backfill: easy, bf_interval: 30}   # bf_window also takes UNLIMITED (slurm.conf's
                                   # 1440 minutes is 86400 or "1-00:00:00" here), bf_max_job_test and
                                   # default_queue_depth "unlimited"; max_time and max_wall UNLIMITED
    # preset: textbook is Mu'alem & Feitelson's EASY (FIFO, no window, no intervals, no rounding)
    workflow:            # optional: a workflow packed by a wrapper strategy and submitted into the
      shape: vertical    # workload (djsb/workflows/plan.py); metrics.json gains workflow_* numbers
      count: 7
      cpus: 96
      run_time: 1800
      strategy: vertical
    # generator: empty is a workload of no jobs (an empty machine for the workflow)
    output: {plots: false}         # optional: no figures (a sweep of many points goes twice as fast)

The workload's jobs come from :mod:`djsb.workloads.source`, the ``cluster`` and ``policy`` sections
are read by :mod:`djsb.model.sections`; a :class:`~djsb.errors.ConfigError` names the key path, file
and line.

``at_time_limit`` defaults to ``run``: a trace records how long each job really ran on its machine,
and some machines let jobs overrun their request (LANL-CM5: 40,180 of 122,057 records ran past
it), so killing them would replay a different workload. ``kill`` is Slurm's behaviour and textbook
EASY's. It sets :attr:`SchedulerConfig.extend_limit` (``run`` = True).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from djsb.errors import ConfigError
from djsb.model import ClusterSpec, SchedulerConfig, Simulation
from djsb.model.layouts import partition_limits
from djsb.model.priority.base import PriorityPlugin
from djsb.model.sections import read_cluster, read_policy, required
from djsb.setting import readers, setting, table
from djsb.workflows.plan import WorkflowPlan, read_plan
from djsb.workflows.run import fair_tree_priority
from djsb.workloads.estimate import ESTIMATES, with_estimates
from djsb.workloads.job import TraceJob
from djsb.workloads.shaping import ShapingRecord, read_shaping, shape_workload
from djsb.workloads.source import SOURCE_KEYS, SourceKeys, read_source
from djsb.workloads.swf import SkippedRecord
from djsb.workloads.window import Window, read_window, window_jobs
from djsb.yamlnodes import Located, as_bool, as_int, as_number, load_yaml, one_of, read_fields

AT_TIME_LIMIT = ("run", "kill")
"""``workload.at_time_limit``: run past the limit as recorded (the default), or kill at it."""
WORKLOAD = "workload"
"""Where a config writes the replay's keys."""


@dataclass(frozen=True)
class Replay:
    """How the workload's jobs are replayed: their time limits and what happens at a limit."""

    estimate: str = setting("requested", one_of(*ESTIMATES), "", "",
                            "the jobs' time limits: requested, runtime (perfect estimates), runtime_factor "
                            "or partition_max (djsb/workloads/estimate.py)", where=WORKLOAD)
    estimate_factor: float | None = setting(None, lambda n: as_number(n, 0.0, strict=True), "", "",
                                            "F of runtime_factor (only with it): a job's limit is F x its "
                                            "run time", where=WORKLOAD)
    at_time_limit: str = setting("run", one_of(*AT_TIME_LIMIT), "", "",
                                 "run: jobs run their recorded time past their limit; kill: a job is killed "
                                 "at its limit, as Slurm does", where=WORKLOAD)

    def as_metrics(self) -> dict[str, Any]:
        """The replay options as metrics.json records them."""
        factor = {"estimate_factor": self.estimate_factor} if self.estimate_factor is not None else {}
        return {"estimate": self.estimate, **factor, "at_time_limit": self.at_time_limit}


_WORKLOAD_REPLAY = readers(Replay)


def _replay(node: Located, cluster: ClusterSpec) -> Replay:
    """The workload section's replay keys, checked against each other and the partitions."""
    present = {k: child for k, child in node.mapping().items() if k in _WORKLOAD_REPLAY}
    replay = Replay(**{k: _WORKLOAD_REPLAY[k](child) for k, child in present.items()})
    if (replay.estimate == "runtime_factor") != (replay.estimate_factor is not None):
        where = present.get("estimate_factor") or present.get("estimate") or node
        raise where.error("estimate_factor goes with estimate: runtime_factor, and only with it")
    unlimited = [p.name for p in cluster.partitions if p.max_time is None]
    if replay.estimate == "partition_max" and unlimited:
        raise present["estimate"].error(
            f"partition_max needs max_time on every partition; {', '.join(unlimited)} has none")
    return replay


def _estimated(jobs: list[TraceJob], replay: Replay, cluster: ClusterSpec) -> list[TraceJob]:
    """The jobs with the time limits ``replay.estimate`` gives them (djsb/workloads/estimate.py)."""
    max_times = {p.name: p.max_time for p in cluster.partitions}
    default = cluster.partitions[0].max_time
    return with_estimates(jobs, replay.estimate, replay.estimate_factor or 1.0,
                          lambda j: max_times.get(j.partition) if j.partition else default)


def _workload(node: Located, base: Path,
              seed: int) -> tuple[list[TraceJob], list[SkippedRecord], Window | None]:
    """The workload's jobs, the trace records the reader skipped (none for a generator) and the
    window of the trace replayed (``window:``, djsb/workloads/window.py), if any."""
    fields = read_fields(node, {**SOURCE_KEYS, "keep_partitions": as_bool,
                                "window": lambda n: n, "shaping": lambda n: n, **_WORKLOAD_REPLAY})
    source = read_source(node, base, seed)
    if source.trace is None:
        if "window" in fields:
            raise fields["window"].error("a window is taken from a trace ('swf'), not from a generator")
        return source.jobs, [], None
    window = read_window(fields["window"], source.trace) if "window" in fields else None
    jobs = source.jobs if window is None else window_jobs(source.jobs, window)
    if fields.get("keep_partitions", False):
        return jobs, source.skipped, window
    return [dataclasses.replace(j, partition=None) for j in jobs], source.skipped, window


@dataclass(frozen=True)
class Experiment:
    """A validated ``djsb simulate`` experiment, ready to run."""

    jobs: list[TraceJob]
    cluster: ClusterSpec
    priority: PriorityPlugin
    scheduler: SchedulerConfig
    seed: int
    skipped: list[SkippedRecord]  # trace records the SWF reader skipped, with their line and reason
    replay: Replay = Replay()
    workflow: WorkflowPlan | None = None
    window: Window | None = None
    shaping: list[ShapingRecord] | None = None  # jobs moved, shaped or rejected (None: no shaping)
    plots: bool = True  # output.plots: false skips the figures (half a small point's time in a sweep)

    def as_recorded(self) -> list[TraceJob]:
        """The workload's jobs before shaping (rejected ones included), in trace order."""
        before = {j.job_id: j for j in self.jobs}
        before.update({r.before.job_id: r.before for r in self.shaping or []})
        return sorted(before.values(), key=lambda j: (j.submit, j.job_id))


def load_experiment(config_path: Path, tree: Located | None = None) -> Experiment:
    """Read and validate an experiment file (nothing runs); ``tree``: the file's YAML already read,
    with some values replaced (a sweep point), its relative paths still the file's."""
    root = load_yaml(config_path) if tree is None else tree
    root.check_keys(frozenset({"seed", "workload", "cluster", "policy", "workflow", "output"}))
    workload_node = required(root, "workload", "section")
    cluster_node = required(root, "cluster", "section")
    seed_node = root.get("seed")
    seed = as_int(seed_node) if seed_node is not None else 0
    cluster = read_cluster(cluster_node)
    priority, scheduler = read_policy(root.get("policy"))
    jobs, skipped, window = _workload(workload_node, config_path.resolve().parent, seed)
    replay = _replay(workload_node, cluster)
    scheduler = dataclasses.replace(scheduler, extend_limit=replay.at_time_limit == "run")
    try:
        model = Simulation([], cluster, scheduler, priority)
    except ConfigError as exc:
        raise ConfigError(exc.message, source=root.source, line=cluster_node.line,
                          key=f"cluster.{exc.key}" if exc.key else "cluster") from None
    workflow_node = root.get("workflow")
    plan = None
    if workflow_node is not None:
        plan = read_plan(workflow_node, cluster)
        try:
            fair_tree_priority(plan, priority)
        except ConfigError as exc:
            raise workflow_node.error(exc.message) from None
    jobs = _estimated(jobs, replay, cluster)
    shaping_node = workload_node.get("shaping")
    records = None
    if shaping_node is not None:
        layout = partition_limits(cluster)
        jobs, records = shape_workload(jobs, layout, read_shaping(shaping_node, layout))
    refused = every_job_refused(jobs, records, model)
    if refused:
        raise (workload_node.get("swf") or workload_node.get("generator") or workload_node).error(
            f"no job of the workload can run on this cluster: {refused}")
    output_node = root.get("output") or Located({}, root.line, "output", root.source)
    output = read_fields(output_node, {"plots": as_bool})
    return Experiment(jobs, cluster, priority, scheduler, seed, skipped, replay, plan, window,
                      shaping=records, plots=output.get("plots", True))


def every_job_refused(jobs: list[TraceJob], shaping: list[ShapingRecord] | None, model: Simulation) -> str:
    """Why the model would reject every job of a workload that has some, at submission or by
    shaping (how many, and the first job's reason), or "" when it would admit one at least: a
    replay of none would measure nothing. The first job admitted ends the search."""
    refused = [(record.before.job_id, record.reason) for record in shaping or []
               if record.action == "rejected"]
    for job in jobs:
        reason = model.admission(job)
        if not reason:
            return ""
        refused.append((job.job_id, reason))
    if not refused:
        return ""  # no job at all: an empty machine for a workflow (generator: empty)
    job_id, reason = refused[0]
    return f"each of its {len(refused)} job(s) would be rejected (job {job_id}: {reason})"


def reference() -> str:
    """The Markdown reference of the workload section's replay and source keys
    (docs/reference/workload.md)."""
    return "\n".join([
        "# `workload`: how the model replays the jobs", "",
        "Generated from djsb/simulate/experiment.py and djsb/workloads/source.py (`make reference`); a "
        "test fails when this file and the declarations differ. `window` is read by "
        "djsb/workloads/window.py and `shaping` by djsb/workloads/shaping/; djsb/simulate/experiment.py "
        "documents them.", "",
        *table(Replay), "", "## Where the jobs come from", "", *table(SourceKeys)]) + "\n"
