"""Paper 001's metrics, checked against values worked by hand from eq. (1)-(8)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from djsb import benchmark_metrics
from djsb.report.summary import sample_table, summary_table


def test_time_metrics_follow_their_definitions() -> None:
    # submitted at 100, started at 130, ended at 250 (sec. 2.4, metrics 1-3)
    assert benchmark_metrics.wait_time(100, 130) == 30
    assert benchmark_metrics.execution_time(130, 250) == 120
    assert benchmark_metrics.response_time(100, 250) == 150


def test_slowdown_eq1() -> None:
    # 150 s sharing over 120 s alone
    assert benchmark_metrics.slowdown(150, 120) == pytest.approx(1.25)
    with pytest.raises(ValueError):
        benchmark_metrics.slowdown(1, 0)


# N_s = 4 CPUs, N_a = 2 CPUs, T_s = 120 s, T_a = 20 s, n_a = 2, worked by hand:
#   oversubscription (3)-(4): w_s = 4*120 - 0.5*2*2*20 = 440,  w_a = 0.5*2*20 = 20
#   stop&continue    (5)-(6): w_s = 4*(120 - 2*20)    = 320,  w_a = 2*20     = 40
#   dynamic          (7)-(8): w_s = 4*120 - 2*2*20     = 400,  w_a = 2*20     = 40
@pytest.mark.parametrize(("scenario", "w_s", "w_a"), [
    ("oversubscription", 440.0, 20.0),
    ("stopcont", 320.0, 40.0),
    ("dynamic", 400.0, 40.0),
])
def test_weights_eq3_to_eq8(scenario: str, w_s: float, w_a: float) -> None:
    assert benchmark_metrics.weights(scenario, 4, 2, 120, 20, 2) == pytest.approx((w_s, w_a))


def test_weights_reject_unknown_scenario() -> None:
    with pytest.raises(ValueError):
        benchmark_metrics.weights("gang", 4, 2, 120, 20, 2)


def test_dynamicity_eq2_worked_value() -> None:
    # w_s=440, w_a=20, sd_s=1.2, sd_a=2.0:
    # (440*ln 1.2 + 20*ln 2)/460 = (80.22148 + 13.86294)/460 = 0.204531; exp(-0.204531) = 0.81503
    assert benchmark_metrics.dynamicity(440, 20, 1.2, 2.0) == pytest.approx(0.81503, abs=5e-5)


def test_dynamicity_is_inverse_weighted_geometric_mean() -> None:
    # an independent form of eq. (2): (sd_s^w_s * sd_a^w_a)^(-1/(w_s+w_a))
    w_s, w_a, sd_s, sd_a = 320.0, 40.0, 1.37, 0.91
    oracle = (sd_s ** w_s * sd_a ** w_a) ** (-1 / (w_s + w_a))
    assert benchmark_metrics.dynamicity(w_s, w_a, sd_s, sd_a) == pytest.approx(oracle)
    # equal slowdowns: the weights do not matter; no slowdown: dynamicity 1
    assert benchmark_metrics.dynamicity(3, 1000, 2.0, 2.0) == pytest.approx(0.5)
    assert benchmark_metrics.dynamicity(5, 7, 1.0, 1.0) == 1.0


def test_dynamicity_is_undefined_when_the_analytics_outlived_the_simulation() -> None:
    # stop&continue, eq. (5)-(6): N_s=2, N_a=1, T_s=1 s, T_a=3 s, n_a=1 -> w_s = 2 (1 - 3) = -4, w_a = 3;
    # the sum -1 is not a weighting, so eq. (2) has no value (and no traceback either)
    w_s, w_a = benchmark_metrics.weights("stopcont", 2, 1, 1.0, 3.0, 1)
    assert (w_s, w_a) == (-4.0, 3.0)
    assert math.isnan(benchmark_metrics.dynamicity(w_s, w_a, 1.5, 1.1))
    metrics = benchmark_metrics.cell_metrics("stopcont", n_cpus_s=2, n_cpus_a=1, sim_response=1.0, sim_exec=1.0,
                                             analytics_response=[3.0], analytics_exec=[3.0], t_ref_s=1.0,
                                             t_ref_a=3.0)
    assert math.isnan(metrics.dynamicity) and metrics.slowdown_s == 1.0


def test_mean_ci95_student_t() -> None:
    # [1, 2, 3]: mean 2, s = 1, t(0.975, 2) = 4.303 -> 4.303/sqrt(3) = 2.4843
    mean, half = benchmark_metrics.mean_ci95([1.0, 2.0, 3.0])
    assert mean == 2.0
    assert half == pytest.approx(4.303 / math.sqrt(3), abs=1e-3)  # the table rounds t to 3 decimals
    assert benchmark_metrics.mean_ci95([5.0]) == (5.0, 0.0)
    # beyond 30 degrees of freedom too: t_{0.975, 40} = 2.021 (standard tables), not the normal 1.960;
    # 41 values alternating 0 and 1 (and a last 0): mean 20/41, s = sqrt(20 * 21 / (41 * 40))
    values = [float(i % 2) for i in range(41)]
    mean, half = benchmark_metrics.mean_ci95(values)
    assert mean == pytest.approx(20 / 41)
    assert half == pytest.approx(2.021 * math.sqrt(20 * 21 / (41 * 40)) / math.sqrt(41), abs=1e-4)


def test_cell_metrics_from_job_times() -> None:
    # simulation: response 130 s, execution 120 s, alone 100 s -> sd_s = 1.3
    # analytics: responses 25 and 35 s alone 20 s -> slowdowns 1.25, 1.75, mean 1.5; T_a = mean(22, 30) = 26
    # stop&continue, N_s = 4, N_a = 2, n_a = 2: w_s = 4*(120 - 2*26) = 272, w_a = 2*26 = 52
    cell = benchmark_metrics.cell_metrics("stopcont", n_cpus_s=4, n_cpus_a=2, sim_response=130, sim_exec=120,
                                analytics_response=[25, 35], analytics_exec=[22, 30], t_ref_s=100, t_ref_a=20)
    assert cell.slowdown_s == pytest.approx(1.3)
    assert cell.slowdown_a == pytest.approx(1.5)
    assert (cell.w_s, cell.w_a) == pytest.approx((272, 52))
    expected = math.exp(-(272 * math.log(1.3) + 52 * math.log(1.5)) / 324)
    assert cell.dynamicity == pytest.approx(expected)


def _job(stage: str, scenario: str, n_a: int, sample: int, app: str, start: float, end: float,
         submit: float | None = None, cpus: int = 2) -> dict:
    submit = start if submit is None else submit
    return {"stage": stage, "scenario": scenario, "n_a": n_a, "sample": sample, "app": app, "state": "COMPLETED",
            "submit": submit, "start": start, "end": end, "exec": end - start, "response": end - submit,
            "cpus": cpus}


def test_summary_over_samples() -> None:
    jobs = pd.DataFrame([
        _job("reference", "", 0, 0, "simulation", 0, 10, cpus=2),
        _job("reference", "", 0, 0, "analytics", 10, 12, cpus=1),
        _job("reference", "", 0, 1, "simulation", 20, 30, cpus=2),
        _job("reference", "", 0, 1, "analytics", 30, 32, cpus=1),
        # sample 0: sim 12 s (sd 1.2), analytics 3 s (sd 1.5); sample 1: sim 14 s (1.4), analytics 4 s (2.0)
        _job("execution", "dynamic", 1, 0, "simulation", 100, 112, cpus=2),
        _job("execution", "dynamic", 1, 0, "analytics", 102, 105, cpus=1),
        _job("execution", "dynamic", 1, 1, "simulation", 200, 214, cpus=2),
        _job("execution", "dynamic", 1, 1, "analytics", 202, 206, cpus=1),
    ])
    samples = sample_table(jobs)
    assert samples["slowdown_s"].tolist() == pytest.approx([1.2, 1.4])
    assert samples["slowdown_a"].tolist() == pytest.approx([1.5, 2.0])
    # dynamic weights, sample 0: w_s = 2*12 - 1*1*3 = 21, w_a = 3
    assert samples["w_s"].iloc[0] == pytest.approx(21)
    assert samples["w_a"].iloc[0] == pytest.approx(3)
    summary = summary_table(samples)
    assert len(summary) == 1
    row = summary.iloc[0]
    assert row["slowdown_s"] == pytest.approx(1.3)
    # two samples 1.2 and 1.4: s = 0.141421, t(0.975, 1) = 12.706 -> 12.706*0.141421/sqrt(2) = 1.2706,
    # wider than the effect itself: summary.csv leaves a CI of fewer than 3 samples empty
    assert benchmark_metrics.mean_ci95([1.2, 1.4])[1] == pytest.approx(1.2706, abs=1e-4)
    assert math.isnan(row["slowdown_s_ci95"])
    assert row["samples"] == 2


def test_incomplete_cell_is_not_summarised() -> None:
    jobs = pd.DataFrame([
        _job("reference", "", 0, 0, "simulation", 0, 10),
        _job("reference", "", 0, 0, "analytics", 10, 12),
        _job("execution", "oversubscription", 2, 0, "simulation", 100, 112),
        _job("execution", "oversubscription", 2, 0, "analytics", 102, 105),
    ])
    assert sample_table(jobs).empty
