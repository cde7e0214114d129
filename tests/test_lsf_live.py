"""The LSF module and `djsb run` on the live OpenLava cluster of .ci/openlava.sh (three virtual hosts of
this machine's CPUs): a run through the scenarios, SIGKILL then --resume, SIGINT, LSF's kills (run
limit, bkill) and mbatchd killed mid-run. Every test waits for what it needs with a bound, never a
fixed sleep; without the cluster each is skipped, saying why (tests/lsf_plugin.py).
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from lsf_plugin import LsfCluster, bjobs_states, clean_period, final_states, forgotten_by_bjobs
from slurm_plugin import Run
from support import wait_until

from djsb.jobs import JobRequest, JobState, JobStatus
from djsb.transport import LocalTransport
from job_modules.lsf import LsfJobModule

CONFIG = """\
general:
  num_of_samples: 1
  sleep_min_time: 0.5
  sleep_max_time: 1
  num_of_ref_analysis: 1
  num_of_dyn_analysis: [1]
  scenarios: [oversubscription, stopcont]
  seed: 5
  poll_interval: 0.5
job_module:
  name: lsf
  options: {queue: normal, oversubscribe_queue: shared, memory_margin: 512, time_margin: 60}
simulation: {total_tasks: 1, cpus_per_task: 2, total_memory: 128MiB, exec_time: 5}
analytics: {total_tasks: 1, cpus_per_task: 1, total_memory: 32MiB, exec_time: 2, same_nodes_as_sim: true}
"""
FINISHED = {"DONE", "EXIT"}


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "lsf-live.yaml"
    path.write_text(CONFIG)
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def all_finished(job_ids: set[str]) -> bool:
    states = final_states(job_ids)
    return set(states) == job_ids and set(states.values()) <= FINISHED


def test_sigkill_then_resume_completes_every_cell(lsf_cluster: LsfCluster, config: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run = Run(str(config), "-o", str(run_dir))
    run.wait_for_line("suspended stopcont-", timeout=240)
    sim_id = run.job_id("stopcont-na1-s0-sim0")
    run.process.kill()  # SIGKILL: nothing is cancelled, the simulation stays stopped (bstop)
    run.finish(timeout=60)
    assert bjobs_states({sim_id}) == {sim_id: "USUSP"}

    resumed = Run("--resume", str(run_dir))
    assert resumed.finish(timeout=300) == 0, "\n".join(resumed.lines)
    said = next(line for line in resumed.lines if "of an earlier attempt" in line)
    assert f"stopcont-na1-s0-sim0 (job {sim_id})" in said, said
    wait_until(lambda: all_finished({sim_id}), 30, f"the earlier attempt's job {sim_id} to end")
    cells = read_csv(run_dir / "cells.csv")
    assert sorted((c["stage"], c["scenario"], c["status"]) for c in cells) == [
        ("calibration", "", "completed"), ("execution", "oversubscription", "completed"),
        ("execution", "stopcont", "completed"), ("reference", "", "completed")]
    jobs = read_csv(run_dir / "jobs.csv")
    done = [j for j in jobs if j["state"] == "COMPLETED"]
    assert {(j["stage"], j["scenario"], j["app"]) for j in done} == {
        (stage, scenario, app) for stage, scenario in
        [("calibration", ""), ("reference", ""), ("execution", "oversubscription"), ("execution", "stopcont")]
        for app in ("simulation", "analytics")}
    assert all(j["nodes"].startswith("djsb-lava") and j["times_source"] == "scheduler" for j in done), done
    # the analytics of the execution stage ran on the simulation's host, as the config asks
    for scenario in ("oversubscription", "stopcont"):
        ran = {j["app"]: j["nodes"] for j in done if j["scenario"] == scenario}
        assert ran["analytics"] == ran["simulation"], ran
    stopped = next(j for j in done if j["scenario"] == "stopcont" and j["app"] == "simulation")
    assert float(stopped["suspended_s"]) > 0, stopped


def test_sigint_cancels_every_job_it_submitted(lsf_cluster: LsfCluster, config: Path, tmp_path: Path) -> None:
    run = Run(str(config), "-o", str(tmp_path / "run"))
    run.wait_for_line("suspended stopcont-", timeout=240)
    run.process.send_signal(signal.SIGINT)
    code = run.finish(timeout=120)
    assert code == 128 + signal.SIGINT, "\n".join(run.lines)
    job_ids = run.job_ids()
    assert len(job_ids) >= 6, run.lines  # calibration, reference, oversubscription: 2 each; stopcont's
    wait_until(lambda: all_finished(job_ids), 60, f"jobs {sorted(job_ids)} to end in bjobs", interval=0.5)
    states = final_states(job_ids)
    sim_id = run.job_id("stopcont-na1-s0-sim0")
    assert states[sim_id] == "EXIT", states  # killed while stopped, not left USUSP


def test_run_limit_and_bkill_are_recorded_with_their_reasons(lsf_cluster: LsfCluster, tmp_path: Path) -> None:
    module = LsfJobModule({"time_factor": 0, "time_margin": 1}, LocalTransport())  # -W 1: one minute

    def sleeper(name: str) -> JobRequest:
        started = tmp_path / f"{name}.started"  # the hosts are namespaces of this machine: one file system
        return JobRequest(name=name, app="simulation", total_tasks=1, cpus_per_task=1, total_memory=64 << 20,
                          exec_time=1, argv=("sh", "-c", f"touch {started} && exec sleep 300"),
                          stdout_path=str(tmp_path / f"{name}.out"), stderr_path=str(tmp_path / f"{name}.err"))

    limited, killed = module.submit(sleeper("limited")), module.submit(sleeper("killed"))
    # killed once its program runs: bkill while sbatchd still starts it gives exit 126, not bkill's
    # 130 (2 CI-like runs in 5 killed it as soon as bjobs said RUN)
    wait_until(lambda: (tmp_path / "killed.started").exists(), 60, f"job {killed} to start its program")
    module.cancel(killed)
    submitted = time.time()

    def ended() -> dict[str, JobStatus] | None:
        statuses = module.poll([limited, killed])
        return statuses if all(status.state.finished for status in statuses.values()) else None

    statuses = wait_until(ended, 150, "both jobs to end", interval=1)
    assert (statuses[killed].state, statuses[killed].exit_code) == (JobState.CANCELLED, 130), statuses[killed]
    assert "bkill" in statuses[killed].reason
    timed_out = statuses[limited]
    assert (timed_out.state, timed_out.exit_code) == (JobState.TIMEOUT, 140), timed_out
    assert "run limit" in timed_out.reason
    assert timed_out.start is not None and timed_out.end is not None
    assert timed_out.end - timed_out.start >= 60, timed_out  # -W 1: killed no earlier than a minute in
    assert timed_out.end <= submitted + 120


def test_mbatchd_killed_mid_run_is_an_outage_the_run_survives(lsf_cluster: LsfCluster, config: Path,
                                                              tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run = Run(str(config), "-o", str(run_dir))
    run.wait_for_line("submitted oversubscription-na1-s0-ana0", timeout=240)
    # mbatchd stopped first, so that the outage does not depend on how soon sbatchd restarts it (a CI
    # run saw none): a client gets no answer while it is stopped, shown by one before it is killed
    frozen = lsf_cluster.mbatchd_pid()
    assert frozen is not None, "mbatchd is not running"
    os.kill(frozen, signal.SIGSTOP)
    probe = subprocess.run(["timeout", "6", "bjobs", "-a"], capture_output=True, text=True, timeout=30)
    assert probe.returncode == 124, ("bjobs answered a stopped mbatchd", probe)
    killed = lsf_cluster.kill_mbatchd()
    # the master's sbatchd starts a new mbatchd (18 to 30 s later, measured)
    wait_until(lambda: lsf_cluster.mbatchd_pid() not in (None, killed), 120, "sbatchd to start a new mbatchd",
               interval=0.5)
    assert run.finish(timeout=300) == 0, "\n".join(run.lines)
    outages = read_csv(run_dir / "outages.csv")
    assert outages, "mbatchd was down for seconds: the run saw an outage"
    assert all(float(o["end"]) > float(o["start"]) for o in outages), outages
    cells = {(c["stage"], c["scenario"]): c for c in read_csv(run_dir / "cells.csv")}
    assert cells[("execution", "oversubscription")]["outage"] == "True", cells
    jobs = read_csv(run_dir / "jobs.csv")
    assert all(j["state"] == "COMPLETED" or j["outage"] == "True" for j in jobs), jobs
    # the new mbatchd numbers its jobs from 100 past the last: the run keeps each id bsub gave
    before = [int(j["job_id"]) for j in jobs if j["stage"] != "execution" or j["scenario"] == "oversubscription"]
    after = [int(j["job_id"]) for j in jobs if j["scenario"] == "stopcont"]
    assert min(after) >= max(before) + 100, (before, after)


def test_a_job_bjobs_forgot_keeps_its_end_from_bhist(lsf_cluster: LsfCluster, tmp_path: Path) -> None:
    """LSF forgets a finished job after CLEAN_PERIOD (bjobs: "Job <N> is not found", exit status 255); a
    module that never saw it still reads its final state, exit code, times and host from bhist -l."""
    period = clean_period()
    if period > 120:
        pytest.skip(f"the running cluster keeps finished jobs for CLEAN_PERIOD = {period} s (bparams -l): "
                    "bash .ci/openlava.sh start reconfigures it to the script's 30 s")

    def job(name: str, *argv: str) -> JobRequest:
        return JobRequest(name=name, app="simulation", total_tasks=1, cpus_per_task=1, total_memory=64 << 20,
                          exec_time=1, argv=argv, stdout_path=str(tmp_path / f"{name}.out"),
                          stderr_path=str(tmp_path / f"{name}.err"))

    module = LsfJobModule({}, LocalTransport())
    done, failed = module.submit(job("done", "sleep", "2")), module.submit(job("failed", "sh", "-c", "sleep 1; exit 3"))

    def ended() -> dict[str, JobStatus] | None:
        statuses = module.poll([done, failed])
        return statuses if all(status.state.finished for status in statuses.values()) else None

    listed = wait_until(ended, 60, "both jobs to end in bjobs", interval=0.5)
    assert bjobs_states({done, failed}) == {done: "DONE", failed: "EXIT"}
    wait_until(lambda: forgotten_by_bjobs({done, failed}), period + 60, f"bjobs to forget jobs {done} and {failed} "
               f"(CLEAN_PERIOD {period} s)", interval=1)
    forgotten = LsfJobModule({}, LocalTransport()).poll([done, failed])  # a fresh module: nothing seen before
    assert (forgotten[done].state, forgotten[done].exit_code) == (JobState.COMPLETED, 0), forgotten[done]
    assert (forgotten[failed].state, forgotten[failed].exit_code) == (JobState.FAILED, 3), forgotten[failed]
    assert forgotten[done].nodes[0].startswith("djsb-lava"), forgotten[done]
    # bhist's events give what bjobs -l gave: submit, start (dispatch) and end to the second, the host
    assert forgotten == listed
