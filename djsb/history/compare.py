"""``djsb compare`` on ``djsb history`` outputs: a what-if replay of a site's history beside the
baseline replay of the same record, with the baseline's own error against the record as the
uncertainty of every difference.

A history output is a directory holding errors.csv, summary.csv and moving_average.csv (what
``djsb history`` writes, its ``what-if/`` too). Two of them are compared only when they replay the
same record (the same jobs with the same recorded starts), since otherwise their difference mixes
the setting changed with the history replayed.

For each headline figure of :data:`WHAT_IF_FIGURES`, overall and per group of each breakdown
(partition, QoS, account, size) both outputs have: the baseline's value, the other's, the change,
and where the record has the figure the baseline's own error against it (the mean wait: the
baseline's replayed mean minus the recorded one). A change no larger than that error is within what
the model already gets wrong on this history: ``beyond_error`` says which changes exceed it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from djsb.errors import InputError
from djsb.report.html import render

WHAT_IF_FIGURES = ("recorded_mean_wait", "simulated_mean_wait", "mean_abs_start_error", "moving_average_mape",
                   "ks_wait", "pass_agreement", "reason_agreement")
"""The headline figures a what-if is compared on."""
HISTORY_FILES = ("errors.csv", "summary.csv", "moving_average.csv")
"""The files that make a directory a ``djsb history`` output."""
COMPARE_COLUMNS = ("run", "group_by", "group", "figure", "baseline", "what_if", "change", "baseline_error",
                   "beyond_error")


@dataclass(frozen=True)
class HistoryOutput:
    """One ``djsb history`` output as compare reads it."""

    label: str
    path: Path
    summary: pd.DataFrame
    errors: pd.DataFrame
    averages: pd.DataFrame


def is_history_output(path: Path) -> bool:
    """Whether ``path`` holds the files of a ``djsb history`` output."""
    return all((path / name).is_file() for name in HISTORY_FILES)


def read_history_output(path: Path, label: str) -> HistoryOutput:
    """The output at ``path``: summary.csv (indexed by group_by, group), errors.csv and
    moving_average.csv (indexed by instant)."""
    summary = pd.read_csv(path / "summary.csv", dtype={"group": str}, keep_default_na=False,
                          na_values={name: [""] for name in WHAT_IF_FIGURES})
    return HistoryOutput(label, path, summary.set_index(["group_by", "group"]),
                         pd.read_csv(path / "errors.csv"),
                         pd.read_csv(path / "moving_average.csv", index_col="instant"))


def figure_changes(base: Mapping[str, float], other: Mapping[str, float]) -> list[dict[str, Any]]:
    """One row per figure of :data:`WHAT_IF_FIGURES`: ``other``'s value beside ``base``'s, the
    change, the baseline's own error against the record where the record has the figure (the mean
    wait) and whether the change exceeds it (None where there is no such error). A figure an
    output lacks (made before DJSB computed it) is NaN."""
    rows = []
    for name in WHAT_IF_FIGURES:
        value, changed = float(base.get(name, math.nan)), float(other.get(name, math.nan))
        error = float(base["simulated_mean_wait"]) - float(base["recorded_mean_wait"]) \
            if name == "simulated_mean_wait" else math.nan
        change = changed - value
        rows.append({"figure": name, "baseline": value, "what_if": changed, "change": change,
                     "baseline_error": error,
                     "beyond_error": None if math.isnan(error) else bool(abs(change) > abs(error))})
    return rows


def same_record(base: HistoryOutput, other: HistoryOutput) -> None:
    """Refuse two outputs that do not replay the same jobs with the same recorded starts."""
    columns = ["job_id", "recorded_start"]
    mine = base.errors[columns].sort_values("job_id").reset_index(drop=True)
    theirs = other.errors[columns].sort_values("job_id").reset_index(drop=True)
    if not mine.equals(theirs):
        raise InputError(f"{base.path} and {other.path} replay different records (other jobs or "
                         "recorded starts): their difference would not be the setting's", key="RUN_DIR")


def compare_histories(base: HistoryOutput, others: Sequence[HistoryOutput]) -> pd.DataFrame:
    """The rows of :data:`COMPARE_COLUMNS`: every other output against ``base``, on each group
    (overall first) both have."""
    rows = []
    for other in others:
        same_record(base, other)
        for key in base.summary.index:
            if key in other.summary.index:
                rows += [{"run": other.label, "group_by": key[0], "group": key[1], **row}
                         for row in figure_changes(base.summary.loc[key], other.summary.loc[key])]
    return pd.DataFrame(rows, columns=list(COMPARE_COLUMNS))


def plot_moving_averages(base: HistoryOutput, others: Sequence[HistoryOutput], path: Path) -> None:
    """The recorded moving-average wait, the baseline's, and each other output's, with the band of
    the baseline's own error around the baseline (a what-if inside it is within that error)."""
    from djsb.plotting import plt, save

    fig, ax = plt.subplots(figsize=(10, 4.5), constrained_layout=True)
    averages = base.averages
    ax.plot(averages.index, averages["recorded"], ".-", color="black", label="recorded")
    ax.plot(averages.index, averages["simulated"], ".-", color="C0", label=f"{base.label} (baseline)")
    error = np.abs(averages["simulated"] - averages["recorded"])
    ax.fill_between(averages.index, averages["simulated"] - error, averages["simulated"] + error, color="C0",
                    alpha=0.15, label="baseline ± its error against the record")
    for rank, other in enumerate(others, start=1):
        ax.plot(other.averages.index, other.averages["simulated"], ".--", color=f"C{rank % 10}",
                label=other.label)
    ax.set_xlabel("seconds from the history's first submission")
    ax.set_ylabel("moving-average wait (s)")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left")
    save(fig, path)


def display(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` as text for people: numbers to four significant digits, blanks for missing values."""
    def text(cell: Any) -> str:
        if cell is None or (isinstance(cell, float) and math.isnan(cell)):
            return ""
        return str(cell) if isinstance(cell, str | bool) else f"{cell:.4g}"

    return table.astype(object).map(text)


def labels_of(paths: Sequence[Path]) -> list[str]:
    """Each output's label: its directory's name, or its path where two names are the same."""
    names = [path.resolve().name for path in paths]
    return [name if names.count(name) == 1 else str(path) for name, path in zip(names, paths, strict=True)]


def write_history_comparison(paths: Sequence[Path], out_dir: Path) -> pd.DataFrame:
    """Compare the history outputs at ``paths`` (the first is the baseline) into ``out_dir``:
    compare.csv (:func:`compare_histories`), moving_average.png and report.html. Returns the table."""
    resolved = [path.resolve() for path in paths]
    if len(set(resolved)) < len(resolved):
        raise InputError("an output is given twice: a replay compared with itself differs in nothing",
                         key="RUN_DIR")
    outputs = [read_history_output(path, label) for path, label in zip(paths, labels_of(paths), strict=True)]
    table = compare_histories(outputs[0], outputs[1:])
    out_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(out_dir / "compare.csv", index=False)
    plot_moving_averages(outputs[0], outputs[1:], out_dir / "moving_average.png")
    rows = display(table).values.tolist()
    render("compare_history.html.j2", out_dir / "report.html",
           title=f"DJSB compare: {' vs '.join(output.label for output in outputs)}",
           outputs=[[output.label, str(output.path.resolve())] for output in outputs],
           headers=list(COMPARE_COLUMNS), rows=rows,
           figure_items=[("moving_average.png", "moving-average waits: the record, the baseline with its "
                          "error as a band, each what-if")])
    return table
