"""Jobs asking for an advance reservation (djsb/model/reserved_jobs.py), worked by hand.

Textbook EASY (``TEXTBOOK``: passes at every event, no rounding, jobs killed at their limit) with the
invariant checker on. The rules are Slurm 22.05's: reservation.c ``job_test_resv`` (the job runs on
its reservation's nodes, less those of other reservations overlapping its run, only while a window
is open), ``_valid_job_access_resv`` (Users=, Accounts=) checked at submission by
``validate_job_resv`` (job_mgr.c ``_job_create``), job_mgr.c ``job_time_limit`` (ended at the
window's end plus ResvOverRun) and job_scheduler.c ``_schedule`` (``failed_resv``) and
``sort_job_queue2`` (jobs with a reservation first).
"""

from __future__ import annotations

import dataclasses

import pytest

from djsb.model import TEXTBOOK, ClusterSpec, Simulation
from djsb.model.cluster_spec import QosSpec
from djsb.model.invariants import InvariantChecker
from djsb.model.reservations import AdvanceReservation
from djsb.model.result import SimulationResult
from djsb.workloads.job import TraceJob

KILL = dataclasses.replace(TEXTBOOK, extend_limit=False)
PROJ = AdvanceReservation("proj", "n1", 100.0, 200.0, users=("alice",))
"""n1 reserved for alice over [100, 300)."""


def job(job_id: int, submit: float, limit: float, cpus: int = 2, run: float | None = None,
        user: str = "u0", account: str = "a0", reservation: str | None = None) -> TraceJob:
    return TraceJob(job_id, submit, limit if run is None else run, cpus, requested_time=limit, user=user,
                    account=account, reservation=reservation)


def replay(jobs: list[TraceJob], cluster: ClusterSpec, planner: str = "profile",
           over_run: float = 0.0) -> SimulationResult:
    return Simulation(jobs, cluster, dataclasses.replace(KILL, bf_planner=planner, resv_over_run=over_run),
                      checker=InvariantChecker(cluster)).run()


def starts(result: SimulationResult) -> dict[int, tuple[float, str]]:
    frame = result.jobs
    return {int(i): (float(s), str(n)) for i, s, n in zip(frame["job_id"], frame["start"], frame["nodes"],
                                                          strict=True)}


def on(cores: int, *reservations: AdvanceReservation) -> ClusterSpec:
    return dataclasses.replace(ClusterSpec.homogeneous(2, cores), reservations=reservations)


def test_users_and_accounts_say_who_may_use_a_reservation() -> None:
    # _valid_job_access_resv (no associations enforced): a listed user, then a listed account; a
    # reservation listing users and no account takes them under any account
    assert PROJ.allows("alice", "any") and not PROJ.allows("bob", "any")
    by_account = AdvanceReservation("p", "n1", 0.0, 1.0, accounts=("physics",))
    assert by_account.allows("bob", "physics") and not by_account.allows("bob", "chem")
    both = AdvanceReservation("p", "n1", 0.0, 1.0, users=("alice",), accounts=("physics",))
    assert both.allows("alice", "physics") and not both.allows("alice", "chem")


def test_a_job_asking_an_unknown_or_forbidden_reservation_is_refused_at_submission() -> None:
    # validate_job_resv from _job_create: ESLURM_RESERVATION_INVALID, ESLURM_RESERVATION_ACCESS
    result = replay([job(1, 0, 50, reservation="nope"), job(2, 0, 50, user="bob", reservation="proj"),
                     job(3, 0, 50, user="alice", reservation="proj")], on(2, PROJ))
    assert dict(zip(result.rejected["job_id"], result.rejected["reason"], strict=True)) == {1: "Requested reservation is invalid",
                                     2: "Access denied to requested reservation"}
    assert starts(result) == {3: (100.0, "n1")}


@pytest.mark.parametrize("planner", ["profile", "will_run"])
def test_a_job_of_a_reservation_waits_for_its_window_and_runs_on_its_nodes(planner: str) -> None:
    # job 2 (no reservation) holds n0 from 0 to 1000. Alice's job 1 (at 10, in proj) may run only on
    # n1 and only from 100: it waits with the reason Reservation and starts at the window's opening,
    # 100, on n1 (job_test_resv: ESLURM_INVALID_TIME_VALUE before). Job 3 (no reservation, at 20,
    # limit 50) runs over [20, 70), before the window: n1 is its, 20..70.
    jobs = [job(1, 10, 50, user="alice", reservation="proj"), job(2, 0, 1000), job(3, 20, 50)]
    result = replay(jobs, on(2, PROJ), planner)
    assert starts(result) == {1: (100.0, "n1"), 2: (0.0, "n0"), 3: (20.0, "n1")}
    assert result.jobs.set_index("job_id").loc[1, "reason"] == "Reservation"


def test_a_job_of_a_reservation_ends_with_its_window_or_resv_over_run_later() -> None:
    # alice's job (at 250, limit 100, runs 80) starts at 250 on n1; the window closes at 300:
    # job_time_limit ends it then (TIMEOUT), though its limit runs to 350. With ResvOverRun 1 min it
    # may run to 360: it completes at 250 + 80 = 330.
    jobs = [job(1, 250, 100, run=80, user="alice", reservation="proj")]
    ended = replay(jobs, on(2, PROJ)).jobs.set_index("job_id")
    assert (float(ended.loc[1, "end"]), bool(ended.loc[1, "killed"])) == (300.0, True)  # TIMEOUT
    later = replay(jobs, on(2, PROJ), over_run=60.0).jobs.set_index("job_id")
    assert (float(later.loc[1, "end"]), bool(later.loc[1, "killed"])) == (330.0, False)


def test_a_job_of_a_reservation_that_does_not_fit_holds_back_the_later_ones_of_it() -> None:
    # n1 (4 cores) reserved for alice over [0, 1000). Job 1 (3 CPUs, limit 100) runs there 0..100. Job
    # 2 (2 CPUs, at 10) does not fit the 1 core left: Resources, and _schedule's failed_resv gives job
    # 3 (1 CPU, at 10), which would fit, Priority (the backfill pass does not start such jobs). At
    # 100 both start on n1 (4 cores free: 2 + 1).
    proj = AdvanceReservation("proj", "n1", 0.0, 1000.0, users=("alice",))
    jobs = [job(i, t, 100, cpus, user="alice", reservation="proj") for i, t, cpus in ((1, 0, 3), (2, 10, 2),
                                                                                       (3, 10, 1))]
    result = replay(jobs, on(4, proj))
    assert starts(result) == {1: (0.0, "n1"), 2: (100.0, "n1"), 3: (100.0, "n1")}
    assert result.jobs.set_index("job_id").loc[3, "reason"] == "Priority"


def test_a_job_of_a_reservation_keeps_off_the_nodes_of_another_one_over_its_run() -> None:
    # proj holds n0 and n1 over [0, 1000) for alice; maint holds n1 over [50, 100). Job 1 takes n0 (0..500).
    # Job 2 (at 10, limit 100) would run over [10, 110), into maint's window: job_test_resv takes n1
    # from it, so it waits (Resources) until maint ends at 100, and starts then on n1.
    proj = AdvanceReservation("proj", "n[0-1]", 0.0, 1000.0, users=("alice",))
    maint = AdvanceReservation("maint", "n1", 50.0, 50.0, ("MAINT",))
    jobs = [job(1, 0, 500, user="alice", reservation="proj"), job(2, 10, 100, user="alice", reservation="proj")]
    assert starts(replay(jobs, on(2, proj, maint))) == {1: (0.0, "n0"), 2: (100.0, "n1")}


@pytest.mark.parametrize("planner", ["profile", "will_run"])
def test_the_backfill_pass_counts_a_running_reserved_job_once(planner: str) -> None:
    # Two nodes of 4 cores; n1 reserved for alice over [0, 1000), her job 1 (4 CPUs, limit 500) runs
    # there from 0. Job 0 (2 CPUs, limit 300) holds n0 0..300. Job 2 (4 CPUs, limit 100, at 1) fits
    # nowhere now (n1 is reserved): Resources, reserved by EASY at 300 on n0. Job 3 (2 CPUs, limit
    # 100, at 2) runs [2, 102) on n0's 2 free cores, ending before 300: backfilled at 2. (A plan that
    # took n1's 4 cores for the window and for job 1 both would see 2 + 0 - 4 < 2 free and hold job 3
    # back to 400, after job 2.)
    proj = AdvanceReservation("proj", "n1", 0.0, 1000.0, users=("alice",))
    jobs = [job(0, 0, 300, 2), job(1, 0, 500, 4, user="alice", reservation="proj"), job(2, 1, 100, 4),
            job(3, 2, 100, 2)]
    assert starts(replay(jobs, on(4, proj), planner)) == {0: (0.0, "n0"), 1: (0.0, "n1"), 2: (300.0, "n0"),
                                                          3: (2.0, "n0")}


def test_jobs_of_a_reservation_are_tested_first() -> None:
    # QoS normal lets one job run at a time (GrpJobs=1). Bob's job 1 and alice's job 2 (in proj, n1
    # over [0, 1000)) are both submitted at 0: by priority and id job 1 comes first, but
    # sort_job_queue2 puts a job with a reservation before every other, so job 2 starts at 0 on n1
    # and job 1 waits (QOSGrpJobsLimit) until job 2's end at 100, then runs on n0.
    proj = AdvanceReservation("proj", "n1", 0.0, 1000.0, users=("alice",))
    cluster = dataclasses.replace(ClusterSpec.homogeneous(2, 2, qos=(QosSpec("normal", grp_jobs=1),)),
                                  reservations=(proj,))
    result = replay([job(1, 0, 100, user="bob"), job(2, 0, 100, user="alice", reservation="proj")], cluster)
    assert starts(result) == {1: (100.0, "n0"), 2: (0.0, "n1")}


FLEX = AdvanceReservation("proj", "n1", 100.0, 200.0, ("FLEX",), users=("alice",))
"""n1 reserved for alice over [100, 300), FLEX."""


def test_a_job_of_a_flex_reservation_runs_before_its_window_and_on_its_nodes_first() -> None:
    # job_test_resv with RESERVE_FLAG_FLEX: no window to wait for, every node. Job 1 (at 10) starts at
    # once, on n1, the reservation's node, taken first (the IN_FL node set) though first fit would
    # take n0; it runs 10..60. Job 3 (at 100, limit 500) takes n1 at 100; job 2 (at 110) finds n1
    # busy and starts at once on n0, outside the reservation.
    jobs = [job(1, 10, 50, user="alice", reservation="proj"), job(3, 100, 500, user="alice", reservation="proj"),
            job(2, 110, 50, user="alice", reservation="proj")]
    assert starts(replay(jobs, on(2, FLEX))) == {1: (10.0, "n1"), 3: (100.0, "n1"), 2: (110.0, "n0")}


def test_a_job_of_a_flex_reservation_runs_past_its_window() -> None:
    # job_time_limit ends no job of a FLEX reservation with its window: started at 250 (limit 100,
    # runs 80), it completes at 330, after the window's end at 300
    ended = replay([job(1, 250, 100, run=80, user="alice", reservation="proj")], on(2, FLEX)).jobs
    assert (float(ended["end"][0]), bool(ended["killed"][0])) == (330.0, False)


def test_a_magnetic_reservation_draws_the_jobs_it_allows() -> None:
    # n1 reserved for alice over [0, 1000), MAGNETIC. Bob's job 0 (at 0, limit 500) may not use it:
    # n0, 0..500. Alice's job 1 asks for no reservation; _queue_magnetic_resv queues it in mag too, so
    # it starts at once (10) on n1 instead of waiting for n0 (500). Her job 2 (at 950, limit 100)
    # is drawn in as well and, running in mag, is ended (TIMEOUT) at the window's end, 1000
    # (job_time_limit), before its limit at 1050.
    mag = AdvanceReservation("mag", "n1", 0.0, 1000.0, ("MAGNETIC",), users=("alice",))
    result = replay([job(0, 0, 500, user="bob"), job(1, 10, 100, user="alice"), job(2, 950, 100, user="alice")],
                    on(2, mag))
    assert starts(result) == {0: (0.0, "n0"), 1: (10.0, "n1"), 2: (950.0, "n1")}
    ended = result.jobs.set_index("job_id")
    assert (float(ended.loc[2, "end"]), bool(ended.loc[2, "killed"])) == (1000.0, True)


def test_a_job_of_a_reservation_that_ended_never_starts() -> None:
    # job_test_resv after the window's end (ESLURM_RESERVATION_INVALID; it holds the job): alice's
    # job at 400 asks for proj, over at 300; it never starts, with the reason Reservation
    result = replay([job(1, 400, 50, user="alice", reservation="proj")], on(2, PROJ))
    assert dict(zip(result.rejected["job_id"], result.rejected["reason"], strict=True)) == {
        1: "never started: Reservation"}
