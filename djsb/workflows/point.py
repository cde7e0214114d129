"""One sweep point of the thesis' experiments, numbers only: ``run_point(config, out_dir)``.

The shared interface of issue 10 lets an experiment expose ``run_point(config_mapping, out_dir) ->
dict[str, float]`` for ``djsb sweep`` to call instead of ``djsb simulate``. This one takes a simulate
config with a ``workflow`` section, as data (relative paths in it are resolved against ``out_dir``,
where it is written as config.yaml), runs it like :func:`djsb.simulate.run_simulate` but writes only
metrics.json (the workload's summary and the ``workflow_*`` numbers): per-point plots and HTML cost
more than the simulation of a 1,000-job static workload, and the 2,000 points of the static
experiment need none of them. It returns the numeric scalars of metrics.json.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from djsb.errors import ConfigError
from djsb.model.metrics import summary
from djsb.simulate import load_experiment
from djsb.workflows.run import run_workflow


def run_point(config: Mapping[str, Any], out_dir: Path) -> dict[str, float]:
    """Run one workflow point and return its numbers (also written to ``out_dir``/metrics.json)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "config.yaml"
    path.write_text(yaml.safe_dump(dict(config), sort_keys=False))
    experiment = load_experiment(path)
    plan = experiment.workflow
    if plan is None or len(plan.strategies) != 1:
        raise ConfigError("a workflow point needs a workflow section with one strategy", source=str(path),
                          key="workflow")
    result, outcome = run_workflow(experiment.jobs, experiment.cluster, experiment.scheduler,
                                   experiment.priority, experiment.seed, plan, plan.strategies[0])
    metrics: dict[str, Any] = {**summary(result.jobs, result.total_cores), "rejected": len(result.rejected),
                               **{f"workflow_{k}": v for k, v in outcome.as_dict().items()}}
    (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    return {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float))}
