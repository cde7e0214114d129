"""`djsb run` on the real Slurm mini-cluster through what real clusters do: slurmctld
stopped for 20 s at several points of a run (the simulation ending during the outage included),
SIGINT during an outage, and a submission Slurm refuses. Run under the shared lock:
flock /tmp/djsb-slurm.lock .venv/bin/pytest -q tests/test_slurm_outage.py
"""

from __future__ import annotations

import csv
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import test_slurm_run as slurm_run
from slurm_plugin import Run, SlurmCluster
from support import wait_until

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

OUTAGE_S = 20
# The longest a run of these tests may take, however long its jobs queue behind other work.
RUN_BOUND_S = 600


@contextmanager
def controller_down(cluster: SlurmCluster) -> Iterator[None]:
    """slurmctld stopped (never left so: started again, and its nodes back, however the block ends)."""
    cluster.control("stop-ctld")
    try:
        yield
    finally:
        cluster.control("start-ctld")


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def config(tmp_path: Path, scenarios: str, analytics_tasks: int = 2) -> Path:
    path = tmp_path / "slurm-outage.yaml"
    path.write_text(slurm_run.CONFIG.replace("[oversubscription, stopcont, dynamic]", scenarios)
                    .replace("analytics: {total_tasks: 2", f"analytics: {{total_tasks: {analytics_tasks}"))
    return path


def step_launched(job_id: str) -> bool:
    """The job's first step runs (a ``slurmstepd: [ID.0]`` process exists): its srun has had its
    allocation confirmed by slurmctld."""
    return subprocess.run(["pgrep", "-f", f"^slurmstepd: \\[{job_id}\\.0\\]"], capture_output=True,
                          timeout=30).returncode == 0


def test_outages_mark_cells_and_the_run_completes(slurm_cluster: SlurmCluster, tmp_path: Path,
                                                  apps_bin: Path) -> None:
    run_dir = tmp_path / "run"
    run = Run(str(config(tmp_path, "[oversubscription, stopcont]")), "-o", str(run_dir))
    # 1. once the analytics runs: it (2 s) and the simulation (6 s) end while slurmctld is down, so
    #    Slurm stamps their ends late and lists them COMPLETING afterwards. (Stopped before the
    #    analytics' srun reached slurmctld, the job fails: "srun: error: Unable to confirm
    #    allocation"; hence the wait for its step.) The run's earlier jobs may queue behind other
    #    work on a shared cluster: the bound is the run's own end, not a time from its start.
    run.wait_for_line("submitted oversubscription-na1-s0-ana0", timeout=RUN_BOUND_S)
    analytics = run.job_id("oversubscription-na1-s0-ana0")
    wait_until(lambda: step_launched(analytics) or run.process.poll() is not None, RUN_BOUND_S,
               "the analytics' step runs")
    with controller_down(slurm_cluster):
        time.sleep(OUTAGE_S)
    # 2. while the stop&continue simulation is suspended: its resume waits for the controller
    run.wait_for_line("suspended stopcont-", timeout=RUN_BOUND_S)
    with controller_down(slurm_cluster):
        time.sleep(OUTAGE_S)
    code = run.finish()
    assert code == 0, "\n".join(run.lines)

    outages = read_csv(run_dir / "outages.csv")
    assert len(outages) >= 2
    # each stop lasted 20 s; the harness saw at least the part between its first failed command
    # (polls every 0.5 s) and its first answer after the restart; a CLI hangs up to MessageTimeout
    # (10 s) before it fails, so at least 20 - 10 s of each is certain
    long_ones = [o for o in outages if float(o["end"]) - float(o["start"]) >= OUTAGE_S - 10]
    assert len(long_ones) >= 2, outages
    cells = {(c["stage"], c["scenario"]): c for c in read_csv(run_dir / "cells.csv")}
    assert cells[("execution", "oversubscription")]["outage"] == "True"
    assert cells[("execution", "stopcont")]["outage"] == "True"
    assert cells[("calibration", "")]["outage"] == "False" and cells[("reference", "")]["outage"] == "False"
    jobs = read_csv(run_dir / "jobs.csv")
    # a cell fails only when one of its jobs did not complete, and that only in an outage (the second
    # stop may come before the stop&continue analytics' srun reached slurmctld)
    for (stage, scenario), cell in cells.items():
        ended = [j for j in jobs if j["stage"] == stage and j["scenario"] == scenario]
        assert cell["status"] == ("completed" if all(j["state"] == "COMPLETED" for j in ended) else "failed"), \
            (cell, ended)
        assert cell["status"] == "completed" or cell["outage"] == "True", cell
    # a job may fail because of an outage (its srun could not reach slurmctld), never without one
    assert all(j["state"] == "COMPLETED" or j["outage"] == "True" for j in jobs), jobs
    assert all(j["state"] == "COMPLETED" for j in jobs if j["stage"] != "execution")
    over = {j["app"]: j for j in jobs if j["scenario"] == "oversubscription"}
    assert over["simulation"]["outage"] == "True" and over["analytics"]["outage"] == "True"
    assert not any(j["outage"] == "True" for j in jobs if j["stage"] != "execution")
    # left out of summary.csv by default, and named there and at the end of the run
    summary = {row["scenario"]: row for row in read_csv(run_dir / "summary.csv")}
    for scenario in ("oversubscription", "stopcont"):
        assert summary[scenario]["samples"] == "0" and summary[scenario]["outage_samples"] == "0"
        assert "sample(s) 0 overlapped a scheduler outage (see outages.csv): left out" in summary[scenario]["warnings"]
        assert any(line.startswith("djsb: cell overlapped a scheduler outage") and scenario in line
                   for line in run.lines), run.lines
    # `djsb report --include-outages` keeps them
    subprocess.run([sys.executable, "-m", "djsb.cli", "report", "--include-outages", str(run_dir)],
                   check=True, capture_output=True, timeout=120)
    # (a cell whose job failed in the outage stays out: its sample is not a measurement)
    completed = {scenario: all(j["state"] == "COMPLETED" for j in jobs if j["scenario"] == scenario)
                 for scenario in ("oversubscription", "stopcont")}
    assert any(completed.values()), jobs
    assert {row["scenario"]: row["samples"] for row in read_csv(run_dir / "summary.csv")} == \
        {scenario: "1" if done else "0" for scenario, done in completed.items()}


def test_sigint_during_an_outage_ends_within_5_s(slurm_cluster: SlurmCluster, tmp_path: Path,
                                                 apps_bin: Path) -> None:
    run_dir = tmp_path / "run"
    run = Run(str(config(tmp_path, "[oversubscription]")), "-o", str(run_dir))
    run.wait_for_line("submitted oversubscription-na1-s0-sim0", timeout=RUN_BOUND_S)
    left: list[str] = []
    try:
        with controller_down(slurm_cluster):
            time.sleep(3)  # the harness is now retrying its polls
            run.process.send_signal(signal.SIGINT)
            sent = time.monotonic()
            code = run.finish(timeout=60)
            elapsed = time.monotonic() - sent
            left = (run_dir / "uncancelled.txt").read_text().split() if (run_dir / "uncancelled.txt").exists() \
                else []
    finally:
        ids = [word for word in left if word.isdigit()]
        if ids:
            subprocess.run(["scancel", *ids], capture_output=True, timeout=60)
    assert code == 128 + signal.SIGINT, "\n".join(run.lines)
    assert elapsed <= 5, f"{elapsed:.1f} s\n" + "\n".join(run.lines)
    sim_id = next(m.group(1) for line in run.lines
                  for m in [re.search(r"submitted oversubscription-na1-s0-sim0 as job (\d+)$", line)] if m)
    # the simulation could not be cancelled with slurmctld down: written down and named
    assert sim_id in ids
    # the polls that went unanswered are an outage; the cancellations not even tried are none
    outages = read_csv(run_dir / "outages.csv")
    assert outages and all(o["error"] != "the run is stopping" for o in outages), outages
    assert not any("did not answer for" in line and "the run is stopping" in line for line in run.lines), run.lines
    assert any(line.startswith("djsb: interrupted by SIGINT: could not cancel job(s)") and sim_id in line
               for line in run.lines), run.lines


def test_a_refused_submission_fails_only_its_cell(slurm_cluster: SlurmCluster, tmp_path: Path,
                                                  apps_bin: Path) -> None:
    # 3 analytics tasks at one per node cannot share the simulation's 2 nodes: Slurm refuses the
    # placement ("Requested node configuration is not available"), also after a fresh poll; the
    # cell fails with that reason and the run goes on to its end (rc 0)
    run_dir = tmp_path / "run"
    run = Run(str(config(tmp_path, "[oversubscription]", analytics_tasks=3)), "-o", str(run_dir))
    code = run.finish()
    assert code == 0, "\n".join(run.lines)
    cells = {c["stage"]: c for c in read_csv(run_dir / "cells.csv")}
    assert cells["execution"]["status"] == "failed"
    assert "Requested node configuration is not available" in cells["execution"]["reason"]
    assert "\n" not in cells["execution"]["reason"]
    assert cells["reference"]["status"] == "completed"
    assert any(line.startswith("djsb: failed cell: execution oversubscription n_a=1 sample 0")
               for line in run.lines), run.lines
    summary = read_csv(run_dir / "summary.csv")
    assert [(row["scenario"], row["samples"], row["failed_samples"]) for row in summary] == \
        [("oversubscription", "0", "0")]
    # its simulation was cancelled, nothing of the run is left
    wait_until(lambda: not slurm_run.active_jobs(run.job_ids()), 30, "the run's jobs to leave squeue", interval=0.5)
