"""The metrics of the model and the ``djsb simulate`` experiment runner."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from support import TraceFile

from djsb.errors import ConfigError
from djsb.model.schedule_metrics import bounded_slowdown, makespan, summary, utilisation, wait_stats
from djsb.simulate import load_experiment, run_simulate, step_bins

REPO = Path(__file__).resolve().parents[1]


def table(rows: list[tuple[float, float, float, int]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["submit", "start", "end", "cpus"])
    frame["wait"] = frame["start"] - frame["submit"]
    frame["run_time"] = frame["end"] - frame["start"]
    frame["killed"] = False
    frame["backfilled"] = False
    return frame


def test_metrics_by_hand() -> None:
    # wait 20 / run 5 -> (20 + 5) / max(5, 10) = 2.5; wait 0 / run 100 -> 1; wait 10 / run 30 ->
    # 40 / 30. Makespan 0 -> 130 (last end 130). Core-seconds 2*5 + 1*100 + 4*30 = 230 on 4 cores:
    # 230 / (4 * 130). Waits 20, 0, 10: mean 10, median 10.
    jobs = table([(0, 20, 25, 2), (0, 0, 100, 1), (90, 100, 130, 4)])
    assert list(bounded_slowdown(jobs)) == pytest.approx([2.5, 1.0, 40 / 30])
    assert makespan(jobs) == 130
    assert utilisation(jobs, 4) == pytest.approx(230 / 520)
    assert wait_stats(jobs)["mean_wait"] == 10 and wait_stats(jobs)["median_wait"] == 10
    assert summary(jobs, 4)["jobs"] == 3


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "experiment.yaml"
    path.write_text(text)
    return path


GENERATED = """\
seed: 3
workload:
  generator: poisson_exponential
  params: {n_jobs: 200, arrival_rate: 0.5, service_rate: 1.0}
cluster:
  nodes: [{count: 2, cores: 1}]
policy:
  priority: {plugin: multifactor, weights: {age: 1000, fairshare: 1000}}
  scheduler: {backfill: conservative, sched_interval: 0, bf_interval: 0}
"""


def test_run_simulate_writes_every_output(tmp_path: Path) -> None:
    out = run_simulate(write(tmp_path, GENERATED), tmp_path / "out")
    for name in ("jobs.csv", "utilisation.csv", "rejected.csv", "metrics.json", "wait_ecdf.png",
                 "queue_utilisation.png"):
        assert (out / name).stat().st_size > 0, name
    jobs = pd.read_csv(out / "jobs.csv")
    metrics = json.loads((out / "metrics.json").read_text())
    assert len(jobs) == metrics["jobs"] == 200 and metrics["total_cores"] == 2
    assert metrics["mean_wait"] == pytest.approx(jobs["wait"].mean())
    assert {"factor_age", "factor_fairshare", "priority_at_start", "nodes"} <= set(jobs.columns)


@pytest.mark.parametrize("text, line, key", [
    (GENERATED.replace("backfill: conservative", "backfill: greedy"), 9, "policy.scheduler.backfill"),
    (GENERATED.replace("cores: 1", "cores: 0"), 6, "cluster.nodes[0].cores"),
    (GENERATED.replace("seed: 3", "seed: 3\nwhatever: 1"), 2, "whatever"),
    (GENERATED.replace("generator: poisson_exponential", "generator: nope"), 3, "workload.generator"),
    (GENERATED.replace("  generator: poisson_exponential\n", "  swf: missing.swf\n"), 3, "workload.swf"),
])
def test_config_errors_name_the_key_and_line(tmp_path: Path, text: str, line: int, key: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_experiment(path)
    assert info.value.line == line and info.value.key == key and info.value.source == str(path)


def test_shipped_configs_validate(trace: TraceFile) -> None:
    trace("KTH-SP2-1996-2.1-cln.swf.gz"), trace("LANL-CM5-1994-4.1-cln.swf.gz")  # the configs' traces
    for name in ("simulate-kth-easy.yaml", "simulate-lanl-mn4.yaml"):
        experiment = load_experiment(REPO / "configs" / name)
        assert experiment.jobs and experiment.cluster.total_cores in (100, 1024)
    assert experiment.priority.name == "multifactor" and experiment.scheduler.bf_resolution == 1800


def test_step_bins_weigh_each_value_by_how_long_it_held() -> None:
    # 2 from 0 to 10, 4 from 10 to 30; bins [0, 15) and [15, 30]: (2 x 10 + 4 x 5) / 15 = 8/3, then 4
    binned = step_bins([0.0, 10.0, 30.0], [2.0, 4.0, 0.0], 2)
    assert binned["start"].tolist() == [0.0, 15.0] and binned["end"].tolist() == [15.0, 30.0]
    assert binned["mean"].tolist() == pytest.approx([8 / 3, 4.0])
    assert binned["low"].tolist() == [2.0, 4.0] and binned["high"].tolist() == [4.0, 4.0]
    assert step_bins([0.0, 10.0, 30.0], [2.0, 4.0, 0.0], 1)["mean"].tolist() == pytest.approx([(20 + 80) / 30])
