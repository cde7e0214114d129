"""Backfill planners are registered classes chosen by name: the two of djsb/model/backfill/, the
``bf_will_run`` alias, and a planner registered from outside the package (here) that the model uses.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support import exact_job as job
from support import model_starts as starts
from support import registered, start_what_fits

from djsb.errors import ConfigError
from djsb.model import ClusterSpec, SchedulerConfig, Simulation
from djsb.model.backfill import BACKFILL_PLANNERS, BackfillPlanner, BackfillView
from djsb.model.backfill.profile_planner import ProfilePlanner
from djsb.model.backfill.will_run_planner import WillRunPlanner

EVENTS = SchedulerConfig(sched_interval=0, bf_interval=0, bf_resolution=0)
"""EASY with passes at every event and unrounded limits, the hand-worked cases' setting."""


class NoReservations(BackfillPlanner):
    """Starts every tested job that fits now and reserves nothing: the queue head gets no guarantee."""

    def run(self, view: BackfillView) -> None:
        start_what_fits(view, self.candidates(view))


@pytest.fixture
def outside_planner() -> Iterator[str]:
    """``NoReservations`` registered from this file for one test, under a name of its own."""
    with registered(BACKFILL_PLANNERS, "no_reservations", NoReservations) as name:
        yield name


def test_planners_are_chosen_through_the_registry() -> None:
    assert BACKFILL_PLANNERS.get("profile") is ProfilePlanner
    assert BACKFILL_PLANNERS.get("will_run") is WillRunPlanner
    cluster = ClusterSpec.homogeneous(1, 1)
    assert type(Simulation([], cluster, SchedulerConfig()).planner) is ProfilePlanner
    for config in (SchedulerConfig(bf_will_run=True), SchedulerConfig(bf_planner="will_run")):
        assert config.planner == "will_run"
        assert type(Simulation([], cluster, config).planner) is WillRunPlanner


def test_bf_will_run_is_an_alias_of_the_will_run_planner() -> None:
    # 1 node x 4 cores, 60 s resolution: the two spellings plan the same passes.
    jobs = [job(1, 0, 2, 100), job(2, 1, 4, 10), job(3, 2, 2, 50), job(4, 3, 1, 500)]
    cluster = ClusterSpec.homogeneous(1, 4)
    alias = SchedulerConfig(sched_interval=0, bf_interval=0, bf_will_run=True)
    named = SchedulerConfig(sched_interval=0, bf_interval=0, bf_planner="will_run")
    assert starts(jobs, cluster, alias) == starts(jobs, cluster, named)


def test_a_bad_planner_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown backfill planner 'lookahead'"):
        SchedulerConfig(bf_planner="lookahead")


def test_a_planner_registered_outside_the_package_is_used(outside_planner: str) -> None:
    # 1 node x 4 cores. J1 (2 cores) runs 0-100. J2 (4 cores, t=1) must wait for 100, and blocks
    # the main pass. J3 (2 cores, t=2, runs 200) fits now but would hold 2 cores past 100:
    # EASY reserves 100 for J2, so J3 waits for J2's end (110); without reservations J3 starts at 2
    # and J2 waits for J3's end (202).
    jobs = [job(1, 0, 2, 100), job(2, 1, 4, 10), job(3, 2, 2, 200)]
    cluster = ClusterSpec.homogeneous(1, 4)
    assert starts(jobs, cluster, EVENTS) == {1: 0, 2: 100, 3: 110}
    config = SchedulerConfig(sched_interval=0, bf_interval=0, bf_resolution=0, bf_planner=outside_planner)
    assert type(Simulation([], cluster, config).planner) is NoReservations
    assert starts(jobs, cluster, config) == {1: 0, 2: 202, 3: 2}


def test_an_outside_planner_cannot_go_with_bf_will_run(outside_planner: str) -> None:
    with pytest.raises(ConfigError, match="bf_will_run is bf_planner: will_run"):
        SchedulerConfig(bf_will_run=True, bf_planner=outside_planner)
