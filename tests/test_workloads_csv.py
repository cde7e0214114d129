"""Jobs as a DataFrame and CSV."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from djsb.errors import TraceError
from djsb.workloads.csv_io import COLUMNS, jobs_to_frame, read_jobs_csv, write_jobs_csv
from djsb.workloads.job import TraceJob

JOBS = [
    TraceJob(1, 0.0, 10.5, 4, 60.0, 1024.0, 2, "alice", "proj", "batch", "normal", ()),
    TraceJob(2, 0.1, 0.0, 1, None, None, None, "u7", "g3", None, None, (1,)),
    TraceJob(3, 5.0, 1e-3, 8, 3600.0, None, 1, "bob", "proj", "gpu", None, (1, 2)),
]


def test_frame_columns_types_and_missing_values() -> None:
    frame = jobs_to_frame(JOBS)
    assert tuple(frame.columns) == COLUMNS == (
        "job_id", "submit", "run_time", "cpus", "requested_time", "memory_mb", "nodes", "user", "account",
        "partition", "qos", "depends_on")
    assert str(frame["job_id"].dtype) == "int64" and str(frame["cpus"].dtype) == "int64"
    assert str(frame["nodes"].dtype) == "Int64"
    assert math.isnan(frame["requested_time"][1]) and math.isnan(frame["memory_mb"][1])
    assert frame["partition"][1] is None and frame["depends_on"][2] == (1, 2)
    assert frame["run_time"].sum() == pytest.approx(10.501)
    assert len(jobs_to_frame([])) == 0


def test_csv_round_trip(tmp_path: Path) -> None:
    out = tmp_path / "jobs.csv"
    write_jobs_csv(JOBS, out)
    lines = out.read_text().splitlines()
    assert lines[0] == ",".join(COLUMNS)
    assert lines[2] == "2,0.1,0,1,,,,u7,g3,,,1"
    assert read_jobs_csv(out) == JOBS


def test_csv_read_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(TraceError) as err:
        read_jobs_csv(bad)
    assert err.value.line == 1
    bad.write_text(",".join(COLUMNS) + "\n1,0,1,x,,,,u,a,,,\n")
    with pytest.raises(TraceError) as err:
        read_jobs_csv(bad)
    assert err.value.line == 2
