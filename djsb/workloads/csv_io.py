"""Jobs as a pandas DataFrame and as CSV (one row per job, the TraceJob fields as columns).

``depends_on`` is a tuple column in the frame and a space-separated list of ids in the CSV (empty for
none); missing values (None) are empty cells. A workload with GPU requests has a last column ``gpus``:
each job's request as the sbatch option that asks it (``--gpus-per-node=a100:2``, ``--gpus=4``,
``--gpus-per-task=1``, or ``--gres=gpu:2``; empty: none), followed, space-separated, by its
``--cpus-per-gpu=C`` and ``--mem-per-gpu=MM`` if it asks them; one without has no such column, as
before GPUs. Likewise, after it, a workload whose jobs ask for advance reservations has a column
``reservation``, one whose jobs have names a column ``name`` (empty: none) and one with jobs asking
``--exclusive`` a column ``exclusive`` (``1``; empty: not).
:func:`read_jobs_csv` reads such a file back into the same jobs.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable
from dataclasses import fields
from typing import TYPE_CHECKING

from djsb.errors import TraceError
from djsb.workloads._textio import atomic_output, open_trace_text
from djsb.workloads.gpus import GpuRequest
from djsb.workloads.job import TraceJob

if TYPE_CHECKING:
    import pandas

GPU_COLUMN = "gpus"
"""The column of a workload with GPU requests, the first of the :data:`OPTIONAL` ones."""
OPTIONAL = (GPU_COLUMN, "reservation", "name", "exclusive")
"""The columns only a workload that has such values has, after the others, in this order."""
COLUMNS = tuple(f.name for f in fields(TraceJob)
                if f.name not in ("user_estimate", "estimated", "array", "array_task", "requeue", *OPTIONAL))
"""The TraceJob fields but ``user_estimate`` and ``estimated``, which only a replay with another
estimate sets, ``array``, ``array_task`` and ``requeue``, which only a site's sacct dump gives, and the
:data:`OPTIONAL` ones."""


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
    job_list = list(jobs)
    optional = [name for name in OPTIONAL if any(getattr(j, name) not in (None, False) for j in job_list)]
    with atomic_output(path) as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow((*COLUMNS, *optional))
        for j in job_list:
            row = [_cell(getattr(j, name)) for name in COLUMNS]
            for name in optional:
                value = getattr(j, name)
                row.append("" if value in (None, False) else "1" if value is True
                           else " ".join(value.sbatch_options()) if name == GPU_COLUMN else value)
            writer.writerow(row)


def read_jobs_csv(path: str | os.PathLike) -> list[TraceJob]:
    """Read a CSV written by :func:`write_jobs_csv` back into TraceJobs (raises TraceError with the line)."""
    source = os.fspath(path)
    jobs = []
    with open_trace_text(source) as stream:
        reader = csv.reader(stream)
        head = next(reader, None)
        extra = tuple(head[len(COLUMNS):]) if head is not None else ()
        if head is None or tuple(head[:len(COLUMNS)]) != COLUMNS or \
                extra != tuple(name for name in OPTIONAL if name in extra):
            raise TraceError(f"expected the header {','.join(COLUMNS)}{''.join(f'[,{n}]' for n in OPTIONAL)}",
                             source=source, line=1)
        names = tuple(head)
        for row in reader:
            if not row:
                continue
            try:
                c = dict(zip(names, row, strict=True))
                jobs.append(TraceJob(
                    int(c["job_id"]), float(c["submit"]), float(c["run_time"]), int(c["cpus"]),
                    float(c["requested_time"]) if c["requested_time"] else None,
                    float(c["memory_mb"]) if c["memory_mb"] else None,
                    int(c["nodes"]) if c["nodes"] else None,
                    c["user"], c["account"], c["partition"] or None, c["qos"] or None,
                    tuple(int(x) for x in c["depends_on"].split()),
                    gpus=GpuRequest.from_text(c[GPU_COLUMN]) if c.get(GPU_COLUMN) else None,
                    reservation=c.get("reservation") or None, name=c.get("name") or None,
                    exclusive=bool(c.get("exclusive"))))
            except ValueError as exc:
                raise TraceError(f"bad job row: {exc}", source=source, line=reader.line_num) from exc
    return jobs
