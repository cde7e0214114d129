"""Dependencies in the model: afterok holds, submit on parent end, failed parents.

Every case runs textbook EASY (``TEXTBOOK``: passes at every event, no rounding) on one node, so
every start time is worked by hand below.
"""

from __future__ import annotations

import dataclasses

import pytest

from djsb.errors import InputError
from djsb.model import TEXTBOOK, ClusterSpec, Simulation
from djsb.model.dependency import Dependency
from djsb.workloads.job import TraceJob

KILL = dataclasses.replace(TEXTBOOK, extend_limit=False)  # Slurm kills a job at its time limit


def job(job_id: int, submit: float, run_time: float, cpus: int = 1,
        limit: float | None = None) -> TraceJob:
    return TraceJob(job_id, submit, run_time, cpus, requested_time=limit or run_time)


def times(sim: Simulation) -> dict[int, tuple[float, float, float]]:
    """(submit, start, end) of every finished job."""
    frame = sim.run().jobs
    rows = zip(frame["job_id"], frame["submit"], frame["start"], frame["end"], strict=True)
    return {int(i): (float(s), float(b), float(e)) for i, s, b, e in rows}


def test_child_submitted_exactly_when_its_parent_ends() -> None:
    # Autosubmit's way: A runs 0..100 s, B is submitted at A's end (100 s, not its own submit
    # time 0), starts at once on the free node and ends at 100 + 50 = 150 s; wait 0.
    sim = Simulation([job(1, 0, 100), job(2, 0, 50)], ClusterSpec.homogeneous(1, 2), TEXTBOOK,
                     dependencies={2: Dependency((1,), on_parent_end=True)})
    assert times(sim) == {1: (0.0, 0.0, 100.0), 2: (100.0, 100.0, 150.0)}


def test_last_of_several_parents_decides_the_submission() -> None:
    # C waits for A (ends 100) and B (ends 300): submitted and started at 300, ends 300 + 10.
    sim = Simulation([job(1, 0, 100), job(2, 0, 300), job(3, 0, 10)], ClusterSpec.homogeneous(1, 2),
                     TEXTBOOK, dependencies={3: Dependency((1, 2), on_parent_end=True)})
    assert times(sim)[3] == (300.0, 300.0, 310.0)


def test_afterok_job_is_not_eligible_before_its_parent_completed() -> None:
    # Two free cores: without the dependency B (1 CPU) would start at 0 beside A. With afterok it
    # stays out of every pass until A completes at 100: submit 0, eligible 100, start 100, wait 100.
    free = Simulation([job(1, 0, 100), job(2, 0, 50)], ClusterSpec.homogeneous(1, 2), TEXTBOOK)
    assert times(free)[2] == (0.0, 0.0, 50.0)
    sim = Simulation([job(1, 0, 100), job(2, 0, 50)], ClusterSpec.homogeneous(1, 2), TEXTBOOK,
                     dependencies={2: Dependency((1,))})
    frame = sim.run().jobs.set_index("job_id")
    assert (frame.loc[2, "submit"], frame.loc[2, "eligible"], frame.loc[2, "start"]) == (0.0, 100.0, 100.0)
    assert frame.loc[2, "wait"] == 100.0


def test_afterok_on_a_parent_already_completed_is_eligible_at_submission() -> None:
    # A ends at 100; B is submitted at 200 with afterok A: nothing to wait for, starts at 200.
    sim = Simulation([job(1, 0, 100), job(2, 200, 50)], ClusterSpec.homogeneous(1, 1), TEXTBOOK,
                     dependencies={2: Dependency((1,))})
    assert times(sim)[2] == (200.0, 200.0, 250.0)


def test_a_killed_parent_cancels_its_descendants() -> None:
    # A asks 100 s but needs 200: killed at 100 (TIMEOUT). B (afterok A, submitted at 0) is then
    # CANCELLED; C (on parent end of B) is never submitted. Both are listed with the reason, each
    # its own parent's end; the unrelated D still runs.
    jobs = [job(1, 0, 200, limit=100), job(2, 0, 10), job(3, 0, 10), job(4, 0, 10)]
    sim = Simulation(jobs, ClusterSpec.homogeneous(1, 2), KILL,
                     dependencies={2: Dependency((1,)), 3: Dependency((2,), on_parent_end=True)})
    result = sim.run()
    assert sim.job(1).state == "TIMEOUT"
    assert sim.job(2).state == "CANCELLED"
    assert sorted(result.jobs["job_id"]) == [1, 4]
    reasons = dict(zip(result.rejected["job_id"], result.rejected["reason"], strict=True))
    assert reasons[2] == "cancelled: dependency never satisfied (parent 1 TIMEOUT)"
    assert reasons[3] == "cancelled: dependency never satisfied (parent 2 CANCELLED)"


def test_afterany_and_afternotok_wait_for_an_end_of_their_own_kind() -> None:
    # One core. A asks 100 s but needs 200: killed at 100 (TIMEOUT). B (afterany A), C (afternotok
    # A) and D (afterok A) are submitted at 0: B and C are satisfied by the TIMEOUT and run one after
    # the other from 100 (B 100-110, C 110-120); D never can, and is CANCELLED. E (afternotok B)
    # can never be satisfied by B's COMPLETED: CANCELLED at 110. F (afterany D) is satisfied by D's
    # cancellation and runs after C (job_scheduler.c test_job_dependency: any end satisfies afterany).
    jobs = [job(1, 0, 200, limit=100), *(job(i, 0, 10) for i in range(2, 7))]
    sim = Simulation(jobs, ClusterSpec.homogeneous(1, 1), KILL, dependencies={
        2: Dependency((1,), kinds=("afterany",)), 3: Dependency((1,), kinds=("afternotok",)),
        4: Dependency((1,)), 5: Dependency((2,), kinds=("afternotok",)), 6: Dependency((4,), kinds=("afterany",))})
    result = sim.run()
    started = times(sim)
    assert sim.job(1).state == "TIMEOUT"
    assert (started[2][1], started[3][1], started[6][1]) == (100.0, 110.0, 120.0)
    assert (sim.job(4).state, sim.job(5).state) == ("CANCELLED", "CANCELLED")
    reasons = dict(zip(result.rejected["job_id"], result.rejected["reason"], strict=True))
    assert reasons == {4: "cancelled: dependency never satisfied (parent 1 TIMEOUT)",
                       5: "cancelled: dependency never satisfied (parent 2 COMPLETED)"}


def test_a_job_waits_for_every_parent_each_its_own_way() -> None:
    # Two cores. A runs 0-50 (COMPLETED), B asks 30 s and needs 80: killed at 30 (TIMEOUT). C waits
    # afterok A and afternotok B: satisfied only once both ended, at 50.
    jobs = [job(1, 0, 50), job(2, 0, 80, limit=30), job(3, 0, 10)]
    sim = Simulation(jobs, ClusterSpec.homogeneous(1, 2), KILL,
                     dependencies={3: Dependency((1, 2), kinds=("afterok", "afternotok"))})
    sim.run()
    assert times(sim)[3][1] == 50.0


def test_a_kind_the_model_does_not_enforce_is_refused() -> None:
    with pytest.raises(ValueError, match="dependency kind 'singleton' is not modelled"):
        Dependency((1,), kinds=("singleton",))
    with pytest.raises(ValueError, match="2 kinds of dependency for 1 parents"):
        Dependency((1,), kinds=("afterok", "afterany"))


def test_cancelling_a_pending_parent_cancels_its_held_child() -> None:
    # One core busy with X until 100; A queued behind it; B afterok A. scancel A at 10: B is CANCELLED.
    jobs = [job(1, 0, 100), job(2, 0, 10), job(3, 0, 10)]
    sim = Simulation(jobs, ClusterSpec.homogeneous(1, 1), TEXTBOOK, dependencies={3: Dependency((2,))})
    sim.advance(10)
    sim.cancel(2)
    assert (sim.job(2).state, sim.job(3).state) == ("CANCELLED", "CANCELLED")


def test_a_rejected_parent_cancels_its_children() -> None:
    # A asks 4 CPUs of a 2-core machine: rejected at submission, so B is never submitted.
    sim = Simulation([job(1, 0, 10, cpus=4), job(2, 0, 10)], ClusterSpec.homogeneous(1, 2), TEXTBOOK,
                     dependencies={2: Dependency((1,), on_parent_end=True)})
    result = sim.run()
    assert list(result.rejected["job_id"]) == [1, 2]
    assert result.rejected["reason"].iloc[1] == "cancelled: dependency never satisfied (parent 1 rejected)"


def test_a_dependency_on_an_unknown_job_is_bad_input() -> None:
    with pytest.raises(InputError, match="unknown job 9"):
        Simulation([job(1, 0, 10)], ClusterSpec.homogeneous(1, 1), dependencies={1: Dependency((9,))})


def test_afterok_submitted_after_its_parent_failed_is_refused_at_submission() -> None:
    # A is killed at 100 (limit 100 s, needs 200); B is submitted at 150 with afterok A: refused
    # then, listed once with the reason.
    jobs = [job(1, 0, 200, limit=100), job(2, 150, 10)]
    sim = Simulation(jobs, ClusterSpec.homogeneous(1, 1), KILL, dependencies={2: Dependency((1,))})
    result = sim.run()
    assert list(result.rejected["job_id"]) == [2]
    assert result.rejected["reason"].iloc[0] == "cancelled: dependency never satisfied (parent 1 TIMEOUT)"
    assert 2 not in set(result.jobs["job_id"])


def test_after_is_satisfied_when_the_parent_starts_and_afterok_when_it_completes() -> None:
    # one node of 2 cores: job 1 (2 CPUs) runs 0..50; job 2 (1 CPU) waits for it, runs 50..150.
    # Job 3 (1 CPU) waits after:2: eligible when job 2 starts, 50, on the other core: 50..60. With
    # afterok:2 it waits for job 2's end: 150..160.
    jobs = [job(1, 0, 50, 2), job(2, 0, 100, 1), job(3, 0, 10, 1)]
    after = Simulation(jobs, ClusterSpec.homogeneous(1, 2), TEXTBOOK,
                       dependencies={3: Dependency((2,), kinds=("after",))})
    assert times(after)[3] == (0.0, 50.0, 60.0)
    afterok = Simulation(jobs, ClusterSpec.homogeneous(1, 2), TEXTBOOK, dependencies={3: Dependency((2,))})
    assert times(afterok)[3] == (0.0, 150.0, 160.0)


def test_after_is_satisfied_by_a_parent_cancelled_before_it_started() -> None:
    # sbatch(1): after "the specified jobs start or are cancelled". Job 2 (2 CPUs, waiting behind job 1)
    # is cancelled at 20 while pending: job 3 (after:2) is eligible then, and starts when job 1 frees
    # the cores at 50 (had job 2 run, 50..150 on both cores, job 3 would have started at 150).
    sim = Simulation([job(1, 0, 50, 2), job(2, 0, 100, 2), job(3, 0, 10, 1)], ClusterSpec.homogeneous(1, 2),
                     TEXTBOOK, dependencies={3: Dependency((2,), kinds=("after",))})
    sim.advance(20.0)
    assert sim.job(3).start is None and sim.job(3).reason == "Dependency"
    sim.cancel(2)
    sim.advance(60.0)
    assert sim.job(3).start == 50.0


def named(job_id: int, submit: float, run_time: float, name: str, user: str = "u0") -> TraceJob:
    return TraceJob(job_id, submit, run_time, 1, requested_time=run_time, user=user, name=name)


def test_singleton_jobs_of_a_user_and_name_run_one_at_a_time_in_id_order() -> None:
    # job_scheduler.c test_job_dependency / _find_singleton_job. Four free cores. Jobs 1, 2, 3 are
    # alice's "step", all submitted at 0 asking singleton: 1 starts at 0 (none of its group before it),
    # 2 waits for 1 (0..100), then starts at 100; 3 waits for 1 (running) and 2 (pending, smaller id)
    # and starts at 2's end, 100 + 50 = 150. Job 4, bob's "step", is another group: it starts at 0.
    # Job 5, alice's "other", asks it too and starts at 0.
    jobs = [named(1, 0, 100, "step", "alice"), named(2, 0, 50, "step", "alice"), named(3, 0, 10, "step", "alice"),
            named(4, 0, 30, "step", "bob"), named(5, 0, 20, "other", "alice")]
    sim = Simulation(jobs, ClusterSpec.homogeneous(1, 4), TEXTBOOK,
                     dependencies={i: Dependency((), singleton=True) for i in (1, 2, 3, 4, 5)})
    assert {i: start for i, (_, start, _) in times(sim).items()} == {1: 0.0, 2: 100.0, 3: 150.0, 4: 0.0,
                                                                     5: 0.0}


def test_a_singleton_job_waits_for_an_earlier_job_of_its_group_that_asked_none() -> None:
    # _find_singleton_job counts every job of the user and name, singleton or not: job 1 ("step",
    # asking nothing) runs 0..100; job 2 ("step", singleton, at 10) waits for it and starts at 100,
    # though three of the four cores are free. Job 3 ("step", asking nothing, at 20) is not held by
    # job 2 and starts at 20.
    jobs = [named(1, 0, 100, "step"), named(2, 10, 50, "step"), named(3, 20, 10, "step")]
    sim = Simulation(jobs, ClusterSpec.homogeneous(1, 4), TEXTBOOK,
                     dependencies={2: Dependency((), singleton=True)})
    assert {i: start for i, (_, start, _) in times(sim).items()} == {1: 0.0, 2: 100.0, 3: 20.0}
