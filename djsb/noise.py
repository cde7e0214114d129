"""Run-to-run noise: made visible when a run's slowdowns and dynamicity are not to be trusted, and
drawn (:class:`WorkNoise`) where a simulated cluster would otherwise repeat one sample exactly.

A slowdown is a response time divided by T_ref_alone, the mean execution time of the application
alone (eq. (1) of 001). Sharing CPUs can only slow a job down, so a slowdown below 1, or a
dynamicity above 1 (eq. (2): the inverse weighted geometric mean of the slowdowns, > 1 only when
they are < 1), says the reference itself was slowed: by other processes on a loaded machine, or by
a reference that varies from run to run. These pure checks turn the run's own numbers into
warnings, each stating the threshold it crossed; the driver prints them and summary.csv keeps them
(its ``warnings`` column).

A simulated job does the same work in every sample, so without noise its samples agree to the last
digit and every confidence interval is 0, which says nothing about how far a real run could be
off. :class:`WorkNoise` scales each job's work by a seeded random factor whose spread is the
run-to-run spread measured on a real machine (bench/bench_footprint.py, ``work_cv``).
"""

from __future__ import annotations

import math
import os
import random
import statistics
from collections.abc import Mapping, Sequence

CV_LIMIT = 0.10
"""Reference runs do the same work alone on the same resources: their execution times should agree
within timer and OS jitter (a few %). A coefficient of variation above 10% is as large as the
slowdowns a light sharing scenario measures, so T_ref_alone is too uncertain to divide by."""

DRIFT_LIMIT = 0.10
"""The calibration run fixes the work as what the application does in exec_time alone; the reference
runs redo that work alone, so their mean should be exec_time again. A drift above 10% means the
machine got faster or slower between the two (load changed, CPU frequency)."""

LOAD_LIMIT = 0.5
"""The 1-minute load average per CPU before the run's own jobs start. Above 0.5, other processes hold
half a CPU each on average, enough to slow the reference runs by tens of % at random."""

BEFORE_JOBS = ("reference", "start")
"""The (stage, at) of the load sample taken before the run's own jobs start (the reference stage
begins with calibration): the only one that measures other processes alone, so the only one
load_warning is applied to. The other samples (reference end = execution start, execution end) are
kept in meta.json for the record."""

SLOWDOWN_FLOOR = 0.95
"""A job sharing its CPUs cannot beat itself alone: a mean slowdown below 1 is noise. 5% below 1 is
allowed for the scheduler's whole-second times and timer jitter of short jobs."""

DYNAMICITY_CEILING = 1.05
"""Dynamicity is 1 when nothing slows down (eq. (2) of 001); above 1 only through slowdowns < 1, with
the same 5% allowance as SLOWDOWN_FLOOR."""

MIN_CI_SAMPLES = 3
"""Fewest samples for a 95% confidence interval: with 2, Student's t is 12.7 and the interval is
wider than any effect DJSB measures (often below zero), so it says nothing; show the samples."""


def coefficient_of_variation(values: Sequence[float]) -> float | None:
    """Sample standard deviation over mean (None with fewer than two values or a zero mean)."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean > 0 else None


def relative_drift(calibration: float, reference: float) -> float | None:
    """(reference - calibration) / calibration: how far the reference mean moved from the calibration
    run that did the same work (None when the calibration time is not positive)."""
    return (reference - calibration) / calibration if calibration > 0 else None


def reference_warnings(app: str, cv: float | None, drift: float | None) -> list[str]:
    """Warnings about an application's reference runs: their spread and their drift from calibration."""
    warnings = []
    if cv is not None and cv > CV_LIMIT:
        warnings.append(f"{app} reference runs vary by CV {cv:.2f} > {CV_LIMIT:g}")
    if drift is not None and abs(drift) > DRIFT_LIMIT:
        warnings.append(f"{app} reference mean drifted {drift:+.0%} from calibration "
                        f"(limit {DRIFT_LIMIT:.0%})")
    return warnings


def reference_notes(calibration: Mapping[str, Sequence[float]],
                    reference: Mapping[str, Sequence[float]]) -> list[str]:
    """Warnings about every application's reference runs, from the execution times of its calibration
    and reference jobs (an application without both is skipped)."""
    warnings = []
    for app, times in reference.items():
        if not times:
            continue
        cal = calibration.get(app) or []
        drift = relative_drift(statistics.fmean(cal), statistics.fmean(times)) if cal else None
        warnings += reference_warnings(app, coefficient_of_variation(times), drift)
    return warnings


def load_warning(load_1min: float, cpus: int) -> str | None:
    """A warning when the machine was busy (1-minute load average per CPU above LOAD_LIMIT)."""
    per_cpu = load_1min / max(1, cpus)
    if per_cpu > LOAD_LIMIT:
        return f"machine busy: load {load_1min:.2f} on {cpus} CPUs ({per_cpu:.2f} per CPU > {LOAD_LIMIT:g})"
    return None


def cell_warnings(metrics: Mapping[str, float]) -> list[str]:
    """Warnings about one (scenario, n_a) row's mean slowdowns and dynamicity."""
    warnings = [f"{name} {metrics[name]:.2f} < {SLOWDOWN_FLOOR:g}" for name in ("slowdown_s", "slowdown_a")
                if not math.isnan(metrics[name]) and metrics[name] < SLOWDOWN_FLOOR]
    if not math.isnan(metrics["dynamicity"]) and metrics["dynamicity"] > DYNAMICITY_CEILING:
        warnings.append(f"dynamicity {metrics['dynamicity']:.2f} > {DYNAMICITY_CEILING:g}")
    if warnings:
        warnings.append("points to noise (see the reference CV and the machine's load)")
    return warnings


def machine_load() -> tuple[float, int]:
    """This machine's 1-minute load average and CPU count (os.getloadavg; Unix)."""
    return round(os.getloadavg()[0], 2), os.cpu_count() or 1


class WorkNoise:
    """Seeded factors of mean 1 and coefficient of variation ``cv`` that scale a job's work.

    Lognormal (a product of many small independent slowdowns, always positive): ln factor is
    normal with sigma^2 = ln(1 + cv^2) and mean -sigma^2 / 2, so the factor's mean is exactly 1 and
    its CV exactly ``cv``. The same seed gives the same factors in the same order; ``cv`` 0 gives 1.
    """

    def __init__(self, cv: float, seed: int | str) -> None:
        if cv < 0:
            raise ValueError(f"a coefficient of variation is >= 0, got {cv}")
        self.sigma = math.sqrt(math.log1p(cv * cv))
        self._random = random.Random(seed)

    def factor(self) -> float:
        """The next factor."""
        if self.sigma == 0:
            return 1.0
        return math.exp(self._random.gauss(-self.sigma ** 2 / 2, self.sigma))
