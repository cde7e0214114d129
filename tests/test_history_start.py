"""``djsb history --start``: a history replayed from an instant within it.

Small dumps written here in sacct --parsable2 form; every expected start, wait and usage is worked
by hand from the dump's times (comments), or, for the decayed usage, by a numerical integral that
shares no code with the model's closed form.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from test_cli_errors import one_line_failure

from djsb.cli import main
from djsb.history.start import split_at_start, usage_before
from djsb.workloads.job import RecordedOutcome, TraceJob

HEADER = "JobIDRaw|User|Account|Partition|QOS|Submit|Eligible|Start|End|Elapsed|Timelimit|AllocCPUS|NNodes|" \
         "NodeList|State|Flags"
DAY = "2026-01-05T"
CONF = """\
SchedulerType=sched/builtin
NodeName=n[1-2] CPUs=4
PartitionName=p Nodes=n[1-2] Default=YES MaxTime=INFINITE
"""


def dump_line(job: int, user: str, partition: str, submit: str, start: str, end: str, elapsed: str,
              cpus: int, nodes: int, node_list: str) -> str:
    """One job of a dump, eligible at its submission, limited to 2 hours."""
    return (f"{job}|{user}|acct|{partition}|normal|{DAY}{submit}|{DAY}{submit}|{DAY}{start}|{DAY}{end}|"
            f"{elapsed}|02:00:00|{cpus}|{nodes}|{node_list}|COMPLETED|SchedMain")


# Two nodes of 4 CPUs. Job 2 ran 09:00-09:30 and job 1 10:00-11:00 on n2 (submitted at 08:00: it waited
# for something the dump does not say); job 3 (8 CPUs: both nodes) was submitted at 10:20. Job 4 ran in
# partition gpu (not in slurm.conf) across 10:30, job 5 too, after it.
PLACED = "\n".join([
    HEADER,
    dump_line(1, "alice", "p", "08:00:00", "10:00:00", "11:00:00", "01:00:00", 4, 1, "n2"),
    dump_line(2, "alice", "p", "09:00:00", "09:00:00", "09:30:00", "00:30:00", 2, 1, "n1"),
    dump_line(3, "bob", "p", "10:20:00", "10:40:00", "10:50:00", "00:10:00", 8, 2, "n[1-2]"),
    dump_line(4, "carol", "gpu", "09:50:00", "10:00:00", "10:45:00", "00:45:00", 1, 1, "g1"),
    dump_line(5, "carol", "gpu", "10:40:00", "10:41:00", "10:42:00", "00:01:00", 1, 1, "g1"),
]) + "\n"


def site(tmp_path: Path, dump: str, conf: str = CONF) -> list[str]:
    (tmp_path / "dump.txt").write_text(dump)
    (tmp_path / "slurm.conf").write_text(conf)
    return ["history", str(tmp_path / "dump.txt"), "--slurm-conf", str(tmp_path / "slurm.conf"),
            "--window", "600", "--step", "60"]


def test_jobs_running_at_the_start_hold_the_nodes_the_record_gave_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "history"
    assert main([*site(tmp_path, PLACED), "--start", f"{DAY}10:30:00", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    errors = pd.read_csv(out / "errors.csv").set_index("job_id")
    # scored: the jobs submitted after the start or pending at it (3, 5), not those running at it (1, 4)
    # nor those ended before it (2)
    assert sorted(errors.index) == [3, 5]
    # job 1 holds n2 until its recorded end, 11:00: job 3 needs both nodes and starts then; its wait
    # counts from its submission at 10:20 (2400 s), the record's from 10:20 to 10:40 (1200 s)
    assert errors.loc[3, "simulated_wait"] == 2400.0
    assert errors.loc[3, "recorded_wait"] == 1200.0 and errors.loc[3, "start_error"] == 1200.0
    jobs = pd.read_csv(out / "jobs.csv").set_index("job_id")
    assert jobs.loc[1, "nodes"] == "n2"  # the record's node, where first fit would have taken n1
    assert jobs.loc[1, "end"] - jobs.loc[3, "start"] == 0.0
    rejected = pd.read_csv(out / "rejected.csv").set_index("job_id")["reason"].to_dict()
    assert rejected == {4: "running at the replay's start: unknown partition 'gpu'",
                        5: "unknown partition 'gpu'"}
    assert "note: 2 job(s) of the record are not replayed (rejected.csv)" in err
    assert "note: 1 job(s) pending at the replay's start are queued at it" in err
    assert "fair share" not in err  # priority/basic: no usage to speak of


def test_without_a_start_the_history_replays_from_its_first_submission(tmp_path: Path) -> None:
    # from 08:00 on an empty cluster job 1 runs 08:00-09:00, so job 3 starts at its submission (within
    # the second slurmctld's background loop takes to run the pass a submission asks for)
    out = tmp_path / "history"
    assert main([*site(tmp_path, PLACED), "-q", "-o", str(out)]) == 0
    errors = pd.read_csv(out / "errors.csv").set_index("job_id")
    assert sorted(errors.index) == [1, 2, 3, 4, 5]
    assert errors.loc[3, "simulated_wait"] <= 1.0 and errors.loc[1, "simulated_wait"] <= 1.0


def outcome(start: float) -> RecordedOutcome:
    return RecordedOutcome(start)


def test_the_usage_before_the_start_is_each_run_decayed_to_it() -> None:
    # alice: 2 CPUs over [-5400, -3600] s before the start and 4 CPUs over [-1800, 0] of a job still
    # running; bob: a job that starts after it, no usage
    jobs = [TraceJob(1, -9000.0, 1800.0, 2, user="alice", account="a"),
            TraceJob(2, -1800.0, 3600.0, 4, user="alice", account="a"),
            TraceJob(3, -100.0, 60.0, 8, user="bob", account="a")]
    recorded = {1: outcome(-5400.0), 2: outcome(-1800.0), 3: outcome(10.0)}
    split = split_at_start(jobs, recorded, 0.0)
    assert ([j.job_id for j in split.ended], [j.job_id for j in split.running],
            [j.job_id for j in split.replayed]) == ([1], [2], [3])
    half_life = 3600.0

    def integral(cpus: int, t1: float, t2: float, steps: int = 20000) -> float:
        width = (t2 - t1) / steps
        return cpus * sum(0.5 ** (-(t1 + (k + 0.5) * width) / half_life) * width for k in range(steps))

    expected = integral(2, -5400.0, -3600.0) + integral(4, -1800.0, 0.0)
    usage = usage_before(jobs, recorded, 0.0, half_life)
    assert usage == {("alice", "a"): pytest.approx(expected, rel=1e-7)}
    # no decay: plain CPU-seconds, 2 * 1800 + 4 * 1800
    assert usage_before(jobs, recorded, 0.0, 0.0) == {("alice", "a"): 10800.0}


def one_node_multifactor(*settings: str) -> str:
    """slurm.conf: one node of 4 CPUs under sched/builtin and priority/multifactor with ``settings``."""
    return "\n".join(["SchedulerType=sched/builtin", "PriorityType=priority/multifactor", *settings,
                      "NodeName=n1 CPUs=4", "PartitionName=p Nodes=n1 Default=YES MaxTime=INFINITE"]) + "\n"


FAIR_CONF = one_node_multifactor("PriorityWeightFairShare=1000", "PriorityDecayHalfLife=1-00:00:00")
# One node. Alice ran it 09:00-10:00; carol holds it 10:00-11:00; alice (job 12, 10:10) and bob (job 13,
# 10:20) wait for it. Replayed from 10:30 both are queued then, at the same instant.
CAROL = dump_line(11, "carol", "p", "10:00:00", "10:00:00", "11:00:00", "01:00:00", 4, 1, "n1")
FAIR = "\n".join([
    HEADER,
    dump_line(10, "alice", "p", "09:00:00", "09:00:00", "10:00:00", "01:00:00", 4, 1, "n1"),
    CAROL,
    dump_line(12, "alice", "p", "10:10:00", "11:10:00", "11:20:00", "00:10:00", 4, 1, "n1"),
    dump_line(13, "bob", "p", "10:20:00", "11:00:00", "11:10:00", "00:10:00", 4, 1, "n1"),
]) + "\n"


def first_at_eleven(out: Path) -> int:
    """The job the replay started at 11:00 (its wait from its submission: 50 or 40 minutes)."""
    errors = pd.read_csv(out / "errors.csv").set_index("job_id")
    starts = {job: errors.loc[job, "simulated_wait"] for job in (12, 13)}
    assert sorted(starts.values()) in ([2400.0, 3600.0], [3000.0, 3000.0])
    return 12 if starts[12] == 3000.0 else 13


def test_the_fair_share_usage_at_the_start_orders_the_queue(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*site(tmp_path, FAIR, FAIR_CONF), "--start", f"{DAY}10:30:00"]
    # accrued from the dump: alice used the node for an hour, bob never: bob's job goes first
    assert main([*argv, "-o", str(tmp_path / "accrued")]) == 0
    assert first_at_eleven(tmp_path / "accrued") == 13
    assert ("note: fair share: the usage at the replay's start is accrued from 1 job(s) ended before it "
            "and 1 running at it") in capsys.readouterr().err
    # given: bob has used far more than alice, so alice's goes first
    (tmp_path / "sshare.txt").write_text("acct|alice|10\nacct|bob|1000000\nacct|carol|0\n")
    assert main([*argv, "--usage", str(tmp_path / "sshare.txt"), "-o", str(tmp_path / "given")]) == 0
    assert first_at_eleven(tmp_path / "given") == 12


@pytest.mark.parametrize(("option", "message"), [
    (["--start", "yesterday"], "--start: not a sacct timestamp (YYYY-MM-DDTHH:MM:SS): 'yesterday'"),
    # the dump's span: job 1's submission at 08:00 to its end at 11:00
    (["--start", f"{DAY}12:00:00"], f"--start: {DAY}12:00:00 is outside the dump's span, {DAY}08:00:00 to "
                                    f"{DAY}11:00:00"),
    (["--usage", "USAGE"], "USAGE:1: --usage: 'lots' is not a number"),
])
def test_a_bad_start_or_usage_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          option: list[str], message: str) -> None:
    (tmp_path / "sshare.txt").write_text("acct|alice|lots\n")
    argv = site(tmp_path, PLACED)
    option = [word.replace("USAGE", str(tmp_path / "sshare.txt")) for word in option]
    message = message.replace("DUMP", str(tmp_path / "dump.txt")).replace("USAGE", str(tmp_path / "sshare.txt"))
    out = tmp_path / "history"
    one_line_failure(capsys, [*argv, *option, "-o", str(out)], 2, message, out)


def test_the_report_page_shows_both_timelines_and_the_error(tmp_path: Path) -> None:
    out = tmp_path / "history"
    assert main([*site(tmp_path, PLACED), "-q", "-o", str(out)]) == 0
    page = (out / "report.html").read_text()
    for figure in ("timelines.png", "waits.png", "error.png"):
        assert (out / figure).stat().st_size > 0 and f'src="{figure}"' in page
    assert "unknown partition &#39;gpu&#39;" in page  # the jobs not replayed, by reason


AGE_CONF = one_node_multifactor("PriorityWeightAge=1000", "PriorityMaxAge=01:00:00")
# One node, held by carol 10:00-11:00. Bob's job 13 has waited since 10:10, alice's job 12 since
# 10:20; replayed from 10:30 both are queued at that instant, so only their recorded eligibility
# tells them apart.
AGE = "\n".join([HEADER, CAROL, dump_line(12, "alice", "p", "10:20:00", "11:10:00", "11:20:00", "00:10:00", 4, 1, "n1"),
                 dump_line(13, "bob", "p", "10:10:00", "11:00:00", "11:10:00", "00:10:00", 4, 1, "n1")]) + "\n"


def test_a_job_pending_at_the_start_ages_from_its_recorded_eligibility(tmp_path: Path) -> None:
    # at 11:00 job 13 has aged 50 minutes (1000 x 50/60 = 833) and job 12 40 (666): 13 goes first,
    # as in the record, and each waits 50 minutes. Aged from the start (30 minutes each), the tie
    # would go to the lower id, 12 (waits 40 and 60 minutes).
    out = tmp_path / "history"
    assert main([*site(tmp_path, AGE, AGE_CONF), "--start", f"{DAY}10:30:00", "-o", str(out)]) == 0
    errors = pd.read_csv(out / "errors.csv").set_index("job_id")
    assert errors.loc[13, "simulated_wait"] == 3000.0 and errors.loc[12, "simulated_wait"] == 3000.0
    jobs = pd.read_csv(out / "jobs.csv").set_index("job_id")
    assert jobs.loc[13, "eligible"] < jobs.loc[12, "eligible"]
