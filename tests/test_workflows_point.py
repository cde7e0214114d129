"""``run_point`` (djsb/workflows/point.py): a sweep point of a workflow experiment, numbers only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from djsb.errors import ConfigError
from djsb.workflows.point import run_point

CONFIG = {
    "workload": {"generator": "empty", "at_time_limit": "kill"},
    "cluster": {"nodes": [{"count": 2, "cores": 8}], "partitions": [{"name": "batch", "max_time": 1000}]},
    "policy": {"preset": "textbook"},
    "workflow": {"shape": "vertical", "count": 4, "cpus": 8, "run_time": 300, "strategy": "vertical"},
}


def test_point_returns_the_workflow_numbers(tmp_path: Path) -> None:
    # 4 x 300 s under MaxTime 1000 s: wrappers of 3 jobs (900 s) and 1 (300 s), one after the other on
    # an empty machine with passes at every event: 1200 s of run time, no queue, makespan 1200 s.
    numbers = run_point(CONFIG, tmp_path)
    assert (numbers["workflow_submissions"], numbers["workflow_cpus_max"]) == (2.0, 8.0)
    assert (numbers["workflow_runtime_s"], numbers["workflow_queue_time_s"], numbers["workflow_makespan_s"]) == \
        (1200.0, 0.0, 1200.0)
    assert numbers["workflow_completed"] == 1.0 and numbers["jobs"] == 2.0
    assert "workflow_strategy" not in numbers  # not a number
    assert json.loads((tmp_path / "metrics.json").read_text())["workflow_strategy"] == "vertical"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml", "metrics.json"]


def test_point_without_a_workflow_is_refused(tmp_path: Path) -> None:
    config = {k: v for k, v in CONFIG.items() if k != "workflow"}
    with pytest.raises(ConfigError, match="needs a workflow section with one strategy"):
        run_point(config, tmp_path)
