"""The record loop the trace readers share, and what the SWF reader yields for each real trace.

The digests pin the jobs, skip log, header and extra fields ``read_swf`` gives for the five traces in
../shared/data/traces; they were taken with the readers as they were before the loop was shared, so
any change of what is read (not only of how) shows up here.
"""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest
from support import TraceFile

from djsb.errors import TraceError
from djsb.workloads.records import Skip, SkippedRecord, read_records
from djsb.workloads.swf import read_swf

DIGESTS = {
    "KTH-SP2-1996-2.1-cln.swf.gz": "984227f5e61c1e8eca49dc757b8577019af211047134b52d2606b283c41bf483",
    "LANL-CM5-1994-4.1-cln.swf.gz": "3cabd6f1a56fa8c06e1e7cda2f2be85ffdf5f6adb52510a1d15e7249a9b24831",
    "LLNL-Atlas-2006-2.1-cln.swf.gz": "589f4715e0bd1b487103bcb9e7b9625d137c2038efd915d2f9a50166b5bdaf14",
    "MetaCentrum-wagap-2013.swf.gz": "5219357d1e1a3eab940707ded55d2ef25a01290a00ea9e428d4cef5bc6ce7ff3",
    "NASA-iPSC-1993-3.1-cln.swf.gz": "f040025c77b048fd031d1a5e01f6bb85026884ecc44c4388ef5738ab6ce11bea",
}


@pytest.mark.parametrize("name", sorted(DIGESTS))
def test_real_traces_read_as_before(trace: TraceFile, name: str) -> None:
    w = read_swf(trace(name))
    # a reader never marks a request as replaced by another estimate, and an SWF trace asks no GPU,
    # has no job array, reservation, job name, --exclusive or --requeue; the digests predate those fields, so their (always
    # default) values are left out of the text
    assert not any(job.estimated or job.gpus is not None or job.array is not None or job.array_task is not None
                   or job.reservation is not None or job.name is not None or job.exclusive
                   or job.requeue is not None for job in w.jobs)
    text = repr((w.jobs, w.skipped, w.header, w.extra, w.time_origin)).replace(", estimated=False", "")
    text = text.replace(", gpus=None", "").replace(", array=None", "").replace(", array_task=None", "")
    text = text.replace(", reservation=None", "")
    text = text.replace(", name=None", "").replace(", exclusive=False", "").replace(", requeue=None", "")
    assert hashlib.sha256(text.encode()).hexdigest() == DIGESTS[name]


BAD = Skip("malformed_thing", malformed=True)
LEFT_OUT = Skip("left_out")


def parse_ints(lineno: int, text: str) -> int | Skip | None:
    """A toy format: one integer per line, '#' comments, negative numbers left out."""
    value = text.strip()
    if not value or value.startswith("#"):
        return None
    if not value.lstrip("-").isdigit():
        return BAD
    return LEFT_OUT if value.startswith("-") else int(value)


def test_records_skips_and_ignored_lines_with_their_numbers() -> None:
    lines = ["# head\n", "1\n", "\n", "-2\r\n", "x\n", "3"]
    records, skipped = read_records(lines, parse_ints, source="t", kind="ints")
    assert records == [1, 3]
    assert skipped == [SkippedRecord(4, "left_out", "-2"), SkippedRecord(5, "malformed_thing", "x")]


def test_start_and_limit() -> None:
    records, skipped = read_records(["-1", "5", "6", "x"], parse_ints, source="t", kind="ints", start=10,
                                    limit=1)
    assert records == [5]
    assert skipped == [SkippedRecord(10, "left_out", "-1")]


@pytest.mark.parametrize(("lines", "first_bad"), [(["x", "y", "1"], 2), (["-1", "x"], 3)])
def test_mostly_malformed_or_no_record_is_not_the_format(lines: list[str], first_bad: int) -> None:
    message = r"not toy ints: \d of \d data lines are malformed \(one int\); first here"
    with pytest.raises(TraceError, match=message) as err:
        read_records(["# c", *lines], parse_ints, source="t.txt", kind="toy ints", need=" (one int)")
    assert (err.value.source, err.value.line) == ("t.txt", first_bad)


def test_half_malformed_with_records_is_kept() -> None:
    records, skipped = read_records(["1", "x"], parse_ints, source="t", kind="ints")
    assert records == [1] and [s.reason for s in skipped] == ["malformed_thing"]


def test_corrupt_stream_names_the_line(tmp_path: Path) -> None:
    packed = gzip.compress(b"".join(b"%d\n" % i for i in range(20000)))
    path = tmp_path / "cut.gz"
    path.write_bytes(packed[:len(packed) // 2])
    with gzip.open(path, "rt") as stream, pytest.raises(TraceError, match="corrupt or truncated") as err:
        read_records(stream, parse_ints, source=str(path), kind="ints")
    assert err.value.line is not None and err.value.line > 1
