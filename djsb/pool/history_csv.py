"""Read a pool's own task history: a CSV with one row per task, HTCondor style.

Columns (a header row names them; other columns are ignored):

* ``submit`` (or HTCondor's ``QDate``): submission time in seconds (epoch or relative; the
  earliest becomes 0, midnight of the simulated day one);
* ``runtime`` (or ``CommittedTime``): for a completed task, the seconds its successful run took;
  for a removed task, the seconds from submission to its removal;
* ``outcome`` (or ``JobStatus``): ``completed`` (HTCondor status 4) for a good task, ``removed``
  (status 3) for a bad one, which never completes.

A bad row is a :class:`~djsb.errors.TraceError` naming the file, line and column.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from djsb.errors import TraceError
from djsb.pool.tasks import Task

COLUMNS = {"submit": ("submit", "QDate"), "runtime": ("runtime", "CommittedTime"),
           "outcome": ("outcome", "JobStatus")}
OUTCOMES = {"completed": True, "4": True, "removed": False, "3": False}


def _columns(header: list[str], source: str) -> dict[str, int]:
    where = {name.strip(): i for i, name in enumerate(header)}
    out = {}
    for column, names in COLUMNS.items():
        found = [where[n] for n in names if n in where]
        if not found:
            raise TraceError(f"missing column ({' or '.join(names)})", source=source, line=1, key=column)
        out[column] = found[0]
    return out


def _seconds(text: str, source: str, line: int, column: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise TraceError(f"expected seconds >= 0, got {text!r}", source=source, line=line, key=column)
    return value


def read_history(path: Path) -> list[Task]:
    """The tasks of a history CSV, in submission order, submit times relative to the first."""
    source = str(path)
    try:
        with path.open(newline="") as handle:
            rows = list(csv.reader(handle))
    except OSError as exc:
        raise TraceError(f"cannot read the file ({exc.strerror})", source=source) from exc
    if not rows:
        raise TraceError("the file is empty", source=source)
    index = _columns(rows[0], source)
    parsed = []
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) <= max(index.values()):
            raise TraceError(f"expected {max(index.values()) + 1} columns, got {len(row)}",
                             source=source, line=line)
        submit = _seconds(row[index["submit"]], source, line, "submit")
        runtime = _seconds(row[index["runtime"]], source, line, "runtime")
        outcome = row[index["outcome"]].strip().lower()
        if outcome not in OUTCOMES:
            raise TraceError(f"expected completed/removed (or 4/3), got {outcome!r}", source=source,
                             line=line, key="outcome")
        parsed.append((submit, runtime, OUTCOMES[outcome]))
    if not parsed:
        raise TraceError("no task rows", source=source)
    first = min(submit for submit, _, _ in parsed)
    parsed.sort(key=lambda row: row[0])
    return [Task(i, submit - first, runtime, math.inf) if good else Task(i, submit - first, None, runtime)
            for i, (submit, runtime, good) in enumerate(parsed)]
