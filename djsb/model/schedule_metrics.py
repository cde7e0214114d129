"""Pure metrics over the model's job table (``SimulationResult.jobs``).

* wait = start - submit; mean, median and 95th percentile.
* bounded slowdown = max(1, (wait + run) / max(run, tau)), tau = 10 s (Feitelson, Rudolph,
  Schwiegelshohn, Sevcik & Wong, "Theory and Practice in Parallel Job Scheduling", JSSPP 1997:
  the bound keeps very short jobs from dominating the mean).
* utilisation = core-seconds used / (cores x makespan), makespan = last end - first submit.
* gpu_utilisation = GPU-seconds held / (GPUs x makespan), beside it only on a machine with GPUs
  (a job table with a ``gpus`` column: djsb/model/result.py).
* capacity_lost = core-seconds out of service within the makespan / (cores x makespan), with node
  events (djsb/model/node_events.py): the share of the machine no job could use.
"""

from __future__ import annotations

import pandas as pd

TAU = 10.0

UNITS = {"jobs": "jobs", "mean_wait": "s", "median_wait": "s", "p95_wait": "s", "mean_bounded_slowdown": "1",
         "utilisation": "1", "gpu_utilisation": "1", "makespan": "s", "killed": "jobs", "backfilled": "jobs",
         "out_of_service_core_seconds": "core-s", "capacity_lost": "1"}
"""The unit of each metric of :func:`summary` (``1``: a ratio; utilisation is a fraction, not %)."""


def wait_stats(jobs: pd.DataFrame) -> dict[str, float]:
    """Mean, median and 95th percentile of the wait time (seconds)."""
    wait = jobs["wait"]
    if wait.empty:
        return {"mean_wait": 0.0, "median_wait": 0.0, "p95_wait": 0.0}
    return {"mean_wait": float(wait.mean()), "median_wait": float(wait.median()),
            "p95_wait": float(wait.quantile(0.95))}


def bounded_slowdown(jobs: pd.DataFrame, tau: float = TAU) -> pd.Series:
    """Per-job bounded slowdown max(1, (wait + run) / max(run, tau))."""
    run = jobs["run_time"]
    return ((jobs["wait"] + run) / run.clip(lower=tau)).clip(lower=1.0)


def makespan(jobs: pd.DataFrame) -> float:
    """Time from the first submission to the last end (seconds)."""
    if jobs.empty:
        return 0.0
    return float(jobs["end"].max() - jobs["submit"].min())


def utilisation(jobs: pd.DataFrame, total_cores: int) -> float:
    """Fraction of the machine's core-seconds used over the makespan."""
    span = makespan(jobs)
    if span <= 0 or total_cores <= 0:
        return 0.0
    return float((jobs["cpus"] * jobs["run_time"]).sum() / (total_cores * span))


def gpu_utilisation(jobs: pd.DataFrame, total_gpus: int) -> float:
    """Fraction of the machine's GPU-seconds held over the makespan."""
    span = makespan(jobs)
    if span <= 0 or total_gpus <= 0:
        return 0.0
    return float((jobs["gpus"] * jobs["run_time"]).sum() / (total_gpus * span))


def summary(jobs: pd.DataFrame, total_cores: int, total_gpus: int = 0) -> dict[str, float]:
    """Every metric above plus job counts, as one flat dict (metrics.json); GPU utilisation only
    when the machine has GPUs (``total_gpus``)."""
    slowdown = bounded_slowdown(jobs)
    gpus = {"gpu_utilisation": gpu_utilisation(jobs, total_gpus)} if total_gpus > 0 else {}
    return {
        "jobs": int(len(jobs)),
        **wait_stats(jobs),
        "mean_bounded_slowdown": float(slowdown.mean()) if len(jobs) else 0.0,
        "utilisation": utilisation(jobs, total_cores),
        **gpus,
        "makespan": makespan(jobs),
        "killed": int(jobs["killed"].sum()),
        "backfilled": int(jobs["backfilled"].sum()),
    }


def out_of_service_core_seconds(outages: pd.DataFrame, begin: float, end: float) -> float:
    """Core-seconds of the outages (out_of_service.csv rows: ``start``, ``end`` empty for one lasting
    to the end, ``cores``) within [``begin``, ``end``]."""
    if outages.empty or end <= begin:
        return 0.0
    stops = outages["end"].astype(float).fillna(end).clip(upper=end)
    starts = outages["start"].astype(float).clip(lower=begin)
    return float(((stops - starts).clip(lower=0.0) * outages["cores"]).sum())


def capacity_lost(jobs: pd.DataFrame, outages: pd.DataFrame, total_cores: int) -> dict[str, float]:
    """The core-seconds out of service within the makespan and their share of the machine's."""
    span = makespan(jobs)
    begin = float(jobs["submit"].min()) if len(jobs) else 0.0
    lost = out_of_service_core_seconds(outages, begin, begin + span)
    return {"out_of_service_core_seconds": lost,
            "capacity_lost": lost / (total_cores * span) if span > 0 and total_cores > 0 else 0.0}
