"""``djsb simulate CONFIG``: one experiment replayed on the built-in scheduler model.

The config is read by :mod:`djsb.simulate.experiment` (its format is there), the replay run and
written by :mod:`djsb.simulate.results`.
"""

from __future__ import annotations

from pathlib import Path

from djsb.simulate.experiment import load_experiment
from djsb.simulate.results import write_replay
from djsb.yamlnodes import Located


def run_simulate(config_path: Path, out_dir: Path, tree: Located | None = None) -> Path:
    """Run the experiment of ``config_path`` (``tree``: its YAML already read, a sweep point's) and
    write its results and report.html into ``out_dir``."""
    return write_replay(load_experiment(Path(config_path), tree), out_dir, config_path, tree)
