"""``djsb simulate`` replay keys: estimates, at_time_limit, rejections.

Every expected value is worked by hand next to its case. The CLI cases run the real ``djsb
simulate`` in a subprocess on a tiny SWF file written in tmp_path.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from support import TraceFile

from djsb.model.admission import NODE_CONFIG_UNAVAILABLE
from djsb.simulate import load_experiment, run_simulate
from djsb.workloads.estimate import with_estimates
from djsb.workloads.job import TraceJob

NASA = "NASA-iPSC-1993-3.1-cln.swf.gz"


def simulate(tmp_path: Path, config: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "experiment.yaml").write_text(config)
    return subprocess.run([sys.executable, "-m", "djsb.cli", "simulate", "experiment.yaml", "-o", "out"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


# -- estimates --------------------------------------------------------------------------------------

def test_estimates_by_hand() -> None:
    # MaxTime 3600. Run times 100, 0, 5000; requested 150, None, 6000.
    jobs = [TraceJob(1, 0, 100, 1, 150), TraceJob(2, 0, 0, 1, None), TraceJob(3, 0, 5000, 1, 6000)]

    def limits(estimate: str, factor: float = 1.0) -> list[float | None]:
        return [j.requested_time for j in with_estimates(jobs, estimate, factor, lambda _: 3600.0)]

    assert limits("requested") == [150, None, 6000]  # as recorded (None: the model gives MaxTime)
    assert limits("partition_max") == [None, None, None]  # the model gives each MaxTime
    # The run times; a 0 s job gets 1 s; 5,000 s is capped at MaxTime 3,600.
    assert limits("runtime") == [100, 1, 3600]
    # 1.5 x: 150, max(0, 1) = 1, min(7,500, 3,600) = 3,600.
    assert limits("runtime_factor", 1.5) == [150, 1, 3600]


# Three jobs without requested times (field 9 = -1) on one node of 4 cores, MaxTime 1,000 s:
# J1 2 CPUs runs 100 s from 0; J2 4 CPUs runs 50 s, submitted at 1; J3 2 CPUs runs 80 s at 30.
NO_REQUESTS = """\
1 0 -1 100 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1
2 1 -1 50 4 -1 -1 4 -1 -1 1 1 1 -1 -1 -1 -1 -1
3 30 -1 80 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1
"""
TEXTBOOK_ON_ONE_NODE = """\
workload:
  swf: trace.swf
{replay}
cluster:
  nodes: [{{count: 1, cores: 4}}]
  partitions: [{{name: batch, max_time: 1000}}]
policy:
  preset: textbook
"""


@pytest.mark.parametrize(("replay", "limits", "starts"), [
    # Perfect estimates: J2 is reserved at J1's end, 100; J3 would end at 30 + 80 = 110 > 100 on
    # CPUs J2 needs, so it waits: J2 runs [100, 150), J3 starts at 150.
    ("  estimate: runtime", [100, 50, 80], [0, 100, 150]),
    # Every limit is MaxTime 1,000: J2 is reserved at 1,000 and J3 would end at 1,030: it waits.
    # J1 really ends at 100: J2 runs [100, 150), J3 starts at 150.
    ("  estimate: partition_max", [1000, 1000, 1000], [0, 100, 150]),
    # No requested times in the trace: the default "requested" falls back to MaxTime, as above.
    ("", [1000, 1000, 1000], [0, 100, 150]),
    # Twice the run time: limits 200, 100, 160. J2 is reserved at 200; J3 ends by 30 + 160 = 190
    # <= 200: it backfills at 30 (really ends at 110). At 100 J1 ends but J3 holds 2 CPUs; J2
    # starts when J3 ends, at 110.
    ("  estimate: runtime_factor\n  estimate_factor: 2", [200, 100, 160], [0, 110, 30]),
])
def test_a_trace_without_requested_times_under_each_estimate(
        tmp_path: Path, replay: str, limits: list[float], starts: list[float]) -> None:
    (tmp_path / "trace.swf").write_text(NO_REQUESTS)
    (tmp_path / "experiment.yaml").write_text(TEXTBOOK_ON_ONE_NODE.format(replay=replay))
    out = run_simulate(tmp_path / "experiment.yaml", tmp_path / "out")
    jobs = pd.read_csv(out / "jobs.csv")
    assert jobs["requested_time"].tolist() == limits and jobs["start"].tolist() == starts
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["estimate"] == (replay.split("\n")[0].split(": ")[1] if replay else "requested")
    assert metrics["no_requested_time"] == (3 if limits == [1000] * 3 else 0)


def test_nasa_ipsc_has_no_requested_times_and_replays_with_perfect_estimates(trace: TraceFile,
                                                                            tmp_path: Path) -> None:
    # NASA-iPSC (128 nodes) records no requested time (field 9 = -1 throughout). With estimate:
    # runtime every limit is max(run time, 1 s) (MaxTime is not set), so under at_time_limit: kill
    # no job is killed and every job's planned end is its real end.
    config = """\
workload:
  swf: {trace}
  limit: 3000
  estimate: {estimate}
  at_time_limit: kill
cluster:
  nodes: [{{count: 128, cores: 1}}]
policy:
  preset: textbook
"""
    path = tmp_path / "experiment.yaml"
    path.write_text(config.format(trace=trace(NASA), estimate="requested"))
    assert all(j.requested_time is None for j in load_experiment(path).jobs)
    path.write_text(config.format(trace=trace(NASA), estimate="runtime"))
    experiment = load_experiment(path)
    assert [j.requested_time for j in experiment.jobs] == [max(j.run_time, 1.0) for j in experiment.jobs]
    out = run_simulate(path, tmp_path / "out")
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["jobs"] + metrics["rejected"] == 3000 and metrics["killed"] == 0


# -- the CLI: rejected.csv, the killed count, bad values ----------------------------------------------

# Two nodes of 2 cores and 1,000 MB. Jobs 1-3 (1 CPU each, at 0) run 20, 30, 10 s and asked for
# 10, 5, 100 s. Job 4 (1 CPU at 1) asks 5,000 MB (field 10 = 5,000 x 1,024 KB per processor):
# no node holds it. Job 5 (1 CPU at 2, runs 10 s of 20 asked) finds the 4th core free.
KILLS = """\
1 0 -1 20 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1
2 0 -1 30 1 -1 -1 1 5 -1 1 1 1 -1 -1 -1 -1 -1
3 0 -1 10 1 -1 -1 1 100 -1 1 1 1 -1 -1 -1 -1 -1
4 1 -1 10 1 -1 -1 1 20 5120000 1 1 1 -1 -1 -1 -1 -1
5 2 -1 10 1 -1 -1 1 20 -1 1 1 1 -1 -1 -1 -1 -1
"""
FIFO_CONFIG = """\
workload:
  swf: trace.swf
  at_time_limit: {at_time_limit}
cluster:
  nodes: [{{count: 2, cores: 2, memory_mb: 1000}}]
policy:
  priority: {{plugin: fifo}}
  scheduler: {{backfill: none, sched_interval: 0}}
"""


@pytest.mark.parametrize(("at_time_limit", "killed", "ends"), [
    # kill: job 1 ends at its limit 10, job 2 at 5; job 3 at 10, job 5 at 2 + 10 = 12.
    ("kill", 2, [10, 5, 10, 12]),
    # run: each job runs its recorded time: 20, 30, 10, and job 5 ends at 12.
    ("run", 0, [20, 30, 10, 12]),
])
def test_djsb_simulate_counts_kills_and_lists_the_rejected_job(
        tmp_path: Path, at_time_limit: str, killed: int, ends: list[float]) -> None:
    (tmp_path / "trace.swf").write_text(KILLS)
    done = simulate(tmp_path, FIFO_CONFIG.format(at_time_limit=at_time_limit))
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    metrics = json.loads((out / "metrics.json").read_text())
    assert (metrics["killed"], metrics["rejected"], metrics["at_time_limit"]) == (killed, 1, at_time_limit)
    assert pd.read_csv(out / "rejected.csv").values.tolist() == [[4, NODE_CONFIG_UNAVAILABLE]]
    jobs = pd.read_csv(out / "jobs.csv")
    assert jobs["job_id"].tolist() == [1, 2, 3, 5] and jobs["end"].tolist() == ends
    assert jobs["start"].tolist() == [0, 0, 0, 2]  # job 5 is not stuck behind job 4
    assert f"at_time_limit: {at_time_limit}" in done.stderr and f"{killed} killed" in done.stderr


@pytest.mark.parametrize(("replay", "line", "message"), [
    ("  estimate: perfect", 3,
     "workload.estimate: expected one of requested, runtime, runtime_factor, partition_max, got 'perfect'"),
    ("  at_time_limit: sometimes", 3, "workload.at_time_limit: expected one of run, kill, got 'sometimes'"),
    ("  estimate: runtime_factor\n  estimate_factor: 0", 4,
     "workload.estimate_factor: must be a finite number > 0, got 0"),
    ("  estimate: runtime_factor", 3,
     "workload.estimate: estimate_factor goes with estimate: runtime_factor, and only with it"),
    ("  estimate_factor: 2", 3,
     "workload.estimate_factor: estimate_factor goes with estimate: runtime_factor, and only with it"),
    ("  estimate: partition_max", 3,
     "workload.estimate: partition_max needs max_time on every partition; batch has none"),
])
def test_a_bad_replay_value_is_one_line_and_exit_2(tmp_path: Path, replay: str, line: int, message: str) -> None:
    (tmp_path / "trace.swf").write_text(KILLS)
    config = FIFO_CONFIG.format(at_time_limit="run").replace("  at_time_limit: run\n", replay + "\n")
    done = simulate(tmp_path, config)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"djsb: error: experiment.yaml:{line}: {message}"]


def test_unlimited_scheduler_values_read_and_reported(tmp_path: Path) -> None:
    # "unlimited" is math.inf in SchedulerConfig and "unlimited" again in metrics.json.
    (tmp_path / "trace.swf").write_text(KILLS)
    config = FIFO_CONFIG.format(at_time_limit="run").replace(
        "{backfill: none, sched_interval: 0}", "{backfill: easy, bf_window: unlimited, bf_max_job_test: unlimited}")
    assert simulate(tmp_path, config).returncode == 0
    scheduler = json.loads((tmp_path / "out" / "metrics.json").read_text())["scheduler"]
    assert scheduler["bf_window"] == scheduler["bf_max_job_test"] == "unlimited"
    assert scheduler["default_queue_depth"] == 100 and scheduler["extend_limit"] is True
