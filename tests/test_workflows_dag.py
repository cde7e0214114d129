"""Workflow DAGs: the thesis' shapes, levels and chains, and one-line errors for bad YAML."""

from __future__ import annotations

from pathlib import Path

import pytest

from djsb.cli import main
from djsb.errors import ConfigError
from djsb.workflows.dag import Workflow, WorkflowJob, grid, horizontal, read_workflow, vertical
from djsb.yamlnodes import load_yaml


def read(tmp_path: Path, text: str) -> Workflow:
    path = tmp_path / "wf.yaml"
    path.write_text(text)
    node = load_yaml(path).get("workflow")
    assert node is not None
    return read_workflow(node)


def test_vertical_chain_of_the_thesis() -> None:
    # 004 fig. 3.7: 7 jobs, each after the previous one: levels 0..6, one chain.
    workflow = vertical(7, 96, 1800)
    assert [(j.name, j.after) for j in workflow.jobs][:3] == [("sim0", ()), ("sim1", ("sim0",)),
                                                               ("sim2", ("sim1",))]
    assert list(workflow.levels.values()) == [0, 1, 2, 3, 4, 5, 6]
    assert workflow.chains == (tuple(f"sim{k}" for k in range(7)),)


def test_horizontal_jobs_are_independent() -> None:
    # 004 fig. 3.8: 12 jobs, no dependencies: all at level 0, 12 chains of one job.
    workflow = horizontal(12, 96, 1800)
    assert set(workflow.levels.values()) == {0}
    assert len(workflow.chains) == 12


def test_grid_chains_and_levels() -> None:
    workflow = grid(2, 3, 8, 60, 90)
    assert workflow.chains == (("sim0_0", "sim0_1", "sim0_2"), ("sim1_0", "sim1_1", "sim1_2"))
    assert workflow.levels["sim1_2"] == 2
    assert workflow.by_name["sim0_1"].requested_time == 90.0


def test_a_join_starts_a_new_chain() -> None:
    # ini -> {a, b}; a -> c; {b, c} -> post. ini has two children, post two parents: chains are
    # (ini), (a, c), (b), (post); levels ini 0, a 1, b 1, c 2, post 3.
    jobs = (WorkflowJob("ini", 1, 1, 1), WorkflowJob("a", 1, 1, 1, ("ini",)), WorkflowJob("b", 1, 1, 1, ("ini",)),
            WorkflowJob("c", 1, 1, 1, ("a",)), WorkflowJob("post", 1, 1, 1, ("b", "c")))
    workflow = Workflow(jobs)
    assert workflow.chains == (("ini",), ("a", "c"), ("b",), ("post",))
    assert workflow.levels == {"ini": 0, "a": 1, "b": 1, "c": 2, "post": 3}


def test_yaml_shape_and_job_list(tmp_path: Path) -> None:
    assert read(tmp_path, "workflow: {shape: vertical, count: 7, cpus: 96, run_time: 1800}\n") == \
        vertical(7, 96, 1800)
    workflow = read(tmp_path, "workflow:\n  jobs:\n    - {name: ini, cpus: 1, run_time: 60}\n"
                              "    - {name: sim, cpus: 96, run_time: 1800, requested_time: 2400, after: ini}\n")
    assert workflow.by_name["sim"] == WorkflowJob("sim", 96, 1800.0, 2400.0, ("ini",))


@pytest.mark.parametrize(("text", "message"), [
    ("workflow:\n  jobs:\n    - {name: a, cpus: 1, run_time: 5, after: [b]}\n"
     "    - {name: b, cpus: 1, run_time: 5, after: [a]}\n",
     "wf.yaml:3: workflow.jobs[0].after: dependency cycle through 'a'"),
    ("workflow:\n  jobs:\n    - {name: a, cpus: 1, run_time: 5}\n    - {name: b, cpus: 1, run_time: 5, after: [x]}\n",
     "wf.yaml:4: workflow.jobs[1].after: unknown parent 'x'"),
    ("workflow:\n  jobs:\n    - {name: a, cpus: 1, run_time: 5}\n    - {name: a, cpus: 1, run_time: 5}\n",
     "wf.yaml:4: workflow.jobs[1].name: duplicate job name 'a' (also job 0)"),
    ("workflow:\n  shape: vertical\n  cpus: 96\n  run_time: 1800\n", "wf.yaml:1: workflow: shape vertical needs 'count'"),
    ("workflow:\n  shape: spiral\n  count: 3\n  cpus: 1\n  run_time: 1\n",
     "wf.yaml:2: workflow.shape: expected one of vertical, horizontal, grid, got 'spiral'"),
    ("workflow:\n  shape: grid\n  count: 3\n  chains: 2\n  length: 2\n  cpus: 1\n  run_time: 1\n",
     "wf.yaml:3: workflow.count: not a key of shape grid"),
    ("workflow:\n  jobs:\n    - {name: a, cpus: 0, run_time: 5}\n", "wf.yaml:3: workflow.jobs[0].cpus: must be >= 1, got 0"),
])
def test_bad_workflow_is_one_line_with_file_line_and_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        read(tmp_path, text)
    assert caught.value.one_line().startswith(f"{tmp_path}/{message}")


def test_cli_reports_a_bad_workflow_in_one_line_with_status_2(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "wf.yaml"
    config.write_text("cluster: {nodes: [{count: 1, cores: 4}]}\nworkload: {generator: poisson_exponential,"
                      " params: {n_jobs: 1, arrival_rate: 1, service_rate: 1}}\n"
                      "workflow:\n  jobs:\n    - {name: a, cpus: 1, run_time: 5, after: [a]}\n")
    assert main(["wrappers", str(config)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"djsb: error: {config}:5: workflow.jobs[0].after: job 'a' depends on itself"
