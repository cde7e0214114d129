"""The Slurm module's commands and its handling of Slurm's answers, through a scripted transport.

Expected sbatch options are worked by hand from the request and the documented defaults
(time_factor 3, time_margin 120 s, memory_margin 64 MiB); Slurm's answers are lines in the format
the real squeue/sacct print (see test_slurm_parsers.py for the real captures).
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from support import GIB, MIB, Answer, ScriptedTransport, fail, ok, sequence, sim_request

from djsb.errors import ConfigError, JobModuleError, SubmitRejected
from djsb.jobs import JobState
from djsb.transport import CommandResult, CommandTimeout
from job_modules.slurm import SlurmJobModule

FIXTURES = Path(__file__).parent / "fixtures" / "slurm"


def sbatch_options(command: str) -> dict[str, str]:
    """--key=value options of an sbatch command line (flags map to ''); the script is its last word."""
    args = shlex.split(command)
    assert args[0] == "sbatch" and not args[-1].startswith("--")
    return dict(arg[2:].partition("=")[::2] for arg in args[1:-1])


def module(rules: list[tuple[str, Answer]], sleeps: list[float] | None = None, /,
           **options: object) -> tuple[SlurmJobModule, ScriptedTransport]:
    transport = ScriptedTransport(rules)
    sink = sleeps if sleeps is not None else []
    return SlurmJobModule(options, transport, sleep=sink.append), transport


def test_submit_maps_the_application_options() -> None:
    slurm, _ = module([], partition="shared", account="proj", qos="debug", sbatch_options=["--exclusive=user"])
    opts = sbatch_options(slurm.get_submit_command(sim_request()))
    assert opts["parsable"] == "" and opts["job-name"] == "exec-s0-sim0"
    # a benchmark job that Slurm started twice (requeued after a node failure) measured something else
    assert opts["no-requeue"] == ""
    assert opts["output"] == "/runs/a b/sim.out" and opts["error"] == "/runs/a b/sim.err"
    assert opts["ntasks"] == "2" and opts["cpus-per-task"] == "2"
    # 256 MiB per task + 64 MiB margin, over 2 CPUs per task
    assert opts["mem-per-cpu"] == "160M"
    # 30 s * 3 + 120 s = 210 s, in whole minutes rounded up
    assert opts["time"] == "4"
    assert opts["partition"] == "shared" and opts["account"] == "proj" and opts["qos"] == "debug"
    assert opts["exclusive"] == "user"
    assert "nodelist" not in opts and "oversubscribe" not in opts
    # the script sbatch gets is the one submit() keeps beside the job's output (sim.out -> sim.sh)
    assert shlex.split(slurm.get_submit_command(sim_request()))[-1] == "/runs/a b/sim.sh"


def test_batch_script_text() -> None:
    """srun starts the tasks with OMP_NUM_THREADS and the request's environment, every argument
    quoted once for the script's shell; each task's report (its own file: %t is the task number)
    goes to the job's stdout at the end, and the script exits with srun's status."""
    slurm, _ = module([], srun_options=["--mpi=pmix"])
    assert slurm.batch_script(sim_request()) == (
        "#!/bin/sh\n"
        "# Batch script of a DJSB job, written by job_modules/slurm (its name is this file's).\n"
        "# srun starts the tasks; each writes its stdout to a file of its own (%t: the task number), appended\n"
        "# to the job's stdout at the end so the tasks' one-line reports are never interleaved.\n"
        "env OMP_NUM_THREADS=2 'DJSB_X=1,2 3' srun --ntasks=2 --cpus-per-task=2 '--output=/runs/a b/sim.out.task%t'"
        " --mpi=pmix -- /apps/djsb-stream --control '/runs/a b/ctl'\n"
        "status=$?\n"
        "cat '/runs/a b/sim.out.task'[0-9]*\n"
        "rm -f '/runs/a b/sim.out.task'[0-9]*\n"
        "exit $status\n")


def test_submit_keeps_the_script_beside_the_output() -> None:
    slurm, transport = module([("sbatch", ok("17\n"))])
    request = sim_request(argv=("/apps/x", "$(reboot)\nreboot", "it's"))
    assert slurm.submit(request) == "17"
    assert transport.files == {"/runs/a b/sim.sh": slurm.batch_script(request)}
    # hostile arguments stay literal words: single-quoted, a quote inside closed and escaped
    assert "-- /apps/x '$(reboot)\nreboot' 'it'\"'\"'s'\n" in transport.files["/runs/a b/sim.sh"]
    assert shlex.split(transport.commands[0])[-1] == "/runs/a b/sim.sh"


def test_submit_node_names_oversubscribe_and_per_node_memory() -> None:
    slurm, _ = module([], memory="per_node", tasks_per_node={"simulation": 4}, srun_options=["--mpi=pmix"])
    request = sim_request(total_tasks=256, cpus_per_task=4, total_memory=256 * 4 * GIB,
                          node_host_names=("n1", "n2"), oversubscribe=True, stdout_path="/r/100%.out")
    opts = sbatch_options(slurm.get_submit_command(request))
    # 4 tasks per node x (4096 MiB + 64 MiB)
    assert opts["mem"] == "16640M" and "mem-per-cpu" not in opts
    assert opts["ntasks-per-node"] == "4"
    assert opts["nodelist"] == "n1,n2" and opts["nodes"] == "2"
    assert opts["oversubscribe"] == ""
    assert opts["output"] == "/r/100%%.out"  # Slurm reads %% as a literal %
    assert "--mpi=pmix" in slurm.batch_script(request)


@pytest.mark.parametrize(("tasks", "per_node", "expected"), [
    (1, None, "n3"),          # one task needs one of the simulation's nodes
    (2, None, "n3,n4"),
    (8, None, "n3,n4"),       # never more nodes than the simulation has
    (4, 2, "n3,n4"),          # 2 tasks per node: 2 nodes
])
def test_colocated_analytics_runs_on_the_simulations_nodes(tasks: int, per_node: int | None,
                                                           expected: str) -> None:
    squeue = ok("41|RUNNING|1700000000|1700000001|1700000301|n[3-4]|0|0|None\n")
    options: dict[str, object] = {"tasks_per_node": {"analytics": per_node}} if per_node else {}
    slurm, transport = module([("squeue", squeue)], **options)
    request = sim_request(name="ana", app="analytics", total_tasks=tasks, cpus_per_task=1,
                          total_memory=tasks * 50 * MIB, exec_time=10, colocate_with="41", oversubscribe=True)
    opts = sbatch_options(slurm.get_submit_command(request))
    assert opts["nodelist"] == expected and opts["nodes"] == str(len(expected.split(",")))
    assert opts["oversubscribe"] == ""
    # the simulation's nodes came from one squeue; a second analytics reuses them
    slurm.get_submit_command(request)
    assert len(transport.commands) == 1


def test_colocation_with_a_pending_simulation_is_an_error() -> None:
    slurm, _ = module([("squeue", ok("41|PENDING|1700000000|1700000300|1700000600||0|0|Resources\n"))])
    with pytest.raises(JobModuleError, match="no hosts"):
        slurm.get_submit_command(sim_request(colocate_with="41"))


def test_colocation_never_targets_an_ending_simulation() -> None:
    # the real COMPLETING line of tests/fixtures/slurm/squeue_completing.txt (`capture.sh completing`):
    # the job has ended, its nodes are being cleaned; an analytics placed there is refused before
    # sbatch, as a refusal the driver corrects
    line = (FIXTURES / "squeue_completing.txt").read_text().splitlines()[0]
    job_id = line.split("|")[0]
    slurm, transport = module([("squeue", ok(line + "\n"))], accounting=False)
    assert slurm.poll([job_id])[job_id].state.finished
    with pytest.raises(SubmitRejected, match="has ended"):
        slurm.get_submit_command(sim_request(colocate_with=job_id))
    assert not any(command.startswith("sbatch") for command in transport.commands)


def test_an_ending_job_takes_its_final_state_from_sacct() -> None:
    # the real COMPLETING line (capture.sh completing): squeue cannot say yet how the job ended (a job
    # whose node died shows the same until SlurmdTimeout); sacct already has its final record
    line = (FIXTURES / "squeue_completing.txt").read_text().splitlines()[0]
    job_id = line.split("|")[0]
    sacct = ok(f"{job_id}|NODE_FAIL|1795612692|1795612693|1795612721|n[3-4]|0:0|NodeDown\n")
    slurm, transport = module([("squeue", ok(line + "\n")), ("sacct", sacct)], accounting=True)
    status = slurm.poll([job_id])[job_id]
    assert (status.state, status.final, status.reason, status.end) == (JobState.NODE_FAIL, True, "NodeDown",
                                                                        1795612721.0)
    assert [shlex.split(command)[3] for command in transport.commands] == ["squeue", "sacct"]
    # without accounting the guess stays provisional, for the driver to wait on
    slurm, _ = module([("squeue", ok(line + "\n"))], accounting=False)
    status = slurm.poll([job_id])[job_id]
    assert (status.state, status.final) == (JobState.COMPLETED, False)


def test_a_refused_sbatch_is_one_line() -> None:
    # Slurm's refusal as the live cluster printed it (tests/test_slurm_outage.py); two lines in
    refusal = ("sbatch: error: Batch job submission failed: Requested node configuration is not available\n"
               "sbatch: error: (see the log)\n")
    slurm, _ = module([("sbatch", fail(refusal))])
    with pytest.raises(SubmitRejected) as caught:
        slurm.submit(sim_request())
    assert str(caught.value) == ("slurm: submission refused: sbatch: error: Batch job submission failed: "
                                 "Requested node configuration is not available / sbatch: error: (see the log)")


def test_one_squeue_per_poll_with_unix_times() -> None:
    lines = ("7|RUNNING|1700000000|1700000002|1700000302|n1|0|0|None\n"
             "8|SUSPENDED|1700000001|1700000003|1700000303|n[1-2]|0|0|None\n"
             "9|COMPLETED|1700000001|1700000004|1700000010|n2|0|0|None\n"
             "99|RUNNING|1700000001|1700000004|1700000010|n2|0|0|None\n")
    slurm, transport = module([("squeue", ok(lines))], accounting=False)
    statuses = slurm.poll(["7", "8", "9"])
    assert len(transport.commands) == 1
    args = shlex.split(transport.commands[0])
    assert args[:3] == ["env", "TZ=UTC", "SLURM_TIME_FORMAT=%s"]
    assert "--states=all" in args and "--jobs=7,8,9" in args
    assert set(statuses) == {"7", "8", "9"}  # a job not asked about is left out
    assert statuses["8"].state is JobState.SUSPENDED and statuses["8"].nodes == ("n1", "n2")
    done = statuses["9"]
    assert done.end is not None and done.start is not None and done.end - done.start == 6


def test_purged_jobs_come_from_sacct_from_their_submission() -> None:
    squeue = ok("7|RUNNING|1700000000|1700000002|1700000302|n1|0|0|None\n")
    sacct = ok("8|TIMEOUT|1700003600|1700003601|1700003700|n2|0:15|None\n")
    slurm, transport = module([("scontrol show config", ok("AccountingStorageType = accounting_storage/slurmdbd\n")),
                               ("squeue", squeue), ("sacct", sacct)])
    slurm._submitted_at["8"] = 1700003600.0  # what submit() noted
    statuses = slurm.poll(["7", "8"])
    assert statuses["8"].state is JobState.TIMEOUT and statuses["8"].exit_code == 128 + 15
    sacct_args = shlex.split(next(c for c in transport.commands if "sacct" in c))
    # --starttime: a minute before the submission, in UTC (1700003540 = 2023-11-14T23:12:20Z)
    assert "--starttime=2023-11-14T23:12:20" in sacct_args and "TZ=UTC" in sacct_args
    assert "--jobs=8" in sacct_args


def test_purged_jobs_without_accounting() -> None:
    answers = sequence(ok("5|COMPLETED|1700000000|1700000001|1700000009|n1|0|0|None\n"),
                       fail("slurm_load_jobs error: Invalid job id specified\n"))
    slurm, _ = module([("scontrol show config", ok("AccountingStorageType = accounting_storage/none\n")),
                       ("squeue", answers)])
    assert slurm.poll(["5"])["5"].state is JobState.COMPLETED
    # MinJobAge later: slurmctld forgot job 5 (and never knew 6); no accounting to ask
    later = slurm.poll(["5", "6"])
    assert later["5"].state is JobState.COMPLETED and later["5"].end == 1700000009
    assert later["6"].state is JobState.UNKNOWN and "no accounting" in later["6"].reason


def test_transient_errors_are_retried_with_backoff() -> None:
    down = fail("slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n")
    answers = sequence(down, lambda c: CommandTimeout("hung"), down, ok("7|RUNNING|1|2|3|n1|0|0|None\n"))
    sleeps: list[float] = []
    slurm, transport = module([("squeue", answers)], sleeps, accounting=False)
    assert slurm.poll(["7"])["7"].state is JobState.RUNNING
    assert sleeps == [0.5, 1.0, 2.0]
    assert len(transport.commands) == 4


def test_retries_end_with_a_clear_error() -> None:
    slurm, _ = module([("squeue", fail("Socket timed out on send/recv operation"))], retry_for=0,
                      accounting=False)
    with pytest.raises(JobModuleError, match="slurm: scheduler unreachable for 0 s"):
        slurm.poll(["7"])


def test_a_real_error_is_not_retried() -> None:
    sleeps: list[float] = []
    slurm, transport = module([("sbatch", fail("sbatch: error: invalid partition specified: nope"))], sleeps)
    with pytest.raises(JobModuleError, match="invalid partition"):
        slurm.submit(sim_request())
    assert sleeps == [] and len(transport.commands) == 1


def reply_lost(submitted: list[str]) -> Answer:
    """An sbatch the controller took but whose reply was lost (a timeout): each call appends the
    submission's comment (its token) to ``submitted``, for the lookup that finds the job by it."""
    def sbatch(command: str) -> CommandResult | Exception:
        submitted.append(sbatch_options(command)["comment"])
        return CommandTimeout("the controller took the job but the reply was lost")
    return sbatch


def test_a_lost_sbatch_reply_does_not_submit_twice() -> None:
    submitted: list[str] = []
    sbatch = reply_lost(submitted)

    def squeue(command: str) -> CommandResult:
        return CommandResult(command, 0, f"12|RUNNING|other\n13|PENDING|{submitted[0]}\n", "")

    slurm, transport = module([("sbatch", sbatch), ("squeue", squeue)])
    assert slurm.submit(sim_request()) == "13"
    assert len(submitted) == 1


def test_a_lookup_that_cannot_answer_holds_the_submit_back() -> None:
    """While the lookup of the lost submission gets no answer (the link still down: a timeout, then
    a transient error) sbatch is not run again; the third lookup finds the job."""
    submitted: list[str] = []
    sbatch = reply_lost(submitted)

    def found(command: str) -> CommandResult:
        return CommandResult(command, 0, f"13|PENDING|{submitted[0]}\n", "")

    squeue = sequence(lambda command: CommandTimeout("still no link"),
                      fail("squeue: error: Unable to contact slurm controller (connect failure)"), found)
    sleeps: list[float] = []
    slurm, transport = module([("sbatch", sbatch), ("squeue", squeue)], sleeps)
    assert slurm.submit(sim_request()) == "13"
    assert len(submitted) == 1 and sum(c.startswith("squeue") for c in transport.commands) == 3
    assert sleeps == [0.5, 1.0, 2.0]  # one back-off after the lost reply, one after each unanswered lookup


def test_the_submission_token_tags_the_job_and_finds_it_while_it_lives() -> None:
    request = sim_request()
    running, ended = sim_request(), sim_request()
    assert len({request.token, running.token, ended.token}) == 3  # a fresh token per request
    listing = (f"31|SUSPENDED|djsb-{running.token}\n32|COMPLETED|djsb-{ended.token}\n33|RUNNING|(null)\n"
               f"34|RUNNING|note djsb-{request.token}\n")
    slurm, transport = module([("sbatch", ok("30\n")), ("squeue", ok(listing))])
    slurm.submit(request)
    assert sbatch_options(transport.commands[0])["comment"] == f"djsb-{request.token}"
    # only 31: 32 ended, 33 has no token, 34's comment is not a token, and request's own job 30 is not listed
    assert slurm.find_by_token([request.token, running.token, ended.token]) == {running.token: "31"}


def test_a_sbatch_that_never_reached_the_controller_is_retried() -> None:
    answers = sequence(fail("sbatch: error: Batch job submission failed: Unable to contact slurm controller"),
                       ok("21\n"))
    slurm, transport = module([("sbatch", answers), ("squeue", ok("12|RUNNING|other\n"))])
    assert slurm.submit(sim_request()) == "21"
    assert sum("sbatch" in c for c in transport.commands) == 2


def test_suspend_resume_cancel_commands() -> None:
    slurm, transport = module([("scontrol", ok()), ("scancel", fail("scancel: error: Invalid job id 5"))])
    slurm.suspend("5")
    slurm.resume("5")
    slurm.cancel("5")  # a job already gone is not an error
    assert transport.commands == ["scontrol suspend 5", "scontrol resume 5", "scancel 5"]


def test_suspend_without_privileges_says_why() -> None:
    slurm, _ = module([("scontrol", fail("Access/permission denied for job 5"))])
    with pytest.raises(JobModuleError, match="root, the SlurmUser"):
        slurm.suspend("5")


@pytest.mark.parametrize(("options", "key"), [
    ({"partitoin": "shared"}, "job_module.options.partitoin"),
    ({"memory": "lots"}, "job_module.options.memory"),
    ({"memory": "per_node"}, "job_module.options.memory"),
    ({"time_factor": "3"}, "job_module.options.time_factor"),
    ({"accounting": "yes"}, "job_module.options.accounting"),
    ({"sbatch_options": {"a": 1}}, "job_module.options.sbatch_options"),
])
def test_bad_options(options: dict, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        module([], **options)
    assert info.value.key == key
