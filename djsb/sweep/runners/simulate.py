"""The default point runner: ``djsb simulate`` of the point's config, written as the command does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# The points draw their figures with pyplot: imported once here, before the sweep forks its
# workers, each worker has it already instead of importing it for its first point (about 1 s each).
import djsb.plotting  # noqa: F401
from djsb.simulate.experiment import load_experiment
from djsb.simulate.results import write_replay
from djsb.sweep.runners import POINT_RUNNERS
from djsb.yamlnodes import Located


@POINT_RUNNERS.register("simulate")
def simulate_point(point: Located, out_dir: Path) -> dict[str, Any]:
    """Simulate the point's experiment into ``out_dir`` (its relative paths are the sweep file's,
    its report shows the point's config)."""
    write_replay(load_experiment(Path(point.source), point), out_dir, Path(point.source), point)
    metrics: dict[str, Any] = json.loads((out_dir / "metrics.json").read_text())
    return metrics
