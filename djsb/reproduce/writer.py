"""reproduce.csv, setup.csv and report.html of a reproduction: the paper's claims, our measurements
and their computed verdicts side by side, the inputs apart, and our figures beside the numbers of the
paper's figures they redraw."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from djsb.report.html import render
from djsb.reproduce.checks import COLUMNS, SETUP_COLUMNS, Reproduction


def write_table(rows: list[dict[str, str]], columns: Sequence[str], path: Path) -> Path:
    """One CSV of ``rows`` with ``columns`` in order."""
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return path


def write_outputs(reproduction: Reproduction, out_dir: Path) -> Path:
    """Write ``out_dir/reproduce.csv`` (claims, :data:`~djsb.reproduce.checks.COLUMNS`),
    ``out_dir/setup.csv`` (inputs, not counted) and ``out_dir/report.html``; return reproduce.csv."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = reproduction.csv_rows()
    setup = reproduction.setup_csv_rows()
    csv_path = write_table(rows, COLUMNS, out_dir / "reproduce.csv")
    write_table(setup, SETUP_COLUMNS, out_dir / "setup.csv")
    figures = [figure for figure in reproduction.figures if (out_dir / figure.path).is_file()]
    render("reproduce.html.j2", out_dir / "report.html",
           title=f"Paper {reproduction.paper}: {reproduction.title}", setup=reproduction.setup, rows=rows,
           setup_rows=setup, counts=reproduction.tallies(), figures=figures)
    return csv_path
