"""The LSF module and its parsers, on canned output in IBM's documented LSF 10.1 formats.

LSF cannot run on the project's machines (it is proprietary; no package exists), so nothing here
talks to a real LSF: the parsers read hand-written output that follows IBM's documentation
(tests/fixtures/lsf/README.md names the pages), and the module's poll/submit run through a fake
transport that answers with that canned text. Expected values come from the documentation (the
state meanings), hand-worked arithmetic (argv, limits) and calendar.timegm as the time oracle.
"""

from __future__ import annotations

import calendar
import shlex
import subprocess
from pathlib import Path

import pytest
from support import Answer, ScriptedTransport, fail, ok, sequence
from support import sim_request as request

from djsb.errors import ConfigError, JobModuleError
from djsb.jobs import JobState
from djsb.transport import CommandResult, ConnectionLost
from job_modules.lsf import LsfJobModule
from job_modules.lsf.parsers import (
    LsfTime,
    exec_hosts,
    lsf_state,
    lsf_time,
    parse_bjobs,
    parse_bsub,
    parse_tagged_jobs,
)

FIXTURES = Path(__file__).parent / "fixtures" / "lsf"
MIB = 1 << 20
NOW = calendar.timegm((2026, 11, 23, 10, 0, 0))  # when the canned bjobs output was "queried"


def ibm(rules: list[tuple[str, Answer]]) -> ScriptedTransport:
    """A transport answering ``rules``, on which ``lsid`` names IBM Spectrum LSF 10.1."""
    return ScriptedTransport([("lsid", ok(canned("lsid.txt"))), *rules])


def scheduler_commands(transport: ScriptedTransport) -> list[str]:
    """The commands run on ``transport`` after the module's one ``lsid``."""
    assert transport.commands[0] == "lsid" and "lsid" not in transport.commands[1:]
    return transport.commands[1:]


def canned(name: str) -> str:
    """A fixture without its '#' comment lines."""
    return "".join(line for line in (FIXTURES / name).read_text().splitlines(keepends=True)
                   if not line.startswith("#"))


def known(time: LsfTime | None) -> LsfTime:
    """A time the output did print (fails the test when it is missing)."""
    assert time is not None
    return time


def utc(hour: int, minute: int, second: int = 0) -> float:
    """Unix time of 2026-11-23 hour:minute:second UTC."""
    return float(calendar.timegm((2026, 11, 23, hour, minute, second)))


# -- parsers ---------------------------------------------------------------------------------

def test_bsub_message_gives_job_id_and_queue() -> None:
    assert parse_bsub(canned("bsub_submitted.txt")) == ("1234", "normal")
    assert parse_bsub(canned("bsub_default_queue.txt")) == ("1235", "normal")
    with pytest.raises(ValueError):
        parse_bsub("Request aborted by esub. Job not submitted.\n")


def test_every_documented_state_maps() -> None:
    """IBM's "Job states": PSUSP is a held *pending* job, USUSP/SSUSP stopped running jobs, ZOMBI
    a killed job LSF has not yet reached (its processes may still run), UNKWN a lost host."""
    expected = {"PEND": JobState.PENDING, "PSUSP": JobState.PENDING, "WAIT": JobState.PENDING,
                "RUN": JobState.RUNNING, "ZOMBI": JobState.RUNNING, "USUSP": JobState.SUSPENDED,
                "SSUSP": JobState.SUSPENDED, "DONE": JobState.COMPLETED, "EXIT": JobState.FAILED,
                "UNKWN": JobState.UNKNOWN}
    assert {name: lsf_state(name) for name in expected} == expected
    records = parse_bjobs(canned("bjobs_states.txt"), NOW)
    assert [records[str(job)].state for job in range(101, 111)] == [
        JobState.PENDING, JobState.RUNNING, JobState.COMPLETED, JobState.FAILED, JobState.SUSPENDED,
        JobState.SUSPENDED, JobState.PENDING, JobState.UNKNOWN, JobState.RUNNING, JobState.PENDING]


def test_bjobs_times_hosts_and_exit_codes() -> None:
    records = parse_bjobs(canned("bjobs_states.txt"), NOW)
    done, failed, running, pending = records["103"], records["104"], records["102"], records["101"]
    assert (known(done.submit).epoch, known(done.start).epoch, known(done.end).epoch) == (
        utc(9, 30), utc(9, 31), utc(9, 35))
    assert not known(done.start).has_seconds
    assert done.exit_code == 0 and failed.exit_code == 3  # "-" for a DONE job: it exited 0
    assert running.end is None, "a running job's finish time is an estimate (L), not a fact"
    assert running.nodes == ("hostA", "hostB")
    assert pending.start is None and pending.nodes == () and pending.exit_code is None


def test_times_with_seconds_and_year() -> None:
    records = parse_bjobs(canned("bjobs_seconds.txt"), NOW)
    start = known(records["201"].start)
    assert start.epoch == utc(9, 31, 10) and start.has_seconds
    assert known(records["203"].end).epoch == utc(9, 32, 0) and records["203"].exit_code == 130


def test_year_is_inferred_near_the_query() -> None:
    """No year printed: the year that puts the time at most a day after the query."""
    new_year = calendar.timegm((2027, 1, 1, 0, 30, 0))
    assert known(lsf_time("Dec 31 23:58", new_year)).epoch == calendar.timegm((2026, 12, 31, 23, 58, 0))
    assert known(lsf_time("Jan  1 00:10", new_year)).epoch == calendar.timegm((2027, 1, 1, 0, 10, 0))
    assert lsf_time("-", new_year) is None
    assert known(lsf_time("Nov 23 10:12 L", NOW)).estimate


def test_exec_host_forms() -> None:
    assert exec_hosts("hostA") == ("hostA",)
    assert exec_hosts("4*hostA:2*hostB") == ("hostA", "hostB")
    assert exec_hosts("hostA hostA hostB") == ("hostA", "hostB")
    assert exec_hosts("-") == ()


def test_malformed_bjobs_line_is_refused() -> None:
    with pytest.raises(ValueError, match="7"):
        parse_bjobs("101|PEND|Nov 23 09:40\n", NOW)


# -- the module's commands -------------------------------------------------------------------

def test_bsub_argv_for_a_known_request() -> None:
    """Worked by hand: 256 MiB per task + 64 MiB margin = 320 MB; 30 s * 3 + 120 s = 210 s -> 4 min;
    two tasks started by blaunch in the job script, which bsub reads (and spools) from its stdin."""
    module = LsfJobModule({"queue": "normal", "project": "bench"}, ibm([]))
    command = module.get_submit_command(request(token="0123456789abcdef0123456789abcdef"))
    assert command.endswith(" < '/runs/a b/sim.sh'")
    assert shlex.split(command) == [
        "bsub", "-J", "exec-s0-sim0.djsb-0123456789abcdef0123456789abcdef", "-rn", "-o", "/runs/a b/sim.out", "-e", "/runs/a b/sim.err", "-n", "2",
        "-R", "affinity[core(2)]", "-M", "320MB", "-W", "4", "-q", "normal", "-P", "bench", "<", "/runs/a b/sim.sh"]
    assert module.batch_script(request()) == (
        "#!/bin/sh\n"
        "# Batch script of a DJSB job, written by job_modules/lsf (its name is this file's).\n"
        "# With several tasks blaunch starts one per slot of the job's hosts.\n"
        "export OMP_NUM_THREADS=2\n"
        "export 'DJSB_X=1,2 3'\n"
        "exec blaunch /apps/djsb-stream --control '/runs/a b/ctl'\n")


def test_single_task_script_runs_its_words_intact(tmp_path: Path) -> None:
    """The script of one task (no blaunch) under a real sh gets each argument back as one word."""
    argv = ("printf", "%s|", "a b", "$(reboot)", "it's", "$OMP_NUM_THREADS")
    script = LsfJobModule({}, ibm([])).batch_script(request(total_tasks=1, argv=argv, env={}))
    (tmp_path / "job.sh").write_text(script)
    out = subprocess.run(["sh", str(tmp_path / "job.sh")], capture_output=True, text=True, timeout=10)
    assert out.stdout == "a b|$(reboot)|it's|$OMP_NUM_THREADS|" and out.returncode == 0


def test_span_hosts_oversubscribe_queue_and_single_task() -> None:
    module = LsfJobModule({"tasks_per_node": {"analytics": 1}, "affinity": False, "queue": "normal",
                           "oversubscribe_queue": "shared"}, ibm([]))
    argv = shlex.split(module.get_submit_command(request(
        app="analytics", total_tasks=1, cpus_per_task=1, total_memory=100 * MIB, exec_time=4,
        node_host_names=("hostA", "hostB"), oversubscribe=True, env={})))
    # 100 MiB + 64 = 164 MB; 4 * 3 + 120 = 132 s -> 3 min; one task: no blaunch.
    assert argv[argv.index("-n"):] == ["-n", "1", "-R", "span[ptile=1]", "-M", "164MB", "-W", "3",
                                       "-m", "hostA hostB", "-q", "shared", "<", "/runs/a b/sim.sh"]


def test_control_commands() -> None:
    module = LsfJobModule({}, ibm([]))
    assert module.get_suspend_command("7") == "bstop 7"
    assert module.get_resume_command("7") == "bresume 7"
    assert module.get_cancel_command("7") == "bkill 7"
    assert module.get_poll_completion_command(canned("bsub_submitted.txt"), "").startswith(
        "bjobs -a -noheader -o stat 1234 | grep -qxE ")


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="partition"):
        LsfJobModule({"partition": "x"}, ibm([]))
    with pytest.raises(ConfigError, match="affinity"):
        LsfJobModule({"affinity": "yes"}, ibm([]))


# -- the module through a fake transport (canned answers) ---------------------------------------

def test_poll_reads_canned_bjobs_and_tolerates_unknown_jobs() -> None:
    stdout = canned("bjobs_states.txt")
    transport = ibm([("bjobs", lambda c: CommandResult(c, 255, stdout,
                                                                     canned("bjobs_not_found.stderr")))])
    module = LsfJobModule({}, transport)
    statuses = module.poll(["103", "104", "102", "999"])
    assert "TZ=UTC" in scheduler_commands(transport)[0] and scheduler_commands(transport)[0].count("bjobs") == 1
    assert statuses["103"].state is JobState.COMPLETED and statuses["103"].start is None  # minutes only
    assert statuses["104"].exit_code == 3
    assert statuses["102"].nodes == ("hostA", "hostB")
    assert statuses["999"].state is JobState.UNKNOWN


def test_poll_keeps_times_with_seconds_or_when_asked() -> None:
    transport = ibm([("bjobs", ok(canned("bjobs_seconds.txt")))])
    status = LsfJobModule({}, transport).poll(["201"])["201"]
    assert status.start is not None and status.end is not None
    assert status.end - status.start == pytest.approx(4 * 60 + 32, abs=1)
    transport = ibm([("bjobs", ok(canned("bjobs_states.txt")))])
    status = LsfJobModule({"minute_times": True}, transport).poll(["103"])["103"]
    assert status.start is not None and status.end is not None
    assert status.end - status.start == pytest.approx(4 * 60, abs=61)


def test_submit_retries_while_lsf_is_down_and_cancelled_jobs_stay_cancelled() -> None:
    transport = ibm([
        ("bsub", sequence(fail(canned("bjobs_lsf_down.stderr")), ok(canned("bsub_submitted.txt")))),
        ("bkill", ok("Job <1234> is being terminated\n")),
        ("job_name", fail(canned("bjobs_no_job.stderr"), code=255)),
        ("bjobs", fail(canned("bjobs_not_found.stderr"), code=255))])
    module = LsfJobModule({"retry_for": 10}, transport, sleep=lambda s: None)
    assert module.submit(request()) == "1234"
    # before the second bsub, the lookup of the first one's token found no job
    assert [c.split()[0] for c in scheduler_commands(transport)] == ["bsub", "bjobs", "bsub"]
    assert transport.files == {"/runs/a b/sim.sh": module.batch_script(request())}
    module.cancel("1234")
    assert module.poll(["1234"])["1234"].state is JobState.CANCELLED


TAGGED = {"sim": "0123456789abcdef0123456789abcdef", "ana": "89abcdef0123456789abcdef01234567",
          "calib": "fedcba9876543210fedcba9876543210", "piped": "00112233445566778899aabbccddeeff"}


def test_tagged_jobs_are_read_from_their_names() -> None:
    """bjobs_tagged.txt: 204 has no token; 205's name holds a '|' (the name is the last field)."""
    assert parse_tagged_jobs(canned("bjobs_tagged.txt")) == [
        ("201", JobState.RUNNING, TAGGED["sim"]), ("202", JobState.PENDING, TAGGED["ana"]),
        ("203", JobState.COMPLETED, TAGGED["calib"]), ("205", JobState.SUSPENDED, TAGGED["piped"])]
    assert parse_tagged_jobs(canned("bjobs_no_job.stderr")) == []


def test_a_lost_bsub_reply_finds_the_job_even_finished_and_submits_no_second() -> None:
    """The reply of the bsub is lost; its token is in bjobs -a (203: DONE already): no second bsub."""
    transport = ibm([("bsub", lambda command: ConnectionLost("the link dropped after bsub ran")),
                                   ("bjobs", ok(canned("bjobs_tagged.txt")))])
    module = LsfJobModule({}, transport, sleep=lambda s: None)
    assert module.submit(request(token=TAGGED["calib"])) == "203"
    assert scheduler_commands(transport)[1] == "bjobs -a -noheader -o 'jobid stat job_name delimiter='\"'\"'|'\"'\"''"
    assert shlex.split(scheduler_commands(transport)[1])[-1] == "jobid stat job_name delimiter='|'"
    assert [c.split()[0] for c in scheduler_commands(transport)] == ["bsub", "bjobs"]


def test_find_by_token_finds_jobs_not_yet_ended_in_one_bjobs() -> None:
    transport = ibm([("bjobs", ok(canned("bjobs_tagged.txt")))])
    module = LsfJobModule({}, transport)
    assert module.find_by_token([TAGGED["sim"], TAGGED["calib"], TAGGED["piped"], "0" * 32]) == {
        TAGGED["sim"]: "201", TAGGED["piped"]: "205"}  # 203 has ended
    assert len(scheduler_commands(transport)) == 1
    nobody = LsfJobModule({}, ibm([("bjobs", fail(canned("bjobs_no_job.stderr"), code=255))]))
    assert nobody.find_by_token([TAGGED["sim"]]) == {}
    broken = LsfJobModule({}, ibm([("bjobs", fail("bjobs: unknown option\n"))]))
    with pytest.raises(JobModuleError, match="unknown option"):
        broken.find_by_token([TAGGED["sim"]])


def test_failing_commands_raise() -> None:
    transport = ibm([("bsub", fail("Bad argument\n")), ("bstop", fail("Job <5>: No permission\n")),
                                   ("bjobs", fail("bjobs: unknown option\n"))])
    module = LsfJobModule({}, transport, sleep=lambda s: None)
    with pytest.raises(JobModuleError, match="Bad argument"):
        module.submit(request())
    with pytest.raises(JobModuleError, match="No permission"):
        module.suspend("5")
    with pytest.raises(JobModuleError, match="status query failed"):
        module.poll(["5"])
