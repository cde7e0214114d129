"""The DJSB metrics of paper 001 (sec. 2.4-2.5 and 4.3) as pure functions.

Times are seconds. A *cell* is one (scenario, number of analytics n_a, sample) of the execution
stage: one simulation plus its n_a analytics.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from djsb.scenarios import scenario as get_scenario


def wait_time(submit: float, start: float) -> float:
    """Time from submission to start (paper 001 sec. 2.4, metric 1)."""
    return start - submit


def execution_time(start: float, end: float) -> float:
    """Time from start to completion (metric 2)."""
    return end - start


def response_time(submit: float, end: float) -> float:
    """Time from submission to completion, wait + execution (metric 3)."""
    return end - submit


def slowdown(t_sharing: float, t_ref_alone: float) -> float:
    """Eq. (1) of 001: response time while sharing over the mean execution time alone."""
    if t_ref_alone <= 0:
        raise ValueError("the reference execution time must be positive")
    return t_sharing / t_ref_alone


def weights(scenario: str, n_cpus_s: int, n_cpus_a: int, t_s: float, t_a: float,
            n_a: int) -> tuple[float, float]:
    """(w_s, w_a), the simulation's and analytics' weights: eq. (3)-(8) of 001.

    ``t_s`` is the simulation's execution time in the scenario and ``t_a`` the analytics' (the
    mean over the n_a analytics of the cell). Each scenario owns its formula
    (djsb/scenarios/); an unknown scenario is a ValueError.
    """
    return get_scenario(scenario).weights(n_cpus_s, n_cpus_a, t_s, t_a, n_a)


def dynamicity(w_s: float, w_a: float, slowdown_s: float, slowdown_a: float) -> float:
    """Eq. (2) of 001: the inverse weighted geometric mean of the two slowdowns.

    Undefined (NaN) when the weights do not have a positive sum: the scenario's weights charge the
    simulation for the CPU-time its analytics took from it, which can exceed what it held when the
    analytics outlived it (eq. (5)-(8)); no mean of the slowdowns is then a measurement."""
    if w_s + w_a <= 0:
        return math.nan
    return math.exp(-(w_s * math.log(slowdown_s) + w_a * math.log(slowdown_a)) / (w_s + w_a))


@dataclass(frozen=True)
class CellMetrics:
    """The metrics of one execution-stage cell."""

    slowdown_s: float
    slowdown_a: float
    t_s: float
    t_a: float
    w_s: float
    w_a: float
    dynamicity: float


def cell_metrics(scenario: str, *, n_cpus_s: int, n_cpus_a: int, sim_response: float, sim_exec: float,
                 analytics_response: Sequence[float], analytics_exec: Sequence[float],
                 t_ref_s: float, t_ref_a: float) -> CellMetrics:
    """Slowdowns, weights and dynamicity of one cell from its jobs' times.

    The analytics' slowdown is the mean of the n_a analytics' slowdowns, as the paper reports it
    ("we present average of all the analytics run within a single experiment", sec. 4.4).
    """
    if not analytics_exec or len(analytics_exec) != len(analytics_response):
        raise ValueError("a cell needs at least one analytics with both times")
    n_a = len(analytics_exec)
    sd_s = slowdown(sim_response, t_ref_s)
    sd_a = statistics.fmean(slowdown(r, t_ref_a) for r in analytics_response)
    t_a = statistics.fmean(analytics_exec)
    w_s, w_a = weights(scenario, n_cpus_s, n_cpus_a, sim_exec, t_a, n_a)
    return CellMetrics(sd_s, sd_a, sim_exec, t_a, w_s, w_a, dynamicity(w_s, w_a, sd_s, sd_a))


def mean_ci95(values: Sequence[float]) -> tuple[float, float]:
    """The mean and the half-width of its 95% confidence interval (Student t; 0 for one value).

    Both are NaN when a value is (a metric undefined in one sample leaves the mean undefined)."""
    if not values:
        raise ValueError("no values")
    mean = statistics.fmean(values)
    if math.isnan(mean):
        return math.nan, math.nan
    if len(values) < 2:
        return mean, 0.0
    import scipy.stats  # half a second to import: only when an interval is asked for

    t = float(scipy.stats.t.ppf(0.975, len(values) - 1))  # two-sided 95 %
    return mean, t * statistics.stdev(values) / math.sqrt(len(values))
