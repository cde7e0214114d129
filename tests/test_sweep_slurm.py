"""``djsb sweep --executor slurm`` on the real Slurm mini-cluster: a 20-point sweep
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
from support import wait_until

pytestmark = pytest.mark.slurm

SWEEP = """\
seed: 1
workload:
  generator: poisson_exponential
  params: {{n_jobs: {n_jobs}, arrival_rate: 0.1, service_rate: 0.01}}
cluster:
  nodes: [{{count: 2, cores: 4}}]
sweep:
  grid:
    seed: {seeds}
{more}  slurm:
    options: {{partition: shared, time_factor: 1, time_margin: 120}}
    memory: 400MiB
    time_per_point: 60
    poll_interval: {poll_interval}
"""
"""The sweeps of these tests: seeds of a Poisson workload on 2 nodes of 4 cores, as job arrays on the
mini-cluster's shared partition (``more``: other keys of the sweep; the slurm section comes last, so
a test can append its keys)."""

CONFIG = SWEEP.format(n_jobs=10, seeds=list(range(1, 11)), more="  zip:\n    workload.params.n_jobs: [8, 12]\n",
                      poll_interval=1)


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

    # resuming it submits nothing: every point is finished
    again = djsb(tmp_path, "sweep", "sweep.yaml", "-o", "on-slurm", "--executor", "slurm", "--resume")
    assert again.returncode == 0 and "20 finished before, 0 to run" in again.stderr
    assert "job array" not in again.stderr


def test_sigterm_cancels_the_array_and_keeps_finished_points(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    # one task at a time (%1), so most of the 20 are still pending when the client is stopped
    (tmp_path / "sweep.yaml").write_text(CONFIG + "    max_parallel: 1\n")
    client = subprocess.Popen([sys.executable, "-m", "djsb.cli", "sweep", "sweep.yaml", "-o", "out",
                               "--executor", "slurm"], cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    points = tmp_path / "out" / "points"
    def first_point() -> bool:
        assert client.poll() is None, "the sweep exited"
        return (points / "0").exists()
    wait_until(first_point, 300, "the sweep's first point", interval=0.2)
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


KILLED_SWEEP = SWEEP.format(n_jobs=2000, seeds=list(range(1, 17)), more="", poll_interval=0.5) + "    max_parallel: 3\n"


def array_tasks(*job_ids: str) -> list[tuple[str, int, str]]:
    """(array id, task index, state) of every task of the arrays ``job_ids`` slurmctld lists."""
    listed = subprocess.run(["squeue", "--noheader", "--array", "--states=all", f"--jobs={','.join(job_ids)}",
                             "--format=%F %K %T"], capture_output=True, text=True, timeout=30).stdout
    return [(array, int(index), state) for array, index, state in (line.split() for line in listed.splitlines())
            if index.isdigit()]


def test_a_sigkilled_sweeps_array_is_adopted_by_resume_and_every_point_runs_once(
        slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    (tmp_path / "sweep.yaml").write_text(KILLED_SWEEP)
    log = (tmp_path / "client.err").open("w")
    client = subprocess.Popen([sys.executable, "-m", "djsb.cli", "sweep", "sweep.yaml", "-o", "out",
                               "--executor", "slurm"], cwd=tmp_path, stderr=log, text=True)
    points = tmp_path / "out" / "points"
    ours: list[str] = []
    try:
        # SIGKILL once 4+ points are finished and the array still runs some tasks and queues 2+
        def killable() -> bool:
            assert client.poll() is None, (tmp_path / "client.err").read_text()
            found = re.search(r"job array (\d+) of 16 task\(s\) \(0-15%3\)", (tmp_path / "client.err").read_text())
            if found and not ours:
                ours.append(found.group(1))
            states = [state for _, _, state in array_tasks(*ours)] if ours else []
            finished = [p for p in points.iterdir() if p.name.isdigit()] if points.is_dir() else []
            return len(finished) >= 4 and "RUNNING" in states and states.count("PENDING") >= 2
        wait_until(killable, 180, "4 finished points while the array still runs one and queues 2", interval=0.2)
        client.kill()
        client.wait(timeout=30)
        killed_at = time.monotonic()
        first = ours[0]
        # what the killed client left: its array runs on. One queued task is cancelled by hand (as an
        # administrator might), so the resume must both adopt tasks and submit the point nobody runs.
        live = {index: state for _, index, state in array_tasks(first) if state in ("RUNNING", "PENDING")}
        cancelled = max(index for index, state in live.items() if state == "PENDING")
        subprocess.run(["scancel", f"{first}_{cancelled}"], check=True, timeout=30)

        resumed = djsb(tmp_path, "sweep", "sweep.yaml", "-o", "out", "--executor", "slurm", "--resume")
        resume_s = time.monotonic() - killed_at
        second = re.search(rf"job array (\d+) of 1 task\(s\) \({cancelled}%3\)", resumed.stderr)
        if second:
            ours.append(second.group(1))
        assert resumed.returncode == 0, resumed.stderr
        # the resume found the killed client's array by its token and waited for its live tasks (some
        # of those live at the kill may have ended since): finished before + adopted + the cancelled
        # one, each point counted once (a finished point whose task is still exiting is not adopted)
        before = re.search(r"16 point\(s\), (\d+) finished before, (\d+) to run", resumed.stderr)
        adopted = re.search(rf"adopting job array {first} of an earlier client: waiting for its (\d+) live "
                            r"task\(s\)", resumed.stderr)
        assert before and adopted and second, resumed.stderr
        assert int(before.group(1)) + int(adopted.group(1)) + 1 == 16 and int(before.group(2)) == 16 - int(before.group(1))
        assert int(adopted.group(1)) <= len(live) - 1
        # the closing block on stdout: every point finished, none failed
        assert re.search(r"^  finished\s+16 points$", resumed.stdout, re.M), resumed.stdout
        assert re.search(r"^  failed\s+0 points$", resumed.stdout, re.M), resumed.stdout
        assert resumed.stderr.count("done in") == 1, resumed.stderr

        # every point exactly once: one completed task per point across both arrays, and that task
        # (the one task of its index that ran) named in the point as its writer
        tasks = array_tasks(*ours)
        completed = sorted((index, array) for array, index, state in tasks if state == "COMPLETED")
        assert [index for index, _ in completed] == list(range(16))
        assert dict(completed)[cancelled] == ours[1]
        assert all(array == first for index, array in completed if index != cancelled)
        for index, array in completed:
            writer = (points / str(index) / "writer.txt").read_text()
            assert writer.startswith(f"job {array}_{index} ("), (index, writer)
        # the cancelled task is no task of the killed array any more (its own record, CANCELLED, stands for it)
        assert [(array, index) for array, index, _ in tasks if index == cancelled] == [(ours[1], cancelled)]
        assert sorted(int(p.name) for p in points.iterdir()) == list(range(16))  # no scratch left
        table = pd.read_csv(tmp_path / "out" / "sweep.csv")
        assert table["point"].tolist() == list(range(16)) and table["seed"].tolist() == list(range(1, 17))
        # nothing of ours is left in the queue: every record of both arrays (tasks and the arrays' own) ended
        records = subprocess.run(["squeue", "--noheader", "--array", "--states=all", f"--jobs={','.join(ours)}",
                                  "--format=%i %T"], capture_output=True, text=True, timeout=30).stdout.splitlines()
        assert len(records) >= 16 and {line.split()[1] for line in records} <= {"COMPLETED", "CANCELLED"}, records
        print(f"arrays {ours}: killed with {len(live)} live task(s) {sorted(live)}, cancelled {cancelled}, "
              f"{before.group(1)} finished before the resume, {adopted.group(1)} adopted; resume took "
              f"{resume_s:.1f} s")
    finally:
        client.kill()
        log.close()
        for job_id in ours:
            subprocess.run(["scancel", job_id], timeout=30)
