"""slurmctld's log read for its jobs' starts and ends to the millisecond: hand-made lines worked by
hand, and the real logs of the committed mini-cluster histories (Slurm 22.05, extracted from the
recording's slurmctld.log by bench/record_history.py)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from djsb.calibrate.slurmctld_log import lags_since_any_end, on_clock_share, parse_scheduler_log, reuse_lags
from djsb.errors import InputError
from djsb.workloads.sacct import parse_sacct_time

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
    with pytest.raises(InputError, match=r"ctld.log, line 2: no \["):
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
