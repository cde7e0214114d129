"""Append-only CSV files written row by row: a run's jobs.csv and ledger.csv, a sweep's array ledger.

Each row is appended and flushed as soon as it is known (``durable``: fsync'd too, so it survives a
machine crash), so whatever moment the writer dies at, the file holds every row written before.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from djsb.errors import naming


def append_row(path: Path, columns: Iterable[str], row: Mapping[str, Any], durable: bool = True) -> None:
    """Append one CSV row (header first in a new file; in an existing one, under its own header, so
    a file written with fewer columns stays one table); ``durable`` also survives a machine crash."""
    new = not path.exists() or path.stat().st_size == 0
    if not new:
        columns = csv_header(path) or list(columns)
    with naming(path), path.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns), extrasaction="ignore")
        if new:
            writer.writeheader()
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
        handle.flush()
        if durable:
            os.fsync(handle.fileno())


def csv_header(path: Path) -> list[str]:
    """The column names of an existing CSV file (none if it is empty)."""
    with path.open(newline="") as handle:
        return next(csv.reader(handle), [])


def rewrite_rows(path: Path, columns: Iterable[str], rows: Iterable[Mapping[str, Any]]) -> None:
    """Replace ``path`` by ``rows`` at once (a new file renamed over it: never half written)."""
    tmp = path.with_name(path.name + ".tmp")
    with naming(path):
        with tmp.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(columns), extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
        tmp.replace(path)


def read_rows(path: Path) -> list[dict[str, str]]:
    """Every row of a CSV file with a header (none if the file does not exist)."""
    if not path.exists():
        return []
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))
