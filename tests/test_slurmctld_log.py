"""slurmctld's log read for its jobs' starts and ends to the millisecond: hand-made lines worked by
hand, and the real logs of the committed mini-cluster histories (Slurm 22.05, extracted from the
recording's slurmctld.log by bench/record_history.py)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest

from djsb.cli import main
from djsb.errors import InputError
from djsb.history.replay import with_logged_times
from djsb.slurmsite.slurmctld_log import (
    lags_since_any_end,
    on_clock_share,
    parse_scheduler_log,
    pass_grid,
    pass_instants,
    reuse_lags,
)
from djsb.workloads.sacct import read_sacct
from djsb.workloads.sacct_columns import parse_sacct_time

HISTORY = Path(__file__).parent / "fixtures" / "history"
LINES = """\
[2026-11-27T18:51:41.254] _slurm_rpc_submit_batch_job: JobId=7 InitPrio=4 usec=967
[2026-11-27T18:51:41.468] sched: Allocate JobId=5 NodeList=h[3-4] #CPUs=2 Partition=batch
[2026-11-27T18:51:44.500] _job_complete: JobId=5 WEXITSTATUS 0
[2026-11-27T18:51:44.514] _job_complete: JobId=5 done
[2026-11-27T18:51:45.471] sched/backfill: _start_job: Started JobId=7 in batch on h4
[2026-11-27T18:51:46.100] sched: Allocate JobId=9_2(12) NodeList=h1 #CPUs=1 Partition=debug
[2026-11-27T18:51:47.000] _job_complete: JobId=9_2(12) done
"""


def test_starts_and_ends_to_the_millisecond() -> None:
    log = parse_scheduler_log(LINES)
    assert set(log.starts) == {5, 7, 12} and set(log.ends) == {5, 12}
    first = log.starts[5]
    assert first.scheduler == "main" and first.nodes == ("h3", "h4")
    assert log.ends[5] - first.time == pytest.approx(3.046)  # 44.514 - 41.468
    assert log.starts[7].scheduler == "backfill" and log.starts[7].nodes == ("h4",)
    assert log.ends[12] - log.starts[12].time == pytest.approx(0.9)  # an array task by its JobIDRaw
    assert log.submits == {7: parse_sacct_time("2026-11-27T18:51:41.254")}


def test_reuse_lag_is_the_room_left_idle_before_a_waiting_job_took_it() -> None:
    log = parse_scheduler_log(LINES)
    submitted = parse_sacct_time("2026-11-27T18:51:41.254")
    assert submitted is not None
    # job 7 waited 4.2 s; the last end on h4 before its start is job 5's: 45.471 - 44.514
    assert reuse_lags(log, {7: submitted}) == [pytest.approx(0.957)]
    assert reuse_lags(log, {7: submitted}, waited=5.0) == []  # it did not wait 5 s
    # from the last end anywhere: the same end here (job 12 ends after job 7 starts)
    assert lags_since_any_end(log, {7: submitted}) == [pytest.approx(0.957)]
    assert lags_since_any_end(log, {12: submitted}) == [pytest.approx(46.100 - 44.514)]


def test_on_clock_share_worked_by_hand() -> None:
    # gaps 1.0 (on), 2.01 (on within 0.05), 0.39 (off); 0.05 apart is one instant, not a gap
    assert on_clock_share([0.6, 1.6, 3.61, 4.0, 4.05]) == pytest.approx(2 / 3)
    assert on_clock_share([0.6, 1.6, 3.61, 4.0], tolerance=0.001) == pytest.approx(1 / 3)


def test_a_start_line_without_a_time_stamp_is_refused_naming_it() -> None:
    with pytest.raises(InputError, match=r"^ctld.log:2: log: no \["):
        parse_scheduler_log("noise\nsched: Allocate JobId=5 NodeList=h1 #CPUs=1\n", "ctld.log")


@pytest.mark.parametrize("record", ["site-1", "site-2"])
def test_the_recorded_logs_match_their_dumps(record: str) -> None:
    log = parse_scheduler_log(gzip.decompress((HISTORY / record / "slurmctld.log.gz").read_bytes()).decode())
    lines = gzip.decompress((HISTORY / record / "dump.txt.gz").read_bytes()).decode().splitlines()
    rows = [dict(zip(lines[0].split("|"), line.split("|"), strict=True)) for line in lines[1:]]
    assert set(log.starts) == set(log.ends) == set(log.submits) == {int(row["JobIDRaw"]) for row in rows}
    assert len(rows) == 2000
    for row in rows:
        job = int(row["JobIDRaw"])
        start, end = parse_sacct_time(row["Start"]), parse_sacct_time(row["End"])
        assert start is not None and end is not None
        # sacct's Start and End are the log's instants cut to the whole second (the log line is
        # written up to a millisecond after the instant is taken)
        assert start <= log.starts[job].time <= start + 1.001 and end <= log.ends[job] <= end + 1.001
        # the submission's line is written when its RPC ends (its usec=, under 10 ms here)
        submit = parse_sacct_time(row["Submit"])
        assert submit is not None and submit <= log.submits[job] <= submit + 1.01
        assert row["Flags"].startswith("SchedMain" if log.starts[job].scheduler == "main" else "SchedBackfill")
    # Slurm's main scheduler started its jobs on a whole-second clock (instants at random: 0.1)
    main = [start.time for start in log.starts.values() if start.scheduler == "main"]
    assert on_clock_share(main) > 0.85


def test_pass_grid_puts_back_the_passes_that_started_nothing() -> None:
    # starts at 0.2 and 0.21 (one pass), then 3.2 (three periods later: two empty passes between),
    # then 3.8 (less than half a period later: no pass between)
    assert pass_grid([0.21, 3.2, 0.2, 3.8], 1.0) == pytest.approx([0.2, 1.2, 2.2, 3.2, 3.8])
    # a drifting clock: 5.3 s after the last pass on a 1-s clock is 5 periods of 1.06 s
    assert pass_grid([10.0, 15.3], 1.0) == pytest.approx([10.0, 11.06, 12.12, 13.18, 14.24, 15.3])


def test_a_log_too_long_to_rebuild_its_passes_is_refused_before_they_are_made() -> None:
    log = parse_scheduler_log(LINES)
    first = log.starts[5].time
    # the main scheduler's starts at 41.468 and 46.100: 4.632 s, five turns of 0.9264 s
    passes = pass_instants(log, 5.0, (first, first + 10.0))
    assert [at - first for at in passes["main"]] == pytest.approx([0.0, 0.9264, 1.8528, 2.7792, 3.7056, 4.632],
                                                                  abs=1e-3)
    assert passes["backfill"] == [log.starts[7].time]  # its one start (45.471)
    # over the first second alone the backfill logged no start: no clock to rebuild, so it is left
    # out (its passes run as configured) rather than given no instant at all
    assert pass_instants(log, 5.0, (first, first + 1.0)) == {"main": [first]}
    with pytest.raises(InputError, match="more than 5,000,000 passes of Slurm's main scheduler"):
        pass_instants(log, 5.0, (first, first + 6e6))


SACCT = """\
JobIDRaw|User|Account|Partition|QOS|Submit|Eligible|Start|End|Elapsed|Timelimit|ReqCPUS|NNodes|State|Flags
5|u1|a1|batch|normal|2026-11-27T18:51:40|2026-11-27T18:51:40|2026-11-27T18:51:41|2026-11-27T18:51:44|00:00:03|00:01:00|2|2|COMPLETED|SchedMain
7|u1|a1|batch|normal|2026-11-27T18:51:41|2026-11-27T18:51:41|2026-11-27T18:51:45|2026-11-27T18:51:46|00:00:01|00:01:00|1|1|COMPLETED|SchedBackfill
8|u1|a1|batch|normal|2026-11-27T18:51:42|2026-11-27T18:51:42|2026-11-27T18:51:42|2026-11-27T18:51:43|00:00:01|00:01:00|1|1|COMPLETED|SchedMain
"""


def test_the_logged_times_replace_the_whole_seconds_of_the_jobs_the_log_has(tmp_path: Path) -> None:
    dump = tmp_path / "dump.txt"
    dump.write_text(SACCT)
    lines = LINES + ("[2026-11-27T18:51:40.700] _slurm_rpc_submit_batch_job: JobId=5 InitPrio=4 usec=9\n"
                     "[2026-11-27T18:51:46.471] _job_complete: JobId=7 done\n"
                     "[2026-11-27T18:51:42.300] sched: Allocate JobId=8 NodeList=h1 #CPUs=1 Partition=batch\n"
                     "[2026-11-27T18:51:43.350] _job_complete: JobId=8 done\n")
    workload = read_sacct(dump)
    timed = with_logged_times(workload, parse_scheduler_log(lines))
    origin = workload.time_origin  # sacct's first Submit, 18:51:40
    jobs = {job.job_id: job for job in timed.jobs}
    # job 5: submitted at .700, started at 41.468, ended at 44.514 (the log's); job 7: submitted at
    # 41.254, started by backfill at 45.471, ended at 46.471; job 8's submission is not in the log
    # (as an array's later tasks'): sacct's second, its start (42.300) and end (43.350) the log's
    assert jobs[5].submit == pytest.approx(0.7) and jobs[5].run_time == pytest.approx(3.046)
    assert timed.recorded[5].start == pytest.approx(1.468) and timed.recorded[5].eligible == pytest.approx(0.7)
    assert jobs[7].submit == pytest.approx(1.254) and jobs[7].run_time == pytest.approx(1.0)
    assert timed.recorded[7].start == pytest.approx(5.471)
    assert jobs[8].submit == 2.0 and jobs[8].run_time == pytest.approx(1.05)
    assert timed.recorded[8].start == pytest.approx(2.3)
    assert timed.time_origin == origin
    assert [job.job_id for job in timed.jobs] == [5, 7, 8]


def test_djsb_history_takes_the_log_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = HISTORY / "site-2"
    if not record.is_dir():
        pytest.skip(f"{record} is not here")
    base = ["history", str(record / "dump.txt.gz"), "--slurm-conf", str(record / "slurm.conf"),
            "--associations", str(record / "assoc.txt"), "--qos", str(record / "qos.txt"), "-q"]
    assert main([*base, "--slurmctld-log", str(record / "slurmctld.log.gz"), "-o", str(tmp_path / "log")]) == 0
    notes = (tmp_path / "log" / "notes.txt").read_text()
    assert "slurmctld's log: the starts and run times of 2000 of 2000 jobs to the millisecond (2000 of them " \
        "with their submission)" in notes
    errors = pd.read_csv(tmp_path / "log" / "errors.csv")
    assert (errors["recorded_start"] % 1 != 0).mean() > 0.9  # the log's milliseconds, not sacct's seconds
    capsys.readouterr()
    assert main([*base, "--slurmctld-log", str(tmp_path / "missing.log"), "-o", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--slurmctld-log" in err[0] and "missing.log" in err[0], err
    bad = tmp_path / "bad.log"
    bad.write_text("noise\nsched: Allocate JobId=5 NodeList=h1 #CPUs=1\n")
    assert main([*base, "--slurmctld-log", str(bad), "-o", str(tmp_path / "y")]) == 2
    assert capsys.readouterr().err.strip() == \
        f"djsb: error: {bad}:2: --slurmctld-log: no [YYYY-MM-DDThh:mm:ss.mmm] time stamp"
    other = tmp_path / "other.log"  # another controller's log: its one start is no job of the dump
    other.write_text("[2026-11-27T18:51:41.000] sched: Allocate JobId=5 NodeList=h1 #CPUs=1 Partition=batch\n")
    assert main([*base, "--slurmctld-log", str(other), "-o", str(tmp_path / "z")]) == 2
    assert capsys.readouterr().err.strip() == \
        f"djsb: error: --slurmctld-log: {other} logs the start of no job of the dump (1 start(s) in all): " \
        "give the log of the controller that ran the dump's jobs, over its span"
    assert not (tmp_path / "z" / "jobs.csv").exists()
