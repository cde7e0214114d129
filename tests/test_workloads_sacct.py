"""sacct --parsable2 parsing on canned output in sacct's documented format.

Format (sacct(1), Slurm 22.05): ``-P, --parsable2``: "Output will be '|' delimited without a '|' at the
end"; a header line of field names; times ``YYYY-MM-DDTHH:MM:SS`` (End: "Termination time of the job. The
output is of the format YYYY-MM-DDTHH:MM:SS"), ``Unknown`` when not set; Elapsed and Timelimit
``[DD-[HH:]]MM:SS``, Timelimit ``UNLIMITED`` / ``Partition_Limit``; State ``CANCELLED by <uid>`` when the
canceller is known; job steps ``<id>.batch``, ``<id>.extern``, ``<id>.<n>``; array tasks
``<array id>_<task>``. Expected values are worked by hand in the comments.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from djsb.errors import TraceError
from djsb.workloads.job import TraceJob
from djsb.workloads.sacct import parse_sacct_parsable2, read_sacct
from djsb.workloads.sacct_columns import memory_mb, parse_memory, parse_timelimit, started_by

FIELDS = "JobID|JobName|Partition|Account|User|Submit|Start|End|Elapsed|Timelimit|AllocCPUS|NCPUS|ReqMem|State|ExitCode|NNodes|QOS"  # noqa: E501

SACCT = "\n".join([
    FIELDS,
    # line 2: completed, 8 CPUs, 16G total memory
    "1001|sim|batch|proj1|alice|2023-06-01T10:00:00|2023-06-01T10:00:05|2023-06-01T11:02:08|01:02:03|02:00:00|8|8|16G|COMPLETED|0:0|1|normal",  # noqa: E501
    # lines 3-5: its steps (empty user/partition/QOS/Timelimit/ReqMem, as sacct prints steps)
    "1001.batch|batch||proj1||2023-06-01T10:00:05|2023-06-01T10:00:05|2023-06-01T11:02:08|01:02:03||8|8||COMPLETED|0:0|1|",  # noqa: E501
    "1001.extern|extern||proj1||2023-06-01T10:00:05|2023-06-01T10:00:05|2023-06-01T11:02:08|01:02:03||8|8||COMPLETED|0:0|1|",  # noqa: E501
    "1001.0|stream||proj1||2023-06-01T10:00:06|2023-06-01T10:00:06|2023-06-01T11:02:07|01:02:01||8|8||COMPLETED|0:0|1|",  # noqa: E501
    # line 6: cancelled by root while pending: Start never set
    "1002|ana|batch|proj2|bob|2023-06-01T10:05:30|Unknown|2023-06-01T10:06:00|00:00:00|00:30:00|0|0|4000M|CANCELLED by 0|0:0|1|normal",  # noqa: E501
    # line 7: timed out after its 1 h limit, 2 nodes, 64 CPUs, 128G
    "1003|big|batch|proj1|alice|2023-06-01T10:10:00|2023-06-01T10:20:00|2023-06-01T11:20:13|01:00:13|01:00:00|64|64|128G|TIMEOUT|0:0|2|normal",  # noqa: E501
    # line 8: node failure after 30 min; old-style per-CPU memory "2Gc"; 1-day limit
    "1004|sim|batch|proj2|carol|2023-06-01T10:15:00|2023-06-01T10:16:00|2023-06-01T10:46:00|00:30:00|1-00:00:00|16|16|2Gc|NODE_FAIL|0:0|1|high",  # noqa: E501
    # line 9: pending, Start and End Unknown, unlimited
    "1005|wait|batch|proj2|bob|2023-06-01T10:20:00|Unknown|Unknown|00:00:00|UNLIMITED|0|2|1000M|PENDING|0:0|1|normal",  # noqa: E501
    # line 10: still running, partition limit
    "1006|run|debug|proj1|alice|2023-06-01T10:25:00|2023-06-01T10:25:10|Unknown|00:10:00|Partition_Limit|4|4|8G|RUNNING|0:0|1|normal",  # noqa: E501
    # line 11: cancelled by uid 1000 after running 90 s; limit "30:00" (MM:SS) = 1800 s
    "1007|short|debug|proj1|dave|2023-06-01T10:30:00|2023-06-01T10:30:01|2023-06-01T10:31:31|00:01:30|30:00|1|1|500M|CANCELLED by 1000|0:15|1|normal",  # noqa: E501
    # line 12: failed after 2 s; ReqMem 0 (no request); 2.5 days limit
    "1008|fail|batch|proj2|carol|2023-06-01T10:35:00|2023-06-01T10:35:00|2023-06-01T10:35:02|00:00:02|2-12:00:00|2|2|0|FAILED|1:0|1|normal",  # noqa: E501
    # line 13: an array task (no JobIDRaw column): gets a fresh id above every job number here (1011)
    "1009_3|arr|batch|proj1|alice|2023-06-01T10:40:00|2023-06-01T10:41:00|2023-06-01T10:43:00|00:02:00|00:10:00|1|1|1G|COMPLETED|0:0|1|normal",  # noqa: E501
    # line 14: cancelled while pending in the way slurmctld records it: Start = End, nothing ran
    "1010|ana|batch|proj2|bob|2023-06-01T10:45:00|2023-06-01T10:50:00|2023-06-01T10:50:00|00:00:00|00:30:00|0|0|4000M|CANCELLED by 1001|0:0|1|normal",  # noqa: E501
    # line 15: an array job still pending (the whole range on one line)
    "1011_[1-4%2]|arr|batch|proj1|alice|2023-06-01T10:55:00|Unknown|Unknown|00:00:00|00:10:00|0|1|1G|PENDING|0:0|1|normal",  # noqa: E501
    "",
])


def test_jobs_and_skips_of_a_realistic_dump() -> None:
    w = parse_sacct_parsable2(SACCT, source="dump.txt")
    assert w.source == "dump.txt"
    assert [(s.line, s.reason) for s in w.skipped] == [
        (3, "job_step"), (4, "job_step"), (5, "job_step"),
        (6, "cancelled_before_start"), (9, "not_started"), (10, "not_finished"),
        (14, "cancelled_before_start"), (15, "not_started")]
    # Submit relative to the earliest accepted submit, 2023-06-01T10:00:00; JobName is the name.
    assert w.jobs == [
        # 01:02:03 = 3723 s; limit 2 h = 7200 s; 16G = 16384 MB
        TraceJob(1001, 0.0, 3723.0, 8, 7200.0, 16384.0, 1, "alice", "proj1", "batch", "normal", name="sim"),
        # submitted 10 min later = 600 s; ran 01:00:13 = 3613 s > its 3600 s limit; 128G = 131072 MB
        TraceJob(1003, 600.0, 3613.0, 64, 3600.0, 131072.0, 2, "alice", "proj1", "batch", "normal", name="big"),
        # 900 s; 30 min; 1 day = 86400 s; 2 GB per CPU x 16 CPUs = 32768 MB
        TraceJob(1004, 900.0, 1800.0, 16, 86400.0, 32768.0, 1, "carol", "proj2", "batch", "high", name="sim"),
        # 1800 s; 90 s; "30:00" = 1800 s; 500 MB
        TraceJob(1007, 1800.0, 90.0, 1, 1800.0, 500.0, 1, "dave", "proj1", "debug", "normal", name="short"),
        # 2100 s; 2 s; 2-12:00:00 = 216000 s; ReqMem 0 -> None
        TraceJob(1008, 2100.0, 2.0, 2, 216000.0, None, 1, "carol", "proj2", "batch", "normal", name="fail"),
        # 2400 s; 120 s; 600 s; 1G = 1024 MB; fresh id 1012 (largest job number in the dump: 1011); task 3
        # of array 1009 (its JobID 1009_3)
        TraceJob(1012, 2400.0, 120.0, 1, 600.0, 1024.0, 1, "alice", "proj1", "batch", "normal", name="arr",
                 array_task=(1009, 3)),
    ]
    assert w.extra[1003] == {"State": "TIMEOUT"}
    assert w.extra[1007] == {"State": "CANCELLED by 1000"}
    assert w.extra[1012] == {"State": "COMPLETED", "JobID": "1009_3"}
    # 2023-06-01T10:00:00 as a Unix time (read as UTC): 1685613600
    assert w.time_origin == 1685613600.0
    assert w.skip_summary() == {"job_step": 3, "cancelled_before_start": 2, "not_started": 2,
                                "not_finished": 1}
    assert w.header["Fields"] == FIELDS


def test_any_order_and_subset_of_fields() -> None:
    text = ("State|Elapsed|Submit|JobIDRaw|JobID|NCPUS|Timelimit\n"
            "COMPLETED|00:00:10|2024-01-01T00:00:30|77|70_7|4|UNLIMITED\n"
            "COMPLETED|5-00:00:00|2024-01-01T00:00:00|71|71|2|\n")
    w = parse_sacct_parsable2(text)
    # JobIDRaw wins over the array JobID (which says it is task 7 of array 70); no User/Account
    # columns -> "unknown"; no Start column: a COMPLETED job has started.
    assert w.jobs == [
        TraceJob(71, 0.0, 432000.0, 2, None, None, None, "unknown", "unknown", None, None),
        TraceJob(77, 30.0, 10.0, 4, None, None, None, "unknown", "unknown", None, None, array_task=(70, 7)),
    ]
    assert w.extra[77] == {"State": "COMPLETED", "JobID": "70_7"}


def test_parsable_with_trailing_bar_and_lowercase_header() -> None:
    text = ("jobid|submit|start|end|alloccpus|\n"
            "5|2024-01-01T00:00:00|2024-01-01T00:01:00|2024-01-01T00:03:30|3|\n")
    (job,) = parse_sacct_parsable2(text).jobs
    # No Elapsed: End - Start = 150 s
    assert (job.job_id, job.submit, job.run_time, job.cpus) == (5, 0.0, 150.0, 3)


def test_none_as_unknown_time_and_uid_as_user() -> None:
    text = ("JobID|UID|Submit|Start|End|Elapsed|AllocCPUS|State\n"
            "9|1001|2024-01-01T00:00:00|None|None|00:00:00|0|PENDING\n"
            "10|1002|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:00:09|00:00:09|1|COMPLETED\n")
    w = parse_sacct_parsable2(text)
    assert [(s.line, s.reason) for s in w.skipped] == [(2, "not_started")]
    assert w.jobs[0].user == "u1002"


def test_malformed_lines_skipped_or_fatal() -> None:
    good = "JobID|Submit|Elapsed|AllocCPUS\n" + "".join(
        f"{i}|2024-01-01T00:00:{i:02d}|00:00:05|1\n" for i in range(1, 11))
    w = parse_sacct_parsable2(good + "11|2024-01-01T00:00:11|00:00:05\n12|yesterday|00:00:05|1\n")
    assert [(s.line, s.reason) for s in w.skipped] == [(12, "malformed_field_count"),
                                                      (13, "malformed_value")]
    assert len(w.jobs) == 10
    with pytest.raises(TraceError) as err:
        parse_sacct_parsable2("JobID|Submit|Elapsed|AllocCPUS\n1|x|y|z\n2|x|y|z\n", source="bad.txt")
    assert (err.value.source, err.value.line) == ("bad.txt", 2)


def test_missing_header_or_columns_raise() -> None:
    with pytest.raises(TraceError, match="JobID") as err:
        parse_sacct_parsable2("1001|sim|batch|COMPLETED\n", source="noheader.txt")
    assert err.value.line == 1 and err.value.source == "noheader.txt"
    with pytest.raises(TraceError, match="empty"):
        parse_sacct_parsable2("\n\n")
    with pytest.raises(TraceError, match="Submit"):
        parse_sacct_parsable2("JobID|Elapsed|AllocCPUS\n1|00:01:00|1\n")
    with pytest.raises(TraceError, match="CPU"):
        parse_sacct_parsable2("JobID|Submit|Elapsed\n1|2024-01-01T00:00:00|00:01:00\n")


def test_duplicates_keep_the_first() -> None:
    text = ("JobID|Submit|Elapsed|AllocCPUS|State\n"
            "4|2024-01-01T00:00:00|00:01:00|1|REQUEUED\n"
            "4|2024-01-01T00:05:00|00:02:00|1|COMPLETED\n")
    w = parse_sacct_parsable2(text)
    # No End column: REQUEUED counts as not finished; the COMPLETED record is the job.
    assert [(s.line, s.reason) for s in w.skipped] == [(2, "not_finished")]
    assert w.jobs[0].run_time == 120.0
    text2 = text.replace("REQUEUED", "COMPLETED")
    w2 = parse_sacct_parsable2(text2)
    assert [(s.line, s.reason) for s in w2.skipped] == [(3, "duplicate_job_id")]


def test_read_sacct_file_plain_and_gzip(tmp_path: Path) -> None:
    plain = tmp_path / "sacct.txt"
    plain.write_text(SACCT)
    packed = tmp_path / "sacct.txt.gz"
    packed.write_bytes(gzip.compress(SACCT.encode()))
    assert read_sacct(plain).jobs == read_sacct(packed).jobs == parse_sacct_parsable2(SACCT).jobs
    with pytest.raises(TraceError):
        read_sacct(tmp_path / "missing.txt")


def test_timelimits() -> None:
    assert parse_timelimit("UNLIMITED") is None
    assert parse_timelimit("Partition_Limit") is None
    assert parse_timelimit("") is None
    assert parse_timelimit("7-00:00:00") == 604800.0
    with pytest.raises(ValueError):
        parse_timelimit("soon")


def test_reqmem_units() -> None:
    def parse_reqmem(text: str, cpus: int, nodes: int) -> float | None:
        return memory_mb(parse_memory(text), cpus, nodes)

    assert parse_reqmem("4000M", 4, 1) == 4000.0
    assert parse_reqmem("250G", 4, 1) == 250 * 1024.0
    assert parse_reqmem("1.50Gn", 4, 2) == 1.5 * 1024 * 2
    assert parse_reqmem("512Mc", 4, 2) == 2048.0
    assert parse_reqmem("2T", 1, 1) == 2 * 1024.0**2
    assert parse_reqmem("0", 1, 1) is None
    assert parse_reqmem("", 1, 1) is None
    with pytest.raises(ValueError):
        parse_reqmem("lots", 1, 1)


REAL_DUMP = Path(__file__).parent / "fixtures" / "sacct" / "minicluster-22.05-allocations.txt"
"""Slurm 22.05.8's own ``sacct -a -X -P`` output (tests/fixtures/sacct/README.md)."""


def test_a_real_dump_keeps_what_slurm_recorded_of_each_start() -> None:
    workload = read_sacct(REAL_DUMP)
    # 83 jobs; job 30 and job 35 were cancelled at once (Start = End, 0 s, CANCELLED by 0)
    assert len(workload.jobs) == 81
    assert workload.skip_summary() == {"cancelled_before_start": 2}
    assert set(workload.recorded) == {job.job_id for job in workload.jobs}
    # the origin is job 1's submit, 2026-11-27T10:36:28 (read as UTC)
    assert workload.time_origin == 1795775788.0
    first = workload.recorded[1]
    assert (first.start, first.eligible, first.started_by, first.state, first.node_list) == \
        (0.0, 0.0, "main", "COMPLETED", "n2")
    assert first.priority == 4294901759
    # job 7: submitted 10:43:16 (408 s), started 10:43:17 (409 s) on n[1-2] by the backfill scheduler
    backfilled = workload.recorded[7]
    assert (backfilled.start, backfilled.started_by, backfilled.node_list) == (409.0, "backfill", "n[1-2]")
    # array task 68_3 (JobIDRaw 72): submitted 11:05:28 (1740 s), held by its throttle until 11:05:41
    task = workload.recorded[72]
    assert next(job for job in workload.jobs if job.job_id == 72).submit == 1740.0
    assert (task.eligible, task.start, task.reason) == (1753.0, 1753.0, "JobArrayTaskLimit")
    assert workload.extra[72]["JobID"] == "68_3"
    # job 25: a launch that failed (Start = End, no node, FAILED): no pass is named in its Flags
    failed = workload.recorded[25]
    assert (failed.started_by, failed.state, failed.node_list) == (None, "FAILED", "None assigned")


@pytest.mark.parametrize(("flags", "expected"), [
    ("SchedMain,StartRecieved", "main"), ("SchedBackfill,StartRecieved", "backfill"),
    ("StartRecieved,SchedSubmit", "submit"), ("StartRecieved", None), ("", None)])
def test_the_pass_that_started_a_job(flags: str, expected: str | None) -> None:
    assert started_by(flags) == expected


def test_no_start_column_records_no_outcome() -> None:
    text = "JobIDRaw|Submit|Elapsed|AllocCPUS|State\n5|2023-06-01T10:00:00|00:01:00|2|COMPLETED\n"
    workload = parse_sacct_parsable2(text)
    assert [job.job_id for job in workload.jobs] == [5]
    assert workload.recorded == {}


def test_the_reservation_a_job_ran_in() -> None:
    # the Reservation column, else the SubmitLine's last --reservation; neither: none
    text = ("JobID|Submit|Elapsed|NCPUS|Reservation|SubmitLine\n"
            "1|2024-01-01T00:00:00|10|1|proj|sbatch --reservation=other job.sh\n"
            "2|2024-01-01T00:00:00|10|1||sbatch --reservation other --reservation=proj job.sh\n"
            "3|2024-01-01T00:00:00|10|1||sbatch job.sh\n")
    assert [job.reservation for job in parse_sacct_parsable2(text).jobs] == ["proj", "proj", None]


def test_a_job_asking_exclusive_nodes() -> None:
    # the SubmitLine's plain --exclusive; =user shares the nodes with the user's jobs: not exclusive
    text = ("JobID|Submit|Elapsed|NCPUS|SubmitLine\n"
            "1|2024-01-01T00:00:00|10|4|sbatch --exclusive job.sh\n"
            "2|2024-01-01T00:00:00|10|4|sbatch --exclusive=user job.sh\n")
    assert [job.exclusive for job in parse_sacct_parsable2(text).jobs] == [True, False]
