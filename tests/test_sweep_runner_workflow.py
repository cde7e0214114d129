"""The ``workflow`` sweep runner (djsb/sweep/runners/workflow.py): a workflow point, numbers only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from djsb.errors import ConfigError
from djsb.sweep.runners import POINT_RUNNERS
from djsb.yamlnodes import load_yaml

CONFIG = """\
workload: {generator: empty, at_time_limit: kill}
cluster:
  nodes: [{count: 2, cores: 8}]
  partitions: [{name: batch, max_time: 1000}]
policy: {preset: textbook}
workflow: {shape: vertical, count: 4, cpus: 8, run_time: 300, strategy: vertical}
"""


def test_point_writes_only_the_workflow_numbers(tmp_path: Path) -> None:
    path = tmp_path / "point.yaml"
    path.write_text(CONFIG)
    out = tmp_path / "out"
    out.mkdir()
    # 4 x 300 s under MaxTime 1000 s: wrappers of 3 jobs (900 s) and 1 (300 s), one after the other on
    # an empty machine with passes at every event: 1200 s of run time, no queue, makespan 1200 s.
    numbers = POINT_RUNNERS.get("workflow")(load_yaml(path), out)
    assert (numbers["workflow_submissions"], numbers["workflow_cpus_max"]) == (2, 8)
    assert (numbers["workflow_runtime_s"], numbers["workflow_queue_time_s"], numbers["workflow_makespan_s"]) == \
        (1200.0, 0.0, 1200.0)
    assert numbers["jobs"] == 2
    assert json.loads((out / "metrics.json").read_text())["workflow_strategy"] == "vertical"
    assert [p.name for p in out.iterdir()] == ["metrics.json"]


def test_point_without_a_workflow_is_refused_at_its_file(tmp_path: Path) -> None:
    path = tmp_path / "point.yaml"
    path.write_text(CONFIG.rsplit("workflow:", 1)[0])
    with pytest.raises(ConfigError, match="needs a workflow section with one strategy") as caught:
        POINT_RUNNERS.get("workflow")(load_yaml(path), tmp_path)
    assert caught.value.source == str(path)
