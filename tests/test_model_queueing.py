"""M/M/1 and M/M/2 mean waits against queueing theory, as in Table 1 of paper 003.

Paper 003 validates its simulator on M/M/c queues (lambda 0.5 / 0.7 / 0.9, mu 1, FCFS, 30 runs,
95% confidence interval of the mean queue waiting time). Theory: Erlang C,
Wq = C(c, a) / (c mu - lambda) with a = lambda / mu and
C(c, a) = (a^c / c!) (c / (c - a)) / (sum_{k<c} a^k / k! + (a^c / c!) (c / (c - a))),
computed here; M/M/1 reduces to Wq = rho / (mu - lambda): 1.00, 2.33, 9.00 (Table 1 of 003).
The model runs c one-CPU "servers" (one node of c cores), FIFO, no backfill, passes on every
event. The first 10% of jobs of each run are dropped as warm-up (the queue starts empty).
"""

from __future__ import annotations

import math
import statistics

import pytest

from djsb.model import ClusterSpec, SchedulerConfig, Simulation
from djsb.workloads.synthetic import poisson_exponential

SEEDS = range(30)
T_975_29 = 2.045  # Student t quantile, 29 degrees of freedom, 97.5%


def erlang_c_wait(c: int, lam: float, mu: float) -> float:
    a = lam / mu
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top) / (c * mu - lam)


def test_erlang_c_matches_table_1_of_paper_003() -> None:
    # M/M/1: rho / (mu - lambda). M/M/2 at lambda 0.5: C = (0.125 / 0.75) / (1.5 + 1/6) = 0.1,
    # Wq = 0.1 / 1.5 = 0.0667 (Table 1: 0.06 - 0.07).
    assert [round(erlang_c_wait(1, lam, 1.0), 2) for lam in (0.5, 0.7, 0.9)] == [1.0, 2.33, 9.0]
    assert erlang_c_wait(2, 0.5, 1.0) == pytest.approx(0.1 / 1.5)


def mean_wait(c: int, lam: float, n_jobs: int, seed: int) -> float:
    jobs = poisson_exponential(n_jobs, lam, 1.0, seed=seed)
    config = SchedulerConfig(backfill="none", sched_interval=0, default_queue_depth=10**6)
    result = Simulation(jobs, ClusterSpec.homogeneous(1, c), config, seed=seed).run()
    waits = result.jobs.sort_values("submit")["wait"].to_numpy()
    return float(waits[n_jobs // 10:].mean())


@pytest.mark.parametrize("c, lam, n_jobs", [
    (1, 0.5, 2000), (1, 0.7, 2000), (2, 0.5, 2000), (2, 0.7, 2000), (2, 0.9, 2000),
    (1, 0.9, 5000),
])
def test_mean_wait_inside_the_95_percent_interval(c: int, lam: float, n_jobs: int) -> None:
    means = [mean_wait(c, lam, n_jobs, seed) for seed in SEEDS]
    centre = statistics.fmean(means)
    half = T_975_29 * statistics.stdev(means) / math.sqrt(len(means))
    theory = erlang_c_wait(c, lam, 1.0)
    assert centre - half <= theory <= centre + half, (centre, half, theory)
