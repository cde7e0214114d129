"""How close a replay comes to the history it replays, job by job and over time.

The record is what the scheduler that ran the jobs wrote (sacct's Start and Flags:
:class:`~djsb.workloads.job.RecordedOutcome`); the replay is the model's jobs.csv. Both sides count
time from the same origin and name jobs by the same ids, so a job's errors are plain differences:

* the **start error** of a job is its simulated start minus its recorded one (positive: the model
  started it later), and since both submit it at the same instant, its wait error is the same number;
* the **moving-average wait** at an instant t is the mean wait of the jobs submitted in
  (t - window, t]; it is sampled every ``step`` from the first submit plus one window. Its **mean
  absolute percentage error** (MAPE) is the mean over those instants of |simulated - recorded| /
  recorded, leaving out instants with no job or a recorded mean of 0. This is the figure HPE's
  FastSim reports for ARCHER2 (a two-week window, per QoS: 7.3 %), so a site can set the two side by
  side;
* the **pass** that started a job: the record's (SchedMain / SchedBackfill) against the model's
  (``backfilled``), over the jobs whose record names one of the two.

Jobs the model did not start (rejected, or never started) have no simulated start: they are counted
apart and left out of every error, never silently.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from djsb.workloads.job import RecordedOutcome, TraceJob

SIZE_CLASSES = ((1, "1"), (4, "2-4"), (16, "5-16"), (64, "17-64"), (256, "65-256"), (math.inf, ">256"))
"""CPU counts by class, for the breakdown by job size: (largest count of the class, its label)."""

BREAKDOWNS = ("partition", "qos", "account", "size")
"""The groups the errors are broken down by."""
TWO_WEEKS = 14 * 86400.0
"""FastSim's moving-average window (s)."""


_KS_EXACT_N = 10000
"""Up to this many values in both samples, scipy.stats.ks_2samp computes its exact p-value."""


def ks_statistic(a: pd.Series, b: pd.Series) -> float:
    """Two-sample Kolmogorov-Smirnov D = sup |F_a - F_b| of the empirical CDFs of ``a`` and ``b``,
    missing values left out; NaN when either has none.

    The same arithmetic as scipy.stats.ks_2samp's statistic (both CDFs evaluated at every value by
    searchsorted, the largest difference either way), without its p-value: the exact one it
    computes for samples of up to 10,000 values costs far more than the statistic and is not read
    (157 tests in a replay's breakdown)."""
    first = np.sort(a.dropna().to_numpy(float))
    second = np.sort(b.dropna().to_numpy(float))
    if not len(first) or not len(second):
        return math.nan
    both = np.concatenate([first, second])
    differences = (np.searchsorted(first, both, side="right") / len(first)
                   - np.searchsorted(second, both, side="right") / len(second))
    d = float(max(np.clip(-differences.min(), 0, 1), differences.max()))
    n1, n2 = len(first), len(second)
    g = math.gcd(n1, n2)
    if max(n1, n2) <= _KS_EXACT_N and n1 // g < np.iinfo(np.int32).max / (n2 // g):
        lcm = n1 // g * n2  # D is a multiple of 1/lcm: scipy rounds it to one for its exact p-value
        d = int(np.round(d * lcm)) * 1.0 / lcm
    return d


def size_class(cpus: int) -> str:
    """The label of the size class of a job of ``cpus`` CPUs."""
    return next(label for largest, label in SIZE_CLASSES if cpus <= largest)


def recorded_frame(jobs: Sequence[TraceJob], recorded: Mapping[int, RecordedOutcome]) -> pd.DataFrame:
    """One row per job with a recorded start: job_id, submit, recorded start and wait, the pass that
    started it, its recorded reason (sacct's Reason; missing when the dump has none), and the groups
    of the breakdown (partition, qos, account, size)."""
    rows = [(job.job_id, job.submit, outcome.start, outcome.start - job.submit, outcome.started_by,
             outcome.reason or None, job.partition, job.qos, job.account, size_class(job.cpus))
            for job in jobs for outcome in (recorded.get(job.job_id),) if outcome is not None]
    return pd.DataFrame(rows, columns=["job_id", "submit", "recorded_start", "recorded_wait", "recorded_pass",
                                       "recorded_reason", "partition", "qos", "account", "size"])


def job_errors(recorded: pd.DataFrame, simulated: pd.DataFrame) -> pd.DataFrame:
    """The recorded jobs joined with the replay's (jobs.csv: job_id, start, backfilled,
    sacct_reason): simulated start and wait, start error, the model's pass (``main`` /
    ``backfill``) and the reason sacct would show (``simulated_reason``; missing for a jobs.csv
    written before the model kept it). A job the replay did not start keeps NaN (a missing value)
    in the simulated columns."""
    sim = simulated.reindex(columns=["job_id", "start", "backfilled", "sacct_reason"]).rename(
        columns={"start": "simulated_start", "sacct_reason": "simulated_reason"})
    frame = recorded.merge(sim, on="job_id", how="left")
    frame["simulated_wait"] = frame["simulated_start"] - frame["submit"]
    frame["start_error"] = frame["simulated_start"] - frame["recorded_start"]
    frame["simulated_pass"] = frame["backfilled"].map({True: "backfill", False: "main"})
    return frame.drop(columns="backfilled")


def moving_average_waits(errors: pd.DataFrame, window: float, step: float) -> pd.DataFrame:
    """The moving-average waits of both sides (columns recorded, simulated, jobs) at every ``step``
    from the first submit plus ``window``, over the jobs the replay started (index: the instant)."""
    if window <= 0 or step <= 0:
        raise ValueError(f"window and step must be > 0, got {window} and {step}")
    started = errors.dropna(subset=["simulated_start"]).sort_values("submit")
    if started.empty:
        return pd.DataFrame(columns=["recorded", "simulated", "jobs"], dtype=float)
    submit = started["submit"].to_numpy(float)
    first, last = submit[0] + window, submit[-1]
    instants = np.arange(first, max(first, last) + step / 2, step)
    recorded = np.concatenate([[0.0], np.cumsum(started["recorded_wait"].to_numpy(float))])
    simulated = np.concatenate([[0.0], np.cumsum(started["simulated_wait"].to_numpy(float))])
    upper = np.searchsorted(submit, instants, side="right")
    lower = np.searchsorted(submit, instants - window, side="right")
    count = upper - lower
    with np.errstate(invalid="ignore", divide="ignore"):
        frame = pd.DataFrame({"recorded": (recorded[upper] - recorded[lower]) / count,
                              "simulated": (simulated[upper] - simulated[lower]) / count,
                              "jobs": count}, index=pd.Index(instants, name="instant"))
    return frame[frame["jobs"] > 0]


def moving_average_mape(averages: pd.DataFrame) -> float:
    """Mean of |simulated - recorded| / recorded over the instants whose recorded mean is > 0 (NaN
    when there is none)."""
    kept = averages[averages["recorded"] > 0]
    if kept.empty:
        return math.nan
    return float(((kept["simulated"] - kept["recorded"]).abs() / kept["recorded"]).mean())


def pass_agreement(errors: pd.DataFrame) -> float:
    """The share of jobs started by the same pass in the record and the replay, over the jobs whose
    record names the main or the backfill pass and that the replay started (NaN when none)."""
    named = errors[errors["recorded_pass"].isin(("main", "backfill")) & errors["simulated_pass"].notna()]
    if named.empty:
        return math.nan
    return float((named["recorded_pass"] == named["simulated_pass"]).mean())


def reason_agreement(errors: pd.DataFrame) -> float:
    """The share of jobs held for the same reason in the record and the replay, over the jobs that
    either side held for a reason sacct keeps (not None: Slurm keeps a job's last reason that was
    not Priority or Resources, job_scheduler.c ``build_job_queue``'s ``state_reason_prev_db``)
    and that the replay started. A missing reason is None (pandas reads sacct's ``None`` as
    missing); NaN when the record has no reason at all (a dump without Reason) or none held."""
    if errors["recorded_reason"].isna().all():
        return math.nan
    started = errors[errors["simulated_start"].notna()]
    recorded = started["recorded_reason"].astype(object).fillna("None")
    simulated = started["simulated_reason"].astype(object).fillna("None")
    held = (recorded != "None") | (simulated != "None")
    if not held.any():
        return math.nan
    return float((recorded[held] == simulated[held]).mean())


def reason_table(errors: pd.DataFrame) -> pd.DataFrame:
    """How many of the jobs the replay started each pair of reasons (recorded, simulated) held, most
    first (a missing reason is None): reasons.csv."""
    started = errors[errors["simulated_start"].notna()]
    pairs = pd.DataFrame({"recorded_reason": started["recorded_reason"].astype(object).fillna("None"),
                          "simulated_reason": started["simulated_reason"].astype(object).fillna("None")})
    counts = pairs.groupby(["recorded_reason", "simulated_reason"]).size().rename("jobs").reset_index()
    return counts.sort_values(["jobs", "recorded_reason", "simulated_reason"],
                              ascending=[False, True, True]).reset_index(drop=True)


def records_paired(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """Two records of the same submissions made twice (the recorded columns of two replays'
    errors.csv), paired job by job in submission order (job ids rise with it), as a replay's errors
    whose simulated side is the second record: Slurm's own run-to-run differences, measured as the
    model's errors are. Both records must hold the same number of jobs."""
    if len(first) != len(second):
        raise ValueError(f"the two records hold {len(first)} and {len(second)} jobs")
    a = first.sort_values("job_id").reset_index(drop=True)
    b = second.sort_values("job_id").reset_index(drop=True)
    kept = ["job_id", "submit", "recorded_start", "recorded_wait", "recorded_pass", "recorded_reason"]
    frame = a[kept].copy()
    frame["simulated_wait"] = b["recorded_wait"]
    frame["simulated_start"] = frame["submit"] + frame["simulated_wait"]
    frame["start_error"] = frame["simulated_wait"] - frame["recorded_wait"]
    frame["simulated_pass"] = b["recorded_pass"]
    frame["simulated_reason"] = b["recorded_reason"]
    return frame


def summary(errors: pd.DataFrame, window: float, step: float) -> dict[str, float]:
    """The headline figures of a replay against its record: jobs compared and not started by the
    replay, mean waits, mean and mean absolute start error, moving-average MAPE, KS distance of the
    waits, the pass and reason agreements."""
    started = errors.dropna(subset=["simulated_start"])
    ks = ks_statistic(started["recorded_wait"], started["simulated_wait"]) if len(started) else math.nan
    return {
        "jobs": float(len(started)),
        "not_started": float(len(errors) - len(started)),
        "recorded_mean_wait": float(started["recorded_wait"].mean()),
        "simulated_mean_wait": float(started["simulated_wait"].mean()),
        "mean_start_error": float(started["start_error"].mean()),
        "mean_abs_start_error": float(started["start_error"].abs().mean()),
        "moving_average_mape": moving_average_mape(moving_average_waits(errors, window, step)),
        "ks_wait": ks,
        "pass_agreement": pass_agreement(errors),
        "reason_agreement": reason_agreement(errors),
    }


def breakdown(errors: pd.DataFrame, by: str, window: float, step: float) -> pd.DataFrame:
    """:func:`summary` per value of the column ``by`` (partition, qos, account or size), one row each."""
    rows = {str(value): summary(group, window, step) for value, group in errors.groupby(by, dropna=False)}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(by)


def summary_rows(figures: Mapping[str, float], breakdowns: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """summary.csv: the headline figures (group_by and group ``all``), then one row per group of
    each breakdown (:func:`breakdown`)."""
    rows = [{"group_by": "all", "group": "all", **figures}]
    for by, table in breakdowns.items():
        rows += [{"group_by": by, "group": group, **values} for group, values in table.iterrows()]
    return pd.DataFrame(rows)
