"""The write-ahead ledger, the run directory's lock, and run directories created only once a run can
start: pure logic, real files, real flocks held by real processes."""

from __future__ import annotations

import csv
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import wait_until

from djsb.clock import WallClock
from djsb.errors import InputError
from djsb.harness.ledger import (
    CANCELLED,
    LEDGER_FILE,
    SUBMITTED,
    SUBMITTING,
    LedgerEntry,
    Submission,
    next_attempt,
    outstanding,
)
from djsb.harness.resume import cancel_earlier_jobs
from djsb.harness.rundir import RunDirectory, never_started
from djsb.harness.runlock import LOCK_FILE, RunDirectoryInUse, RunLock
from djsb.jobs import JobRequest, JobState
from djsb.transport import LocalTransport
from job_modules.sge.module import SgeJobModule


def entry(attempt: int, event: str, token: str, name: str = "", job_id: str = "") -> LedgerEntry:
    return LedgerEntry(attempt, event, token, name, job_id, 0.0)


# attempt 1 submitted a (id 11, ended and recorded), b (id 12, never recorded), c (its reply never
# came back); attempt 2 cancelled b and submitted d (id 14, never recorded)
HISTORY = [
    entry(1, SUBMITTING, "a", "ref-s0-sim0"), entry(1, SUBMITTED, "a", job_id="11"),
    entry(1, SUBMITTING, "b", "ref-s0-ana0"), entry(1, SUBMITTED, "b", job_id="12"),
    entry(1, SUBMITTING, "c", "ref-s0-ana1"),
    entry(2, CANCELLED, "b", "ref-s0-ana0", "12"),
    entry(2, SUBMITTING, "d", "stopcont-na1-s0-sim0"), entry(2, SUBMITTED, "d", job_id="14"),
]


def test_outstanding_is_every_submission_neither_recorded_nor_cancelled() -> None:
    recorded = {("ref-s0-sim0", "11")}
    assert outstanding(HISTORY, recorded) == [
        Submission(1, "c", "ref-s0-ana1", None),  # no id: it counts, found by token if at all
        Submission(2, "d", "stopcont-na1-s0-sim0", "14"),
    ]
    # the same id under another name (an in-process module's ids restart at 1) is not that job
    assert len(outstanding(HISTORY, {("other", "11")})) == 3


def test_attempts_count_on_from_the_ledger() -> None:
    assert next_attempt([]) == 1
    assert next_attempt(HISTORY) == 3


def test_a_torn_row_is_skipped() -> None:
    assert LedgerEntry.from_row({"attempt": "1", "event": SUBMITTING, "token": "t", "name": "x",
                                 "job_id": "", "time": "1.5"}) == LedgerEntry(1, SUBMITTING, "t", "x", "", 1.5)
    # a machine crash cut the last row after its third field
    assert LedgerEntry.from_row({"attempt": "1", "event": SUBMITTING, "token": "t", "name": None,
                                 "job_id": None, "time": None}) is None


def test_the_ledger_is_appended_as_csv_and_read_back(tmp_path: Path) -> None:
    run = RunDirectory.create(tmp_path / "run", {"general": {}}, {})
    try:
        assert run.attempt == 1
        run.write_ledger(SUBMITTING, "t1", time=100.0, name="cal-s0-sim0")
        run.write_ledger(SUBMITTED, "t1", time=101.0, job_id="42")
        with open(run.path / LEDGER_FILE, newline="") as handle:
            rows = list(csv.DictReader(handle))
        assert [(r["attempt"], r["event"], r["token"], r["name"], r["job_id"]) for r in rows] == [
            ("1", SUBMITTING, "t1", "cal-s0-sim0", ""), ("1", SUBMITTED, "t1", "", "42")]
        assert outstanding(run.ledger_entries(), run.recorded_jobs()) == [Submission(1, "t1", "cal-s0-sim0", "42")]
    finally:
        run.release()
    resumed = RunDirectory.resume(run.path)
    try:
        assert resumed.attempt == 2  # one attempt wrote the ledger before
    finally:
        resumed.release()


HOLDER = textwrap.dedent("""\
    import sys, time
    from pathlib import Path
    from djsb.harness.runlock import RunLock
    lock = RunLock.acquire(Path(sys.argv[1]), key="RUN_DIR")
    print("locked", flush=True)
    time.sleep(60)
    """)


def test_a_lock_held_by_another_process_names_its_pid(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        with pytest.raises(RunDirectoryInUse) as info:
            RunLock.acquire(tmp_path, key="RUN_DIR")
        assert info.value.key == "RUN_DIR" and f"pid {holder.pid}" in info.value.message
        holder.kill()  # SIGKILL: the kernel drops the flock with the process
        holder.wait()
        RunLock.acquire(tmp_path, key="RUN_DIR").release()
    finally:
        holder.kill()
        holder.wait()


def test_a_second_djsb_on_a_locked_run_directory_exits_2_with_one_line(tmp_path: Path,
                                                                      tiny_config: Path) -> None:
    run = RunDirectory.create(tmp_path / "run", {"general": {}}, {})  # locked by this process
    try:
        for key, args in (("RUN_DIR", ["--resume", str(run.path)]),
                          ("output.directory", [str(tiny_config), "-o", str(run.path)])):
            done = subprocess.run([sys.executable, "-m", "djsb.cli", "run", *args], capture_output=True,
                                  text=True, timeout=60)
            assert done.returncode == 2, done.stderr
            assert done.stderr == (f"djsb: error: {key}: {run.path} is in use by another djsb run "
                                   f"(pid {os.getpid()}); wait for it to end, or stop it\n")
        assert not (run.path / LEDGER_FILE).exists()  # neither submitted anything
    finally:
        run.release()


def test_which_directories_a_new_run_may_take(tmp_path: Path) -> None:
    assert never_started(tmp_path / "missing")
    assert never_started(tmp_path)  # empty
    (tmp_path / "file").write_text("x")
    assert not never_started(tmp_path / "file")
    assert not never_started(tmp_path)  # someone else's file
    # left by a run that failed before its first submission (an older DJSB made it that early)
    left = tmp_path / "left"
    for sub in ("jobs", "control", "figures"):
        (left / sub).mkdir(parents=True)
    (left / "config.yaml").write_text("general: {}\n")
    (left / "meta.json").write_text("{}\n")
    (left / LOCK_FILE).write_text("123\n")
    assert never_started(left)
    # a folder that merely has a jobs/ of its own is not a run directory
    other = tmp_path / "other"
    (other / "jobs").mkdir(parents=True)
    assert not never_started(other)
    # once a submission was written ahead, jobs may exist: only --resume may continue it
    run = RunDirectory.create(left, {"general": {"seed": 2}}, {})
    try:
        run.write_ledger(SUBMITTING, "t", time=0.0, name="cal-s0-sim0")
    finally:
        run.release()
    assert not never_started(left)
    with pytest.raises(InputError, match="already exists and is not empty"):
        RunDirectory.create(left, {}, {})


SSH_CONFIG = """\
general: {{num_of_samples: 1, num_of_dyn_analysis: [1], scenarios: [stopcont]}}
job_module:
  name: slurm
  ssh: {{host: 127.0.0.1, port: {port}, connect_timeout: 2, known_hosts: {known_hosts}}}
simulation: {{total_tasks: 1, cpus_per_task: 1, total_memory: 32MiB, exec_time: 2}}
analytics: {{total_tasks: 1, cpus_per_task: 1, total_memory: 32MiB, exec_time: 1}}
"""


def closed_port() -> int:
    """A port of 127.0.0.1 nothing listens on: bound then released by this test."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_failed_connection_leaves_no_run_directory(tmp_path: Path) -> None:
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    config = tmp_path / "ssh.yaml"
    config.write_text(SSH_CONFIG.format(port=closed_port(), known_hosts=known_hosts))
    run_dir = tmp_path / "run"
    for _ in range(2):  # and so the same command can simply be run again
        done = subprocess.run([sys.executable, "-m", "djsb.cli", "run", str(config), "-o", str(run_dir)],
                              capture_output=True, text=True, timeout=60)
        # a login node that cannot be reached is refused before the run, as bad input
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"djsb: error: {config}: job_module.ssh.host: ") and \
            "cannot connect" in done.stderr and done.stderr.count("\n") == 1
        assert not run_dir.exists()


def test_resume_cancels_by_recorded_id_where_the_module_cannot_tag_jobs(sge_cell: None, tmp_path: Path) -> None:
    """Grid Engine jobs carry no token (find_by_token finds none): the ledger's ids are polled on the
    live cell; the one still running is cancelled, the one recorded COMPLETED is asked about too
    (a recorded end may not be the last: Slurm requeues) and, gone, left alone."""
    killed = SgeJobModule({"queue": "all.q", "retry_for": 30}, LocalTransport())  # the harness SIGKILL'd
    request = JobRequest(name="exec-s0-sim0", app="simulation", total_tasks=1, cpus_per_task=1,
                         total_memory=16 << 20, exec_time=60, argv=("sleep", "60"),
                         stdout_path=str(tmp_path / "out"), stderr_path=str(tmp_path / "err"))
    job_id = killed.submit(request)
    try:
        run = RunDirectory.create(tmp_path / "run", {"general": {}}, {})
        run.write_ledger(SUBMITTING, request.token, time=0.0, name=request.name)
        run.write_ledger(SUBMITTED, request.token, time=0.0, job_id=job_id)
        run.write_ledger(SUBMITTING, "ended", time=0.0, name="ref-s0-sim0")
        # an id no live job has (a fresh cell numbers its jobs from 1: the job above may be 1)
        ended = str(int(job_id) + 100_000)
        run.write_ledger(SUBMITTED, "ended", time=0.0, job_id=ended)  # recorded below
        (run.path / "jobs.csv").write_text("stage,scenario,n_a,sample,name,job_id,state\n"
                                           f"reference,,0,0,ref-s0-sim0,{ended},COMPLETED\n")
        run.release()

        resumed = RunDirectory.resume(run.path)
        fresh = SgeJobModule({"queue": "all.q", "retry_for": 30}, LocalTransport())
        cancelled, looked_for = cancel_earlier_jobs(resumed, fresh, WallClock())
        resumed.release()
        assert looked_for == 2 and [(s.name, s.job_id) for s in cancelled] == [(request.name, job_id)]
        wait_until(lambda: fresh.poll([job_id])[job_id].state.finished, 30, "qdel to end the job", interval=0.5)
        assert fresh.poll([job_id])[job_id].state in (JobState.CANCELLED, JobState.FAILED)
        assert [e.event for e in RunDirectory.open(run.path).ledger_entries()][-1] == CANCELLED
    finally:
        killed.cancel(job_id)
