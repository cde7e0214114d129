"""``djsb wrappers`` and the ``workflow`` section of ``djsb simulate``, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from djsb.cli import main

REPO = Path(__file__).resolve().parents[1]
SCHED_INTERVAL = 60.0  # MareNostrum 4's sched_interval and bf_interval (Table 3.3 of 004), with defer


def test_vertical_workflow_on_the_empty_machine(capsys: pytest.CaptureFixture[str]) -> None:
    # 004 sec. 3.3.2's vertical workflow, 7 jobs x 96 CPUs x 1800 s. Unwrapped: 7 submissions; wrapped:
    # one job of max(96) = 96 CPUs and 7 x 1800 = 12600 s. Both run 12600 s in all. On the empty
    # machine nothing waits for resources: with defer a submission only waits for the next periodic
    # pass, at most one sched_interval (60 s) per submission. Vertical: queue <= 60, makespan =
    # 12600 + its queue time. None: each of the 7 jobs waits <= 60 s, so queue <= 420.
    assert main(["wrappers", str(REPO / "configs/wrappers-vertical-empty.yaml"), "--json"]) == 0
    ended = json.loads(capsys.readouterr().out)
    rows = {row["strategy"]: row for row in ended["details"]}
    assert set(rows) == {"none", "vertical"}
    none, vertical = rows["none"], rows["vertical"]
    assert (none["submissions"], vertical["submissions"]) == (7, 1)
    assert none["cpus_max"] == vertical["cpus_max"] == 96
    assert none["runtime_s"] == vertical["runtime_s"] == 7 * 1800 == 12600
    assert 0 <= vertical["queue_time_s"] <= SCHED_INTERVAL
    assert vertical["makespan_s"] == 12600 + vertical["queue_time_s"]
    assert 0 <= none["queue_time_s"] <= 7 * SCHED_INTERVAL
    assert none["makespan_s"] == 12600 + none["queue_time_s"]
    assert {"strategy", "submissions", "cpus_max", "runtime_s", "queue_time_s", "makespan_s"} <= set(none)
    best = min(rows.values(), key=lambda row: row["makespan_s"])
    assert ended["headline"]["best_makespan"] == {"value": best["makespan_s"], "unit": "s"}


def write_config(tmp_path: Path, workflow: str, policy: str = "{preset: textbook}") -> Path:
    path = tmp_path / "wf.yaml"
    path.write_text("workload: {generator: empty, at_time_limit: kill}\n"
                    "cluster: {nodes: [{count: 2, cores: 8}], partitions: [{name: batch, max_time: 1000}]}\n"
                    f"policy: {policy}\nworkflow: {workflow}\n")
    return path


def test_ranked_table_splits_at_the_partition_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Textbook EASY on 16 cores, MaxTime 1000 s: a chain of 4 jobs x 8 CPUs x 300 s. Vertical packs
    # 3 jobs (900 s <= 1000) then 1: 2 submissions. With passes at every event and an empty machine
    # nothing waits: makespan 4 x 300 = 1200 s for every strategy, so the fewest submissions win
    # the tie after makespan and queue time. Horizontal has one job per level: 4 submissions, like none.
    config = write_config(tmp_path, "{shape: vertical, count: 4, cpus: 8, run_time: 300}")
    assert main(["wrappers", str(config), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["details"]
    assert [(r["strategy"], r["submissions"], r["makespan_s"], r["queue_time_s"]) for r in rows] == [
        ("vertical", 2, 1200.0, 0.0), ("vertical-horizontal", 2, 1200.0, 0.0),
        ("horizontal-vertical", 2, 1200.0, 0.0), ("none", 4, 1200.0, 0.0), ("horizontal", 4, 1200.0, 0.0)]
    assert main(["wrappers", str(config)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["rank", "strategy", "submissions", "cpus_max", "runtime_s",
                                           "queue_time_s", "makespan_s", "fairshare"]
    assert "recommended: vertical (makespan 1200 s, queue 0 s)" in out.splitlines()
    # the summary block every command ends with: what ran, then the best strategy's numbers in s
    block = out[out.index("djsb wrappers: "):].splitlines()
    assert block[0] == f"djsb wrappers: {config}: 5 wrapper strategies ranked, best vertical"
    assert block[1].split() == ["best_makespan", "1200", "s"]


def test_horizontal_wrapper_waits_for_a_whole_machine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 3 independent jobs x 8 CPUs x 100 s on 16 cores. Unwrapped: two start at 0, the third at 100
    # (queue 100, makespan 200). Horizontal: 3 x 8 = 24 CPUs exceed the partition's 16 cores, so it
    # is split into 2 jobs (16 CPUs) + 1 job (8 CPUs); the first takes the whole machine from 0 to
    # 100, the second starts at 100: queue 100, makespan 200 again, with 2 submissions.
    config = write_config(tmp_path, "{shape: horizontal, count: 3, cpus: 8, run_time: 100, "
                                    "strategy: [none, horizontal]}")
    assert main(["wrappers", str(config), "--json"]) == 0
    rows = {r["strategy"]: r for r in json.loads(capsys.readouterr().out)["details"]}
    assert (rows["none"]["queue_time_s"], rows["none"]["makespan_s"]) == (100.0, 200.0)
    assert (rows["horizontal"]["submissions"], rows["horizontal"]["cpus_max"]) == (2, 16)
    assert (rows["horizontal"]["queue_time_s"], rows["horizontal"]["makespan_s"]) == (100.0, 200.0)


def test_simulate_carries_one_workflow_into_metrics(tmp_path: Path) -> None:
    # The same chain wrapped vertically inside djsb simulate: metrics.json gains workflow_* numbers
    # (2 submissions, 900 + 300 = 1200 s of run time, no queue on the empty machine).
    config = write_config(tmp_path, "{shape: vertical, count: 4, cpus: 8, run_time: 300, strategy: vertical}")
    assert main(["simulate", str(config), "-o", str(tmp_path / "out")]) == 0
    metrics = json.loads((tmp_path / "out/metrics.json").read_text())
    assert (metrics["workflow_strategy"], metrics["workflow_submissions"]) == ("vertical", 2)
    assert (metrics["workflow_runtime_s"], metrics["workflow_queue_time_s"]) == (1200.0, 0.0)


def test_simulate_refuses_several_strategies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, "\n  shape: vertical\n  count: 2\n  cpus: 8\n  run_time: 300\n"
                                    "  strategy: [none, vertical]")
    assert main(["simulate", str(config), "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"djsb: error: {config}:9: workflow.strategy: simulate runs one strategy, got 2 "
        "(djsb wrappers compares several)")


def test_fairshare_target_needs_fair_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, "{shape: vertical, count: 2, cpus: 8, run_time: 300, fairshare_target: 0.5}")
    assert main(["wrappers", str(config)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"djsb: error: {config}:4: workflow: fairshare_target and prior_usage need the multifactor "
        "priority with fairshare: fair_tree")
