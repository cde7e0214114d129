"""Which execution cells the summary may trust: failed cells, and cells that overlapped a
scheduler outage.

cells.csv says for each finished cell whether it failed (and why) and whether it overlapped an
interval during which the scheduler did not answer (outages.csv). Times measured across an outage
are not to be trusted (Slurm stamps the end of a job that ended during one when the controller is
back), so such cells are left out of summary.csv unless asked for: execution cells, and reference
samples as long as one without an outage is left for T_ref_alone. summary.csv then says, per
(scenario, n_a), which samples failed and which overlapped an outage.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from djsb.harness.rundir import CellKey
from djsb.report.summary import in_scenario_order

NOTE_COLUMNS = ("failed_samples", "outage_samples")


def read_cells(path: Path) -> pd.DataFrame:
    """The rows of cells.csv, with status/outage/reason filled in for a run recorded before they
    existed (completed, no outage)."""
    columns = ["stage", "scenario", "n_a", "sample", "status", "outage", "reason"]
    if not path.is_file():
        return pd.DataFrame(columns=columns)
    cells = pd.read_csv(path, dtype={"scenario": str, "reason": str}, keep_default_na=False)
    for column, default in (("status", "completed"), ("outage", False), ("reason", "")):
        if column not in cells:
            cells[column] = default
    cells["outage"] = cells["outage"].astype(str) == "True"
    return cells[columns].reset_index(drop=True)


def cell_ids(table: pd.DataFrame) -> list[CellKey]:
    """The cell of each row of ``table`` (cells.csv or jobs.csv rows)."""
    columns = zip(table["stage"].astype(str), table["scenario"].astype(str), table["n_a"].astype(int),
                  table["sample"].astype(int), strict=True)
    return [CellKey(*cell) for cell in columns]


def outage_cells(cells: pd.DataFrame) -> set[CellKey]:
    """The cells to leave out for an outage: every such execution cell, and such reference
    samples unless none without one would be left."""
    marked = cells[cells["outage"] & (cells["stage"] != "calibration")]
    reference = cells[cells["stage"] == "reference"]
    if not (~reference["outage"].astype(bool)).any():
        marked = marked[marked["stage"] != "reference"]
    return set(cell_ids(marked))


def failed_cells(cells: pd.DataFrame) -> set[CellKey]:
    """The cells recorded failed: none of their numbers is a measurement of the benchmark."""
    return set(cell_ids(cells[cells["status"] == "failed"]))


def failure_reasons(cells: pd.DataFrame) -> list[tuple[CellKey, str]]:
    """Each failed cell with its one-line reason, in the order they were recorded."""
    failed = cells[cells["status"] == "failed"]
    return list(zip(cell_ids(failed), failed["reason"].astype(str), strict=True))


def without_cells(jobs: pd.DataFrame, cells: set[CellKey]) -> pd.DataFrame:
    """``jobs`` minus the jobs of ``cells``."""
    if not cells:
        return jobs
    return jobs[[cell not in cells for cell in cell_ids(jobs)]]


def _samples_text(samples: pd.Series) -> str:
    return ",".join(str(s) for s in sorted(int(v) for v in samples))


def outage_warning(samples: str, include_outages: bool) -> str:
    """What summary.csv's warnings say of a row's samples that overlapped a scheduler outage
    (``samples``: their numbers, as in ``outage_samples``) and what the summary did with them."""
    fate = "included (--include-outages)" if include_outages else \
        "left out (djsb report --include-outages keeps them)"
    return f"sample(s) {samples} overlapped a scheduler outage (see outages.csv): {fate}"


def annotate_summary(summary: pd.DataFrame, cells: pd.DataFrame,
                     include_outages: bool = False) -> pd.DataFrame:
    """``summary`` with the samples that failed and that overlapped an outage per (scenario, n_a)
    (comma-separated sample numbers as in jobs.csv), and a row with 0 samples for a (scenario, n_a)
    that has only such cells; its warnings say why each such sample is left out (or, outages with
    ``include_outages``, kept)."""
    cells = cells[cells["stage"] == "execution"]
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
    for column in (*NOTE_COLUMNS, "warnings"):
        if column in table:
            table[column] = table[column].fillna("")
    failures: dict[tuple[str, int], list[str]] = {}
    for (_, scenario, n_a, sample), reason in failure_reasons(cells):
        failures.setdefault((scenario, n_a), []).append(f"sample {sample} failed and is left out: {reason}")
    table["warnings"] = [
        "; ".join(filter(None, [text, *failures.get((str(scenario), int(n_a)), []),
                                outage_warning(outage, include_outages) if outage else ""]))
        for text, scenario, n_a, outage in zip(table["warnings"], table["scenario"], table["n_a"],
                                               table["outage_samples"], strict=True)]
    return in_scenario_order(table)


def left_out(row: pd.Series, include_outages: bool) -> str:
    """What a summary row lost (or kept) to failed cells and outages, for the report's table: e.g.
    ``failed: sample 2; outage: sample 1 (left out)``; empty when nothing."""
    parts = []
    if row.get("failed_samples", ""):
        parts.append(f"failed: sample {row['failed_samples']}")
    if row.get("outage_samples", ""):
        fate = "kept, --include-outages" if include_outages else "left out"
        parts.append(f"outage: sample {row['outage_samples']} ({fate})")
    return "; ".join(parts)
