"""report.html of ``djsb history``: a site's history beside its replay, so an administrator sees
when and where the model departs from what the site's Slurm did.

Three figures, on the history's own clock (the dump's times, read as UTC as the dump gives them):

* ``timelines.png``: the CPUs running and the jobs queued at every instant, recorded and replayed
  (:func:`running_cpus`, :func:`queued_jobs`: step functions of the jobs' intervals);
* ``waits.png``: each job's wait, replayed against recorded (the diagonal: the model agrees);
* ``error.png``: both moving-average waits, and the absolute percentage error of the replayed one
  against the recorded one at every sample, with its mean (the MAPE).

Then the headline figures, the breakdowns, the notes and the jobs not replayed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from djsb.report.html import EXAMPLES, existing_figures, render
from djsb.workloads.job import RecordedOutcome, TraceJob

FIGURES = (("timelines.png", "CPUs running and jobs queued over time, recorded and replayed"),
           ("waits.png", "each job's wait, replayed against recorded"),
           ("error.png", "moving-average waits and the replayed one's error against the record"))
INTERVAL_COLUMNS = ("job_id", "submit", "start", "end", "cpus")
"""A side of the history: each job's submission, start, end (seconds from the history's origin)
and CPUs."""
MAX_INSTANTS = 4000
"""Instants a timeline is drawn at, at most (a history of any length draws in bounded memory)."""


def recorded_intervals(jobs: Sequence[TraceJob], recorded: Mapping[int, RecordedOutcome]) -> pd.DataFrame:
    """Each job's recorded submission, start, end (start + run time) and CPUs (the jobs without a
    recorded start left out)."""
    rows = [(job.job_id, job.submit, outcome.start, outcome.start + job.run_time, job.cpus)
            for job in jobs for outcome in (recorded.get(job.job_id),) if outcome is not None]
    return pd.DataFrame(rows, columns=list(INTERVAL_COLUMNS))


def replayed_intervals(recorded: pd.DataFrame, model_jobs: pd.DataFrame) -> pd.DataFrame:
    """The replay's side of :func:`recorded_intervals` (``recorded``): each job's start, end and CPUs
    in the model's ``model_jobs`` (its jobs.csv), from its recorded submission (the jobs the model did
    not replay left out)."""
    model = model_jobs[["job_id", "start", "end", "cpus"]]
    return recorded[["job_id", "submit"]].merge(model, on="job_id")[list(INTERVAL_COLUMNS)]


def running_cpus(jobs: pd.DataFrame, instants: np.ndarray) -> np.ndarray:
    """The CPUs of ``jobs`` (columns of :data:`INTERVAL_COLUMNS`) running at each of ``instants``
    (sorted): those with start <= t < end."""
    return _live(jobs["start"], jobs["end"], jobs["cpus"], instants)


def queued_jobs(jobs: pd.DataFrame, instants: np.ndarray) -> np.ndarray:
    """The jobs of ``jobs`` queued at each of ``instants`` (sorted): submitted (submit <= t) and
    not started (t < start)."""
    return _live(jobs["submit"], jobs["start"], pd.Series(1.0, index=jobs.index), instants)


def _live(begin: pd.Series, end: pd.Series, weight: pd.Series, instants: np.ndarray) -> np.ndarray:
    """The sum of ``weight`` over the intervals [begin, end) that hold each instant."""
    order_begin = np.argsort(begin.to_numpy(float), kind="stable")
    order_end = np.argsort(end.to_numpy(float), kind="stable")
    begins, ends = begin.to_numpy(float)[order_begin], end.to_numpy(float)[order_end]
    weights = weight.to_numpy(float)
    begun = np.concatenate([[0.0], np.cumsum(weights[order_begin])])
    ended = np.concatenate([[0.0], np.cumsum(weights[order_end])])
    return begun[np.searchsorted(begins, instants, side="right")] - \
        ended[np.searchsorted(ends, instants, side="right")]


def sample_instants(recorded: pd.DataFrame, replayed: pd.DataFrame) -> np.ndarray:
    """At most :data:`MAX_INSTANTS` evenly spaced instants from the first submission to the last
    end of either side."""
    first = min(recorded["submit"].min(), replayed["submit"].min())
    last = max(recorded["end"].max(), replayed["end"].max())
    return np.linspace(first, last, MAX_INSTANTS) if last > first else np.array([first])


def _clock(seconds: np.ndarray | pd.Series | pd.Index, origin: float) -> pd.DatetimeIndex:
    """Seconds from the history's origin as the dump's own date and time."""
    return pd.to_datetime(np.asarray(seconds, dtype=float) + origin, unit="s")


def plot_timelines(recorded: pd.DataFrame, replayed: pd.DataFrame, origin: float, path: Path) -> None:
    """timelines.png: CPUs running and jobs queued, recorded and replayed, one panel each."""
    from djsb.plotting import plt, save

    instants = sample_instants(recorded, replayed)
    clock = _clock(instants, origin)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 5.5), sharex=True, constrained_layout=True)
    for label, side, style in (("recorded", recorded, "-"), ("replayed", replayed, "--")):
        top.step(clock, running_cpus(side, instants), style, where="post", label=label)
        bottom.step(clock, queued_jobs(side, instants), style, where="post", label=label)
    top.set_ylabel("CPUs running")
    bottom.set_ylabel("jobs queued")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        ax.legend(loc="upper right")
    fig.autofmt_xdate()
    save(fig, path)


def plot_waits(errors: pd.DataFrame, path: Path) -> None:
    """waits.png: each replayed job's wait against its recorded wait, on symmetric log axes."""
    from djsb.plotting import plt, save

    started = errors.dropna(subset=["simulated_wait"])
    fig, ax = plt.subplots(figsize=(5.5, 5.2), constrained_layout=True)
    ax.scatter(started["recorded_wait"], started["simulated_wait"], s=10, alpha=0.5)
    top = max(1.0, float(started[["recorded_wait", "simulated_wait"]].max().max())) if len(started) else 1.0
    ax.plot([0, top], [0, top], color="grey", linewidth=0.8, linestyle=":", label="replayed = recorded")
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_xlabel("recorded wait (s)")
    ax.set_ylabel("replayed wait (s)")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left")
    save(fig, path)


def plot_error(averages: pd.DataFrame, mape: float, origin: float, path: Path) -> None:
    """error.png: both moving-average waits over time, and the replayed one's absolute percentage
    error against the recorded one at each sample (none where the recorded mean is 0)."""
    from djsb.plotting import plt, save

    clock = _clock(averages.index, origin)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 5.5), sharex=True, constrained_layout=True)
    top.plot(clock, averages["recorded"], label="recorded")
    top.plot(clock, averages["simulated"], "--", label="replayed")
    top.set_ylabel("moving-average wait (s)")
    top.legend(loc="upper right")
    recorded = averages["recorded"].where(averages["recorded"] > 0)
    bottom.plot(clock, 100 * (averages["simulated"] - recorded).abs() / recorded, color="C3")
    if np.isfinite(mape):
        bottom.axhline(100 * mape, color="grey", linestyle=":", label=f"MAPE {100 * mape:.1f} %")
        bottom.legend(loc="upper right")
    bottom.set_ylabel("absolute error (%)")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    fig.autofmt_xdate()
    save(fig, path)


def write_history_html(out_dir: Path, *, errors: pd.DataFrame, averages: pd.DataFrame,
                       recorded: pd.DataFrame, replayed: pd.DataFrame, figures: Mapping[str, float],
                       summary: pd.DataFrame, notes: Sequence[str], rejected: pd.DataFrame,
                       origin: float, title: str) -> Path:
    """OUT_DIR/report.html and its figures. ``recorded`` and ``replayed`` are the two sides
    (:data:`INTERVAL_COLUMNS`), ``errors`` and ``averages`` :mod:`djsb.report.replay_error`'s
    tables, ``figures`` the headline figures, ``summary`` summary.csv's rows, ``origin`` the Unix
    time of the history's second 0."""
    plot_timelines(recorded, replayed, origin, out_dir / "timelines.png")
    plot_waits(errors, out_dir / "waits.png")
    if not averages.empty:
        plot_error(averages, figures.get("moving_average_mape", float("nan")), origin, out_dir / "error.png")
    summary_rows = [[cell if isinstance(cell, str) else f"{cell:.4g}" for cell in row]
                    for row in summary.itertuples(index=False)]
    counts = [[str(reason), str(count)] for reason, count in rejected["reason"].value_counts().items()]
    return render("history.html.j2", out_dir / "report.html", title=title,
                  metrics={key: f"{value:.6g}" for key, value in figures.items()},
                  figure_items=existing_figures(out_dir, FIGURES), notes=list(notes),
                  summary_headers=[str(column) for column in summary.columns], summary_rows=summary_rows,
                  rejected_total=len(rejected), rejected_counts=counts,
                  rejected_examples=rejected.head(EXAMPLES).astype(str).values.tolist())
