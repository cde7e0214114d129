"""report.html of ``djsb calibrate``: the figures of the model against Slurm and of Slurm against
itself, both timelines, every job's differences, the fair-share usage of both sides and the
answers of Slurm's commands the model was built from, on one page."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from djsb.plotting import plt, save
from djsb.report.html import existing_figures, render

COMPARISON_HEADERS = ("replays", "jobs", "Kendall tau", "start error mean (s)", "median (s)", "max (s)",
                      "mean wait first (s)", "mean wait second (s)", "mean wait difference",
                      "backfilled first", "backfilled second")
FIGURES = (("timeline.png", "every job's run on each side (bars: run; ticks: submission)"),)


def _number(value: Any, digits: int = 1) -> str:
    """A table cell: a number to ``digits`` decimals, blank for NaN, anything else as it is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return "" if math.isnan(value) else f"{value:.{digits}f}"


def comparison_rows(comparisons: Mapping[str, Mapping[str, Any]]) -> list[list[str]]:
    """One row per comparison (:meth:`djsb.calibrate.compare.Comparison.as_dict`)."""
    return [[label, str(c["jobs"]), _number(c["tau"], 3), _number(c["start_error_mean"]),
             _number(c["start_error_median"]), _number(c["start_error_max"]), _number(c["mean_wait_a"]),
             _number(c["mean_wait_b"]),
             "" if math.isnan(c["mean_wait_error"]) else f"{c['mean_wait_error']:+.1%}",
             str(len(c["backfilled_a"])), str(len(c["backfilled_b"]))] for label, c in comparisons.items()]


def table_rows(table: pd.DataFrame, index: bool = True) -> tuple[list[str], list[list[str]]]:
    """Headers and formatted rows of ``table`` (its index first when ``index``)."""
    frame = table.reset_index() if index else table
    return ([str(c) for c in frame.columns],
            [[_number(v) for v in row] for row in frame.itertuples(index=False)])


def write_calibration_html(out_dir: Path, *, comparisons: Mapping[str, Mapping[str, Any]], jobs: pd.DataFrame,
                           usage: pd.DataFrame | None, notes: list[str], slurm_texts: Mapping[str, str],
                           scheduler: Mapping[str, Any], priority: str) -> Path:
    """OUT_DIR/report.html of a calibration (``jobs``: djsb.calibrate.compare.per_job's table;
    ``usage``: djsb.calibrate.fairshare.usage_table's, None without fair share)."""
    job_headers, job_rows = table_rows(jobs)
    usage_headers, usage_rows = table_rows(usage, index=False) if usage is not None else ([], [])
    return render("calibration.html.j2", out_dir / "report.html", title=f"DJSB calibrate {out_dir.name}",
                  comparison_headers=COMPARISON_HEADERS, comparison_rows=comparison_rows(comparisons),
                  notes=notes, figure_items=existing_figures(out_dir, FIGURES), usage_headers=usage_headers,
                  usage_rows=usage_rows, job_headers=job_headers, job_rows=job_rows,
                  scheduler={key: str(value) for key, value in scheduler.items()}, priority=priority,
                  slurm_texts=dict(slurm_texts))


def plot_timelines(replays: dict[str, pd.DataFrame], path: Path) -> None:
    """Every job's run as a bar (submit marked), one panel per replay, on one time axis."""
    fig, axes = plt.subplots(len(replays), 1, figsize=(10, 2.2 + 0.12 * len(next(iter(replays.values()))) *
                                                      len(replays)), sharex=True, squeeze=False)
    for ax, (name, replay) in zip(axes[:, 0], replays.items(), strict=True):
        ax.barh(replay.index, replay["end"] - replay["start"], left=replay["start"], height=0.7)
        ax.scatter(replay["submit"], replay.index, marker="|", color="black", s=30)
        ax.set_ylabel(f"{name}\njob")
        ax.invert_yaxis()
    axes[-1, 0].set_xlabel("seconds from the replay's start (bars: run; ticks: submission)")
    fig.tight_layout()
    save(fig, path, dpi=110)
