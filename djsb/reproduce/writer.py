"""reproduce.csv and report.html of a reproduction: the paper's values and ours side by side, and
our figures beside the numbers of the paper's figures they redraw."""

from __future__ import annotations

import csv
from pathlib import Path

from djsb.report.html import render
from djsb.reproduce.checks import COLUMNS, Reproduction


def write_csv(reproduction: Reproduction, path: Path) -> Path:
    """reproduce.csv: one row per item (columns :data:`~djsb.reproduce.checks.COLUMNS`)."""
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(reproduction.rows())
    return path


def write_outputs(reproduction: Reproduction, out_dir: Path) -> Path:
    """Write ``out_dir/reproduce.csv`` and ``out_dir/report.html``; return the CSV's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = write_csv(reproduction, out_dir / "reproduce.csv")
    rows = reproduction.rows()
    counts = {verdict: sum(1 for row in rows if row["agrees"] == verdict)
              for verdict in ("yes", "explained", "no")}
    figures = [figure for figure in reproduction.figures if (out_dir / figure.path).is_file()]
    render("reproduce.html.j2", out_dir / "report.html",
           title=f"Paper {reproduction.paper}: {reproduction.title}", setup=reproduction.setup, rows=rows,
           counts=counts, figures=figures)
    return csv_path
