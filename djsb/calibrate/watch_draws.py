"""How much of the model's gap to Slurm the watch's own uncertainty explains.

The model replays Slurm's passes at the instants sdiag bracketed (:mod:`djsb.calibrate.pass_watch`),
each known only to within its bracket: tens of milliseconds, against submissions and job ends that
are often that close to a pass (a job whose sbatch returned 30 ms after a bracket's midpoint may
well have been seen by that pass). Which side of a pass a submission falls on decides the pass that
starts it, and on a busy cluster that start moves the ones after it. So the model's figures are
themselves uncertain: replaying it again with every pass drawn uniformly within its bracket
(seeded, ``draws`` times) gives the range they take. A gap to Slurm inside that range is the
watch's resolution, not the model's rules; the range also sits beside Slurm's own spread (its
second run against the first).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pandas as pd

from djsb.calibrate.compare import Comparison

DEFAULT_DRAWS = 8
"""Replays of the model with drawn pass instants, unless the calibration file says ``watch_draws``."""


def drawn_passes(seen: pd.DataFrame, schedulers: Sequence[str], rng: random.Random) -> dict[str, list[float]]:
    """Each scheduler's passes (``seen``: ``scheduler``, ``time``, ``uncertainty`` rows, as
    passes.csv holds them) drawn uniformly within their brackets, time ± uncertainty, in order."""
    drawn: dict[str, list[float]] = {}
    for name in schedulers:
        rows = seen[seen["scheduler"] == name]
        times = [t + rng.uniform(-u, u) for t, u in zip(rows["time"], rows["uncertainty"], strict=True)]
        if times:
            drawn[name] = sorted(times)
    return drawn


def spread_figures(comparisons: Sequence[Comparison]) -> dict[str, tuple[float, float]]:
    """The least and greatest of each headline figure over the drawn replays' comparisons."""
    figures = {"tau": [c.tau for c in comparisons],
               "start_error_mean": [c.start_error_mean for c in comparisons],
               "start_error_max": [c.start_error_max for c in comparisons],
               "mean_wait_error": [c.mean_wait_error for c in comparisons]}
    return {name: (min(values), max(values)) for name, values in figures.items()}


def spread_line(label: str, comparisons: Sequence[Comparison]) -> str:
    """One line of the ranges of :func:`spread_figures`."""
    f = spread_figures(comparisons)
    tau, error, worst, wait = f["tau"], f["start_error_mean"], f["start_error_max"], f["mean_wait_error"]
    return (f"{label} ({len(comparisons)} replays, every pass drawn within its sdiag bracket): tau "
            f"{tau[0]:.2f} to {tau[1]:.2f}, start error mean {error[0]:.1f} to {error[1]:.1f} s, max "
            f"{worst[0]:.1f} to {worst[1]:.1f} s; mean wait {wait[0]:+.1%} to {wait[1]:+.1%}")
