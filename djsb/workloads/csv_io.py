"""Jobs as a pandas DataFrame and as CSV (one row per job, the TraceJob fields as columns).

``depends_on`` is a tuple column in the frame and a space-separated list of ids in the CSV (empty for
none); missing values (None) are empty cells. :func:`read_jobs_csv` reads such a file back into the same
jobs.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable
from dataclasses import fields
from typing import TYPE_CHECKING

from djsb.errors import TraceError
from djsb.workloads._textio import atomic_output, open_trace_text
from djsb.workloads.job import TraceJob

if TYPE_CHECKING:
    import pandas

COLUMNS = tuple(f.name for f in fields(TraceJob) if f.name not in ("user_estimate", "estimated", "gpus"))
"""The TraceJob fields but ``user_estimate`` and ``estimated``, which only a replay with another
estimate sets, and ``gpus``, a request this format does not carry (a job read from it asks none)."""


def jobs_to_frame(jobs: Iterable[TraceJob]) -> pandas.DataFrame:
    """A DataFrame with one row per job and the TraceJob fields as columns, in the jobs' order.

    Numeric columns: ``job_id``, ``cpus`` int64; ``submit``, ``run_time``, ``requested_time``, ``memory_mb``
    float64 (NaN for None); ``nodes`` nullable Int64; text columns object (None when missing).
    """
    import pandas as pd

    job_list = list(jobs)

    def column(name: str, dtype: str | type) -> pandas.Series:
        return pd.Series([getattr(j, name) for j in job_list], dtype=dtype)

    nan = float("nan")
    data = {
        "job_id": column("job_id", "int64"),
        "submit": column("submit", "float64"),
        "run_time": column("run_time", "float64"),
        "cpus": column("cpus", "int64"),
        "requested_time": pd.Series([nan if j.requested_time is None else j.requested_time
                                     for j in job_list], dtype="float64"),
        "memory_mb": pd.Series([nan if j.memory_mb is None else j.memory_mb for j in job_list],
                               dtype="float64"),
        "nodes": pd.Series([pd.NA if j.nodes is None else j.nodes for j in job_list], dtype="Int64"),
    }
    for name in ("user", "account", "partition", "qos"):
        data[name] = column(name, object)
    data["depends_on"] = pd.Series([tuple(j.depends_on) for j in job_list], dtype=object)
    return pd.DataFrame(data, columns=list(COLUMNS))


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, tuple):
        return " ".join(str(v) for v in value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def write_jobs_csv(jobs: Iterable[TraceJob], path: str | os.PathLike) -> None:
    """Write jobs as CSV with a header row of the TraceJob field names (exact numbers; atomic replace)."""
    with atomic_output(path) as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(COLUMNS)
        for j in jobs:
            writer.writerow([_cell(getattr(j, name)) for name in COLUMNS])


def read_jobs_csv(path: str | os.PathLike) -> list[TraceJob]:
    """Read a CSV written by :func:`write_jobs_csv` back into TraceJobs (raises TraceError with the line)."""
    source = os.fspath(path)
    jobs = []
    with open_trace_text(source) as stream:
        reader = csv.reader(stream)
        head = next(reader, None)
        if head is None or tuple(head) != COLUMNS:
            raise TraceError(f"expected the header {','.join(COLUMNS)}", source=source, line=1)
        for row in reader:
            if not row:
                continue
            try:
                c = dict(zip(COLUMNS, row, strict=True))
                jobs.append(TraceJob(
                    int(c["job_id"]), float(c["submit"]), float(c["run_time"]), int(c["cpus"]),
                    float(c["requested_time"]) if c["requested_time"] else None,
                    float(c["memory_mb"]) if c["memory_mb"] else None,
                    int(c["nodes"]) if c["nodes"] else None,
                    c["user"], c["account"], c["partition"] or None, c["qos"] or None,
                    tuple(int(x) for x in c["depends_on"].split())))
            except ValueError as exc:
                raise TraceError(f"bad job row: {exc}", source=source, line=reader.line_num) from exc
    return jobs
