"""``djsb sweep --executor slurm`` on the real Slurm mini-cluster (issue 10 item 6): a 20-point sweep
runs as ONE job array whose task K runs point K, and its sweep.csv equals the local executor's."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from slurm_plugin import SlurmCluster

pytestmark = pytest.mark.slurm

CONFIG = """\
seed: 1
workload:
  generator: poisson_exponential
  params: {n_jobs: 10, arrival_rate: 0.1, service_rate: 0.01}
cluster:
  nodes: [{count: 2, cores: 4}]
sweep:
  grid:
    seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  zip:
    workload.params.n_jobs: [8, 12]
  slurm:
    options: {partition: shared, time_factor: 1, time_margin: 120}
    memory: 400MiB
    time_per_point: 60
    poll_interval: 1
"""


def djsb(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "djsb.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def test_a_20_point_sweep_is_one_job_array_equal_to_the_local_sweep(slurm_cluster: SlurmCluster,
                                                                    tmp_path: Path) -> None:
    (tmp_path / "sweep.yaml").write_text(CONFIG)
    on_slurm = djsb(tmp_path, "sweep", "sweep.yaml", "-o", "on-slurm", "--executor", "slurm")
    assert on_slurm.returncode == 0, on_slurm.stderr
    # 10 seeds x 2 zip rows = 20 points, all in one array of 20 tasks
    found = re.search(r"job array (\d+) of 20 task\(s\) \(0-19\)", on_slurm.stderr)
    assert found, on_slurm.stderr
    tasks = subprocess.run(["squeue", "--noheader", "--array", "--states=all", f"--jobs={found.group(1)}",
                            "--format=%K %T"], capture_output=True, text=True, timeout=30).stdout.split("\n")
    assert sorted(line for line in tasks if line) == sorted(f"{k} COMPLETED" for k in range(20))
    out = tmp_path / "on-slurm"
    assert sorted(int(p.name) for p in (out / "points").iterdir()) == list(range(20))
    assert all((out / "slurm" / f"points.out.{k}").exists() for k in range(20))  # each task's own log

    local = djsb(tmp_path, "sweep", "sweep.yaml", "-o", "local", "--jobs", "2")
    assert local.returncode == 0, local.stderr
    on_cluster, here = pd.read_csv(out / "sweep.csv"), pd.read_csv(tmp_path / "local" / "sweep.csv")
    assert len(on_cluster) == 20
    pd.testing.assert_frame_equal(on_cluster, here)

    # a rerun into the same directory submits nothing: every point is finished
    again = djsb(tmp_path, "sweep", "sweep.yaml", "-o", "on-slurm", "--executor", "slurm")
    assert again.returncode == 0 and "20 finished before, 0 to run" in again.stderr
    assert "job array" not in again.stderr


def test_sigterm_cancels_the_array_and_keeps_finished_points(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    # one task at a time (%1), so most of the 20 are still pending when the client is stopped
    (tmp_path / "sweep.yaml").write_text(CONFIG + "    max_parallel: 1\n")
    client = subprocess.Popen([sys.executable, "-m", "djsb.cli", "sweep", "sweep.yaml", "-o", "out",
                               "--executor", "slurm"], cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    points = tmp_path / "out" / "points"
    deadline = time.monotonic() + 300
    while not (points / "0").exists():
        assert time.monotonic() < deadline and client.poll() is None
        time.sleep(0.2)
    client.send_signal(signal.SIGTERM)
    _, err = client.communicate(timeout=120)
    assert client.returncode == 143, err
    job_id = re.search(r"job array (\d+) of 20 task\(s\) \(0-19%1\)", err)
    assert job_id, err
    states = subprocess.run(["squeue", "--noheader", "--array", "--states=all", f"--jobs={job_id.group(1)}",
                             "--format=%T"], capture_output=True, text=True, timeout=30).stdout.split()
    assert "PENDING" not in states and "RUNNING" not in states and "CANCELLED" in states
    finished = sorted(int(p.name) for p in points.iterdir() if p.name.isdigit())
    assert 0 in finished and len(finished) < 20
    assert pd.read_csv(tmp_path / "out" / "sweep.csv")["point"].tolist() == finished
