"""Advance reservations in the model (djsb/model/reservations.py), worked by hand.

Textbook EASY (``TEXTBOOK``: passes at every event, no rounding, jobs killed at their limit) with the
invariant checker on, on two nodes of 2 cores, n0 and n1, with n1 reserved over [100, 200). The rule
is Slurm 22.05's job_test_resv for a job asking no reservation (reservation.c): a job may not use a
reserved node if its run, [start, start + time limit), overlaps the window; a job whose partition is
all reserved is skipped with ReqNodeNotAvail (ESLURM_RESERVATION_MAINT) without blocking others.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from support import cluster_list_error

from djsb.model import TEXTBOOK, ClusterSpec, Simulation
from djsb.model.cluster_spec import PartitionSpec
from djsb.model.invariants import InvariantChecker
from djsb.model.reservations import AdvanceReservation, ReservationPlan
from djsb.model.result import SimulationResult
from djsb.workloads.job import TraceJob

KILL = dataclasses.replace(TEXTBOOK, extend_limit=False)
MAINT = AdvanceReservation("maint", "n1", 100.0, 100.0, ("MAINT", "IGNORE_JOBS"))


def job(job_id: int, submit: float, limit: float, cpus: int = 2, partition: str | None = None) -> TraceJob:
    return TraceJob(job_id, submit, limit, cpus, requested_time=limit, partition=partition)


def replay(jobs: list[TraceJob], cluster: ClusterSpec, planner: str = "profile") -> SimulationResult:
    return Simulation(jobs, cluster, dataclasses.replace(KILL, bf_planner=planner),
                      checker=InvariantChecker(cluster)).run()


def starts(result: SimulationResult) -> dict[int, tuple[float, str]]:
    frame = result.jobs
    return {int(i): (float(s), str(n)) for i, s, n in zip(frame["job_id"], frame["start"], frame["nodes"],
                                                          strict=True)}


@pytest.mark.parametrize("planner", ["profile", "will_run"])
def test_a_job_whose_run_would_cross_the_window_keeps_off_the_reserved_node(planner: str) -> None:
    # job 1 holds n0 0..300. Job 2 (limit 50, at 10): [10, 60) ends before 100, so n1 is its: 10..60.
    # Job 3 (limit 80, at 70): [70, 150) crosses the window; n0 is busy, so it waits; the backfill
    # plans n1 for it only after the window, at 200. Job 4 (limit 20, at 75): [75, 95) fits before
    # the window: backfilled on n1 at 75, ending 95, before job 3's reserved start.
    jobs = [job(1, 0, 300), job(2, 10, 50), job(3, 70, 80), job(4, 75, 20)]
    cluster = dataclasses.replace(ClusterSpec.homogeneous(2, 2), reservations=(MAINT,))
    assert starts(replay(jobs, cluster, planner)) == {1: (0.0, "n0"), 2: (10.0, "n1"), 3: (200.0, "n1"),
                                                      4: (75.0, "n1")}
    # without the reservation job 3 starts on n1 at 70 and job 4 waits for it: 150
    free = starts(replay(jobs, ClusterSpec.homogeneous(2, 2), planner))
    assert (free[3], free[4]) == ((70.0, "n1"), (150.0, "n1"))


def test_a_job_of_a_partition_all_reserved_waits_with_req_node_not_avail() -> None:
    # partition debug is n1 alone: job 1 (limit 50, at 80) would run over [80, 130) into the window;
    # no node is left it, so it waits, ReqNodeNotAvail (kept by sacct), until the window ends at 200,
    # and blocks nothing: job 2 of batch starts at 81 on n0
    cluster = ClusterSpec(ClusterSpec.homogeneous(2, 2).nodes,
                          (PartitionSpec("batch"), PartitionSpec("debug", nodes=("n1",))), reservations=(MAINT,))
    result = replay([job(1, 80, 50, 1, "debug"), job(2, 81, 50, 1, "batch")], cluster)
    assert starts(result) == {1: (200.0, "n1"), 2: (81.0, "n0")}
    frame = result.jobs.set_index("job_id")
    assert (frame.loc[1, "reason"], frame.loc[1, "sacct_reason"]) == ("ReqNodeNotAvail", "ReqNodeNotAvail")


def test_a_daily_reservation_opens_every_day() -> None:
    # 02:00-04:00 every day on n0: a run over [1 day 03:00, 1 day 05:00) crosses the second window
    plan = ReservationPlan([AdvanceReservation("nightly", "n0", 7200.0, 7200.0, ("DAILY",))], ["n0", "n1"])
    assert plan.blocked(86400 + 3 * 3600, 86400 + 5 * 3600) == frozenset({0})
    assert plan.blocked(86400 + 4 * 3600, 86400 + 26 * 3600) == frozenset()  # ends before the third opens
    assert plan.windows(0.0, 3 * 86400.0) == [(7200.0 + k * 86400, 14400.0 + k * 86400, frozenset({0}))
                                               for k in range(3)]


def test_a_daily_reservation_ends_a_replay_once_its_jobs_are_done() -> None:
    # n1 reserved 02:00-04:00 every day: job 1 (limit 3 h, submitted at 01:00 on n0's busy day) may not
    # use n1 before the first window ends at 04:00; the replay then ends with its last job, not with
    # the reservation's days
    nightly = AdvanceReservation("nightly", "n1", 7200.0, 7200.0, ("DAILY",))
    cluster = dataclasses.replace(ClusterSpec.homogeneous(2, 2), reservations=(nightly,))
    result = replay([job(0, 0, 20000), job(1, 3600, 10800)], cluster)
    assert starts(result) == {0: (0.0, "n0"), 1: (14400.0, "n1")}


def test_the_number_of_reservations_is_bounded(tmp_path: Path) -> None:
    items = [f"{{name: r{i}, nodes: n0, start: {i}, duration: 1}}" for i in range(1001)]
    error = cluster_list_error(tmp_path, "reservations", items, "at most 1000 reservations, got 1001")
    assert error.line == 1004
