"""Tables, figures and report.html of a DJSB run, computed from its files only (``djsb report RUN_DIR``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from djsb.errors import InputError
from djsb.harness.rundir import RunDirectory
from djsb.report.cells import annotate_summary, failed_cells, outage_cells, read_cells, without_cells
from djsb.report.html import write_run_html
from djsb.report.summary import run_notes, sample_table, summary_table, summary_warnings

__all__ = ["summary_warnings", "write_report"]


def write_report(run_dir: Path, *, plots: bool = True, include_outages: bool = False) -> pd.DataFrame:
    """Rewrite samples.csv, summary.csv, the figures and report.html of ``run_dir`` from its jobs.csv.

    Failed cells are left out, and so are cells that overlapped a scheduler outage unless
    ``include_outages``; summary.csv names them, with each failure's reason (djsb.report.cells)."""
    jobs_csv = run_dir / "jobs.csv"
    if not jobs_csv.is_file():
        raise InputError(f"no jobs.csv in {run_dir}: nothing to report", key="RUN_DIR")
    jobs = pd.read_csv(jobs_csv, dtype={"job_id": str, "scenario": str}, keep_default_na=False,
                       na_values={column: [""] for column in ("start", "wait", "exec", "response", "slowdown",
                                                              "iterations")})
    cells = read_cells(run_dir / "cells.csv")
    jobs = without_cells(jobs, failed_cells(cells) | (set() if include_outages else outage_cells(cells)))
    samples = sample_table(jobs)
    samples.to_csv(run_dir / "samples.csv", index=False)
    summary = annotate_summary(summary_table(samples, run_notes(jobs, RunDirectory(run_dir).meta())), cells,
                               include_outages)
    summary.to_csv(run_dir / "summary.csv", index=False)
    if plots and not summary.empty:
        from djsb.report.plots import plot_summary  # matplotlib costs 0.3 s to import: only when drawing

        plot_summary(summary, run_dir / "figures", title=run_dir.name, samples=samples)
    write_run_html(run_dir, summary, cells, include_outages)
    return summary

