"""The Grid Engine module: parsers on output captured from a real Grid Engine 8.1.9, and live tests
on the one-host cell of .ci/sge.sh (a real job run, suspended, resumed and accounted; ``djsb run``
end to end).

Expected states come from what each captured job was made to do (tests/fixtures/sge/manifest.txt,
written by capture.sh) and Grid Engine's documentation (qstat(1) state letters, accounting(5));
times are checked against the bracket of this machine's clock around each qsub; argv values are
worked by hand. The live tests skip, saying why, when Grid Engine is not installed or the cell
cannot be started (CI: bash .ci/sge.sh install && bash .ci/sge.sh start; the sge_cell fixture is in
conftest.py).
"""

from __future__ import annotations

import csv
import random
import shlex
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from support import ScriptedTransport, fail, ok, sim_request, wait_until

from djsb.cli import main
from djsb.errors import ConfigError
from djsb.jobs import JobRequest, JobState, JobStatus
from djsb.transport import CommandResult, ConnectionLost, LocalTransport
from job_modules.sge import SgeJobModule
from job_modules.sge.parsers import (
    parse_qacct,
    parse_qacct_tokens,
    parse_qstat_tokens,
    parse_qstat_xml,
    parse_qsub,
    qacct_time,
    qstat_time,
    sge_state,
)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "sge"
MIB = 1 << 20


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def tagged_manifest() -> dict[str, tuple[str, str]]:
    """What each job of capture_tokens.sh was made to be -> (job id, token; '-': untagged)."""
    return {what: (job_id, token) for job_id, what, token in
            (line.split() for line in fixture("manifest_tokens.txt").splitlines())}


def manifest() -> dict[str, tuple[str, int, int]]:
    """What each captured job was made to do -> (job id, submitted after, submitted before)."""
    jobs = {}
    for line in fixture("manifest.txt").splitlines():
        job_id, what, after, before = line.split()
        jobs[what] = (job_id, int(after), int(before))
    return jobs


# -- parsers on the real captures --------------------------------------------------------------

def test_qsub_output_both_forms() -> None:
    terse, verbose = parse_qsub(fixture("qsub_terse.txt")), parse_qsub(fixture("qsub_verbose.txt"))
    assert terse.isdigit() and int(verbose) == int(terse) + 1  # capture.sh submits them one after the other
    assert parse_qsub("12.1-10:1\n") == "12"
    with pytest.raises(ValueError):
        parse_qsub("Unable to run job: job rejected\n")


def test_state_letters() -> None:
    """qstat(1): s = suspended by qmod -sj, S = with its queue, T = by a threshold; E = error; d alone
    does not decide (a job being deleted still runs until it leaves qstat)."""
    expected = {"qw": JobState.PENDING, "hqw": JobState.PENDING, "hRwq": JobState.PENDING, "r": JobState.RUNNING,
                "t": JobState.RUNNING, "Rr": JobState.RUNNING, "dr": JobState.RUNNING, "s": JobState.SUSPENDED,
                "S": JobState.SUSPENDED, "Ss": JobState.SUSPENDED, "T": JobState.SUSPENDED, "ds": JobState.SUSPENDED,
                "Eqw": JobState.FAILED}
    assert {letters: sge_state(letters) for letters in expected} == expected


def test_qstat_xml_captured_states() -> None:
    jobs = manifest()
    records = parse_qstat_xml(fixture("qstat_states.xml"))
    expected = {"running": JobState.RUNNING, "suspended": JobState.SUSPENDED, "pending_held": JobState.PENDING,
                "pending_resources": JobState.PENDING, "pending_error": JobState.FAILED}
    assert {what: records[jobs[what][0]].state for what in expected} == expected
    for what in ("running", "suspended"):
        record, (_, after, before) = records[jobs[what][0]], jobs[what]
        assert record.nodes and record.start is not None and after <= record.start <= before + 30
    held = records[jobs["pending_held"][0]]
    assert held.submit is not None
    assert jobs["pending_held"][1] <= held.submit <= jobs["pending_held"][2] and held.start is None
    assert "error state" in records[jobs["pending_error"][0]].reason


def test_qstat_xml_queue_suspended_and_unknown_job() -> None:
    jobs = manifest()
    records = parse_qstat_xml(fixture("qstat_queue_suspended.xml"))
    assert records[jobs["running"][0]].state is JobState.SUSPENDED      # S: its queue suspended
    assert records[jobs["suspended"][0]].state is JobState.SUSPENDED    # Ss
    assert parse_qstat_xml(fixture("qstat_unknown_job.txt")) == {}
    assert parse_qstat_xml("") == {}


def test_qacct_finished_jobs() -> None:
    """completed: sleep 2 in 2 slots; failed: exit 3; timeout: sleep 60 under h_rt=3 (failed 37);
    cancelled_running: qdel while it ran (failed 100, SIGKILL)."""
    jobs = manifest()
    records = parse_qacct(fixture("qacct_finished.txt"))
    expected = {"completed": (JobState.COMPLETED, 0), "failed": (JobState.FAILED, 3),
                "timeout": (JobState.TIMEOUT, 137), "cancelled_running": (JobState.CANCELLED, 137)}
    assert {what: (records[jobs[what][0]].state, records[jobs[what][0]].exit_code) for what in expected} == expected
    for what in expected:
        record, (_, after, before) = records[jobs[what][0]], jobs[what]
        assert record.submit is not None and record.start is not None and record.end is not None
        assert after <= record.submit <= before
        assert record.submit <= record.start <= record.end
        assert record.nodes
    completed = records[jobs["completed"][0]]
    assert completed.start is not None and completed.end is not None
    assert 2 <= completed.end - completed.start <= 3
    timeout = records[jobs["timeout"][0]]
    assert timeout.start is not None and timeout.end is not None
    assert 3 <= timeout.end - timeout.start <= 10


def test_qacct_deleted_jobs() -> None:
    """A job deleted while pending leaves no accounting record (qacct prints an error instead)."""
    jobs = manifest()
    records = parse_qacct(fixture("qacct_deleted.txt"))
    assert records[jobs["running"][0]].state is JobState.CANCELLED
    assert jobs["pending_held"][0] not in records


def test_qstat_xml_tagged_jobs() -> None:
    """capture_tokens.sh: a tagged job running (it ends at once), a tagged one held, an untagged one
    held; qstat -j shows the held one not rerunnable (qsub -r n: 'restart: n')."""
    jobs = tagged_manifest()
    (ended, ended_token), (held, held_token) = jobs["tagged_ended"], jobs["tagged_held"]
    assert parse_qstat_tokens(fixture("qstat_tagged.xml")) == [
        (ended, JobState.RUNNING, ended_token), (held, JobState.PENDING, held_token)]
    assert jobs["untagged_held"][1] == "-" and len(ended_token) == len(held_token) == 32
    details = dict(line.split(":", 1) for line in fixture("qstat_j_tagged.txt").splitlines() if ":" in line)
    assert details["job_number"].strip() == held and details["restart"].strip() == "n"
    assert details["job_name"].strip() == f"cap-tagged_held.djsb-{held_token}"


def test_qacct_tagged_ended_job() -> None:
    """qacct -j '*.djsb-TOKEN' finds the ended job by the token in its name (qacct keeps no context);
    a token no job has prints only an error."""
    ended, token = tagged_manifest()["tagged_ended"]
    assert parse_qacct_tokens(fixture("qacct_tagged.txt")) == [(ended, JobState.COMPLETED, token)]
    assert "not found" in fixture("qacct_tagged_unknown.stderr") and parse_qacct_tokens("") == []


def test_time_formats_read_as_utc() -> None:
    assert qstat_time("2026-11-23T09:39:32") == 1795426772.0  # date -u -d 2026-11-23T09:39:32 +%s
    assert qacct_time("Mon Nov 23 09:39:22 2026") == 1795426762.0
    assert qacct_time("Mon Nov  2 09:39:22 2026") == 1795426762.0 - 21 * 86400
    assert qacct_time("-/-") is None


# -- the module's commands (hand-worked) ---------------------------------------------------------

def request(**extra: object) -> JobRequest:
    """test_slurm_module's request (2 tasks x 2 CPUs, 512 MiB, 30 s), with one task by default."""
    return sim_request(**{"total_tasks": 1, **extra})


def test_qsub_argv_for_a_known_request() -> None:
    """2 slots; h_rt = 30 * 3 + 120 = 210 s; h_vmem per slot = (512 + 512 margin) / 2 = 512 MiB;
    the job script (kept beside the output: sim.out -> sim.sh) runs under sh whatever the queue's shell."""
    module = SgeJobModule({"queue": "all.q", "project": "bench"}, ScriptedTransport([]))
    job = request(token="0123456789abcdef0123456789abcdef")
    argv = shlex.split(module.get_submit_command(job))
    assert argv == ["qsub", "-terse", "-N", "exec-s0-sim0.djsb-0123456789abcdef0123456789abcdef", "-r", "n",
                    "-o", "/runs/a b/sim.out", "-e", "/runs/a b/sim.err", "-S", "/bin/sh", "-pe", "smp", "2", "-l", "h_rt=210", "-l", "h_vmem=512M", "-q", "all.q",
                    "-P", "bench", "/runs/a b/sim.sh"]
    assert module.batch_script(job) == (
        "#!/bin/sh\n"
        "# Batch script of a DJSB job, written by job_modules/sge (its name is this file's).\n"
        "# Every task runs on this host (the parallel environment keeps a job's slots on one host), each\n"
        "# with OMP_NUM_THREADS and DJSB_TASK_ID; the job exits with the last non-zero status of a task.\n"
        "export OMP_NUM_THREADS=2\n"
        "export 'DJSB_X=1,2 3'\n"
        "exec /apps/djsb-stream --control '/runs/a b/ctl'\n")


def test_colocated_oversubscribing_job_goes_to_the_sims_host_in_the_shared_queue() -> None:
    transport = ScriptedTransport([])
    module = SgeJobModule({"queue": "all.q", "oversubscribe_queue": "shared.q", "memory_resource": "none"},
                          transport)
    module._last["7"] = JobStatus(JobState.RUNNING, nodes=("n1",))
    argv = shlex.split(module.get_submit_command(request(
        app="analytics", cpus_per_task=1, total_memory=100 * MIB, exec_time=4, colocate_with="7",
        oversubscribe=True, env={})))
    assert argv[argv.index("-N") + 2:-1] == [
        "-r", "n", "-o", "/runs/a b/sim.out", "-e", "/runs/a b/sim.err", "-S", "/bin/sh", "-l", "h_rt=132", "-q", "shared.q@n1"]
    no_queue = SgeJobModule({}, transport)
    argv = shlex.split(no_queue.get_submit_command(request(node_host_names=("n1", "n2"), cpus_per_task=1)))
    assert argv[argv.index("-l", argv.index("h_rt=210")):-1] == ["-l", "h_vmem=1024M", "-l", "hostname=n1|n2"]


def test_several_tasks_run_through_the_task_loop(tmp_path: Path) -> None:
    """Three tasks, each exiting with its DJSB_TASK_ID: the job prints 0, 1, 2 and exits 2 (the last
    non-zero status); the script really runs under sh."""
    task = ("sh", "-c", 'echo "$DJSB_TASK_ID $OMP_NUM_THREADS"; exit $DJSB_TASK_ID')
    script = SgeJobModule({}, ScriptedTransport([])).batch_script(
        request(total_tasks=3, cpus_per_task=1, env={}, argv=task))
    assert script.splitlines()[4:] == [
        "export OMP_NUM_THREADS=1",
        "i=0",
        "pids=",
        'while [ "$i" -lt 3 ]; do',
        """    DJSB_TASK_ID=$i sh -c 'echo "$DJSB_TASK_ID $OMP_NUM_THREADS"; exit $DJSB_TASK_ID' &""",
        '    pids="$pids $!"',
        "    i=$((i + 1))",
        "done",
        "rc=0",
        "for pid in $pids; do",
        '    wait "$pid" || rc=$?',
        "done",
        'exit "$rc"']
    (tmp_path / "job.sh").write_text(script)
    out = subprocess.run(["sh", str(tmp_path / "job.sh")], capture_output=True, text=True, timeout=10)
    assert sorted(out.stdout.splitlines()) == ["0 1", "1 1", "2 1"] and out.returncode == 2


def test_control_commands_and_options() -> None:
    module = SgeJobModule({}, ScriptedTransport([]))
    assert module.get_suspend_command("7") == "qmod -sj 7"
    assert module.get_resume_command("7") == "qmod -usj 7"
    assert module.get_cancel_command("7") == "qdel 7"
    assert module.get_status_command(["7"]) == "env TZ=UTC qstat -xml"
    assert module.get_accounting_command(["7", "8"]) == "env TZ=UTC qacct -j 7; env TZ=UTC qacct -j 8"
    with pytest.raises(ConfigError, match="partition"):
        SgeJobModule({"partition": "x"}, ScriptedTransport([]))
    with pytest.raises(ConfigError, match="queue"):
        SgeJobModule({"queue": "all q"}, ScriptedTransport([]))


def lost(command: str) -> CommandResult | Exception:
    return ConnectionLost("the link dropped after qsub ran")


def test_a_lost_qsub_reply_finds_the_job_in_qstat_or_in_the_accounting() -> None:
    """The reply of each qsub is lost; the held job is found in qstat, the ended one (no longer in
    qstat) in the accounting, by the token in its name; qsub runs once for each."""
    jobs = tagged_manifest()
    for what, expected in (("tagged_held", ["qsub", "qstat"]), ("tagged_ended", ["qsub", "qstat", "qacct"])):
        job_id, token = jobs[what]
        listing = fixture("qstat_tagged.xml") if what == "tagged_held" else fixture("qstat_unknown_job.txt")
        transport = ScriptedTransport([("qsub", lost), ("qstat", ok(listing)), ("qacct", ok(fixture("qacct_tagged.txt")))])
        module = SgeJobModule({}, transport, sleep=lambda seconds: None)
        assert module.submit(request(token=token)) == job_id
        assert [shlex.split(command)[0 if command.startswith("q") else 2] for command in transport.commands] == expected
        if what == "tagged_ended":
            assert shlex.split(transport.commands[-1]) == ["env", "TZ=UTC", "qacct", "-j", f"*.djsb-{token}"]


def test_a_lost_qsub_reply_of_a_job_nobody_has_submits_again() -> None:
    """Neither qstat nor the accounting knows the token: the qsub never took effect, so it runs again."""
    replies = iter([ConnectionLost("the link dropped before qsub ran"), CommandResult("qsub", 0, "77\n", "")])
    transport = ScriptedTransport([("qsub", lambda command: next(replies)), ("qstat", ok(fixture("qstat_tagged.xml"))),
                                   ("qacct", fail(fixture("qacct_tagged_unknown.stderr")))])
    assert SgeJobModule({}, transport, sleep=lambda seconds: None).submit(request()) == "77"
    assert sum(command.startswith("qsub") for command in transport.commands) == 2


def test_find_by_token_lists_the_users_tagged_jobs_in_one_qstat() -> None:
    jobs = tagged_manifest()
    (ended, ended_token), (held, held_token) = jobs["tagged_ended"], jobs["tagged_held"]
    transport = ScriptedTransport([("qstat", ok(fixture("qstat_tagged.xml")))])
    found = SgeJobModule({}, transport).find_by_token([held_token, ended_token, "0" * 32])
    assert found == {held_token: held, ended_token: ended} and transport.commands == ["env TZ=UTC qstat -xml"]


def test_poll_uses_qacct_for_jobs_gone_from_qstat() -> None:
    jobs = manifest()
    done, running, held = jobs["completed"][0], jobs["running"][0], jobs["pending_held"][0]
    transport = ScriptedTransport([("qstat", ok(fixture("qstat_states.xml"))),
                                   ("qacct", ok(fixture("qacct_finished.txt"))), ("qdel", ok())])
    module = SgeJobModule({}, transport)
    module.cancel("999")
    statuses = module.poll([done, running, "999"])
    assert statuses[done].state is JobState.COMPLETED and statuses[running].state is JobState.RUNNING
    assert statuses["999"].state is JobState.CANCELLED  # deleted by the module, no accounting record
    assert sum("qacct" in c for c in transport.commands) == 1 and held not in statuses


# -- live: the real cell -------------------------------------------------------------------------

def processes_with(token: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if token in (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                    pids.append(int(proc.name))
            except OSError:
                continue
    return pids


def proc_state(pid: int) -> str:
    """The state letter of /proc/PID/stat (after the parenthesised command name)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def wait_for(predicate: Callable[[], bool], seconds: float, what: str) -> float:
    """Poll ``predicate`` every 0.2 s; return the time (epoch) it first held, or fail saying ``what``."""
    wait_until(predicate, seconds, what, interval=0.2)
    return time.time()


@pytest.mark.slow
def test_live_job_runs_suspends_resumes_and_is_accounted(sge_cell: None, tmp_path: Path) -> None:
    token = f"5.{random.randrange(10**6, 10**7)}"  # a unique argument: sleep 5.xxxxxxx
    module = SgeJobModule({"queue": "all.q", "retry_for": 30}, LocalTransport())
    submitted = time.time()
    job_id = module.submit(JobRequest(
        name="djsb-live", app="simulation", total_tasks=1, cpus_per_task=1, total_memory=16 * MIB, exec_time=5,
        argv=("sleep", token), stdout_path=str(tmp_path / "out"), stderr_path=str(tmp_path / "err")))
    try:
        seen_running = wait_for(lambda: module.poll([job_id])[job_id].state is JobState.RUNNING, 30, "RUNNING")
        # qstat says r once the execd took the job; its shepherd then starts the process.
        wait_for(lambda: bool(processes_with(f"sleep {token}")), 10, "the job's process on this host")
        pids = processes_with(f"sleep {token}")
        assert all(proc_state(pid) in "RS" for pid in pids)
        module.suspend(job_id)
        wait_for(lambda: all(proc_state(pid) == "T" for pid in pids), 10, "SIGSTOP (state T)")
        assert module.poll([job_id])[job_id].state is JobState.SUSPENDED
        time.sleep(1)
        module.resume(job_id)
        wait_for(lambda: all(proc_state(pid) in "RS" for pid in pids), 10, "SIGCONT")
        assert module.poll([job_id])[job_id].state is JobState.RUNNING
        seen_end = wait_for(lambda: module.poll([job_id])[job_id].state.finished, 40, "the end")
    finally:
        module.cancel(job_id)
    status = module.poll([job_id])[job_id]
    assert status.state is JobState.COMPLETED and status.exit_code == 0 and status.nodes
    # qacct's times (whole seconds) against the harness's clock, within a few seconds.
    assert status.submit is not None and status.start is not None and status.end is not None
    assert submitted - 1 <= status.submit <= submitted + 2
    assert status.submit <= status.start <= seen_running + 1
    assert status.end - status.start >= 5            # sleep 5.x, however long it was stopped
    assert seen_end - 6 <= status.end <= seen_end + 1  # qacct flushes each second (sge.sh)


@pytest.mark.slow
def test_live_djsb_run_end_to_end(sge_cell: None, apps_bin: Path, tmp_path: Path) -> None:
    """``djsb run`` on the cell: one sample, n_a 1, oversubscription and stopcont, short times.

    Not shorter than 2 s for the analytics: qacct's times are whole seconds, and a job that
    takes less than one would have an execution time of 0 (the slowdown's denominator)."""
    text = (ROOT / "configs" / "sge-local.yaml").read_text()
    for old, new in (("name: sge", f"name: {ROOT / 'job_modules' / 'sge' / 'module.py'}"),
                     ("[oversubscription, stopcont, dynamic]", "[oversubscription, stopcont]"),
                     ("sleep_min_time: 1.5", "sleep_min_time: 0.5"), ("sleep_max_time: 3", "sleep_max_time: 1"),
                     ("exec_time: 12", "exec_time: 4")):
        assert old in text
        text = text.replace(old, new)
    config = tmp_path / "sge.yaml"
    config.write_text(text)
    assert main(["run", str(config), "-o", str(tmp_path / "run")]) == 0
    with open(tmp_path / "run" / "jobs.csv") as handle:
        rows = list(csv.DictReader(handle))
    # calibration (sim, ana), reference (sim, 1 ana), 2 cells x (sim, 1 ana)
    assert len(rows) == 8
    assert {row["state"] for row in rows} == {"COMPLETED"}
    assert {row["times_source"] for row in rows} == {"scheduler"}
    assert all(row["validated"] == "True" for row in rows)
    stopcont_sim = next(row for row in rows if row["scenario"] == "stopcont" and row["app"] == "simulation")
    assert float(stopcont_sim["suspended_s"]) > 0


class LostFirstReply(LocalTransport):
    """The real cell, except that the first qsub's reply is dropped after qsub ran: the job exists,
    the module only gets ConnectionLost. ``lost`` keeps what qsub really printed."""

    def __init__(self) -> None:
        super().__init__()
        self.lost: CommandResult | None = None
        self.qsubs = 0

    def run(self, command: str, timeout: float = 60.0) -> CommandResult:
        result = super().run(command, timeout)
        if command.startswith("qsub"):
            self.qsubs += 1
            if self.lost is None:
                self.lost = result
                raise ConnectionLost("the link dropped after qsub ran")
        return result


def live_request(tmp_path: Path, name: str, argv: tuple[str, ...]) -> JobRequest:
    return JobRequest(name=name, app="analytics", total_tasks=1, cpus_per_task=1, total_memory=16 * MIB,
                      exec_time=5, argv=argv, stdout_path=str(tmp_path / f"{name}.out"),
                      stderr_path=str(tmp_path / f"{name}.err"))


def sge(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def listed_with(token: str) -> list[str]:
    """The ids of the user's jobs in the cell whose name carries ``token``."""
    return [job_id for job_id, _, tagged in parse_qstat_tokens(sge("qstat", "-xml").stdout) if tagged == token]


@pytest.mark.slow
def test_live_lost_qsub_reply_finds_the_held_job_and_submits_no_second(sge_cell: None, tmp_path: Path) -> None:
    """The first qsub's reply is lost; the retry finds the job by its token in qstat: one job with
    the token, the id qsub printed, submitted not rerunnable (qstat -j: 'restart: n')."""
    transport = LostFirstReply()
    module = SgeJobModule({"queue": "all.q", "submit_options": ["-h"]}, transport)  # held: takes no slot
    job = live_request(tmp_path, "djsb-lost", ("true",))
    job_id = module.submit(job)
    try:
        assert transport.lost is not None and parse_qsub(transport.lost.stdout) == job_id
        assert transport.qsubs == 1
        assert listed_with(job.token) == [job_id]
        details = sge("qstat", "-j", job_id).stdout
        assert f"job_name:                   djsb-lost.djsb-{job.token}\n" in details
        assert "restart:                    n\n" in details
    finally:
        module.cancel(job_id)
    wait_for(lambda: not listed_with(job.token), 30, "the held job deleted")


@pytest.mark.slow
def test_live_lost_qsub_reply_of_a_job_that_ended_is_found_in_the_accounting(sge_cell: None,
                                                                              tmp_path: Path) -> None:
    """The reply is lost and the job ends before the retry (the back-off waits until qacct has it):
    the retry finds it in the accounting by its token and does not run qsub again."""
    transport = LostFirstReply()

    def accounted(seconds: float) -> None:
        assert transport.lost is not None
        job_id = parse_qsub(transport.lost.stdout)
        wait_for(lambda: sge("qstat", "-j", job_id).returncode != 0 and sge("qacct", "-j", job_id).returncode == 0,
                 60, f"job {job_id} ended and accounted")

    module = SgeJobModule({"queue": "all.q", "memory_resource": "none"}, transport, sleep=accounted)
    job = live_request(tmp_path, "djsb-lost-ended", ("true",))
    job_id = module.submit(job)
    assert transport.lost is not None and parse_qsub(transport.lost.stdout) == job_id and transport.qsubs == 1
    accounting = sge("qacct", "-j", f"*.djsb-{job.token}").stdout
    assert parse_qacct_tokens(accounting) == [(job_id, JobState.COMPLETED, job.token)]
    assert listed_with(job.token) == []


@pytest.mark.slow
def test_live_find_by_token_from_a_fresh_module(sge_cell: None, tmp_path: Path) -> None:
    """Two held jobs are found by their tokens from a module that never submitted them; once
    cancelled, none of them is found or listed."""
    module = SgeJobModule({"queue": "all.q", "submit_options": ["-h"]}, LocalTransport())
    jobs = [live_request(tmp_path, f"djsb-find{index}", ("true",)) for index in range(2)]
    ids = [module.submit(job) for job in jobs]
    fresh = SgeJobModule({}, LocalTransport())
    try:
        assert fresh.find_by_token([jobs[0].token, jobs[1].token, "0" * 32]) == {
            jobs[0].token: ids[0], jobs[1].token: ids[1]}
        assert len(set(ids)) == 2
    finally:
        for job_id in ids:
            fresh.cancel(job_id)
    wait_for(lambda: fresh.find_by_token([job.token for job in jobs]) == {}, 30, "both jobs deleted")
    assert [listed_with(job.token) for job in jobs] == [[], []]
