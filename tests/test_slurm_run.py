"""`djsb run` end to end on the real Slurm mini-cluster: the three scenarios (with a slurmctld restart
in the middle), and SIGINT/SIGTERM cleanup followed by --resume."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import threading
from pathlib import Path

import pytest
from slurm_plugin import Run, SlurmCluster, job_process_states
from support import wait_until

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

CONFIG = """\
general:
  num_of_samples: 1
  sleep_min_time: 1
  sleep_max_time: 1.5
  num_of_ref_analysis: 1
  num_of_dyn_analysis: [1]
  scenarios: [oversubscription, stopcont, dynamic]
  seed: 3
  poll_interval: 0.5
job_module:
  name: slurm
  options: {partition: shared, tasks_per_node: 1, time_margin: 60}
simulation: {total_tasks: 2, cpus_per_task: 2, total_memory: 128MiB, exec_time: 6}
analytics: {total_tasks: 2, cpus_per_task: 1, total_memory: 32MiB, exec_time: 2, same_nodes_as_sim: true}
"""


class SqueueWatcher(threading.Thread):
    """Samples squeue: the states each job of the run went through, and the process states of
    every suspended simulation while it was SUSPENDED: only inside a suspension (SUSPENDED at the
    previous sample and again after /proc was read), since slurmctld shows the state before
    slurmd has stopped the processes and keeps showing it until just after it resumed them."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.states: dict[str, set[str]] = {}
        self.suspended_processes: dict[str, list[dict[int, str]]] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        suspended_before: set[str] = set()
        while not self.stop.wait(0.25):
            suspended_now: set[str] = set()
            for job_id, name, state in squeue_states():
                self.states.setdefault(name, set()).add(state)
                if state == "SUSPENDED":
                    suspended_now.add(job_id)
                    if job_id in suspended_before:
                        sample = job_process_states(job_id)
                        if dict((j, s) for j, _, s in squeue_states(job_id)).get(job_id) == "SUSPENDED":
                            self.suspended_processes.setdefault(name, []).append(sample)
            suspended_before = suspended_now


def squeue_states(job_id: str | None = None) -> list[tuple[str, str, str]]:
    """(job id, name, state) of every job squeue knows (or of one job)."""
    only = ["--jobs", job_id] if job_id else []
    out = subprocess.run(["squeue", "--noheader", "--states=all", "--format=%i|%j|%T", *only],
                         capture_output=True, text=True, timeout=60).stdout
    return [tuple(line.split("|")) for line in out.splitlines()]  # type: ignore[misc]


def read_jobs(run_dir: Path) -> list[dict[str, str]]:
    with open(run_dir / "jobs.csv", newline="") as f:
        return list(csv.DictReader(f))


def app_times(stdout_path: Path) -> list[tuple[float, float]]:
    """(start_unix, end_unix) of each task, as djsb-stream measured them with its own clock."""
    return [(r["start_unix"], r["end_unix"]) for r in
            (json.loads(line) for line in stdout_path.read_text().splitlines() if line.startswith("{"))]


@pytest.fixture
def config(tmp_path: Path, apps_bin: Path) -> Path:
    path = tmp_path / "slurm-tiny.yaml"
    path.write_text(CONFIG)
    return path


def test_three_scenarios_survive_a_slurmctld_restart(slurm_cluster: SlurmCluster, config: Path,
                                                    tmp_path: Path) -> None:
    # a simulation long enough to outlive the controller's restart on a loaded machine, so that the
    # analytics refused while slurmctld was down is submitted again beside it, not after it
    config.write_text(config.read_text().replace("total_memory: 128MiB, exec_time: 6",
                                                 "total_memory: 128MiB, exec_time: 15"))
    run_dir = tmp_path / "run"
    watcher = SqueueWatcher()
    watcher.start()
    run = Run(str(config), "-o", str(run_dir))
    run.wait_for_line("execution stage: oversubscription")
    slurm_cluster.control("restart-ctld")  # in the middle of the run: it must not fail
    code = run.finish()
    watcher.stop.set()
    assert code == 0, "\n".join(run.lines)

    jobs = read_jobs(run_dir)
    assert len(jobs) == 2 + 2 + 3 * 2  # calibration, reference, 3 scenarios x (simulation + analytics)
    assert {job["state"] for job in jobs} == {"COMPLETED"}
    assert {job["times_source"] for job in jobs} == {"scheduler"}
    for job in jobs:
        # Slurm's whole-second times bracket the application's own clock readings
        start, end = float(job["start"]), float(job["end"])
        for task_start, task_end in app_times(run_dir / "jobs" / f"{job['name']}.out"):
            assert start <= task_start and task_end <= end + 1.5, job["name"]
    execution = {(job["scenario"], job["app"]): job for job in jobs if job["stage"] == "execution"}
    for scenario in ("oversubscription", "stopcont", "dynamic"):
        sim, ana = execution[(scenario, "simulation")], execution[(scenario, "analytics")]
        # the analytics landed on the simulation's nodes (2 tasks on its 2 nodes)
        assert ana["nodes"] == sim["nodes"] and len(sim["nodes"].split(",")) == 2
        assert ana["shared_with_sim"] == "True"
    # stop&continue: squeue showed the simulation SUSPENDED, every process of it stopped (T)
    stopcont_sim = execution[("stopcont", "simulation")]
    assert "SUSPENDED" in watcher.states[stopcont_sim["name"]]
    samples = [s for s in watcher.suspended_processes[stopcont_sim["name"]] if s]
    assert samples and all(state == "T" for sample in samples for state in sample.values())
    assert float(stopcont_sim["suspended_s"]) > 0
    assert "SUSPENDED" not in watcher.states[execution[("oversubscription", "simulation")]["name"]]
    # dynamic: the simulation lent one CPU per task to the analytics, down to 1 thread
    assert execution[("dynamic", "simulation")]["threads_min"] == "1"


def active_jobs(job_ids: set[str]) -> dict[str, str]:
    """Jobs among ``job_ids`` that squeue still lists as pending, running, suspended or completing."""
    out = subprocess.run(["squeue", "--noheader", "--format=%i|%T"], capture_output=True, text=True,
                         timeout=60).stdout
    return {i: s for i, s in (line.split("|") for line in out.splitlines()) if i in job_ids}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_leaves_no_job_and_resume_completes(slurm_cluster: SlurmCluster, config: Path,
                                                      tmp_path: Path, signum: signal.Signals) -> None:
    run_dir = tmp_path / "run"
    run = Run(str(config), "-o", str(run_dir))
    # interrupt while the stop&continue simulation is suspended: the hardest job to clean up
    run.wait_for_line("suspended stopcont-")
    run.process.send_signal(signum)
    code = run.finish(timeout=120)
    assert code == 128 + signum, "\n".join(run.lines)
    job_ids = run.job_ids()
    assert job_ids
    left = active_jobs(job_ids)
    assert not {i: s for i, s in left.items() if s != "COMPLETING"}, left
    # scancel'd jobs may take a moment to finish completing
    wait_until(lambda: not active_jobs(job_ids), 20, f"jobs {job_ids} to leave squeue", interval=0.5)

    if signum is signal.SIGTERM:
        return  # --resume does not depend on which signal stopped the run: checked once, after SIGINT
    resumed = Run("--resume", str(run_dir))
    assert resumed.finish() == 0, "\n".join(resumed.lines)
    jobs = read_jobs(run_dir)
    finished = {(job["stage"], job["scenario"], job["app"]) for job in jobs if job["state"] == "COMPLETED"}
    for scenario in ("oversubscription", "stopcont", "dynamic"):
        assert ("execution", scenario, "simulation") in finished and ("execution", scenario, "analytics") in finished
    # the resumed run did not redo the cells finished before the signal
    assert sum(job["stage"] == "reference" for job in jobs) == 2


def ledger_ids(run_dir: Path, attempt: str) -> dict[str, str]:
    """Job name -> id of every job attempt ``attempt`` submitted, from the run's ledger."""
    with open(run_dir / "ledger.csv", newline="") as f:
        rows = [row for row in csv.DictReader(f) if row["attempt"] == attempt]
    names = {row["token"]: row["name"] for row in rows if row["event"] == "submitting"}
    return {names[row["token"]]: row["job_id"] for row in rows if row["event"] == "submitted"}


def test_sigkill_then_two_resumes_at_once(slurm_cluster: SlurmCluster, config: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run = Run(str(config), "-o", str(run_dir))
    run.wait_for_line("suspended stopcont-")
    run.process.kill()  # SIGKILL: nothing is cancelled, the simulation stays suspended
    run.finish(timeout=60)
    earlier = ledger_ids(run_dir, "1")
    sim_id = earlier["stopcont-na1-s0-sim0"]
    assert active_jobs({sim_id}) == {sim_id: "SUSPENDED"}

    first, second = Run("--resume", str(run_dir)), Run("--resume", str(run_dir))
    wait_until(lambda: first.process.poll() is not None or second.process.poll() is not None, 60,
               "one of two concurrent resumes to end or be refused", interval=0.1)
    winner, loser = (first, second) if second.process.poll() is not None else (second, first)
    assert loser.finish(timeout=30) == 2
    # the winner names itself in the lock right after taking it: a loser that came in between says so
    assert loser.lines in ([f"djsb: error: RUN_DIR: {run_dir} is in use by another djsb run (pid {holder}); "
                            f"wait for it to end, or stop it"]
                           for holder in (winner.process.pid, "a process that has not named itself yet")), loser.lines
    # the winner cancels what the killed harness left, before it submits anything of its own
    winner.wait_for_line("submitted ")
    said = next(line for line in winner.lines if "of an earlier attempt" in line)
    assert f"stopcont-na1-s0-sim0 (job {sim_id})" in said, said
    wait_until(lambda: not active_jobs(set(earlier.values())), 30, "the earlier attempt's jobs to leave squeue",
               interval=0.5)
    assert winner.finish() == 0, "\n".join(winner.lines)

    # every cell, and every job of every cell, exactly once
    with open(run_dir / "cells.csv", newline="") as f:
        cells = [tuple(row.values()) for row in csv.DictReader(f)]
    assert len(cells) == len(set(cells)) == 1 + 1 + 3
    jobs = read_jobs(run_dir)
    keys = [(j["stage"], j["scenario"], j["n_a"], j["sample"], j["app"], j["index"]) for j in jobs]
    assert len(keys) == len(set(keys)) == 2 + 2 + 3 * 2
    assert {job["state"] for job in jobs} == {"COMPLETED"}
    assert not set(ledger_ids(run_dir, "2").values()) & set(earlier.values())
