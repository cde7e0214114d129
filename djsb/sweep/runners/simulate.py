"""The default point runner: ``djsb simulate`` of the point's config, written as the command does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from djsb.simulate import experiment_from_tree, write_simulation
from djsb.sweep.runners import POINT_RUNNERS
from djsb.yamlnodes import Located


@POINT_RUNNERS.register("simulate")
def simulate_point(point: Located, out_dir: Path) -> dict[str, Any]:
    """Simulate the point's experiment into ``out_dir`` (its report shows the point's config)."""
    experiment = experiment_from_tree(point, Path(point.source).resolve().parent)
    write_simulation(experiment, yaml.safe_dump(point.plain(), sort_keys=False), out_dir)
    metrics: dict[str, Any] = json.loads((out_dir / "metrics.json").read_text())
    return metrics
