"""SWF reader/writer against the five real traces (read in place, from ../shared/data/traces) and small files.

Expected values come from the raw trace lines (read here with a plain loop, independently of the reader)
and from the mapping rules documented in djsb/workloads/swf.py, worked by hand below.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import TraceFile

from djsb.errors import TraceError
from djsb.workloads.job import TraceJob
from djsb.workloads.machines import read_machines
from djsb.workloads.swf import parse_node_list, read_swf, write_swf

KTH = "KTH-SP2-1996-2.1-cln.swf.gz"
LANL = "LANL-CM5-1994-4.1-cln.swf.gz"
LLNL = "LLNL-Atlas-2006-2.1-cln.swf.gz"
NASA = "NASA-iPSC-1993-3.1-cln.swf.gz"
META = "MetaCentrum-wagap-2013.swf.gz"
META_MACHINES = "MetaCentrum-wagap-2013.swf.machines"
ALL = [KTH, LANL, LLNL, NASA, META]


def data_lines(path: Path) -> int:
    """Number of data (non-comment, non-blank) lines, counted with a plain loop."""
    count = 0
    with gzip.open(path, "rt") as fh:
        for line in fh:
            if line.strip() and not line.lstrip().startswith(";"):
                count += 1
    return count


def raw_header(path: Path, key: str) -> str:
    """The value of the first ``; key: value`` line, read directly."""
    with gzip.open(path, "rt") as fh:
        for line in fh:
            if line.startswith(";") and line[1:].strip().startswith(key + ":"):
                return line[1:].strip()[len(key) + 1:].strip()
    raise AssertionError(f"{key} not in {path.name}")


def raw_record(path: Path, job_number: int) -> tuple[int, list[str]]:
    """(1-based line number, fields) of the data line whose first field is job_number."""
    with gzip.open(path, "rt") as fh:
        for lineno, line in enumerate(fh, 1):
            fields = line.split()
            if fields and not fields[0].startswith(";") and fields[0] == str(job_number):
                return lineno, fields
    raise AssertionError(f"job {job_number} not in {path.name}")


def job_by_id(jobs: list[TraceJob], job_id: int) -> TraceJob:
    return next(j for j in jobs if j.job_id == job_id)


# ------------------------------------------------------------------------------------ real traces


@pytest.mark.parametrize("name", ALL, ids=lambda name: name.split("-")[0])
def test_every_data_line_is_a_job_or_a_skipped_record(trace: TraceFile, name: str) -> None:
    path = trace(name)
    w = read_swf(path)
    assert len(w.jobs) + len(w.skipped) == data_lines(path)
    assert all(s.reason and s.line > 0 and s.text for s in w.skipped)
    assert sum(w.skip_summary().values()) == len(w.skipped)
    keys = [(j.submit, j.job_id) for j in w.jobs]
    assert keys == sorted(keys)
    assert len({j.job_id for j in w.jobs}) == len(w.jobs)
    assert all(j.cpus > 0 and j.run_time >= 0 and j.submit >= 0 for j in w.jobs)


@pytest.mark.parametrize("name", [KTH, LANL, LLNL, NASA], ids=lambda name: name.split("-")[0])
def test_header_values_match_the_raw_header(trace: TraceFile, name: str) -> None:
    path = trace(name)
    w = read_swf(path)
    for key in ("Version", "Computer", "MaxJobs", "MaxRecords", "MaxProcs", "MaxNodes", "UnixStartTime"):
        assert w.header[key] == raw_header(path, key)
    max_procs = int(raw_header(path, "MaxProcs"))
    max_jobs = int(raw_header(path, "MaxJobs"))
    assert w.header_int("MaxProcs") == max_procs
    # What the header promises holds for the parsed jobs.
    assert max(j.cpus for j in w.jobs) <= max_procs
    assert max(j.job_id for j in w.jobs) <= max_jobs
    assert data_lines(path) <= int(raw_header(path, "MaxRecords"))


def test_header_multi_line_and_repeated_keys(trace: TraceFile) -> None:
    lanl = trace(LANL)
    w = read_swf(lanl)
    queues = w.header["Queue"].split("\n")
    assert len(queues) == int(raw_header(lanl, "MaxQueues")) == 18
    assert queues[0].split() == ["0", "interactive"] and queues[17].split() == ["17", "iway"]
    # "; Information: http://..." continues on a line that itself contains "http://": not a new key.
    assert w.header["Information"].split("\n") == ["http://www.lanl.gov/",
                                                   "http://www.cs.huji.ac.il/labs/parallel/workload/"]
    assert "http" not in w.header
    assert w.header["Note"].startswith("uses DJM for job management\nmany jobs")
    nasa = read_swf(trace(NASA))
    assert nasa.header["Note"].split("\n")[:2] == ["There is no information on wait times - the given submit",
                                                   "times are actually start times"]


def test_kth_fully_read(trace: TraceFile) -> None:
    kth = trace(KTH)
    w = read_swf(kth)
    lines = data_lines(kth)
    assert lines == int(raw_header(kth, "MaxRecords")) == 28476
    # One record has neither requested nor allocated processors (job 27313, "-1" in fields 5 and 8).
    lineno, fields = raw_record(kth, 27313)
    assert fields[4] == "-1" and fields[7] == "-1"
    assert [(s.line, s.reason) for s in w.skipped] == [(lineno, "no_processors")]
    assert len(w.jobs) == lines - 1
    # First and last jobs, from the raw lines:
    #   15   599850 192180   3477    4     -1    -1    4  53940    -1  1  12  12  -1 -1 -1 -1 -1
    _, first = raw_record(kth, 15)
    assert first == "15 599850 192180 3477 4 -1 -1 4 53940 -1 1 12 12 -1 -1 -1 -1 -1".split()
    assert w.jobs[0] == TraceJob(15, 599850.0, 3477.0, 4, 53940.0, None, None, "u12", "g12", None)
    last_line = None
    with gzip.open(kth, "rt") as fh:
        for line in fh:
            if line.strip() and not line.startswith(";"):
                last_line = line.split()
    assert last_line is not None
    last = job_by_id(w.jobs, int(last_line[0]))
    assert (last.submit, last.run_time, last.cpus) == (float(last_line[1]), float(last_line[3]),
                                                       int(last_line[7]))
    assert last.requested_time == float(last_line[8])
    assert last.user == f"u{last_line[11]}" and last.account == f"g{last_line[12]}"


def test_lanl_spot_checks(trace: TraceFile) -> None:
    lanl = trace(LANL)
    w = read_swf(lanl)
    assert w.skip_summary() == {"no_processors": 3}
    # "1 0 0 3691 128 3436 6676 -1 3600 5904 1 2 2 2 -1 -1 -1 -1": requested procs unknown -> the 128
    # allocated; memory 5904 KB/proc * 128 procs / 1024 = 738 MB; no queue, no partition.
    _, f1 = raw_record(lanl, 1)
    assert f1 == "1 0 0 3691 128 3436 6676 -1 3600 5904 1 2 2 2 -1 -1 -1 -1".split()
    assert job_by_id(w.jobs, 1) == TraceJob(1, 0.0, 3691.0, 128, 3600.0, 738.0, None, "u2", "g2", None)
    # "2 465 5 3362 32 489.00 988 32 900 1024 1 3 3 3 1 -1 -1 -1": queue 1 -> "q1";
    # memory 1024 KB/proc * 32 / 1024 = 32 MB (used memory 988 is ignored).
    _, f2 = raw_record(lanl, 2)
    assert f2 == "2 465 5 3362 32 489.00 988 32 900 1024 1 3 3 3 1 -1 -1 -1".split()
    assert job_by_id(w.jobs, 2) == TraceJob(2, 465.0, 3362.0, 32, 900.0, 32.0, None, "u3", "g3", "q1")
    # Job 90304 has -1 in both processor fields: skipped, on its own line.
    lineno, f = raw_record(lanl, 90304)
    assert f[4] == f[7] == "-1"
    assert any(s.line == lineno and s.reason == "no_processors" for s in w.skipped)


def test_lanl_reads_every_job(trace: TraceFile) -> None:
    """LANL-CM5 (cleaned) has 122,060 records (``zcat | grep -vc '^;'``); the 3 without a processor count
    are skipped (spot checks above). How fast it reads is bench/bench_read_swf.py's figure, not a test's."""
    w = read_swf(trace(LANL))
    assert len(w.jobs) == 122057


def test_llnl_cancelled_partitions_and_unknown_users(trace: TraceFile) -> None:
    llnl = trace(LLNL)
    w = read_swf(llnl)
    summary = w.skip_summary()
    # Independent count: status 5 with run time <= 0 (fields 11 and 4).
    cancelled = 0
    with gzip.open(llnl, "rt") as fh:
        for line in fh:
            f = line.split()
            if f and not f[0].startswith(";") and f[10] == "5" and float(f[3]) <= 0:
                cancelled += 1
    assert summary["cancelled_before_start"] == cancelled == 4601
    lineno, f = raw_record(llnl, 1435)  # "1435 3273240 -1 0 -1 ... 5 14 -1 184 -1 1 -1 -1"
    assert f[10] == "5" and f[3] == "0"
    assert any(s.line == lineno and s.reason == "cancelled_before_start" for s in w.skipped)
    # "1988 3704798 -1 10 8 -1 -1 8 -1 -1 1 17 -1 255 -1 2 -1 -1": partition 2, group unknown.
    _, f = raw_record(llnl, 1988)
    assert f == "1988 3704798 -1 10 8 -1 -1 8 -1 -1 1 17 -1 255 -1 2 -1 -1".split()
    assert job_by_id(w.jobs, 1988) == TraceJob(1988, 3704798.0, 10.0, 8, None, None, None, "u17",
                                               "unknown", "p2")
    # "2736 ... 1 -1 -1 8 -1 1 -1 -1": user unknown.
    assert job_by_id(w.jobs, 2736).user == "unknown"
    named = read_swf(llnl, names_from_header=True)
    assert job_by_id(named.jobs, 1988).partition == "pdebug"  # "; Partition:  2  pdebug"
    assert {j.partition for j in named.jobs} <= {"pbatch", "pdebug", "pbroke", "moody20"}


def test_nasa_uses_allocated_processors_and_keeps_zero_run_times(trace: TraceFile) -> None:
    nasa = trace(NASA)
    w = read_swf(nasa)
    assert w.skipped == []
    # "1 0 -1 1451 128 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1"
    _, f = raw_record(nasa, 1)
    assert f[7] == "-1" and f[4] == "128"
    assert w.jobs[0] == TraceJob(1, 0.0, 1451.0, 128, None, None, None, "u1", "g1", None)
    _, f = raw_record(nasa, 658)  # run time 0, status -1: a job that ended at once, kept
    assert f[3] == "0"
    assert job_by_id(w.jobs, 658).run_time == 0.0


def test_metacentrum_extended_fields(trace: TraceFile) -> None:
    meta = trace(META)
    w = read_swf(meta)
    assert w.header == {}  # the trace has no header comments
    # Submit times are Unix times there: rebased to the first submit (job 0, 1356996147 = 2013-01-01).
    _, f0 = raw_record(meta, 0)
    assert len(f0) == 21 and f0[1] == "1356996147"
    assert w.time_origin == 1356996147.0
    j0 = job_by_id(w.jobs, 0)
    # Memory 68719476736 bytes = 64 GiB = 65536 MB; 64 node-list entries all 1241 -> 1 node; queue q_1d;
    # the preceding-job placeholder (field 17 = 1) is not a dependency.
    assert f0[9] == "68719476736" and f0[19] == "q_1d" and f0[16] == "1"
    assert j0 == TraceJob(0, 0.0, 56011.0, 64, 86400.0, 65536.0, 1, "u62", "g1", "q_1d")
    assert w.extra[0] == {"node_list": f0[18], "queue": "q_1d", "resources": "1:ppn=64:x86_64:cl_zewura#excl"}
    assert parse_node_list(w.extra[0]["node_list"]) == (1241,) * 64
    _, f1 = raw_record(meta, 1)
    j1 = job_by_id(w.jobs, 1)
    assert j1.submit == float(f1[1]) - 1356996147 == 548.0
    assert j1.memory_mb == 91268055040 / 2**20 and j1.partition == "q_2w"
    assert all(j.depends_on == () for j in w.jobs)
    queues = set()
    with gzip.open(meta, "rt") as fh:
        for line in fh:
            queues.add(line.split()[19])
    assert {j.partition for j in w.jobs} == queues
    assert {"q_1d", "q_2h", "q_1w", "q_2d", "q_4h", "q_4d", "q_2w", "backfill"} <= queues
    # Two records have negative run times (-1359980917: end time unknown): skipped with their lines.
    assert w.skip_summary() == {"run_time_unknown": 2}
    for s in w.skipped:
        assert int(s.text.split()[3]) < 0
    # Node counts: jobs of 8 x ppn=8 on zegox use 8 distinct nodes.
    eight = [j for j in w.jobs if w.extra[j.job_id]["resources"] == "8:ppn=8:x86_64:cl_zegox"]
    assert eight and all(j.nodes == 8 and j.cpus == 64 for j in eight)


def test_metacentrum_machines(trace: TraceFile) -> None:
    meta_machines = trace(META_MACHINES)
    meta = trace(META)
    machines = read_machines(meta_machines)
    # README: 2 clusters, 20x80 + 48x12; memory per node in KB (529426432 KB = 517018 MB).
    assert [(m.name, m.nodes, m.cores_per_node) for m in machines] == [("zewura", 20, 80), ("zegox", 48, 12)]
    assert machines[0].memory_mb_per_node == 529426432 / 1024 == 517018.0
    assert machines[1].memory_mb_per_node == 94035968 / 1024
    assert sum(m.cores for m in machines) == 20 * 80 + 48 * 12 == 2176
    w = read_swf(meta)
    assert max(j.cpus for j in w.jobs) <= max(m.cores for m in machines)


@pytest.mark.parametrize("name", [KTH, pytest.param(LANL, marks=pytest.mark.slow), LLNL, NASA],
                         ids=lambda name: name.split("-")[0])
def test_round_trip_real_traces(trace: TraceFile, name: str, tmp_path: Path) -> None:
    path = trace(name)
    w = read_swf(path)
    out = tmp_path / "copy.swf.gz"
    write_swf(w.jobs, out, w.header)
    again = read_swf(out)
    assert again.jobs == w.jobs
    assert again.header == w.header
    assert again.skipped == []


def test_round_trip_metacentrum_with_extended_fields(trace: TraceFile, tmp_path: Path) -> None:
    meta = trace(META)
    w = read_swf(meta)
    out = tmp_path / "meta.swf"
    write_swf(w.jobs, out, w.header, extra=w.extra)
    again = read_swf(out)
    assert again.jobs == w.jobs
    assert again.extra == w.extra
    assert again.time_origin == 0.0  # already rebased


def test_limit(trace: TraceFile) -> None:
    kth = trace(KTH)
    w = read_swf(kth, limit=10)
    assert [j.job_id for j in w.jobs] == list(range(15, 25))
    assert read_swf(kth, limit=0).jobs == []


# ------------------------------------------------------------------------------------ small files

HEADER = "; Version: 2.2\n; MaxProcs: 64\n"


def write(tmp_path: Path, text: str, name: str = "t.swf") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_skip_rules_each_with_its_line_and_reason(tmp_path: Path) -> None:
    lines = [
        "1 0 5 100 4 -1 -1 4 200 1024 1 7 3 1 -1 -1 -1 -1",  # line 3: ok
        "2 10 5 100 4 -1 -1 4 200",  # 4: 9 fields
        "3 10 5 abc 4 -1 -1 4 200 -1 1 7 3 1 -1 -1 -1 -1",  # 5: not a number
        "-4 10 5 100 4 -1 -1 4 200 -1 1 7 3 1 -1 -1 -1 -1",  # 6: negative job number
        "5 10 -1 0 -1 -1 -1 4 200 -1 5 7 3 1 -1 -1 -1 -1",  # 7: cancelled, never ran
        "6 -1 5 100 4 -1 -1 4 200 -1 1 7 3 1 -1 -1 -1 -1",  # 8: submit unknown
        "7 10 5 -1 4 -1 -1 4 200 -1 1 7 3 1 -1 -1 -1 -1",  # 9: run time unknown
        "8 10 5 100 -1 -1 -1 -1 200 -1 1 7 3 1 -1 -1 -1 -1",  # 10: no processors
        "1 20 5 100 4 -1 -1 4 200 -1 1 7 3 1 -1 -1 -1 -1",  # 11: job 1 again
        "9 30 5 50 4 -1 -1 2 -1 -1 5 7 3 1 2 3 1 60",  # 12: cancelled after running: kept
        "10 40.5 0 7.25 2.0 -1 -1 2.0 100 512 0 -1 -1 -1 -1 -1 9 -1 extra1 extra2",  # 13: float counts, extras
        "11 nan 0 7 2 -1 -1 2 100 512 0 -1 -1 -1 -1 -1 -1 -1",  # 14: not a finite number
        "12 50 0 7 2.5 -1 -1 2.5 100 512 0 -1 -1 -1 -1 -1 -1 -1",  # 15: fractional processors
    ]
    p = write(tmp_path, HEADER + "\n".join(lines) + "\n")
    w = read_swf(p)
    assert [(s.line, s.reason) for s in w.skipped] == [
        (4, "malformed_field_count"), (5, "malformed_number"), (6, "invalid_job_id"),
        (7, "cancelled_before_start"), (8, "submit_unknown"), (9, "run_time_unknown"),
        (10, "no_processors"), (11, "duplicate_job_id"), (14, "malformed_number"), (15, "malformed_number")]
    assert w.skipped[0].text == lines[1]
    assert w.jobs == [
        # 1024 KB/proc * 4 procs / 1024 = 4 MB
        TraceJob(1, 0.0, 100.0, 4, 200.0, 4.0, None, "u7", "g3", None),
        # requested procs 2 (not the allocated 4); partition 3 wins over queue 2; preceding job 1
        TraceJob(9, 30.0, 50.0, 2, None, None, None, "u7", "g3", "p3", None, (1,)),
        # 512 KB/proc * 2 / 1024 = 1 MB; unknown user/group; preceding job 9
        TraceJob(10, 40.5, 7.25, 2, 100.0, 1.0, None, "unknown", "unknown", None, None, (9,)),
    ]
    assert w.extra == {10: {"extra_fields": "extra1 extra2"}}
    assert w.header == {"Version": "2.2", "MaxProcs": "64"}


def test_self_dependency_is_ignored(tmp_path: Path) -> None:
    p = write(tmp_path, "1 0 5 100 4 -1 -1 4 200 -1 1 7 3 1 -1 -1 1 -1\n")
    assert read_swf(p).jobs[0].depends_on == ()


def test_missing_file_raises_trace_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError) as err:
        read_swf(tmp_path / "nope.swf")
    assert err.value.source == str(tmp_path / "nope.swf")
    assert "nope.swf" in str(err.value) and "\n" not in str(err.value)


def test_not_swf_raises_with_first_bad_line(tmp_path: Path) -> None:
    p = write(tmp_path, "; Version: 2.2\nname,submit,run\nalpha,1,2\nbeta,3,4\n")
    with pytest.raises(TraceError) as err:
        read_swf(p)
    assert err.value.line == 2
    assert "not an SWF trace" in str(err.value)


def test_binary_file_raises(tmp_path: Path) -> None:
    p = tmp_path / "x.swf"
    p.write_bytes(bytes(range(256)) * 20)
    with pytest.raises(TraceError):
        read_swf(p)


def test_truncated_gzip_raises_with_line(tmp_path: Path) -> None:
    body = "".join(f"{i} {i} 0 10 1 -1 -1 1 20 -1 1 1 1 -1 -1 -1 -1 -1\n" for i in range(1, 20001))
    blob = gzip.compress(body.encode())
    p = tmp_path / "cut.swf.gz"
    p.write_bytes(blob[: len(blob) // 2])
    with pytest.raises(TraceError) as err:
        read_swf(p)
    assert err.value.line is not None and err.value.line > 1


def test_gzip_detected_by_content_not_name(tmp_path: Path) -> None:
    p = tmp_path / "plain-name.swf"
    p.write_bytes(gzip.compress(b"1 0 5 100 4 -1 -1 4 200 -1 1 7 3 1 -1 -1 -1 -1\n"))
    assert len(read_swf(p).jobs) == 1


def test_a_few_bad_records_are_not_fatal(tmp_path: Path) -> None:
    good = [f"{i} {i} 0 10 1 -1 -1 1 20 -1 1 1 1 -1 -1 -1 -1 -1" for i in range(1, 101)]
    good[50] = "garbage in the middle"
    w = read_swf(write(tmp_path, "\n".join(good) + "\n"))
    assert len(w.jobs) == 99 and w.skip_summary() == {"malformed_field_count": 1}
    assert w.skipped[0].line == 51


def test_epoch_submit_times_are_rebased_unless_header_has_start_time(tmp_path: Path) -> None:
    rec = ("1 1356996147 0 10 1 -1 -1 1 20 -1 1 1 1 -1 -1 -1 -1 -1\n"
           "2 1356996200 0 10 1 -1 -1 1 20 -1 1 1 1 -1 -1 -1 -1 -1\n")
    w = read_swf(write(tmp_path, rec))
    assert [j.submit for j in w.jobs] == [0.0, 53.0] and w.time_origin == 1356996147.0
    for header in ("; UnixStartTime: 0\n", "; Version: 2.2\n"):
        w2 = read_swf(write(tmp_path, header + rec, "h.swf"))
        assert w2.jobs[0].submit == 1356996147.0 and w2.time_origin == 0.0


def test_write_rejects_multiple_dependencies(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="depends on 2 jobs"):
        write_swf([TraceJob(3, 0.0, 1.0, 1, depends_on=(1, 2))], tmp_path / "x.swf")


def test_write_names_and_read_them_back(tmp_path: Path) -> None:
    jobs = [TraceJob(1, 0.0, 1.5, 2, None, 3.0, None, "alice", "physics", "gpu", None),
            TraceJob(2, 0.25, 10.0, 1, 30.0, None, None, "u7", "g2", "p1", None, (1,)),
            TraceJob(3, 1.0, 0.0, 4, None, None, None, "unknown", "a0", "q4", None)]
    out = tmp_path / "named.swf"
    write_swf(jobs, out)
    text = out.read_text()
    assert "; User: 8 alice" in text and "; Partition: 2 gpu" in text
    assert read_swf(out, names_from_header=True).jobs == jobs
    plain = read_swf(out).jobs
    assert [j.user for j in plain] == ["u8", "u7", "unknown"]
    assert [j.partition for j in plain] == ["p2", "p1", "q4"]


names = st.sampled_from(["alice", "bob", "u3", "u12", "team blue", "unknown"])
accounts = st.sampled_from(["g1", "g5", "physics", "a0", "unknown"])
partitions = st.sampled_from([None, "p1", "p4", "q2", "gpu", "q_1d", "batch"])
times = st.one_of(st.integers(0, 10**9).map(float),
                  st.floats(0, 1e9, allow_nan=False, allow_infinity=False))


@st.composite
def job_lists(draw: st.DrawFn) -> list[TraceJob]:
    n = draw(st.integers(0, 12))
    ids = draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n, unique=True))
    jobs = []
    for job_id in ids:
        cpus = draw(st.integers(1, 4096))
        kb = draw(st.one_of(st.none(), st.integers(1, 10**7)))
        dep = draw(st.one_of(st.just(()), st.sampled_from(ids).map(lambda d: (d,))))
        if dep == (job_id,):
            dep = ()
        jobs.append(TraceJob(job_id, draw(times), draw(times), cpus,
                             draw(st.one_of(st.none(), times.filter(lambda t: t > 0))),
                             None if kb is None else kb * cpus / 1024, None, draw(names), draw(accounts),
                             draw(partitions), None, dep))
    return jobs


@settings(max_examples=60, deadline=None)
@given(job_lists())
def test_write_read_round_trip_property(jobs: list[TraceJob]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "p.swf"
        write_swf(jobs, out)
        back = read_swf(out, names_from_header=True)
    assert back.skipped == []
    assert back.jobs == sorted(jobs, key=lambda j: (j.submit, j.job_id))
