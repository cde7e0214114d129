"""The Slurm parsers on output captured from a real Slurm 22.05 (tests/fixtures/slurm/capture.sh).

Each captured job was put into its state on purpose; the expected states, exit codes and time
relations below come from Slurm's documented behaviour and from what the capture script did to
each job (manifest.txt), never from running the parsers.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from djsb.jobs import JobState
from djsb.jobs.hostlist import compress_hostlist, node_names
from job_modules.slurm.parsers import (
    ENDING_REASON,
    STATE_TABLE,
    is_transient,
    parse_config_value,
    parse_sacct,
    parse_sbatch_parsable,
    parse_squeue,
    parse_tagged_jobs,
    sacct_exit_code,
    slurm_state,
    wait_status_exit_code,
)

FIXTURES = Path(__file__).parent / "fixtures" / "slurm"


def manifest() -> dict[str, tuple[str, int, int]]:
    """Job name -> (job id, submitted after, submitted before), Unix seconds by the capturing machine."""
    jobs = {}
    for line in (FIXTURES / "manifest.txt").read_text().splitlines():
        job_id, what, before, after = line.split()
        jobs[what] = (job_id, int(before), int(after))
    return jobs


@pytest.fixture(scope="module")
def captured() -> dict[str, object]:
    records = parse_squeue((FIXTURES / "squeue_states.txt").read_text())
    return {what: records[job_id] for what, (job_id, _, _) in manifest().items()}


# What the capture did -> the state Slurm documents for it (squeue(1) JOB STATE CODES), as the
# harness sees it. The job over its memory is FAILED, not OUT_OF_MEMORY: without cgroups only
# jobacct_gather's OverMemoryKill can kill it, with SIGKILL, and Slurm then records a failure.
EXPECTED_STATES = {
    "completed": JobState.COMPLETED,
    "failed": JobState.FAILED,
    "timeout": JobState.TIMEOUT,
    "oom": JobState.FAILED,
    "cancelled": JobState.CANCELLED,
    "suspended": JobState.SUSPENDED,
    "running": JobState.RUNNING,
    "requeued": JobState.PENDING,
    "node_fail": JobState.NODE_FAIL,
    "pending_held": JobState.PENDING,
    "pending_resources": JobState.PENDING,
}


@pytest.mark.parametrize("what", sorted(EXPECTED_STATES))
def test_captured_states(captured: dict, what: str) -> None:
    assert captured[what].state is EXPECTED_STATES[what]


def test_exit_codes_follow_the_shell_convention(captured: dict) -> None:
    # `exit 3` in the batch script; a job killed by a signal N reports 128 + N like a shell does:
    # scancel and the time limit send SIGTERM (15), OverMemoryKill SIGKILL (9) to the srun task,
    # whose srun then exits 137. (A node failure's code depends on whether the batch shell's exit
    # reached slurmctld before the node was declared down: not asserted.)
    assert captured["completed"].exit_code == 0
    assert captured["failed"].exit_code == 3
    assert captured["cancelled"].exit_code == 128 + 15
    assert captured["timeout"].exit_code == 128 + 15
    assert captured["oom"].exit_code == 128 + 9
    # unfinished jobs have no exit code yet
    assert captured["running"].exit_code is None
    assert captured["suspended"].exit_code is None


def test_reasons(captured: dict) -> None:
    assert captured["pending_held"].reason == "JobHeldUser"  # sbatch --hold
    assert captured["pending_resources"].reason == "Resources"
    assert captured["requeued"].reason == "BeginTime"  # a requeued job waits before it is eligible again
    # squeue's RestartCnt: the requeued job was started again once, no other job was
    assert {what: status.restarts for what, status in captured.items() if status.restarts} == {"requeued": 1}
    assert captured["timeout"].reason == "TimeLimit"
    assert captured["node_fail"].reason == "NodeDown"
    assert captured["running"].reason == ""  # squeue's "None"


def test_times_are_facts_not_forecasts(captured: dict) -> None:
    jobs = manifest()
    for what, status in captured.items():
        _, before, after = jobs[what]
        if what != "requeued":  # a requeue resets the submit time to the requeue
            assert before <= status.submit <= after, what
        if status.state is JobState.PENDING:
            # squeue prints an expected start for pending jobs: a forecast, dropped
            assert status.start is None and status.end is None and status.nodes == (), what
        else:
            assert status.submit <= status.start, what
        if status.state.finished:
            assert status.start <= status.end, what
        else:
            # squeue prints start + time limit as a running job's end: a forecast, dropped
            assert status.end is None, what
    # the time limit of 5 s is enforced in whole minutes, by a periodic check (about every 30 s)
    timeout = captured["timeout"]
    assert 60 <= timeout.end - timeout.start <= 60 + 35


def test_nodes(captured: dict) -> None:
    assert captured["suspended"].nodes == ("n1",)  # --nodelist=n1
    assert captured["node_fail"].nodes == ("n4",)  # --nodelist=n4, then n4 set down
    assert captured["completed"].state is JobState.COMPLETED and "n4" not in captured["completed"].nodes


def iso_epochs(path: Path, offset: timedelta) -> dict[str, tuple[float, ...]]:
    """Job id -> its submit/start/end from ISO times printed in a zone ``offset`` from UTC."""
    zone = timezone(offset)
    epochs = {}
    for line in path.read_text().splitlines():
        fields = line.split("|")
        epochs[fields[0]] = tuple(datetime.fromisoformat(t).replace(tzinfo=zone).timestamp()
                                  for t in fields[2:5] if t != "N/A")
    return epochs


def test_epoch_times_do_not_depend_on_the_time_zone() -> None:
    # The module asks for Unix seconds (SLURM_TIME_FORMAT=%s). The same jobs printed in ISO local
    # time under TZ=UTC and TZ=Asia/Kolkata (UTC+05:30) convert back to exactly those seconds.
    epochs = {}
    for line in (FIXTURES / "squeue_states.txt").read_text().splitlines():
        fields = line.split("|")
        epochs[fields[0]] = tuple(float(t) for t in fields[2:5] if t != "N/A")
    assert iso_epochs(FIXTURES / "squeue_states_iso_utc.txt", timedelta(0)) == epochs
    assert iso_epochs(FIXTURES / "squeue_states_iso_kolkata.txt", timedelta(hours=5, minutes=30)) == epochs


def test_suspended_job_processes_are_stopped() -> None:
    # scontrol suspend: every process of the job (batch shell, srun, tasks) is in state T
    pids = [line.split()[0] for line in (FIXTURES / "scontrol_listpids_suspended.txt").read_text().splitlines()[1:]]
    states = {line.split()[0]: line.split()[1] for line in (FIXTURES / "ps_suspended.txt").read_text().splitlines()}
    assert pids and set(pids) == set(states)
    assert all(stat.startswith("T") for stat in states.values())


def test_transient_errors() -> None:
    # real messages of a stopped slurmctld: retry them
    assert is_transient((FIXTURES / "squeue_controller_down.stderr").read_text())
    assert is_transient((FIXTURES / "sbatch_controller_down.stderr").read_text())
    assert is_transient("squeue: error: slurm_receive_msg: Socket timed out on send/recv operation")
    # an unknown job id is an answer, not a transient error
    assert not is_transient((FIXTURES / "squeue_invalid_job.stderr").read_text())
    assert not is_transient("sbatch: error: Batch job submission failed: Invalid partition name specified")


def test_sbatch_parsable() -> None:
    # sbatch(1): --parsable prints "jobid[;cluster_name]"
    assert parse_sbatch_parsable("4242\n") == "4242"
    assert parse_sbatch_parsable("4242;djsb\n") == "4242"
    with pytest.raises(ValueError):
        parse_sbatch_parsable("")
    with pytest.raises(ValueError):
        parse_sbatch_parsable("Submitted batch job 4242")


def test_sacct_agrees_with_squeue_on_the_same_jobs(captured: dict) -> None:
    # sacct read the same jobs from the accounting database right after squeue: the same states
    # (sacct says 'CANCELLED by 0'), submit/start times and, for finished jobs, end times
    accounted = parse_sacct((FIXTURES / "sacct_states.txt").read_text())
    ids = {what: job_id for what, (job_id, _, _) in manifest().items()}
    for what, status in captured.items():
        record = accounted[ids[what]]
        assert record.state is status.state, what
        assert (record.submit, record.start, record.end) == (status.submit, status.start, status.end), what
        assert record.nodes == status.nodes, what
    assert accounted[ids["failed"]].exit_code == 3  # ExitCode 3:0
    assert accounted[ids["completed"]].exit_code == 0
    assert accounted[ids["pending_held"]].reason == "JobHeldUser"


def test_sacct_documented_forms() -> None:
    # forms the mini-cluster cannot produce (no cgroups, no preemption), as sacct(1) documents them:
    # ExitCode 'code:signal', State 'CANCELLED by UID'
    text = ("103|OUT_OF_MEMORY|1700000000|1700000001|1700000009|n4|0:125|None\n"
            "105|PREEMPTED|1700000000|1700000001|1700000030|n[1-2]|0:15|None\n")
    records = parse_sacct(text)
    assert records["103"].state is JobState.OUT_OF_MEMORY and records["103"].end == 1700000009
    assert records["105"].state is JobState.PREEMPTED and records["105"].exit_code == 128 + 15
    assert records["105"].nodes == ("n1", "n2")


def test_sacct_without_accounting() -> None:
    assert "accounting storage is disabled" in (FIXTURES / "sacct_disabled.stderr").read_text()
    assert parse_sacct("") == {}


def test_exit_code_conversions() -> None:
    # wait(2) status: exit code in bits 8-15, terminating signal in bits 0-6
    assert wait_status_exit_code(str(3 << 8)) == 3
    assert wait_status_exit_code("9") == 128 + 9
    assert wait_status_exit_code("N/A") is None
    assert sacct_exit_code("2:0") == 2
    assert sacct_exit_code("0:9") == 128 + 9
    assert sacct_exit_code("") is None


def test_state_table_covers_every_harness_state() -> None:
    assert set(STATE_TABLE.values()) == set(JobState) - {JobState.UNKNOWN}
    assert slurm_state("CANCELLED by 1000") is JobState.CANCELLED
    assert slurm_state("SOMETHING_NEW") is JobState.UNKNOWN
    assert slurm_state("") is JobState.UNKNOWN


def hostlist_captures(name: str) -> list[tuple[str, str]]:
    """(argument, answer) of each line of a capture of ``scontrol show hostlist|hostnames ARG``
    (tests/fixtures/slurm/scontrol_show_*.txt, Slurm 22.05)."""
    return [tuple(line.split(" ", 1)) for line in (FIXTURES / name).read_text().splitlines()]  # type: ignore[misc]


@pytest.mark.parametrize(("text", "names"), [
    *hostlist_captures("scontrol_show_hostnames.txt"),
    *((answer, argument) for argument, answer in hostlist_captures("scontrol_show_hostlist.txt")),
])
def test_node_lists_expand_as_scontrol_show_hostnames(text: str, names: str) -> None:
    assert node_names(text) == tuple(names.split(","))


@pytest.mark.parametrize(("names", "text"), hostlist_captures("scontrol_show_hostlist.txt"))
def test_node_lists_compress_as_scontrol_show_hostlist(names: str, text: str) -> None:
    assert compress_hostlist(names.split(",")) == text


@pytest.mark.parametrize("text", ["", "(null)", "None", "None assigned"])
def test_no_nodes(text: str) -> None:
    assert node_names(text) == ()


def test_config_value() -> None:
    text = "AccountingStorageType   = accounting_storage/none\nAccountingStorageHost   = localhost\n"
    assert parse_config_value(text, "AccountingStorageType") == "accounting_storage/none"
    assert parse_config_value(text, "Missing") is None


def test_completing_job_has_ended() -> None:
    # `capture.sh completing`: a 2-node `srun sleep 4` job that ended while slurmctld was stopped for
    # 12 s; back, squeue listed it COMPLETING for ~30 s, then COMPLETED. COMPLETING means ended, not
    # yet how: the same state, end and nodes as the COMPLETED line that follows, but not final.
    (job_id, before, after), = [tuple(line.split()[i] for i in (0, 2, 3)) for line in
                                (FIXTURES / "manifest_completing.txt").read_text().splitlines()]
    lines = (FIXTURES / "squeue_completing.txt").read_text().splitlines()
    completing, completed = parse_squeue(lines[0])[job_id], parse_squeue(lines[-1])[job_id]
    assert "|COMPLETING|" in lines[0] and "|COMPLETED|" in lines[-1]
    assert completing.state is JobState.COMPLETED and completing.state.finished
    assert completing.exit_code == 0
    assert replace(completing, reason="", final=True) == completed
    assert completing.reason == ENDING_REASON  # provisional: a job djsb cancelled looks the same
    assert not completing.final and completed.final
    assert completing.submit is not None and completing.start is not None and completing.end is not None
    assert int(before) <= completing.submit <= int(after)
    # the end was stamped when slurmctld came back: the 4 s job is recorded far longer than 4 s,
    # at least the 12 s outage it spanned (which is why such a job must be marked)
    assert completing.end - completing.start >= 12


def test_completing_with_a_failure_exit_is_failed() -> None:
    # the captured COMPLETING line with squeue's exit_code (a wait(2) status) 3 << 8 = 768, exit 3:
    # the job ended and failed, as its final state will say
    line = (FIXTURES / "squeue_completing.txt").read_text().splitlines()[0].replace("|0|0|None", "|768|0|None")
    status = next(iter(parse_squeue(line).values()))
    assert status.state is JobState.FAILED and status.exit_code == 3 and not status.final
    # a job past its time limit: squeue's reason TimeLimit (test_reasons), final state TIMEOUT
    status = next(iter(parse_squeue(line.replace("|768|0|None", "|15|0|TimeLimit")).values()))
    assert status.state is JobState.TIMEOUT and status.reason == "TimeLimit" and not status.final


def test_only_ending_states_change_meaning() -> None:
    # squeue(1) JOB STATE CODES: CG "in the process of completing", SO "staging out data": ended;
    # SIGNALING ("being signaled") and RESIZING still run
    assert slurm_state("COMPLETING") is JobState.COMPLETED and slurm_state("STAGE_OUT") is JobState.COMPLETED
    assert slurm_state("SIGNALING") is JobState.RUNNING and slurm_state("RESIZING") is JobState.RUNNING


def test_tagged_jobs_are_the_ones_whose_comment_is_a_token() -> None:
    # capture.sh: a held job, a suspended one, one without a comment, one whose comment merely
    # contains the prefix ("a|djsb-dddd"), one that ran `true` and completed
    tagged = parse_tagged_jobs((FIXTURES / "squeue_tagged.txt").read_text())
    assert sorted((token, state) for _, state, token in tagged) == [
        ("a" * 32, JobState.PENDING), ("b" * 32, JobState.SUSPENDED), ("e" * 32, JobState.COMPLETED)]
    assert len({job_id for job_id, _, _ in tagged}) == 3
