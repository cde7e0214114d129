"""A node dies under a running benchmark job, on the real Slurm mini-cluster: the job's slurmd, its
slurmstepd and its processes are killed (SIGKILL), as a node losing power would leave them.

slurmctld notices only when the node misses its pings (SlurmdTimeout=60 s here) and sets it DOWN;
the job, submitted with --no-requeue, then ends NODE_FAIL instead of going back to the queue to run
a second time (Slurm 22.05 requeues a job of a failed node when it is requeueable, the default). What
the user must see: the cell failed with that reason in cells.csv, summary.csv's warnings and
report.html, no number computed from it, none of the run's jobs left in squeue; and ``--resume``
(the node back) does the cell again, once.

A node that dies before a job is launched there is worse: Slurm places the job on it (the node is
DOWN only after SlurmdTimeout), the launch fails, and Slurm requeues the job whatever --no-requeue
said. The run must end only once the job is cancelled for good, record no time of it (it never ran),
and a ``--resume`` must cancel any job of the ledger Slurm still holds, whatever end was recorded.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from slurm_plugin import Run, SlurmCluster, cluster_nodes, job_process_states
from support import wait_until

from djsb.clock import WallClock
from djsb.harness.ledger import SUBMITTED, SUBMITTING
from djsb.harness.resume import cancel_earlier_jobs
from djsb.harness.rundir import RunDirectory
from djsb.jobs import JobRequest
from djsb.noise import SLOWDOWN_FLOOR
from djsb.transport import LocalTransport
from job_modules.slurm.module import SlurmJobModule

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

ANALYTICS_NODE = "n3"
CONFIG = f"""\
general:
  num_of_samples: 1
  sleep_min_time: 1
  sleep_max_time: 1.5
  num_of_ref_analysis: 1
  num_of_dyn_analysis: [1]
  scenarios: [oversubscription]
  seed: 3
  poll_interval: 0.5
job_module:
  name: slurm
  options: {{partition: shared, time_margin: 120}}
simulation: {{total_tasks: 1, cpus_per_task: 1, total_memory: 64MiB, exec_time: 5, node_host_names: [n2]}}
analytics: {{total_tasks: 1, cpus_per_task: 1, total_memory: 32MiB, exec_time: 3,
            node_host_names: [{ANALYTICS_NODE}]}}
"""


def squeue_state(job_id: str) -> str:
    return subprocess.run(["squeue", "--noheader", "--states=all", f"--jobs={job_id}", "--format=%T"],
                          capture_output=True, text=True, timeout=60).stdout.strip()


def process_state(pid: int) -> str:
    """The state letter of process ``pid`` (proc(5) stat field 3); "" once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat[stat.rindex(")") + 2:].split()[0]


def pids_of(pattern: str) -> list[int]:
    return [int(pid) for pid in subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True,
                                               timeout=30).stdout.split()]


def kill_node(node: str, job_id: str) -> None:
    """The node loses power: its slurmd and every process of the job there (slurmstepds and tasks)
    stop at once, then die (SIGKILL).

    slurmd is stopped first, not killed: a dead slurmd refuses connections, and a step the batch
    script is launching then fails within milliseconds, so the script exits and its slurmstepd
    reports the job FAILED before it is killed in turn. A stopped slurmd refuses nothing. Every
    process of the job is then stopped until none runs (a stopped tree forks no more), and all are
    killed together."""
    slurmd = pids_of(f"^slurmd -N {node}$")
    assert slurmd, f"no slurmd of {node}"
    for pid in slurmd:
        os.kill(pid, signal.SIGSTOP)
    frozen: list[int] = []

    def all_stopped() -> bool:
        pids = [*pids_of(f"^slurmstepd: \\[{job_id}\\."), *job_process_states(job_id)]
        running = [pid for pid in pids if process_state(pid) not in ("", "T", "t", "Z")]
        for pid in running:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        frozen[:] = pids
        return not running

    wait_until(all_stopped, 30, f"job {job_id}'s processes on {node} to be stopped")
    for pid in [*slurmd, *frozen]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def our_jobs(names: set[str]) -> list[str]:
    out = subprocess.run(["squeue", "--noheader", "--format=%i %j %T"], capture_output=True, text=True,
                         timeout=60).stdout
    return [line for line in out.splitlines() if line.split()[1] in names]


def start_run(slurm_cluster: SlurmCluster, tmp_path: Path, name: str, config: str) -> tuple[Run, Path]:
    """``djsb run`` of ``config`` (written to ``tmp_path / name``) started into ``tmp_path / "run"``,
    and that directory; the test is skipped unless the mini-cluster has the nodes the configs pin."""
    if ANALYTICS_NODE not in slurm_cluster.nodes or "n2" not in slurm_cluster.nodes:
        pytest.skip(f"needs nodes n2 and {ANALYTICS_NODE} (DJSB_SLURM_NODES >= 3)")
    path = tmp_path / name
    path.write_text(config)
    run_dir = tmp_path / "run"
    return Run(str(path), "-o", str(run_dir)), run_dir


def test_a_node_dies_under_an_analytics_and_resume_redoes_the_cell(slurm_cluster: SlurmCluster,
                                                                    tmp_path: Path, apps_bin: Path) -> None:
    run, run_dir = start_run(slurm_cluster, tmp_path, "node-failure.yaml", CONFIG)
    try:
        run.wait_for_line("submitted oversubscription-na1-s0-ana0 as job", timeout=240)
        job_id = next(line.rsplit(" ", 1)[1] for line in run.lines
                      if "submitted oversubscription-na1-s0-ana0 as job" in line)
        wait_until(lambda: job_process_states(job_id), 60, "the analytics' processes to run")
        killed_at = time.monotonic()
        kill_node(ANALYTICS_NODE, job_id)
        status = run.finish(timeout=400)
        noticed = time.monotonic() - killed_at
    finally:
        slurm_cluster.control("start", timeout=300)  # the node back: its slurmd restarted, the node resumed
    assert status == 0, "\n".join(run.lines)
    # Slurm's verdict, with the time it took it (its SlurmdTimeout): not requeued, failed
    assert squeue_state(job_id) == "NODE_FAIL"
    assert noticed >= 60, f"Slurm failed the job {noticed:.0f} s after its node died: before SlurmdTimeout?"

    cells = pd.read_csv(run_dir / "cells.csv", keep_default_na=False)
    failed = cells[cells["status"] == "failed"]
    assert list(failed["scenario"]) == ["oversubscription"]
    reason = failed["reason"].iloc[0]
    assert f"oversubscription-na1-s0-ana0 (job {job_id}) ended NODE_FAIL" in reason
    jobs = pd.read_csv(run_dir / "jobs.csv", dtype={"job_id": str}, keep_default_na=False)
    assert jobs[jobs["job_id"] == job_id]["state"].tolist() == ["NODE_FAIL"]
    summary = pd.read_csv(run_dir / "summary.csv", keep_default_na=False)
    assert summary["samples"].tolist() == [0] and summary["slowdown_a"].tolist() == [""]
    assert f"sample 0 failed and is left out: {reason}" in summary["warnings"].iloc[0]
    assert "ended NODE_FAIL" in (run_dir / "report.html").read_text()
    names = set(jobs["name"])
    assert our_jobs(names) == []

    resumed = Run("--resume", str(run_dir))
    assert resumed.finish(timeout=300) == 0, "\n".join(resumed.lines)
    cells = pd.read_csv(run_dir / "cells.csv", keep_default_na=False)
    assert cells["status"].tolist() == ["completed"] * 3
    assert cells["stage"].tolist() == ["calibration", "reference", "execution"]
    jobs = pd.read_csv(run_dir / "jobs.csv", dtype={"job_id": str}, keep_default_na=False)
    execution = jobs[jobs["stage"] == "execution"]
    assert sorted(execution["app"]) == ["analytics", "simulation"] and (execution["state"] == "COMPLETED").all()
    assert execution[execution["app"] == "analytics"]["nodes"].tolist() == [ANALYTICS_NODE]
    summary = pd.read_csv(run_dir / "summary.csv", keep_default_na=False)
    # the redone sample is measured: a real slowdown of real processes on a shared machine, which
    # noise can put below 1 (0.8 in one fresh-clone CI); the run then says so in its warnings
    slowdown = float(summary["slowdown_a"].iloc[0])
    assert summary["samples"].tolist() == [1] and math.isfinite(slowdown) and slowdown > 0
    if slowdown < SLOWDOWN_FLOOR:
        warnings = summary["warnings"].iloc[0]
        assert "slowdown_a " in warnings and f" < {SLOWDOWN_FLOOR:g}" in warnings, warnings
    assert our_jobs(names | set(jobs["name"])) == []


LAUNCH_CONFIG = CONFIG.replace("sleep_min_time: 1\n  sleep_max_time: 1.5", "sleep_min_time: 4\n  sleep_max_time: 4.5") \
    .replace("exec_time: 5, node_host_names: [n2]", "exec_time: 15, node_host_names: [n2]")


def test_a_job_whose_launch_failed_on_a_dead_node_is_gone_before_the_run_ends(slurm_cluster: SlurmCluster,
                                                                               tmp_path: Path,
                                                                               apps_bin: Path) -> None:
    # the analytics' node dies before the analytics is submitted: Slurm still places it there (the node
    # answers no ping, but is DOWN only after SlurmdTimeout), its launch fails, and Slurm requeues it,
    # --no-requeue or not (Requeue=0 Restarts=1), showing it COMPLETING until the node is DOWN and
    # PENDING afterwards: it would run once the node is back, after the run, unless cancelled again
    run, run_dir = start_run(slurm_cluster, tmp_path, "launch-failure.yaml", LAUNCH_CONFIG)
    try:
        run.wait_for_line("submitted oversubscription-na1-s0-sim0 as job", timeout=400)
        sim_id = run.job_id("oversubscription-na1-s0-sim0")
        wait_until(lambda: squeue_state(sim_id) == "RUNNING", 120, "the simulation runs")
        subprocess.run(["pkill", "-KILL", "-f", f"^slurmd -N {ANALYTICS_NODE}$"], check=True, timeout=30)
        status = run.finish(timeout=600)
        ended = set(our_jobs({f"oversubscription-na1-s0-{app}" for app in ("sim0", "ana0")}))
        ana_id = run.job_id("oversubscription-na1-s0-ana0")
        shown = subprocess.run(["scontrol", "show", "job", ana_id], capture_output=True, text=True,
                               timeout=60).stdout
    finally:
        slurm_cluster.control("start", timeout=300)  # the node back: its slurmd restarted, the node resumed
    assert status == 0, "\n".join(run.lines)
    # the run ended only once Slurm held none of the cell's jobs: the analytics cancelled for good
    assert ended == set(), ended
    assert "Requeue=0" in shown and "Restarts=0" not in shown and "JobState=CANCELLED" in shown, shown
    cells = pd.read_csv(run_dir / "cells.csv", keep_default_na=False)
    failed = cells[cells["status"] == "failed"]
    assert list(failed["scenario"]) == ["oversubscription"]
    assert f"oversubscription-na1-s0-ana0 (job {ana_id}) was requeued by the scheduler" in failed["reason"].iloc[0]
    # it never ran (Slurm gave it a start and an end all the same): no time of it is a measurement
    jobs = pd.read_csv(run_dir / "jobs.csv", dtype={"job_id": str}, keep_default_na=False)
    row = jobs[jobs["job_id"] == ana_id].iloc[0]
    assert not (run_dir / "jobs" / "oversubscription-na1-s0-ana0.out").exists()
    assert [row[c] for c in ("start", "wait", "exec", "response", "slowdown")] == [""] * 5, row.to_dict()
    assert float(row["end"]) >= float(row["submit"])
    # with its node back, it does not run again
    wait_until(lambda: ANALYTICS_NODE in (cluster_nodes() or ()), 120, f"{ANALYTICS_NODE} is back")
    assert squeue_state(ana_id) == "CANCELLED"


def test_resume_cancels_a_job_the_scheduler_still_holds_whatever_end_was_recorded(
        slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    # jobs.csv says the job ended, even COMPLETED (an end read while Slurm showed it COMPLETING), but
    # Slurm holds it, requeued, pending: --resume must cancel it, or it runs beside the redone cell
    module = SlurmJobModule({"partition": "shared"}, LocalTransport())
    request = JobRequest(name="oversubscription-na1-s0-ana0", app="analytics", total_tasks=1, cpus_per_task=1,
                         total_memory=16 << 20, exec_time=60, argv=("sleep", "60"),
                         stdout_path=str(tmp_path / "ana.out"), stderr_path=str(tmp_path / "ana.err"))
    held = module.submit_script(request, "#!/bin/sh\nsleep 60\n",
                                module.get_submit_command(request).replace("sbatch ", "sbatch --hold ", 1))
    try:
        assert squeue_state(held) == "PENDING"
        run = RunDirectory.create(tmp_path / "run", {"general": {}}, {})
        run.write_ledger(SUBMITTING, request.token, time=0.0, name=request.name)
        run.write_ledger(SUBMITTED, request.token, time=0.0, job_id=held)
        (run.path / "jobs.csv").write_text("stage,scenario,n_a,sample,name,job_id,state\n"
                                           f"execution,oversubscription,1,0,{request.name},{held},COMPLETED\n")
        run.release()
        resumed = RunDirectory.resume(run.path)
        cancelled, looked_for = cancel_earlier_jobs(resumed, SlurmJobModule({}, LocalTransport()), WallClock(),
                                                    poll_interval=0.5)
        resumed.release()
        assert looked_for == 1 and [(s.name, s.job_id) for s in cancelled] == [(request.name, held)]
        # confirmed gone before it returned: no wait here
        assert squeue_state(held) == "CANCELLED"
    finally:
        subprocess.run(["scancel", held], capture_output=True, timeout=60)
