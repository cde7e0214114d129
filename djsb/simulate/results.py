"""A model replay of an :class:`~djsb.simulate.experiment.Experiment` and what it writes: jobs.csv,
utilisation.csv, rejected.csv, skipped.csv (trace records not read, if any), shaped.csv (with
shaping), out_of_service.csv (with node events), metrics.json (its numbers and their ``units``),
the figures (:mod:`djsb.report.replay_figures`, unless ``output: {plots: false}``) and report.html.

metrics.json and the line printed at the end of the run say which estimate and which
``at_time_limit`` the replay used and how many jobs were killed.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from djsb.errors import ConfigError
from djsb.model import Simulation, SimulationResult
from djsb.model.limits import NEVER_STARTED
from djsb.model.schedule_metrics import UNITS, capacity_lost, summary
from djsb.outcome import units_of
from djsb.progress import Progress, say
from djsb.report.html import write_simulate_html
from djsb.report.replay_figures import SIMULATE_FIGURES, plot_replay
from djsb.simulate.experiment import Experiment
from djsb.workflows.plan import WorkflowPlan
from djsb.workflows.run import OUTCOME_UNITS, run_workflow
from djsb.workloads.records import skip_reasons
from djsb.workloads.shaping import ShapingRecord, records_frame
from djsb.workloads.swf import SkippedRecord
from djsb.yamlnodes import Located

METRIC_UNITS = {**UNITS, "rejected": "jobs", "never_started": "jobs", "moved_jobs": "jobs",
                "shaped_jobs": "jobs", "skipped": "records", "no_requested_time": "jobs",
                "total_cores": "cores",
                "window_start": "s", "window_length": "s", "window_warmup": "s",
                **{f"workflow_{name}": unit for name, unit in OUTCOME_UNITS.items()}}
"""The unit of each number of a replay's metrics.json, written beside them as its ``units`` map."""


def never_started(rejected: pd.DataFrame) -> int:
    """How many of the rejected jobs were accepted but never started: held forever by a QoS limit
    (djsb/model/limits.py), counted among ``rejected`` too."""
    return int(rejected["reason"].str.startswith(NEVER_STARTED).sum()) if len(rejected) else 0


def write_replay(experiment: Experiment, out_dir: Path, config_path: Path,
                 tree: Located | None = None) -> Path:
    """Run ``experiment``, read from ``config_path`` (``tree``: its YAML as read, a sweep point's),
    on the model and write its results and report.html (which shows that config) into ``out_dir``.

    The replay's progress goes to stderr (a bar on a terminal, a line every 10 s otherwise).
    """
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
    if result.out_of_service is not None:
        result.out_of_service.to_csv(out_dir / "out_of_service.csv", index=False)
    skipped = pd.DataFrame([(r.line, r.reason, r.text) for r in experiment.skipped],
                           columns=["line", "reason", "text"])
    if len(skipped):
        skipped.to_csv(out_dir / "skipped.csv", index=False)
    scheduler = {k: "unlimited" if v == math.inf else v
                 for k, v in dataclasses.asdict(experiment.scheduler).items()}
    lost = capacity_lost(result.jobs, result.out_of_service, result.total_cores) \
        if result.out_of_service is not None else {}
    metrics = {**summary(result.jobs, result.total_cores, result.total_gpus), **lost,
               "rejected": len(result.rejected), "never_started": never_started(result.rejected),
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
        plot_replay(result.jobs, result.utilisation, result.total_cores, out_dir, result.total_gpus)
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
