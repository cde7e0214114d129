"""The LSF module on OpenLava 4.0, on output captured from the live cluster of .ci/openlava.sh.

Each fixture in tests/fixtures/lsf/openlava/ starts with the command that printed it and ends with
its exit status (comment lines the tests drop). Expected values are read off that raw output (the
states bjobs printed, the event times, hosts and exit codes of bjobs -l); calendar.timegm is the
time oracle. The module's commands run through a scripted transport answering with that output.
"""

from __future__ import annotations

import calendar
import shlex
from pathlib import Path

import pytest
from support import Answer, ScriptedTransport, ok
from support import sim_request as request

from djsb.clock import WallClock
from djsb.errors import JobModuleError
from djsb.harness.ending import end_for_good
from djsb.jobs import JobState
from djsb.transport import CommandResult
from job_modules.lsf import LsfJobModule
from job_modules.lsf.parsers import Lsf, LsfTime, parse_bjobs_wide, parse_long, parse_lsid

FIXTURES = Path(__file__).parent / "fixtures" / "lsf"
NOW = calendar.timegm((2026, 11, 28, 22, 7, 0))  # just after the capture (the times print no year)


def captured(name: str) -> str:
    """A fixture of the live OpenLava without its '#' lines (the command and its exit status)."""
    text = (FIXTURES / "openlava" / name).read_text()
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#"))


def canned_ibm_lsid() -> str:
    """IBM LSF 10.1's lsid (tests/fixtures/lsf/lsid.txt) without its comment line."""
    return (FIXTURES / "lsid.txt").read_text().split("\n", 1)[1]


def utc(hour: int, minute: int, second: int) -> float:
    """Unix time of 2026-11-28 hour:minute:second UTC."""
    return float(calendar.timegm((2026, 11, 28, hour, minute, second)))


def epoch(time: LsfTime | None) -> float | None:
    return None if time is None else time.epoch


def openlava(rules: list[tuple[str, Answer]]) -> ScriptedTransport:
    """A transport answering ``rules``, on which ``lsid`` names OpenLava (as the live cluster did)."""
    return ScriptedTransport([("lsid", ok(captured("lsid.txt"))), *rules])


def test_lsid_tells_the_two_lsfs_apart() -> None:
    assert parse_lsid(captured("lsid.txt")) == Lsf("OpenLava 4.0dev4", openlava=True)
    assert parse_lsid(canned_ibm_lsid()) == Lsf("IBM Spectrum LSF Standard 10.1.0.0", openlava=False)
    with pytest.raises(ValueError, match="names no LSF"):
        parse_lsid("lsid: command not found\n")


def test_memory_limit_in_the_unit_each_lsf_takes() -> None:
    """OpenLava refused '-M 64MB' (bsub_memory_unit.txt) and took '-M 65536' (bsub_submitted.txt)."""
    assert "MEMLIMT value should be a positive integer" in captured("bsub_memory_unit.txt")
    assert "is submitted" in captured("bsub_submitted.txt")
    assert Lsf("OpenLava 4.0dev4", openlava=True).memory_limit(64) == "65536"
    assert Lsf("OpenLava 4.0dev4", openlava=True).memory_limit(0.5) == "512"
    assert Lsf("IBM Spectrum LSF Standard 10.1.0.0", openlava=False).memory_limit(64.2) == "65MB"


def test_bjobs_long_states_times_hosts_and_exit_codes() -> None:
    """bjobs -a -l of seven jobs: DONE, exit 3, bkill'ed, bstop'ed, past its -W 1, pending, 3 slots."""
    records = parse_long(captured("bjobs_long.txt"), NOW)
    assert sorted(records) == ["205", "206", "207", "208", "209", "210", "211"]
    done, failed, killed, stopped = records["205"], records["206"], records["207"], records["208"]
    timed_out, pending, spread = records["209"], records["210"], records["211"]
    assert (done.stat, done.state, done.exit_code) == ("DONE", JobState.COMPLETED, 0)
    assert (epoch(done.submit), epoch(done.start), epoch(done.end)) == (
        utc(22, 5, 15), utc(22, 5, 16), utc(22, 5, 17))
    assert done.nodes == ("djsb-lava3",) and done.start is not None and done.start.has_seconds
    assert (failed.state, failed.exit_code, epoch(failed.end)) == (JobState.FAILED, 3, utc(22, 5, 16))
    assert (killed.stat, killed.state, killed.exit_code) == ("EXIT", JobState.CANCELLED, 130)
    assert epoch(killed.end) == utc(22, 5, 20)
    assert (stopped.state, stopped.end, stopped.exit_code) == (JobState.SUSPENDED, None, None)
    assert stopped.nodes == ("djsb-lava1",)
    assert (timed_out.stat, timed_out.state, timed_out.exit_code) == ("EXIT", JobState.TIMEOUT, 140)
    assert (pending.state, pending.start, pending.nodes) == (JobState.PENDING, None, ())
    assert epoch(pending.submit) == utc(22, 5, 16)
    assert (spread.state, spread.nodes, epoch(spread.start)) == (
        JobState.RUNNING, ("djsb-lava3", "djsb-lava2"), utc(22, 5, 21))


def test_kills_carry_their_reasons() -> None:
    records = parse_long(captured("bjobs_long.txt"), NOW)
    assert "run limit" in records["209"].status(minute_times=False).reason
    assert "bkill" in records["207"].status(minute_times=False).reason
    assert records["206"].status(minute_times=False).reason == ""


def test_bjobs_long_skips_jobs_it_does_not_know() -> None:
    """bjobs printed 'Job <9999> is not found' (on stderr, exit status 255) beside job 205."""
    assert "Job <9999> is not found" in captured("bjobs_not_found.txt")
    assert list(parse_long(captured("bjobs_not_found.txt"), NOW)) == ["205"]


def test_bjobs_wide_gives_tagged_jobs() -> None:
    tagged = parse_bjobs_wide(captured("bjobs_wide.txt"))
    assert tagged == [("204", JobState.COMPLETED, "abc123"), ("205", JobState.COMPLETED, "tokA")]
    spaced = "212     root    PEND  normal     vm             -        x.djsb-t0k 1    Nov 28 22:05\n"
    assert parse_bjobs_wide(spaced) == [("212", JobState.PENDING, "t0k 1")]


def test_bsub_on_openlava_uses_what_it_has() -> None:
    """No -rn (bsub_rn.txt), no affinity (bsub_affinity.txt), -M in KB, the task's CPUs as slots on one host."""
    assert "option cannot have an argument -- r" in captured("bsub_rn.txt")
    assert "Bad resource requirement syntax" in captured("bsub_affinity.txt")
    module = LsfJobModule({"queue": "normal"}, openlava([]))
    command = module.get_submit_command(request(total_tasks=1, total_memory=256 << 20,
                                                token="0123456789abcdef0123456789abcdef"))
    # 256 MiB of one task plus the 64 MiB margin: 320 MiB, 327680 KB; 30 s x 3 + 120 s: 4 minutes
    assert shlex.split(command) == [
        "bsub", "-J", "exec-s0-sim0.djsb-0123456789abcdef0123456789abcdef", "-o", "/runs/a b/sim.out",
        "-e", "/runs/a b/sim.err", "-n", "2", "-R", "span[hosts=1]", "-M", "327680", "-W", "4",
        "-q", "normal", "<", "/runs/a b/sim.sh"]
    with pytest.raises(JobModuleError, match="no blaunch"):
        module.get_submit_command(request(total_tasks=2))


def test_poll_reads_bjobs_long_and_tolerates_forgotten_jobs() -> None:
    """bjobs -a -l exits 255 when a job is not found: the others are still its answer."""
    transport = openlava([("bjobs", lambda c: CommandResult(c, 255, captured("bjobs_not_found.txt"),
                                                            "Job <9999> is not found\n")),
                          ("bhist", lambda c: CommandResult(c, 255, captured("bhist_none.txt"), ""))])
    module = LsfJobModule({}, transport)
    statuses = module.poll(["205", "9999"])
    assert transport.commands[1:] == ["env TZ=UTC bjobs -a -l 205 9999", "env TZ=UTC bhist -l 9999"]
    assert statuses["205"].state is JobState.COMPLETED
    assert (statuses["205"].start, statuses["205"].end) == (utc(22, 5, 16), utc(22, 5, 17))
    assert statuses["9999"].state is JobState.UNKNOWN


def test_a_failing_status_query_ends_the_cancel_step_saying_so() -> None:
    """The IBM status query (bjobs -o) on OpenLava fails at once (bjobs_o.txt): the cancel step
    stops asking, and says that it could not tell, not that it waited its full time."""
    refusal = captured("bjobs_o.txt")
    assert refusal.startswith("bjobs: invalid option -- 'o'")
    transport = ScriptedTransport([("lsid", ok(canned_ibm_lsid())), ("bkill", ok("Job <7> is being terminated\n")),
                                   ("bjobs", lambda c: CommandResult(c, 255, "", refusal))])
    said: list[str] = []
    left, why = end_for_good(LsfJobModule({}, transport), {"7": "ref-s0-sim0"}, WallClock(), 0.1,
                             progress=said.append)
    assert left == {"7": "ref-s0-sim0"}
    assert why == "the scheduler could not say whether they ended, 0 s after the first cancel"
    assert any("invalid option" in line for line in said), said
    assert [c.split()[0] for c in transport.commands] == ["bkill", "lsid", "env"]  # one query, not retried


def test_bhist_long_gives_the_ends_of_finished_jobs() -> None:
    """bhist -l of five ended jobs: no Status in its headers, the end event gives it."""
    records = parse_long(captured("bhist_long.txt"), NOW)
    assert {job_id: (r.stat, r.state, r.exit_code) for job_id, r in records.items()} == {
        "205": ("DONE", JobState.COMPLETED, 0), "206": ("EXIT", JobState.FAILED, 3),
        "207": ("EXIT", JobState.CANCELLED, 130), "209": ("EXIT", JobState.TIMEOUT, 140),
        "211": ("DONE", JobState.COMPLETED, 0)}
    spread = records["211"]
    assert (epoch(spread.submit), epoch(spread.start), epoch(spread.end)) == (
        utc(22, 5, 16), utc(22, 5, 21), utc(22, 8, 41))
    assert spread.nodes == ("djsb-lava3", "djsb-lava2")
    assert epoch(records["209"].end) == utc(22, 6, 17)  # -W 1: a minute after its start, 22:05:16


def test_a_job_bjobs_forgot_is_read_from_bhist() -> None:
    """After CLEAN_PERIOD bjobs answers 'Job <207> is not found' (exit status 255); bhist still has it."""
    transport = openlava([("bjobs", lambda c: CommandResult(c, 255, "", "Job <207> is not found\n")),
                          ("bhist", ok(captured("bhist_long.txt")))])
    status = LsfJobModule({}, transport).poll(["207"])["207"]
    assert (status.state, status.exit_code, status.nodes) == (JobState.CANCELLED, 130, ("djsb-lava2",))
    assert (status.start, status.end) == (utc(22, 5, 16), utc(22, 5, 20))
    assert "bkill" in status.reason


def test_a_stop_or_resume_mbatchd_delivers_later_is_done_and_a_refused_one_fails() -> None:
    """Just after an mbatchd restart, bresume answered "Job <2468>: Operation is in progress" with exit
    status 255 (a live run of test_lsf_live.py): mbatchd keeps the signal and delivers it once it
    reaches the job's sbatchd, so the module takes it as done; any other failure is an error."""
    in_progress = lambda c: CommandResult(c, 255, "", "Job <2468>: Operation is in progress\n")  # noqa: E731
    transport = openlava([("bstop", in_progress), ("bresume", in_progress)])
    module = LsfJobModule({}, transport)
    module.suspend("2468")
    module.resume("2468")
    assert transport.commands == ["bstop 2468", "bresume 2468"]  # each once: not retried
    refused = LsfJobModule({}, openlava([("bresume", lambda c: CommandResult(
        c, 255, "", "Job <2468>: User permission denied\n"))]))
    with pytest.raises(JobModuleError, match="permission denied"):
        refused.resume("2468")
