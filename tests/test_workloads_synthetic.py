"""Synthetic generators: Poisson/exponential (M/M/c) and paper 004's bounded-lognormal static workload.

Every expected value is computed here from the distribution's parameters with math (erf, bisection), not
with the code under test; confidence intervals are worked in the tests (z = 3.29: two-sided 99.9 %).
"""

from __future__ import annotations

import math
import random
import statistics
from itertools import pairwise

import pytest

from djsb.errors import InputError
from djsb.workloads.synthetic import (
    LUMI_CPUS_BOUNDS,
    LUMI_CPUS_LOGNORM,
    LUMI_RUNTIME_BOUNDS,
    LUMI_RUNTIME_LOGNORM,
    LognormalFit,
    bounded_lognormal,
    poisson_exponential,
    static_lognormal_004,
)

Z999 = 3.29  # two-sided 99.9 % normal quantile

# --------------------------------------------------------------------------------- Poisson / M/M/c


def test_poisson_interarrival_mean_within_its_confidence_interval() -> None:
    lam, mu, n = 0.5, 0.2, 20000
    jobs = poisson_exponential(n, lam, mu, seed=11)
    gaps = [jobs[0].submit] + [b.submit - a.submit for a, b in pairwise(jobs)]
    # Exponential(lambda): mean 1/lambda = 2 s, standard deviation 1/lambda too, so the sample mean of n
    # gaps has standard error (1/lambda)/sqrt(n) = 2/141.4 = 0.01414 s: 99.9 % CI 2 +- 0.0465 s.
    half_width = Z999 * (1 / lam) / math.sqrt(n)
    assert abs(statistics.fmean(gaps) - 1 / lam) < half_width
    # Service times: mean 1/mu = 5 s, same reasoning.
    runs = [j.run_time for j in jobs]
    assert abs(statistics.fmean(runs) - 1 / mu) < Z999 * (1 / mu) / math.sqrt(n)
    # Memorylessness / shape: P(gap > 1/lambda) = e^-1 = 0.3679; binomial CI.
    p = math.exp(-1)
    above = sum(g > 1 / lam for g in gaps)
    assert abs(above - n * p) < Z999 * math.sqrt(n * p * (1 - p))


def test_poisson_job_shape() -> None:
    jobs = poisson_exponential(500, 2.0, 1.0, seed=3)
    assert [j.job_id for j in jobs] == list(range(1, 501))
    assert jobs[0].submit > 0
    assert all(a.submit < b.submit for a, b in pairwise(jobs))
    assert all(j.cpus == 1 and j.requested_time == j.run_time and j.run_time > 0 for j in jobs)
    assert {(j.user, j.account) for j in jobs} == {("u0", "a0")}
    assert all(j.cpus == 4 for j in poisson_exponential(10, 2.0, 1.0, cpus=4, seed=3))
    assert all(j.requested_time is None
               for j in poisson_exponential(10, 2.0, 1.0, seed=3, exact_requested_time=False))


def test_poisson_is_deterministic_with_common_random_numbers() -> None:
    a = poisson_exponential(100, 1.0, 1.0, seed=5)
    assert a == poisson_exponential(100, 1.0, 1.0, seed=5)
    b = poisson_exponential(100, 1.0, 3.0, seed=5)
    assert [j.submit for j in a] == [j.submit for j in b]  # arrivals do not depend on the service rate
    assert [j.run_time * 1.0 for j in a] == pytest.approx([j.run_time * 3.0 for j in b])
    assert a != poisson_exponential(100, 1.0, 1.0, seed=6)


@pytest.mark.parametrize(("kwargs", "key"), [
    ({"n_jobs": -1}, "n_jobs"), ({"arrival_rate": 0.0}, "arrival_rate"),
    ({"service_rate": -2.0}, "service_rate"), ({"cpus": 0}, "cpus"),
])
def test_poisson_rejects_bad_parameters(kwargs: dict, key: str) -> None:
    args = {"n_jobs": 3, "arrival_rate": 1.0, "service_rate": 1.0, "seed": 0} | kwargs
    with pytest.raises(InputError) as err:
        poisson_exponential(**args)
    assert err.value.key == key


# --------------------------------------------------------------------- bounded lognormal (paper 004)


def phi(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def lognorm_cdf(x: float, s: float, loc: float, scale: float) -> float:
    """SciPy lognorm(s, loc, scale) cdf, eq. 3.1 of paper 004 shifted and scaled."""
    return 0.0 if x <= loc else phi(math.log((x - loc) / scale) / s)


def lognorm_pdf(x: float, s: float, loc: float, scale: float) -> float:
    if x <= loc:
        return 0.0
    y = (x - loc) / scale
    return math.exp(-(math.log(y) ** 2) / (2 * s * s)) / (y * s * math.sqrt(2 * math.pi)) / scale


def truncated_quantile(p: float, s: float, loc: float, scale: float, low: float, high: float) -> float:
    """x with P(X <= x | low <= X <= high) = p, by bisection on the cdf (no inverse normal used)."""
    f_low, f_high = lognorm_cdf(low, s, loc, scale), lognorm_cdf(high, s, loc, scale)
    target = f_low + p * (f_high - f_low)
    a, b = max(low, loc), high
    for _ in range(200):
        mid = (a + b) / 2
        if lognorm_cdf(mid, s, loc, scale) < target:
            a = mid
        else:
            b = mid
    return (a + b) / 2


def truncated_pdf(x: float, s: float, loc: float, scale: float, low: float, high: float) -> float:
    mass = lognorm_cdf(high, s, loc, scale) - lognorm_cdf(low, s, loc, scale)
    return lognorm_pdf(x, s, loc, scale) / mass


# Table 3.10 (CPUs) and 3.11 (run time) of paper 004, bounded by Tables 3.5 and 3.6 (min, max).
CPUS = (1.7195, -9.8930e-1, 1.9930e2, 1.0, 325120.0)
RUNTIME = (2.6766, 9.5007e-1, 1.6506e2, 0.0, 4604100.0)


def test_generator_constants_are_the_paper_tables() -> None:
    assert (LUMI_CPUS_LOGNORM.s, LUMI_CPUS_LOGNORM.loc, LUMI_CPUS_LOGNORM.scale, *LUMI_CPUS_BOUNDS) == CPUS
    assert (LUMI_RUNTIME_LOGNORM.s, LUMI_RUNTIME_LOGNORM.loc, LUMI_RUNTIME_LOGNORM.scale,
            *LUMI_RUNTIME_BOUNDS) == RUNTIME


@pytest.mark.parametrize(("fit", "params"), [
    (LUMI_CPUS_LOGNORM, CPUS),
    (LUMI_RUNTIME_LOGNORM, RUNTIME),
    (LUMI_CPUS_LOGNORM, (*CPUS[:3], 100.0, 200.0)),  # heavily truncated: both bounds bite
    (LUMI_RUNTIME_LOGNORM, (*RUNTIME[:3], 3600.0, 172800.0)),  # only the upper tail (1 h .. 2 days)
])
def test_bounded_lognormal_within_bounds_and_median(fit: LognormalFit, params: tuple) -> None:
    s, loc, scale, low, high = params
    n = 20001
    xs = bounded_lognormal(fit, low, high, n, random.Random(2024))
    assert all(low <= x <= high for x in xs)
    m = truncated_quantile(0.5, s, loc, scale, low, high)
    # Count below the true median ~ Binomial(n, 1/2): 99.9 % CI n/2 +- 3.29 sqrt(n)/2.
    below = sum(x <= m for x in xs)
    assert abs(below - n / 2) < Z999 * math.sqrt(n) / 2
    # Sample median: asymptotic standard error 1 / (2 f(m) sqrt(n)).
    se = 1.0 / (2.0 * truncated_pdf(m, s, loc, scale, low, high) * math.sqrt(n))
    assert abs(statistics.median(xs) - m) < Z999 * se


def test_truncated_median_worked_example() -> None:
    # CPUs: F(1) = Phi(ln(1.9893/199.30)/1.7195) = Phi(-2.6794) = 0.00369 and F(325120) ~ 0.999991, so the
    # median solves F(x) = (0.00369 + 0.999991)/2 = 0.50184: z = 0.00461, x = -0.9893 + 199.30 e^(0.00793)
    # = 199.9, close to the untruncated median loc + scale = 198.31.
    m = truncated_quantile(0.5, *CPUS)
    assert m == pytest.approx(199.9, abs=0.1)
    # Run time: F(0) = 0 (below loc); F(4604100) = Phi(3.822) = 0.999934: median 165.97 s.
    assert truncated_quantile(0.5, *RUNTIME) == pytest.approx(165.97, abs=0.05)


def test_static_004_jobs() -> None:
    jobs = static_lognormal_004(5000, seed=1)
    assert len(jobs) == 5000 and [j.job_id for j in jobs] == list(range(1, 5001))
    assert all(1 <= j.cpus <= 325120 and isinstance(j.cpus, int) for j in jobs)
    assert all(0 <= j.run_time <= 4604100 and j.run_time == int(j.run_time) for j in jobs)
    assert all(j.submit == 0.0 for j in jobs)  # static: all submitted at once
    users = {j.user for j in jobs}
    assert users <= {f"u{k}" for k in range(100)} and len(users) == 100  # 5000 draws hit all 100
    group_of: dict[str, str] = {}
    for j in jobs:
        assert group_of.setdefault(j.user, j.account) == j.account  # one group per user
    assert set(group_of.values()) <= {f"g{k}" for k in range(100)}
    # Time limit: run time rounded up to whole minutes, at least 1 minute.
    assert all(j.requested_time == max(60.0, math.ceil(j.run_time / 60) * 60) for j in jobs)
    assert static_lognormal_004(50, seed=1) == jobs[:50]
    assert static_lognormal_004(50, seed=2) != jobs[:50]


@pytest.mark.parametrize(("attr", "params", "paper"), [
    # Table 3.12 (allocated CPUs of the generated workloads, 10 x 1000 jobs): 25 % 63, 50 % 199, 75 % 650
    ("cpus", CPUS, {0.25: 63.0, 0.5: 199.0, 0.75: 650.0}),
    # Table 3.13 (run time, s): 25 % 25, 50 % 155, 75 % 940.25
    ("run_time", RUNTIME, {0.25: 25.0, 0.5: 155.0, 0.75: 940.25}),
])
def test_static_004_reproduces_the_papers_generated_quartiles(attr: str, params: tuple,
                                                              paper: dict[float, float]) -> None:
    # Like the paper: 10 workloads of 1000 jobs, statistics aggregated.
    values = sorted(getattr(j, attr) for seed in range(10) for j in static_lognormal_004(1000, seed=seed))
    n = len(values)
    ours = dict(zip((0.25, 0.5, 0.75), statistics.quantiles(values, n=4), strict=True))
    for p, theirs in paper.items():
        x_p = truncated_quantile(p, *params)
        # Sample p-quantile standard error sqrt(p(1-p)/n) / f(x_p); two independent samples of n = 10000
        # (ours and the paper's) differ by sqrt(2) times that; +1 for the cast to integer.
        se = math.sqrt(p * (1 - p) / n) / truncated_pdf(x_p, *params)
        assert abs(ours[p] - theirs) < 4 * math.sqrt(2) * se + 1, (p, ours[p], theirs, x_p)
        assert abs(ours[p] - x_p) < Z999 * se + 1


def test_static_004_rejects_bad_parameters() -> None:
    with pytest.raises(InputError) as err:
        static_lognormal_004(10, seed=0, requested_time_factor=0.5)
    assert err.value.key == "requested_time_factor"
    with pytest.raises(InputError):
        static_lognormal_004(10, seed=0, cpus_bounds=(5.0, 5.0))
