"""``djsb simulate``: run one experiment on the built-in scheduler model from a YAML file.

The file has four sections and an optional fifth, ``workflow`` (every time is a number of seconds,
quoted or not, or a Slurm time such as ``1:30:00`` or ``1-00:00:00``: djsb.yamlnodes.parse_duration;
relative paths are resolved against the config file's directory)::

    seed: 1
    workload:            # a trace ...
      swf: ../shared/data/traces/KTH-SP2-1996-2.1-cln.swf.gz
      limit: 5000                  # optional: first N jobs
      window: {start: busiest, length: 604800, warmup: 172800}   # optional: a week of the trace
                                   # (djsb/workflows/busiest_week.py), the warm-up starting at 0
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

:func:`run_simulate` validates all of it (a :class:`~djsb.errors.ConfigError` names the key path,
file and line), runs the model and writes jobs.csv, utilisation.csv, rejected.csv, skipped.csv
(trace records not read, if any), metrics.json, wait_ecdf.png, queue_utilisation.png (unless
``output: {plots: false}``) and report.html into the output directory. metrics.json and the line
printed at the end of the run say which estimate and which ``at_time_limit`` the replay used and
how many jobs were killed.

``at_time_limit`` defaults to ``run``: a trace records how long each job really ran on its machine,
and some machines let jobs overrun their request (LANL-CM5: 40,180 of 122,057 records ran past
it), so killing them would replay a different workload. ``kill`` is Slurm's behaviour and textbook
EASY's. It sets :attr:`SchedulerConfig.extend_limit` (``run`` = True).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from djsb.errors import ConfigError, InputError
from djsb.machine import NODE_BYTES
from djsb.model import (
    ClusterSpec,
    NodeSpec,
    PartitionSpec,
    QosSpec,
    SchedulerConfig,
    Simulation,
    SimulationResult,
)
from djsb.model.layouts import LAYOUTS, partition_limits
from djsb.model.priority import FifoPriority
from djsb.model.priority.base import PriorityPlugin
from djsb.model.priority.plugins import PRESETS, PRIORITY_PLUGINS
from djsb.model.schedule_metrics import UNITS, summary
from djsb.model.scheduler import POLICY_SCHEDULER_KEYS
from djsb.outcome import units_of
from djsb.progress import Progress, say
from djsb.registry import UnknownName
from djsb.report.html import write_simulate_html
from djsb.report.replay_stats import write_replay_stats
from djsb.workflows.compare import ranked
from djsb.workflows.plan import WorkflowPlan, read_plan
from djsb.workflows.run import OUTCOME_UNITS, WorkflowOutcome, fair_tree_priority, run_workflow
from djsb.workloads import synthetic
from djsb.workloads.estimate import ESTIMATES, with_estimates
from djsb.workloads.job import TraceJob
from djsb.workloads.records import skip_reasons
from djsb.workloads.shaping import (
    ShapingRecord,
    read_shaping,
    records_frame,
    shape_workload,
)
from djsb.workloads.swf import SkippedRecord, read_swf
from djsb.workloads.window import Window, read_window, window_jobs
from djsb.yamlnodes import (
    Located,
    as_bool,
    as_int,
    as_number,
    as_path,
    as_str,
    as_time_limit,
    check_arguments,
    check_count,
    describe,
    load_yaml,
    one_of,
    read_fields,
)

SIMULATE_FIGURES = (("wait_ecdf.png", "wait time ECDF"),
                    ("queue_utilisation.png", "queue length and utilisation"))
AT_TIME_LIMIT = ("run", "kill")
"""``workload.at_time_limit``: run past the limit as recorded (the default), or kill at it."""
GENERATORS: dict[str, Callable[..., list[TraceJob]]] = {
    "poisson_exponential": synthetic.poisson_exponential,
    "static_lognormal_004": synthetic.static_lognormal_004,
    "empty": lambda seed: [],
}


# ----------------------------------------------------------------------------- value readers
def _list(node: Located) -> list[Located]:
    if not isinstance(node.value, list) or not node.value:
        raise node.error(f"expected a non-empty list, got {describe(node.value)}")
    return node.value


def _child(node: Located, key: str, what: str = "key") -> Located:
    """A required child of a mapping."""
    child = node.get(key)
    if child is None:
        raise node.error(f"missing {what} {key!r}")
    return child


def _time_limit(node: Located) -> float | None:
    """A partition's MaxTime or a QOS's MaxWall: at least a second (a bare number in seconds), or
    None for ``UNLIMITED``."""
    return as_time_limit(node, unit="s", minimum=1)


# ----------------------------------------------------------------------------- sections
@dataclass(frozen=True)
class Replay:
    """How the workload's jobs are replayed: their time limits and what happens at a limit."""

    estimate: str = "requested"
    estimate_factor: float | None = None
    at_time_limit: str = "run"

    def as_metrics(self) -> dict[str, Any]:
        """The replay options as metrics.json records them."""
        factor = {"estimate_factor": self.estimate_factor} if self.estimate_factor is not None else {}
        return {"estimate": self.estimate, **factor, "at_time_limit": self.at_time_limit}


_WORKLOAD_REPLAY: dict[str, Callable[[Located], Any]] = {
    "estimate": one_of(*ESTIMATES), "estimate_factor": lambda n: as_number(n, 0.0, strict=True),
    "at_time_limit": one_of(*AT_TIME_LIMIT),
}


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
    window of the trace replayed (``window:``, djsb/workflows/busiest_week.py), if any."""
    fields = read_fields(node, {"swf": lambda n: as_path(n, base), "limit": lambda n: as_int(n, 1),
                            "keep_partitions": as_bool, "generator": as_str, "params": lambda n: n,
                            "window": lambda n: n, "shaping": lambda n: n, **_WORKLOAD_REPLAY})
    if ("swf" in fields) == ("generator" in fields):
        raise node.error("give exactly one of 'swf' (a trace) or 'generator'")
    if "swf" in fields:
        trace = read_swf(fields["swf"], limit=fields.get("limit"))
        window = read_window(fields["window"], trace) if "window" in fields else None
        jobs = trace.replayable_jobs() if window is None else window_jobs(trace.replayable_jobs(), window)
        if fields.get("keep_partitions", False):
            return jobs, trace.skipped, window
        return [dataclasses.replace(j, partition=None) for j in jobs], trace.skipped, window
    if "window" in fields:
        raise fields["window"].error("a window is taken from a trace ('swf'), not from a generator")
    name = fields["generator"]
    if name not in GENERATORS:
        raise _child(node, "generator").error(f"unknown generator (choose from {', '.join(GENERATORS)})")
    params_node = fields.get("params")
    params = params_node.plain() if params_node is not None else {}
    if params_node is not None and not isinstance(params, dict):
        raise params_node.error("expected a mapping of generator parameters")
    if params_node is not None:
        check_arguments(params_node, GENERATORS[name], params)
    params.setdefault("seed", seed)
    try:
        return GENERATORS[name](**params), [], None
    except TypeError as exc:
        raise (params_node or node).error(f"bad parameters for {name}: {exc}") from None
    except InputError as exc:
        given = params_node.get(exc.key) if params_node is not None and exc.key else None
        if given is not None:
            raise given.error(exc.message) from None
        key = f"{(params_node or node).key}.{exc.key}" if exc.key else (params_node or node).key
        raise ConfigError(exc.message, source=node.source, line=(params_node or node).line, key=key) from None


def _cluster(node: Located) -> ClusterSpec:
    node.check_keys(frozenset({"nodes", "partitions", "layout", "qos"}))
    nodes: list[NodeSpec] = []
    for group in _list(_child(node, "nodes")):
        f = read_fields(group, {"count": lambda n: as_int(n, 1), "cores": lambda n: as_int(n, 1),
                            "memory_mb": lambda n: as_number(n, 0), "prefix": as_str}, ("cores",))
        check_count(group.get("count") or group, len(nodes) + f.get("count", 1), NODE_BYTES, "nodes")
        prefix = f.get("prefix", "n")
        first = sum(1 for n in nodes if n.name.startswith(prefix))
        nodes += [NodeSpec(f"{prefix}{first + i}", f["cores"], f.get("memory_mb"))
                  for i in range(f.get("count", 1))]
    partitions = [PartitionSpec("batch")]
    partitions_node = node.get("partitions")
    layout_node = node.get("layout")
    if layout_node is not None and partitions_node is not None:
        raise layout_node.error("give 'layout' (a named set of partitions) or 'partitions', not both")
    if layout_node is not None:
        try:
            partitions = list(LAYOUTS.get(as_str(layout_node))())
        except UnknownName as exc:
            raise layout_node.error(str(exc)) from None
    if partitions_node is not None:
        partitions = []
        for item in _list(partitions_node):
            f = read_fields(item, {
                "name": as_str, "nodes": lambda n: tuple(as_str(x) for x in _list(n)),
                "min_cpus": lambda n: as_int(n, 1), "max_cpus": lambda n: as_int(n, 1),
                "max_time": _time_limit, "priority_tier": as_int,
                "priority_job_factor": as_int, "oversubscribe": lambda n: str(n.value).upper(),
            }, ("name",))
            spec = PartitionSpec(**f)
            try:
                spec.share  # noqa: B018 - validates the OverSubscribe value
            except ConfigError as exc:
                raise _child(item, "oversubscribe").error(exc.message) from None
            partitions.append(spec)
    qos = [QosSpec("normal")]
    qos_node = node.get("qos")
    if qos_node is not None:
        qos = [QosSpec(**read_fields(item, {"name": as_str, "priority": as_int,
                                        "max_jobs_per_user": lambda n: as_int(n, 1),
                                        "max_wall": _time_limit}, ("name",)))
               for item in _list(qos_node)]
    return ClusterSpec(tuple(nodes), tuple(partitions), tuple(qos))




def _priority(node: Located | None, base: PriorityPlugin | None) -> PriorityPlugin:
    """The ``policy.priority`` section read by its plugin's registered reader.

    Without a ``plugin`` key the plugin is the preset's, else multifactor when options are given,
    else FIFO; a preset's plugin is refined by the section only when the section names the same plugin.
    """
    if node is None:
        return base or FifoPriority()
    plugin_node = node.get("plugin")
    if plugin_node is not None:
        name = as_str(plugin_node)
    else:
        name = base.name if base is not None else "multifactor" if node.mapping() else "fifo"
    try:
        reader = PRIORITY_PLUGINS.get(name)
    except UnknownName as exc:
        raise (plugin_node or node).error(str(exc)) from None
    return reader(node, base if base is not None and base.name == name else None)


def _policy(node: Located | None) -> tuple[PriorityPlugin, SchedulerConfig]:
    if node is None:
        return FifoPriority(), SchedulerConfig()
    node.check_keys(frozenset({"preset", "priority", "scheduler"}))
    base_priority: PriorityPlugin | None = None
    scheduler = SchedulerConfig()
    preset_node = node.get("preset")
    if preset_node is not None:
        try:
            base_priority, scheduler = PRESETS.get(as_str(preset_node))()
        except UnknownName as exc:
            raise preset_node.error(str(exc)) from None
    priority = _priority(node.get("priority"), base_priority)
    sched_node = node.get("scheduler")
    if sched_node is not None:
        scheduler = dataclasses.replace(scheduler, **scheduler_overrides(sched_node))
    return priority, scheduler


def scheduler_overrides(node: Located) -> dict[str, Any]:
    """The options a ``policy.scheduler`` section (or a calibration's ``model``) sets, each checked
    by :class:`SchedulerConfig` now: a bad value is an error at its key's line."""
    overrides = read_fields(node, POLICY_SCHEDULER_KEYS)
    try:
        dataclasses.replace(SchedulerConfig(), **overrides)
    except ConfigError as exc:
        name = (exc.key or "").rpartition(".")[2]
        raise node.mapping().get(name, node).error(exc.message) from None
    return overrides


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
    workload_node = _child(root, "workload", "section")
    cluster_node = _child(root, "cluster", "section")
    seed_node = root.get("seed")
    seed = as_int(seed_node) if seed_node is not None else 0
    cluster = _cluster(cluster_node)
    priority, scheduler = _policy(root.get("policy"))
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


METRIC_UNITS = {**UNITS, "rejected": "jobs", "moved_jobs": "jobs", "shaped_jobs": "jobs",
                "skipped": "records", "no_requested_time": "jobs", "total_cores": "cores",
                "window_start": "s", "window_length": "s", "window_warmup": "s",
                **{f"workflow_{name}": unit for name, unit in OUTCOME_UNITS.items()}}
"""The unit of each number of a replay's metrics.json, written beside them as its ``units`` map."""


def run_simulate(config_path: Path, out_dir: Path, tree: Located | None = None) -> Path:
    """Run the experiment of ``config_path`` (``tree``: its YAML already read, a sweep point's) and
    write its results and report.html into ``out_dir``.

    The replay's progress goes to stderr (a bar on a terminal, a line every 10 s otherwise).
    """
    experiment = load_experiment(Path(config_path), tree)
    workflow_metrics: dict[str, Any] = {}
    if experiment.workflow is not None:
        result, workflow_metrics = _run_with_workflow(experiment, experiment.workflow, str(config_path))
    else:
        bar = Progress("jobs", len(experiment.jobs), line_every=10.0)
        result = Simulation(experiment.jobs, experiment.cluster, experiment.scheduler, experiment.priority,
                            seed=experiment.seed, on_progress=lambda done, total: bar.update(done)).run()
        bar.update(len(experiment.jobs))
        bar.close()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    result = _with_shaping(result, experiment.shaping, out_dir)
    result.jobs.to_csv(out_dir / "jobs.csv", index=False)
    result.utilisation.to_csv(out_dir / "utilisation.csv", index=False)
    result.rejected.to_csv(out_dir / "rejected.csv", index=False)
    skipped = pd.DataFrame([(r.line, r.reason, r.text) for r in experiment.skipped],
                           columns=["line", "reason", "text"])
    if len(skipped):
        skipped.to_csv(out_dir / "skipped.csv", index=False)
    scheduler = {k: "unlimited" if v == math.inf else v
                 for k, v in dataclasses.asdict(experiment.scheduler).items()}
    metrics = {**summary(result.jobs, result.total_cores), "rejected": len(result.rejected),
               **_shaping_counts(experiment),
               "skipped": len(skipped), **experiment.replay.as_metrics(),
               "no_requested_time": sum(1 for j in experiment.jobs if j.requested_time is None),
               "total_cores": result.total_cores, "seed": experiment.seed,
               "scheduler": scheduler, "priority": experiment.priority.name, **workflow_metrics}
    if experiment.window is not None:
        metrics.update({f"window_{k}": v for k, v in dataclasses.asdict(experiment.window).items()})
    metrics["units"] = units_of(metrics, METRIC_UNITS)
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    for line in _dropped_lines(experiment.skipped, result.rejected):
        say(line)
    say(_replay_line(metrics))
    if experiment.plots:
        _plots(result.jobs, result.utilisation, result.total_cores, out_dir)
    config_text = yaml.safe_dump(tree.plain(), sort_keys=False) if tree else Path(config_path).read_text()
    write_simulate_html(out_dir, config_text=config_text, metrics=metrics, skipped=skipped,
                        rejected=result.rejected, figures=SIMULATE_FIGURES if experiment.plots else ())
    return out_dir


def _run_with_workflow(experiment: Experiment, plan: WorkflowPlan,
                       source: str) -> tuple[SimulationResult, dict[str, Any]]:
    """The run with the workflow of one strategy in it, and its numbers as ``workflow_*`` metrics."""
    if len(plan.strategies) != 1:
        raise ConfigError(f"simulate runs one strategy, got {len(plan.strategies)} (djsb wrappers compares "
                          "several)", source=source, line=plan.strategy_line, key="workflow.strategy")
    result, outcome = run_workflow(experiment.jobs, experiment.cluster, experiment.scheduler,
                                   experiment.priority, experiment.seed, plan, plan.strategies[0])
    return result, {f"workflow_{k}": v for k, v in outcome.as_dict().items()}


def _with_shaping(result: SimulationResult, shaping: list[ShapingRecord] | None,
                  out_dir: Path) -> SimulationResult:
    """Write shaped.csv and add the jobs shaping rejected to the result's rejected ones (or nothing)."""
    if shaping is None:
        return result
    shaped = records_frame(shaping)
    shaped.to_csv(out_dir / "shaped.csv", index=False)
    refused = shaped[shaped["action"] == "rejected"][["job_id", "reason"]]
    return dataclasses.replace(result, rejected=pd.concat([refused, result.rejected], ignore_index=True))


def _shaping_counts(experiment: Experiment) -> dict[str, int]:
    """How many jobs shaping moved and reshaped (metrics.json; nothing without shaping)."""
    if experiment.shaping is None:
        return {}
    return {f"{action}_jobs": sum(1 for r in experiment.shaping if r.action == action)
            for action in ("moved", "shaped")}


def _replay_line(metrics: dict[str, Any]) -> str:
    """What the run did at time limits and with estimates, in one line for the terminal."""
    limit = "jobs ran past their time limit as recorded" if metrics["at_time_limit"] == "run" \
        else "jobs were killed at their time limit"
    factor = f" x {metrics['estimate_factor']:g}" if "estimate_factor" in metrics else ""
    return (f"at_time_limit: {metrics['at_time_limit']} ({limit}; {metrics['killed']} killed), "
            f"estimate: {metrics['estimate']}{factor}")


def _dropped_lines(skipped: list[SkippedRecord], rejected: pd.DataFrame) -> list[str]:
    """What of the workload the replay did not run, and why, for the terminal: the trace records
    the reader skipped (by reason) and the jobs the model rejected (the first one's reason); the
    files beside the results list each."""
    lines = []
    if skipped:
        lines.append(f"{len(skipped)} trace record(s) skipped ({skip_reasons(skipped)}): skipped.csv "
                     "lists each")
    if len(rejected):
        first = rejected.iloc[0]
        lines.append(f"{len(rejected)} job(s) rejected (job {first['job_id']}: {first['reason']}): "
                     "rejected.csv lists each")
    return lines


STEP_BINS = 200
"""Time bins of queue_utilisation.png: a year of events drawn one by one is a solid block of ink."""


def step_bins(times: Any, values: Any, bins: int) -> pd.DataFrame:
    """The step function ``values[i]`` from ``times[i]`` to ``times[i + 1]`` (sorted times; the last
    value holds for no time) over ``bins`` equal time bins from the first time to the last: columns
    ``start``, ``end``, ``mean`` (weighted by how long each value held), ``low`` and ``high`` (the
    values held in the bin)."""
    import numpy as np

    times, values = np.asarray(times, dtype=float), np.asarray(values, dtype=float)
    edges = np.linspace(times[0], times[-1], bins + 1)
    points = np.union1d(times, edges)
    starts = points[:-1]
    pieces = pd.DataFrame({"value": values[np.searchsorted(times, starts, side="right") - 1],
                           "width": np.diff(points),
                           "bin": np.minimum(np.searchsorted(edges, starts, side="right") - 1, bins - 1)})
    pieces = pieces[pieces["width"] > 0]
    pieces["area"] = pieces["value"] * pieces["width"]
    grouped = pieces.groupby("bin")
    table = pd.DataFrame({"mean": grouped["area"].sum() / grouped["width"].sum(),
                          "low": grouped["value"].min(), "high": grouped["value"].max()})
    table.insert(0, "start", edges[table.index])
    table.insert(1, "end", edges[table.index + 1])
    return table.reset_index(drop=True)


def _plots(jobs: Any, util: Any, total_cores: int, out_dir: Path) -> None:
    import numpy as np

    from djsb.plotting import ecdf_step, plt, save  # matplotlib is imported only when drawing

    waits = np.sort(jobs["wait"].to_numpy())
    fig, ax = plt.subplots(figsize=(6, 4))
    if len(waits):
        ecdf_step(ax, waits)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel("wait time (s)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title(f"{out_dir.name}: wait time ECDF of {len(waits)} jobs")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    save(fig, out_dir / "wait_ecdf.png")

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 5.5), sharex=True, constrained_layout=True)
    if len(util) > 1:
        span = float(util["time"].iloc[-1] - util["time"].iloc[0])
        unit, seconds = ("days", 86400.0) if span > 3 * 86400 else ("hours", 3600.0)
        shares = util.assign(busy=util["busy_cores"] / max(total_cores, 1))
        for ax, column, label in ((top, "queued_jobs", "queued jobs"), (bottom, "busy", "utilisation")):
            binned = step_bins(shares["time"], shares[column], min(STEP_BINS, len(util) - 1))
            middle = ((binned["start"] + binned["end"]) / 2 - util["time"].iloc[0]) / seconds
            ax.fill_between(middle, binned["low"], binned["high"], color="C0", alpha=0.2, linewidth=0,
                            label="lowest to highest in the bin")
            ax.plot(middle, binned["mean"], color="C0", linewidth=1, label="mean over the bin")
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
        overall = float(step_bins(shares["time"], shares["busy"], 1)["mean"].iloc[0])
        bottom.axhline(overall, color="k", linestyle="--", linewidth=0.8,
                       label=f"mean over the run: {overall:.0%}")
        bottom.set_xlabel(f"{unit} since the first event (bins of {span / seconds / len(binned):.3g} {unit})")
        fig.legend(*bottom.get_legend_handles_labels(), loc="outside lower center", ncol=3, fontsize=8)
    bottom.set_ylim(0, 1.05)
    fig.suptitle(f"{out_dir.name}: queued jobs and utilisation ({total_cores} cores)")
    save(fig, out_dir / "queue_utilisation.png")


def replay_and_compare(config_path: Path, out_dir: Path) -> Path:
    """``djsb replay-stats``: run ``djsb simulate`` on an SWF replay, then compare it with the trace."""
    experiment = load_experiment(config_path)
    workload = load_yaml(config_path).get("workload")
    assert workload is not None  # load_experiment requires it
    swf = workload.get("swf")
    if swf is None:
        raise workload.error("replay-stats compares a replay with its trace: give workload.swf")
    trace = Path(as_str(swf))
    run_simulate(config_path, out_dir)
    write_replay_stats(trace if trace.is_absolute() else config_path.resolve().parent / trace,
                       experiment.as_recorded(), out_dir)
    return out_dir


def compare_strategies(config_path: Path) -> list[WorkflowOutcome]:
    """Run the config's workflow under each of its strategies; best first."""
    experiment = load_experiment(config_path)
    plan = experiment.workflow
    if plan is None:
        raise ConfigError("missing section 'workflow' (the workflow to evaluate)", source=str(config_path),
                          line=1, key="workflow")
    outcomes = [run_workflow(experiment.jobs, experiment.cluster, experiment.scheduler,
                             copy.deepcopy(experiment.priority), experiment.seed, plan, strategy)[1]
                for strategy in plan.strategies]
    return ranked(outcomes)
