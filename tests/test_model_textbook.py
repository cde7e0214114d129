"""The ``textbook`` preset is Mu'alem & Feitelson's EASY (issue 9 item 6).

Slurm's defaults drop the queue head's reservation when its start lies beyond bf_window (1 day)
from now, so a long job lets later jobs jump it; textbook EASY keeps the reservation however far
away it is. Expected starts are worked by hand in the comments.
"""

from __future__ import annotations

import dataclasses
import math

from djsb.model import ClusterSpec, InvariantChecker, SchedulerConfig, Simulation
from djsb.model.priority import preset
from djsb.workloads.job import TraceJob

HOUR = 3600.0
# 4 cores. J1: 2 cores for 30 h, submitted at 0. J2: all 4 cores for 60 h at 1 s: it can start
# only when J1 ends, at 30 h = 108,000 s. J3: 2 cores for 40 h at 2 s: it fits the 2 idle cores now.
JOBS = [TraceJob(1, 0.0, 30 * HOUR, 2, 30 * HOUR), TraceJob(2, 1.0, 60 * HOUR, 4, 60 * HOUR),
        TraceJob(3, 2.0, 40 * HOUR, 2, 40 * HOUR)]
CLUSTER = ClusterSpec.homogeneous(1, 4)


def starts(config: SchedulerConfig) -> dict[int, float]:
    result = Simulation(JOBS, CLUSTER, config, checker=InvariantChecker(CLUSTER)).run()
    return dict(zip(result.jobs["job_id"], result.jobs["start"], strict=True))


def test_the_textbook_preset_is_fifo_with_unlimited_easy() -> None:
    priority, config = preset("textbook")
    assert priority.name == "fifo" and config.backfill == "easy"
    assert (config.sched_interval, config.bf_interval, config.bf_resolution) == (0, 0, 0)
    assert config.bf_window == config.bf_max_job_test == config.default_queue_depth == math.inf


def test_textbook_easy_keeps_a_reservation_beyond_one_day() -> None:
    # J2's reservation is at 108,000 s. J3 would hold 2 cores over [2, 144,002), overlapping J2's
    # 4 cores from 108,000: it may not backfill. J1 ends at 108,000 and J2 starts then; J3 starts
    # when J2 ends, 108,000 + 216,000 = 324,000.
    assert starts(preset("textbook")[1]) == {1: 0.0, 2: 108_000.0, 3: 324_000.0}


def test_slurms_one_day_window_loses_it() -> None:
    # The same passes but Slurm's bf_window of 86,400 s: at 1 s and 2 s J2's start (108,000) is
    # beyond now + 86,400, so it gets no reservation and J3 backfills at 2 s, ending at
    # 2 + 144,000 = 144,002. At 108,000 only J1's 2 cores come back: J2 waits for J3, 144,002.
    slurm_window = dataclasses.replace(preset("textbook")[1], bf_window=86_400.0)
    assert starts(slurm_window) == {1: 0.0, 2: 144_002.0, 3: 2.0}
