"""The model's replays with its passes drawn within their sdiag brackets (djsb/calibrate/watch_draws.py)."""

from __future__ import annotations

import random

import pandas as pd

from djsb.calibrate.compare import Comparison
from djsb.calibrate.watch_draws import drawn_passes, spread_figures, spread_line
from djsb.model import ClusterSpec, SchedulerConfig, Simulation, StartState
from djsb.workloads.job import TraceJob

SEEN = pd.DataFrame([("main", 1.0, 0.05), ("main", 2.0, 0.1), ("backfill", 1.5, 0.0), ("priority", 7.0, 0.2)],
                    columns=["scheduler", "time", "uncertainty"])


def test_each_pass_is_drawn_within_its_bracket_and_the_draws_are_seeded() -> None:
    drawn = drawn_passes(SEEN, ["main", "backfill"], random.Random(3))
    assert set(drawn) == {"main", "backfill"}  # the decay thread's runs are not scheduler passes
    first, second = drawn["main"]
    assert 0.95 <= first <= 1.05 and 1.9 <= second <= 2.1
    assert drawn["backfill"] == [1.5]  # a pass known exactly stays where it was seen
    assert drawn_passes(SEEN, ["main", "backfill"], random.Random(3)) == drawn
    assert drawn_passes(SEEN, ["main", "backfill"], random.Random(4))["main"] != drawn["main"]
    assert drawn_passes(SEEN, ["main", "backfill"], random.Random(3))["main"] != [1.0, 2.0]
    # a scheduler never seen gets no list (the model then runs its own passes for it)
    assert drawn_passes(SEEN[SEEN["scheduler"] == "main"], ["main", "backfill"], random.Random(3)).keys() == {"main"}


def test_which_side_of_a_pass_a_submission_falls_decides_its_start() -> None:
    # One core: job 1 runs 0.5 to 5.5; job 2's sbatch returned at 10.02, and the main scheduler
    # was seen passing at 0.5, at 10.0 +- 0.05 and at 15. A draw of the middle pass after 10.02 (30 % of
    # its bracket) starts job 2 there, one before it at 15: the replay's outcome moves by 5 s
    # within the watch's resolution alone.
    jobs = [TraceJob(1, 0.0, 5.0, 1, requested_time=60.0), TraceJob(2, 10.02, 5.0, 1, requested_time=60.0)]
    seen = pd.DataFrame([("main", 0.5, 0.0), ("main", 10.0, 0.05), ("main", 15.0, 0.0)],
                        columns=["scheduler", "time", "uncertainty"])
    config = SchedulerConfig(backfill="none", sched_interval=60, bf_interval=30, start_latency=0)
    rng = random.Random(1)
    starts = set()
    for _ in range(40):
        passes = drawn_passes(seen, ["main"], rng)
        result = Simulation(jobs, ClusterSpec.homogeneous(1, 1), config, start=StartState(pass_times=passes)).run()
        start = dict(zip(result.jobs["job_id"], result.jobs["start"], strict=True))[2]
        middle = passes["main"][1]
        assert start == (middle if middle >= 10.02 else 15.0)
        starts.add(start == 15.0)
    assert starts == {True, False}


def comparison(tau: float, error: float, worst: float, wait_b: float) -> Comparison:
    return Comparison(jobs=10, tau=tau, start_error_mean=error, start_error_median=0.5, start_error_max=worst,
                      mean_wait_a=20.0, mean_wait_b=wait_b, backfilled_a=(), backfilled_b=())


def test_the_range_of_the_drawn_replays_figures() -> None:
    # mean wait errors by hand: 19/20 - 1 = -5 %, 23/20 - 1 = +15 %, 21/20 - 1 = +5 %
    drawn = [comparison(0.98, 1.5, 9.0, 19.0), comparison(0.95, 3.0, 30.0, 23.0), comparison(0.99, 2.0, 12.0, 21.0)]
    figures = spread_figures(drawn)
    assert figures["tau"] == (0.95, 0.99)
    assert figures["start_error_mean"] == (1.5, 3.0)
    assert figures["start_error_max"] == (9.0, 30.0)
    low, high = figures["mean_wait_error"]
    assert abs(low + 0.05) < 1e-12 and abs(high - 0.15) < 1e-12
    assert spread_line("model vs slurm_1 with its passes drawn", drawn) == (
        "model vs slurm_1 with its passes drawn (3 replays, every pass drawn within its sdiag bracket): "
        "tau 0.95 to 0.99, start error mean 1.5 to 3.0 s, max 9.0 to 30.0 s; mean wait -5.0% to +15.0%")
