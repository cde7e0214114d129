"""Paper 003's replay statistics: Tables 2-6 quantities by hand, the two-sample KS statistic by
hand, and a MetaCentrum replay under its own queues reproducing its inputs exactly (Tables 2-3)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import ks_2samp
from support import TraceFile

from djsb.cli import main
from djsb.report.replay_error import ks_statistic
from djsb.report.replay_stats import describe, recorded_waits
from djsb.simulate import replay_and_compare


def test_describe_by_hand() -> None:
    # 1, 2, 3, 4: mean 2.5; sample std sqrt((1.5^2 + 0.5^2 + 0.5^2 + 1.5^2) / 3) = sqrt(5/3);
    # quartiles by linear interpolation at positions 0.75, 1.5, 2.25 -> 1.75, 2.5, 3.25.
    stats = describe(pd.Series([4.0, 1.0, 3.0, 2.0, math.nan]))
    assert stats == {"mean": 2.5, "std": pytest.approx(math.sqrt(5 / 3)), "min": 1.0, "1Q": 1.75, "2Q": 2.5,
                     "3Q": 3.25, "max": 4.0}


def test_ks_statistic_by_hand() -> None:
    # Disjoint samples: D = 1. Same sample: D = 0. {1,2,3,4} vs {3,4,5,6}: at x = 2, F_a = 2/4 and
    # F_b = 0, and nowhere further apart: D = 0.5.
    assert ks_statistic(pd.Series([1.0, 2.0, 3.0]), pd.Series([4.0, 5.0])) == 1.0
    assert ks_statistic(pd.Series([3.0, 1.0, 2.0]), pd.Series([1.0, 2.0, 3.0])) == 0.0
    assert ks_statistic(pd.Series([1.0, 2.0, 3.0, 4.0]), pd.Series([3.0, 4.0, 5.0, 6.0])) == 0.5


def test_ks_statistic_with_ties_and_unequal_sizes_by_hand() -> None:
    # Waits in whole minutes with ties: a = {0, 0, 60, 120}, b = {0, 60, 60}. At 0: F_a = 2/4,
    # F_b = 1/3 (1/6 apart); at 60: 3/4 and 3/3 (1/4 apart); at 120: 1 and 1. D = 1/4.
    a, b = pd.Series([0.0, 0.0, 60.0, 120.0]), pd.Series([0.0, 60.0, 60.0])
    assert ks_statistic(a, b) == pytest.approx(0.25, abs=1e-12)


def meta_config(trace: TraceFile, tmp_path: Path, cluster: str, shaping: str = "") -> Path:
    """1,500 MetaCentrum jobs on its two clusters under FCFS, with ``cluster`` and ``shaping`` lines."""
    path = tmp_path / "meta.yaml"
    path.write_text(f"""workload:
  swf: {trace("MetaCentrum-wagap-2013.swf.gz")}
  limit: 1500
  keep_partitions: true
{shaping}cluster:
  nodes:
    - {{count: 20, cores: 80, prefix: zewura}}
    - {{count: 48, cores: 12, prefix: zegox}}
{cluster}policy:
  preset: fcfs
""")
    return path


def test_replay_under_its_own_queues_reproduces_its_inputs(trace: TraceFile, tmp_path: Path) -> None:
    # 003 sec. 5.2, Tables 2-3: the replay's requested CPUs, time limits, elapsed and inter-arrival
    # times are the trace's, statistic by statistic; only the queue wait is the model's own.
    out = replay_and_compare(meta_config(trace, tmp_path, "  layout: metacentrum_2013\n"), tmp_path / "own")
    stats = pd.read_csv(out / "replay_stats.csv", header=[0, 1], index_col=0)
    for quantity in ("requested_cpus", "time_limit", "elapsed", "inter_arrival"):
        assert stats[(quantity, "recorded")].tolist() == stats[(quantity, "simulated")].tolist()
    summary = json.loads((out / "replay_stats.json").read_text())
    assert summary["recorded_jobs"] == summary["simulated_jobs"] == 1500
    # The KS D is scipy's two-sample statistic on the same samples: the recorded waits of the
    # replayed jobs (SWF field 3) and the simulated ones of jobs.csv.
    jobs = pd.read_csv(out / "jobs.csv")
    waits = recorded_waits(trace("MetaCentrum-wagap-2013.swf.gz"))
    recorded = [waits[job_id] for job_id in jobs["job_id"] if job_id in waits]
    assert summary["ks_wait"] == pytest.approx(ks_2samp(recorded, jobs["wait"]).statistic, abs=1e-12)
    # The recorded waits are SWF field 3: the first job (line "0 1356996147 0 ...") waited 0 s.
    assert stats.loc["min", ("queue_wait", "recorded")] == 0.0
    assert (out / "wait_ecdf_recorded.png").stat().st_size > 0
    # job by job: each job's recorded start is its submit plus SWF field 3, its error the replay's
    # start minus that; the mean absolute error is theirs
    errors = pd.read_csv(out / "errors.csv").set_index("job_id")
    starts = jobs.set_index("job_id")
    assert (errors["recorded_wait"] == errors.index.map(waits)).all()
    expected = (starts["start"] - (starts["submit"] + starts.index.map(waits))).abs().mean()
    assert summary["mean_abs_start_error"] == pytest.approx(expected)
    assert summary["moving_average_mape"] >= 0
    # the report of djsb history: summary.csv's overall row holds the same figures, one row per
    # partition follows; both timelines, the waits and the error over time are drawn
    table = pd.read_csv(out / "summary.csv")
    overall = table[table["group_by"] == "all"].iloc[0]
    assert overall["mean_abs_start_error"] == pytest.approx(expected)
    assert overall["jobs"] == 1500
    by_partition = table[table["group_by"] == "partition"]
    assert by_partition["jobs"].sum() == 1500 and len(by_partition) >= 2
    html = (out / "report.html").read_text()
    for figure in ("timelines.png", "waits.png", "error.png"):
        assert figure in html and (out / figure).stat().st_size > 0


def test_replay_under_another_layout_without_shaping_loses_jobs(trace: TraceFile, tmp_path: Path) -> None:
    # 003 sec. 5.3 (Table 4): jobs the new layout cannot take are not replayed, so the inputs change.
    # Only 1-8 CPUs up to 1 day here: wider or longer jobs are rejected and listed.
    layout = "  partitions:\n    - {name: small, max_cpus: 8, max_time: 86400}\n"
    out = replay_and_compare(meta_config(trace, tmp_path, layout, "  shaping: {policy: reject}\n"), tmp_path / "other")
    shaped = pd.read_csv(out / "shaped.csv")
    rejected = shaped[shaped["action"] == "rejected"]
    assert len(rejected) > 0 and rejected["reason"].str.startswith("fits no partition").all()
    assert ((rejected["cpus_before"] > 8) | (rejected["time_limit_before"] > 86400)).all()
    summary = json.loads((out / "replay_stats.json").read_text())
    assert summary["simulated_jobs"] == 1500 - len(rejected)
    stats = pd.read_csv(out / "replay_stats.csv", header=[0, 1], index_col=0)
    widest = stats[("requested_cpus", "simulated")]["max"], stats[("requested_cpus", "recorded")]["max"]
    assert float(widest[0]) <= 8 < float(widest[1])


def test_replay_stats_needs_a_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "gen.yaml"
    path.write_text("workload: {generator: poisson_exponential, params: {n_jobs: 3, arrival_rate: 1, "
                    "service_rate: 1}}\ncluster: {nodes: [{count: 1, cores: 1}]}\n")
    assert main(["replay-stats", str(path), "-o", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == (f"djsb: error: {path}:1: workload: replay-stats compares a replay "
                                               "with its trace: give workload.swf")
