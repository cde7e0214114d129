"""How far two replays of one workload lie apart: a real Slurm's and the model's, or two Slurm runs.

A replay is a table indexed by job id with ``submit``, ``start`` and ``end`` in seconds from the
replay's origin. The figures:

* start order: Kendall's tau-b between the two sides' start times (ties on either side count as
  neither concordant nor discordant; tau-b's denominator corrects for them);
* start-time error: ``|start_a - start_b|`` per job, its mean, median and max;
* mean-wait error: ``(mean wait_b - mean wait_a) / mean wait_a`` (wait = start - submit);
* backfilled jobs: on each side, the jobs that started before a job submitted earlier (FIFO
  order: submit time, then id) had started. Under FIFO priority in one partition only a backfill
  pass starts a job out of order, so this reads the same on a real Slurm (whose logs and squeue
  do not say) as on the model.

The live calibrations hold the model to one rule (:func:`within_spread`): its mean wait lies within
the range of Slurm's own runs' mean waits, widened on each side by :data:`WAIT_TOLERANCE` of run 1's.
The model replays run 1's submissions and passes, but Slurm's second run of the same jobs may differ
from its first by a quarter (its will-run test removes running jobs in batches whose bounds move
with its clock); a model as close to run 2 as run 2 is to itself is within Slurm's spread.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd


def kendall_tau_b(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall's tau-b of paired samples (scipy.stats.kendalltau, O(n log n)); NaN when either
    sample is constant."""
    if len(a) != len(b):
        raise ValueError("paired samples of different lengths")
    if len(a) < 2:
        return math.nan
    import scipy.stats  # half a second to import: only when this test is made

    return float(scipy.stats.kendalltau(a, b, variant="b").statistic)


def backfilled(replay: pd.DataFrame) -> set[int]:
    """Jobs that started before some job ahead of them in FIFO order (submit, then id) started."""
    order = replay.reset_index().sort_values(["submit", "job_id"])
    latest_ahead = order["start"].astype(float).cummax().shift(fill_value=-math.inf)
    return set(order.loc[order["start"].to_numpy() < latest_ahead.to_numpy(), "job_id"].astype(int))


@dataclass(frozen=True)
class Comparison:
    """Replay ``b`` measured against replay ``a``."""

    jobs: int
    tau: float
    start_error_mean: float
    start_error_median: float
    start_error_max: float
    mean_wait_a: float
    mean_wait_b: float
    backfilled_a: tuple[int, ...]
    backfilled_b: tuple[int, ...]

    @property
    def mean_wait_error(self) -> float:
        """Relative error of ``b``'s mean wait against ``a``'s."""
        return (self.mean_wait_b - self.mean_wait_a) / self.mean_wait_a if self.mean_wait_a else math.nan

    def as_dict(self) -> dict[str, object]:
        return {"jobs": self.jobs, "tau": self.tau, "start_error_mean": self.start_error_mean,
                "start_error_median": self.start_error_median, "start_error_max": self.start_error_max,
                "mean_wait_a": self.mean_wait_a, "mean_wait_b": self.mean_wait_b,
                "mean_wait_error": self.mean_wait_error, "backfilled_a": list(self.backfilled_a),
                "backfilled_b": list(self.backfilled_b)}


WAIT_TOLERANCE = 0.10
"""The part of run 1's mean wait by which :func:`within_spread` widens the range of Slurm's runs."""


def within_spread(model_wait: float, slurm_waits: Sequence[float], tolerance: float = WAIT_TOLERANCE) -> bool:
    """Whether ``model_wait`` (the model's mean wait, replaying run 1) lies within the mean waits of
    Slurm's runs ``slurm_waits`` (run 1 first), widened on each side by ``tolerance`` of run 1's."""
    margin = tolerance * slurm_waits[0]
    return min(slurm_waits) - margin <= model_wait <= max(slurm_waits) + margin


def compare(a: pd.DataFrame, b: pd.DataFrame) -> Comparison:
    """Replay ``b`` against ``a`` over the jobs both started."""
    common = a.index.intersection(b.index).sort_values()
    a, b = a.loc[common], b.loc[common]
    error = (b["start"] - a["start"]).abs()
    return Comparison(
        jobs=len(common), tau=kendall_tau_b(a["start"].tolist(), b["start"].tolist()),
        start_error_mean=float(error.mean()), start_error_median=float(error.median()),
        start_error_max=float(error.max()),
        mean_wait_a=float((a["start"] - a["submit"]).mean()),
        mean_wait_b=float((b["start"] - b["submit"]).mean()),
        backfilled_a=tuple(sorted(backfilled(a))), backfilled_b=tuple(sorted(backfilled(b))))


def per_job(replays: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per job: submit (of the first replay), each replay's start and wait, whether each
    backfilled it, and each replay's start error against the first."""
    names = list(replays)
    first = replays[names[0]]
    table = pd.DataFrame({"submit": first["submit"]})
    for name, replay in replays.items():
        table[f"start_{name}"] = replay["start"]
        table[f"wait_{name}"] = replay["start"] - replay["submit"]
        table[f"backfilled_{name}"] = table.index.isin(sorted(backfilled(replay)))
    for name in names[1:]:
        table[f"start_error_{name}"] = table[f"start_{name}"] - table[f"start_{names[0]}"]
    return table
