"""A replay against its recorded history (djsb/report/replay_error.py), on cases worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ks_2samp

from djsb.report.replay_error import (
    breakdown,
    job_errors,
    ks_statistic,
    moving_average_mape,
    moving_average_waits,
    recorded_frame,
    size_class,
    summary,
)
from djsb.workloads.job import RecordedOutcome, TraceJob


def four_jobs() -> pd.DataFrame:
    """J1 submitted at 0 started at 0 by the main pass (model: 10), J2 at 10 started at 30 by backfill
    (model: 20, backfilled), J3 at 20 started at 20 by backfill (model: 20 by its main pass), J4 at 30
    started at 40 (the model never started it). J1, J2 in partition a; J3, J4 in b. J2 was held by
    its QoS's MaxJobsPerUser on both sides, J3 by GrpJobs in the model only."""
    jobs = [TraceJob(1, 0.0, 5.0, 1, partition="a"), TraceJob(2, 10.0, 5.0, 4, partition="a"),
            TraceJob(3, 20.0, 5.0, 8, partition="b"), TraceJob(4, 30.0, 5.0, 1, partition="b")]
    recorded = {1: RecordedOutcome(0.0, started_by="main", reason="None"),
                2: RecordedOutcome(30.0, started_by="backfill", reason="QOSMaxJobsPerUserLimit"),
                3: RecordedOutcome(20.0, started_by="backfill", reason="None"),
                4: RecordedOutcome(40.0, started_by="main", reason="None")}
    simulated = pd.DataFrame({"job_id": [1, 2, 3], "start": [10.0, 20.0, 20.0],
                              "backfilled": [False, True, False],
                              "sacct_reason": ["None", "QOSMaxJobsPerUserLimit", "QOSGrpJobsLimit"]})
    return job_errors(recorded_frame(jobs, recorded), simulated)


def test_each_jobs_errors() -> None:
    errors = four_jobs().set_index("job_id")
    assert errors["recorded_wait"].tolist() == [0.0, 20.0, 0.0, 10.0]
    assert errors["simulated_wait"].tolist()[:3] == [10.0, 10.0, 0.0]
    assert errors["start_error"].tolist()[:3] == [10.0, -10.0, 0.0]
    assert pd.isna(errors.loc[4, "start_error"]) and pd.isna(errors.loc[4, "simulated_pass"])
    assert errors["simulated_pass"].tolist()[:3] == ["main", "backfill", "main"]
    assert errors["size"].tolist() == ["1", "2-4", "5-16", "1"]


def test_the_headline_figures() -> None:
    figures = summary(four_jobs(), window=15.0, step=5.0)
    # J4 was never started by the model: counted apart, left out of every error
    assert (figures["jobs"], figures["not_started"]) == (3, 1)
    assert figures["recorded_mean_wait"] == pytest.approx(20 / 3)
    assert figures["simulated_mean_wait"] == pytest.approx(20 / 3)
    assert figures["mean_start_error"] == 0.0
    assert figures["mean_abs_start_error"] == pytest.approx(20 / 3)
    # J1 main = main, J2 backfill = backfill, J3 backfill != main
    assert figures["pass_agreement"] == pytest.approx(2 / 3)
    # waits recorded {0, 20, 0}, simulated {10, 10, 0}: the ECDFs differ by 1/3 on [0, 20)
    assert figures["ks_wait"] == pytest.approx(1 / 3)
    assert figures["moving_average_mape"] == pytest.approx(0.5)
    # J2 held for the same reason on both sides, J3 only in the model, J1 by none: 1 of 2
    assert figures["reason_agreement"] == pytest.approx(1 / 2)


def test_jobs_of_a_model_that_kept_no_reason_have_no_reason_agreement() -> None:
    errors = four_jobs().drop(columns="simulated_reason")
    simulated = pd.DataFrame({"job_id": [1, 2, 3], "start": [10.0, 20.0, 20.0], "backfilled": [False, True, False]})
    errors = job_errors(errors.drop(columns=["simulated_start", "simulated_wait", "start_error", "simulated_pass"]),
                        simulated)
    assert errors["simulated_reason"].isna().all()
    # every simulated reason missing is None: only J2's recorded one holds, and disagrees
    assert summary(errors, window=15.0, step=5.0)["reason_agreement"] == 0.0


def test_moving_average_waits_over_a_window() -> None:
    # the started jobs are submitted at 0, 10, 20; window 15, every 5 from 0 + 15 to the last submit:
    # at 15 the jobs of (0, 15] are J2 alone (recorded 20, simulated 10); at 20, (5, 20] holds J2 and
    # J3 (recorded 10, simulated 5): both 50 % off, so the MAPE is 0.5
    averages = moving_average_waits(four_jobs(), window=15.0, step=5.0)
    assert averages.index.tolist() == [15.0, 20.0]
    assert averages["recorded"].tolist() == [20.0, 10.0]
    assert averages["simulated"].tolist() == [10.0, 5.0]
    assert averages["jobs"].tolist() == [1, 2]
    assert moving_average_mape(averages) == pytest.approx(0.5)


def test_an_instant_with_no_recorded_wait_is_left_out_of_the_mape() -> None:
    averages = pd.DataFrame({"recorded": [0.0, 10.0], "simulated": [5.0, 12.0], "jobs": [1, 1]})
    assert moving_average_mape(averages) == pytest.approx(0.2)
    assert math.isnan(moving_average_mape(averages.iloc[:1]))


def test_a_bad_window_is_refused() -> None:
    with pytest.raises(ValueError, match="window and step must be > 0"):
        moving_average_waits(four_jobs(), window=0.0, step=5.0)


def test_the_breakdown_by_partition() -> None:
    table = breakdown(four_jobs(), "partition", window=15.0, step=5.0)
    assert table.loc["a", "jobs"] == 2 and table.loc["a", "mean_start_error"] == 0.0
    assert table.loc["a", "mean_abs_start_error"] == 10.0
    assert (table.loc["b", "jobs"], table.loc["b", "not_started"]) == (1, 1)


@pytest.mark.parametrize(("cpus", "label"), [(1, "1"), (2, "2-4"), (4, "2-4"), (5, "5-16"), (64, "17-64"),
                                              (256, "65-256"), (257, ">256")])
def test_size_classes(cpus: int, label: str) -> None:
    assert size_class(cpus) == label


# scipy's exact p-value may give up on large samples and warn: only its statistic is compared
@pytest.mark.filterwarnings("ignore:ks_2samp. Exact calculation unsuccessful:RuntimeWarning")
@pytest.mark.parametrize(("n1", "n2", "values"), [(7, 5, 4), (300, 200, 50), (3000, 2000, 10_000),
                                                  (12_000, 9_000, 100), (1, 1, 3)])
def test_ks_statistic_is_scipys_ks_2samp_statistic(n1: int, n2: int, values: int) -> None:
    # an independent oracle: scipy computes the same D (ties from few distinct values; samples above
    # and below the 10,000 at which scipy stops rounding D for its exact p-value), missing values dropped
    draw = np.random.default_rng(n1 * 7 + n2)
    for _ in range(20):
        a = pd.Series(draw.integers(0, values, n1).astype(float))
        b = pd.Series(draw.integers(0, values, n2).astype(float))
        a[a == 0] = math.nan
        expected = ks_2samp(a.dropna(), b.dropna()).statistic if a.notna().any() else math.nan
        assert ks_statistic(a, b) == pytest.approx(expected, abs=1e-15, nan_ok=True)
