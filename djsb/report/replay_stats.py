"""A replay against the trace it replays: paper 003's descriptive statistics (Tables 2-6) and the
queue wait ECDFs, recorded beside simulated, with a two-sample Kolmogorov-Smirnov statistic.

For each quantity (requested CPUs, time limit, elapsed time, inter-arrival time, queue wait) the
mean, standard deviation (sample, n - 1), minimum, quartiles (linear interpolation) and maximum,
as 003's tables list them. The recorded side is the trace as read (the users' own requests, the
recorded waits of SWF field 3); the simulated side is the replay's jobs.csv (the limits it ran
with, after any estimate or shaping; rejected jobs are missing from it, as in 003 Table 4).
Time limits count only the jobs whose trace gives one (SWF field 9 > 0) on both sides.
003 counts requested *nodes*; SWF traces give processors, so CPUs are compared here.

The KS statistic is D = sup_x |F_recorded(x) - F_simulated(x)| over the two empirical CDFs of
the queue wait (0: identical distributions, 1: disjoint).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from djsb.plotting import save_wait_ecdf
from djsb.report.history import recorded_intervals, replayed_intervals, write_history_html
from djsb.report.replay_error import (
    BREAKDOWNS,
    TWO_WEEKS,
    breakdown,
    job_errors,
    ks_statistic,
    moving_average_waits,
    recorded_frame,
    summary,
    summary_rows,
)
from djsb.workloads._textio import open_trace_text
from djsb.workloads.job import RecordedOutcome, TraceJob
from djsb.workloads.swf import read_swf

STATISTICS = ("mean", "std", "min", "1Q", "2Q", "3Q", "max")
QUANTITIES = ("requested_cpus", "time_limit", "elapsed", "inter_arrival", "queue_wait")
DAY = 86400.0
"""The moving average's sampling step (its window is FastSim's two weeks)."""


def describe(values: pd.Series) -> dict[str, float]:
    """The statistics of 003's tables for one quantity."""
    v = values.dropna().astype(float)
    quartiles = v.quantile([0.25, 0.5, 0.75]).tolist()
    return dict(zip(STATISTICS, [v.mean(), v.std(), v.min(), *quartiles, v.max()], strict=True))


def quantities(cpus: pd.Series, limit: pd.Series, elapsed: pd.Series, submit: pd.Series,
               wait: pd.Series) -> dict[str, pd.Series]:
    """The five quantities of 003 Tables 2-6 from per-job columns (inter-arrival from sorted submits)."""
    return {"requested_cpus": cpus, "time_limit": limit, "elapsed": elapsed,
            "inter_arrival": submit.sort_values().diff().iloc[1:], "queue_wait": wait}


def recorded_waits(path: Path) -> dict[int, float]:
    """Job id -> the wait the trace recorded (SWF field 3; -1, unknown, left out)."""
    waits = {}
    with open_trace_text(str(path)) as stream:
        for line in stream:
            fields = line.split()
            if fields and not line.lstrip().startswith(";") and float(fields[2]) >= 0:
                waits[int(fields[0])] = float(fields[2])
    return waits


def recorded(jobs: list[TraceJob], waits: dict[int, float]) -> dict[str, pd.Series]:
    """The quantities of the trace as recorded."""
    frame = pd.DataFrame({"job_id": [j.job_id for j in jobs], "cpus": [j.cpus for j in jobs],
                          "limit": [j.user_request for j in jobs], "run": [j.run_time for j in jobs],
                          "submit": [j.submit for j in jobs]})
    wait = frame["job_id"].map(waits)
    return quantities(frame["cpus"], frame["limit"], frame["run"], frame["submit"], wait)


def simulated(jobs: pd.DataFrame, with_request: set[int]) -> dict[str, pd.Series]:
    """The quantities of a replay's jobs.csv; time limits of the jobs in ``with_request`` only."""
    limit = jobs["requested_time"].where(jobs["job_id"].isin(with_request))
    return quantities(jobs["cpus"], limit, jobs["run_time"], jobs["submit"], jobs["wait"])


def side_by_side(real: dict[str, pd.Series], sim: dict[str, pd.Series]) -> pd.DataFrame:
    """003's table layout: one row per statistic, (quantity, recorded | simulated) columns."""
    columns = {(q, side): describe(values[q]) for q in QUANTITIES
               for side, values in (("recorded", real), ("simulated", sim))}
    return pd.DataFrame(columns, index=list(STATISTICS))


def plot_wait_ecdfs(real: pd.Series, sim: pd.Series, ks: float, path: Path) -> None:
    """The queue wait ECDFs, recorded and simulated (003 Figure 5)."""
    samples = {"recorded": real.dropna().to_numpy(float), "simulated": sim.dropna().to_numpy(float)}
    save_wait_ecdf(samples, "queue wait (s)", f"Queue wait ECDF, recorded vs simulated (KS D = {ks:.3f})",
                   path)


def write_replay_stats(trace_path: Path, trace_jobs: list[TraceJob], out_dir: Path) -> dict[str, float]:
    """Write replay_stats.csv, replay_stats.json (KS D, job counts, and the job-by-job figures of
    :mod:`djsb.report.replay_error`: mean absolute start error, two-week moving-average wait MAPE
    sampled daily), errors.csv (one row per recorded job), wait_ecdf_recorded.png, and the report of
    ``djsb history`` (:func:`write_report`).

    ``trace_jobs`` are the trace's jobs as read (before estimates and shaping); ``out_dir`` holds
    the replay's jobs.csv. Returns what replay_stats.json holds.
    """
    jobs = pd.read_csv(out_dir / "jobs.csv")
    real = recorded(trace_jobs, recorded_waits(trace_path))
    sim = simulated(jobs, {j.job_id for j in trace_jobs if j.user_request is not None})
    side_by_side(real, sim).to_csv(out_dir / "replay_stats.csv")
    ks = ks_statistic(real["queue_wait"], sim["queue_wait"])
    plot_wait_ecdfs(real["queue_wait"], sim["queue_wait"], ks, out_dir / "wait_ecdf_recorded.png")
    waits = recorded_waits(trace_path)
    outcomes = {job.job_id: RecordedOutcome(job.submit + waits[job.job_id]) for job in trace_jobs
                if job.job_id in waits}
    errors = job_errors(recorded_frame(trace_jobs, outcomes), jobs)
    errors.to_csv(out_dir / "errors.csv", index=False)
    figures = summary(errors, TWO_WEEKS, DAY)
    write_report(trace_path, trace_jobs, outcomes, jobs, errors, figures, out_dir)
    result = {"ks_wait": ks, "recorded_jobs": float(len(trace_jobs)), "simulated_jobs": float(len(jobs)),
              "mean_abs_start_error": figures["mean_abs_start_error"],
              "moving_average_mape": figures["moving_average_mape"]}
    (out_dir / "replay_stats.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def write_report(trace_path: Path, trace_jobs: list[TraceJob], outcomes: dict[int, RecordedOutcome],
                 jobs: pd.DataFrame, errors: pd.DataFrame, figures: dict[str, float], out_dir: Path) -> None:
    """The same report as ``djsb history``'s (:func:`~djsb.report.history.write_history_html`):
    summary.csv with the breakdowns, moving_average.csv, report.html with both timelines, the waits
    and the moving-average error over time, on the trace's own clock (its ``UnixStartTime``)."""
    averages = moving_average_waits(errors, TWO_WEEKS, DAY)
    averages.to_csv(out_dir / "moving_average.csv")
    table = summary_rows(figures, {by: breakdown(errors, by, TWO_WEEKS, DAY) for by in BREAKDOWNS})
    table.to_csv(out_dir / "summary.csv", index=False)
    recorded_side = recorded_intervals(trace_jobs, outcomes)
    trace = read_swf(trace_path, limit=1)
    origin = float(trace.header.get("UnixStartTime", 0) or 0) + trace.time_origin
    not_replayed = sorted({job.job_id for job in trace_jobs} - set(jobs["job_id"]))
    rejected = pd.DataFrame({"job_id": not_replayed, "reason": "not in the replay's jobs.csv"})
    write_history_html(out_dir, errors=errors, averages=averages, recorded=recorded_side,
                       replayed=replayed_intervals(recorded_side, jobs), figures=figures, summary=table,
                       notes=[], rejected=rejected, origin=origin,
                       title=f"DJSB replay-stats: {trace_path.name} against its record")
