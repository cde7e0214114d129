"""The ``workflow`` point runner: a simulate config with a workflow section, numbers only.

Paper 004's experiments (configs/wrappers-*-sweep.yaml) run thousands of points whose only output
that matters is the workflow's numbers: per-point plots, HTML and the job table cost more than the
simulation of a 1,000-job workload. This runner runs the point as ``djsb simulate`` would
(:func:`djsb.simulate.experiment.load_experiment` on the point's tree, so errors keep the sweep file's lines
and relative paths resolve against its directory) and writes only metrics.json: the workload's
summary, ``rejected`` and the ``workflow_*`` numbers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from djsb.model.schedule_metrics import summary
from djsb.outcome import units_of
from djsb.simulate.experiment import load_experiment
from djsb.simulate.results import METRIC_UNITS
from djsb.sweep.runners import POINT_RUNNERS
from djsb.workflows.run import run_workflow
from djsb.yamlnodes import Located


@POINT_RUNNERS.register("workflow")
def workflow_point(point: Located, out_dir: Path) -> dict[str, Any]:
    """Run the point's workflow (exactly one strategy) and write its metrics.json into ``out_dir``."""
    experiment = load_experiment(Path(point.source), point)
    plan = experiment.workflow
    if plan is None or len(plan.strategies) != 1:
        raise point.error("a workflow point needs a workflow section with one strategy")
    result, outcome = run_workflow(experiment.jobs, experiment.cluster, experiment.scheduler,
                                   experiment.priority, experiment.seed, plan, plan.strategies[0])
    metrics: dict[str, Any] = {**summary(result.jobs, result.total_cores), "rejected": len(result.rejected),
                               **{f"workflow_{k}": v for k, v in outcome.as_dict().items()}}
    metrics["units"] = units_of(metrics, METRIC_UNITS)
    (Path(out_dir) / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics
