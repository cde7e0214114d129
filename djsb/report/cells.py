"""Which execution cells the summary may trust (issue 8): failed cells, and cells that overlapped a
scheduler outage.

cells.csv says for each finished cell whether it failed (and why) and whether it overlapped an
interval during which the scheduler did not answer (outages.csv). Times measured across an outage
are not to be trusted (Slurm stamps the end of a job that ended during one when the controller is
back), so such cells are left out of summary.csv unless asked for; summary.csv then says, per
(scenario, n_a), which samples failed and which overlapped an outage.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from djsb.report.summary import in_scenario_order

CellId = tuple[str, int, int]
NOTE_COLUMNS = ("failed_samples", "outage_samples")


def read_cells(path: Path) -> pd.DataFrame:
    """The execution cells of cells.csv, with status/outage/reason filled in for a run recorded
    before they existed (completed, no outage)."""
    columns = ["scenario", "n_a", "sample", "status", "outage", "reason"]
    if not path.is_file():
        return pd.DataFrame(columns=columns)
    cells = pd.read_csv(path, dtype={"scenario": str, "reason": str}, keep_default_na=False)
    cells = cells[cells["stage"] == "execution"].copy()
    for column, default in (("status", "completed"), ("outage", False), ("reason", "")):
        if column not in cells:
            cells[column] = default
    cells["outage"] = cells["outage"].astype(str) == "True"
    return cells[columns].reset_index(drop=True)


def cell_ids(cells: pd.DataFrame) -> set[CellId]:
    return set(zip(cells["scenario"].astype(str), cells["n_a"].astype(int), cells["sample"].astype(int),
                   strict=True))


def outage_cells(cells: pd.DataFrame) -> set[CellId]:
    """The cells that overlapped an outage."""
    return cell_ids(cells[cells["outage"]])


def failed_cells(cells: pd.DataFrame) -> pd.DataFrame:
    """The failed cells, with their reasons."""
    return cells[cells["status"] == "failed"]


def without_cells(jobs: pd.DataFrame, cells: set[CellId]) -> pd.DataFrame:
    """``jobs`` minus the execution jobs of ``cells``."""
    if not cells:
        return jobs
    ids = zip(jobs["scenario"].astype(str), jobs["n_a"].astype(int), jobs["sample"].astype(int), strict=True)
    keep = [stage != "execution" or cell not in cells for stage, cell in zip(jobs["stage"], ids, strict=True)]
    return jobs[keep]


def _samples_text(samples: pd.Series) -> str:
    return ",".join(str(s) for s in sorted(int(v) for v in samples))


def annotate_summary(summary: pd.DataFrame, cells: pd.DataFrame) -> pd.DataFrame:
    """``summary`` with the samples that failed and that overlapped an outage per (scenario, n_a)
    (comma-separated sample numbers as in jobs.csv), and a row with 0 samples for a (scenario, n_a)
    that has only such cells."""
    notes = pd.DataFrame({
        "scenario": cells["scenario"].astype(str), "n_a": cells["n_a"].astype(int),
        "failed": cells["sample"].where(cells["status"] == "failed"),
        "outage": cells["sample"].where(cells["outage"])})
    grouped = notes.groupby(["scenario", "n_a"], sort=False).agg(
        failed_samples=("failed", lambda s: _samples_text(s.dropna())),
        outage_samples=("outage", lambda s: _samples_text(s.dropna()))).reset_index()
    grouped = grouped[(grouped["failed_samples"] != "") | (grouped["outage_samples"] != "")]
    table = summary.merge(grouped, on=["scenario", "n_a"], how="outer") if not grouped.empty else \
        summary.assign(failed_samples="", outage_samples="")
    table["samples"] = table["samples"].fillna(0).astype(int)
    for column in NOTE_COLUMNS:
        table[column] = table[column].fillna("")
    return in_scenario_order(table)
