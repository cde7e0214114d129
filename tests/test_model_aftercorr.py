"""The ``aftercorr`` dependency (djsb/model/aftercorr.py): task i of an array waits for task i of
another to complete (job_scheduler.c ``_test_job_dependency_common``, SLURM_DEPEND_AFTER_CORRESPOND),
or falls back on the whole parent array, or on a parent that is no array, as afterok.

Every case runs textbook EASY (passes at every event, no rounding), jobs killed at their limit (a
TIMEOUT is the model's failed parent), on one node, so every start is worked by hand below. As in
a sacct dump, a task's job id is its own (JobIDRaw) and the array's job id is that of one of its
tasks: array 2 is tasks 3 (index 0) and 2 (index 1), the one Slurm started last keeping the id.
"""

from __future__ import annotations

import dataclasses

import pytest

from djsb.errors import InputError
from djsb.history.dependencies import dependency_notes, history_dependencies
from djsb.model import TEXTBOOK, ClusterSpec, Simulation
from djsb.model.dependency import Dependency
from djsb.workloads.job import RecordedOutcome, TraceJob
from djsb.workloads.submit_line import requested_dependency

KILL = dataclasses.replace(TEXTBOOK, extend_limit=False)  # Slurm kills a job at its time limit
AFTERCORR_2 = Dependency((2,), kinds=("aftercorr",))


def task(job_id: int, array_id: int, index: int, run: float, limit: float | None = None) -> TraceJob:
    """Task ``index`` of array ``array_id``: 1 CPU, submitted at 0, running ``run`` s (killed at ``limit``)."""
    return TraceJob(job_id, 0.0, run, 1, requested_time=limit or run, array_task=(array_id, index))


def plain(job_id: int, run: float, limit: float | None = None) -> TraceJob:
    """A job outside any array: 1 CPU, submitted at 0, running ``run`` s (killed at ``limit``)."""
    return TraceJob(job_id, 0.0, run, 1, requested_time=limit or run)


def run(jobs: list[TraceJob], dependencies: dict[int, Dependency]) -> tuple[Simulation, dict[int, float]]:
    """The simulation on one node of 8 cores, run, and each started job's start."""
    sim = Simulation(jobs, ClusterSpec.homogeneous(1, 8), KILL, dependencies=dependencies)
    frame = sim.run().jobs
    return sim, {int(i): float(s) for i, s in zip(frame["job_id"], frame["start"], strict=True)}


PARENTS = [task(2, 2, 1, 50), task(3, 2, 0, 100)]
"""Array 2: task 1 (job 2) runs 0-50, task 0 (job 3) 0-100."""


def test_each_task_waits_for_its_own_index_of_the_parent_array() -> None:
    # Array 5's task 1 (job 5) waits for array 2's task 1 (job 2, ends at 50), its task 0 (job 6) for
    # task 0 (job 3, ends at 100): _test_job_dependency_common's find_job_array_rec(2, i). Had
    # aftercorr:2 been afterok on the whole array (test_job_array_complete) both would start at 100;
    # read as job 2 alone, both at 50.
    jobs = [*PARENTS, task(5, 5, 1, 10), task(6, 5, 0, 10)]
    _, starts = run(jobs, {5: AFTERCORR_2, 6: AFTERCORR_2})
    assert starts == {2: 0.0, 3: 0.0, 5: 50.0, 6: 100.0}
    _, whole = run(jobs, {5: Dependency((2, 3)), 6: Dependency((2, 3))})
    assert (whole[5], whole[6]) == (100.0, 100.0)


def test_a_failed_task_cancels_its_corresponding_task_alone() -> None:
    # Task 0 (job 3) asks 100 s but needs 200: killed at 100, TIMEOUT. Its dependent task 0 (job 6)
    # can never be satisfied (IS_JOB_COMPLETED but not IS_JOB_COMPLETE: failure, DependencyNeverSatisfied;
    # cancelled, as Slurm with kill_invalid_depend); task 1 (job 5) still runs when job 2 completes, at 50.
    jobs = [task(2, 2, 1, 50), task(3, 2, 0, 200, limit=100), task(5, 5, 1, 10), task(6, 5, 0, 10)]
    sim, starts = run(jobs, {5: AFTERCORR_2, 6: AFTERCORR_2})
    assert starts == {2: 0.0, 3: 0.0, 5: 50.0}
    assert (sim.job(3).state, sim.job(6).state) == ("TIMEOUT", "CANCELLED")
    reasons = dict(sim.rejected)
    assert reasons == {6: "cancelled: dependency never satisfied (parent 3 TIMEOUT)"}


def test_without_a_corresponding_task_it_waits_for_the_whole_array() -> None:
    # Array 5's task 2 (job 7) has no task 2 in array 2, and job 8 is no array task: dcjob_ptr is NULL,
    # so both wait for array 2 as a whole (is_complete of test_job_array_complete: every task COMPLETE),
    # at 100. With task 0 (job 3) killed at 100 the whole array never completes: both are cancelled.
    jobs = [*PARENTS, task(7, 5, 2, 10), plain(8, 10)]
    _, starts = run(jobs, {7: AFTERCORR_2, 8: AFTERCORR_2})
    assert (starts[7], starts[8]) == (100.0, 100.0)
    failing = [task(2, 2, 1, 50), task(3, 2, 0, 200, limit=100), task(7, 5, 2, 10), plain(8, 10)]
    sim, starts = run(failing, {7: AFTERCORR_2, 8: AFTERCORR_2})
    assert set(starts) == {2, 3}
    assert (sim.job(7).state, sim.job(8).state) == ("CANCELLED", "CANCELLED")


def test_on_a_parent_that_is_no_array_it_is_afterok() -> None:
    # Job 1 is no array: find_job_array_rec(1, i) finds nothing and the test falls back on job 1's own
    # IS_JOB_COMPLETE, afterok's. Job 1 completes at 30: task 0 of array 5 (job 5) starts then; killed
    # at 30 (asks 30 s, needs 60) it cancels it.
    on_job_1 = {5: Dependency((1,), kinds=("aftercorr",))}
    _, starts = run([plain(1, 30), task(5, 5, 0, 10)], on_job_1)
    assert starts == {1: 0.0, 5: 30.0}
    sim, starts = run([plain(1, 60, limit=30), task(5, 5, 0, 10)], on_job_1)
    assert starts == {1: 0.0}
    assert sim.job(5).state == "CANCELLED"


def test_a_dependency_on_no_job_and_no_array_is_bad_input() -> None:
    with pytest.raises(InputError, match="names unknown job 9"):
        Simulation([task(5, 5, 0, 10)], ClusterSpec.homogeneous(1, 1), dependencies={
            5: Dependency((9,), kinds=("aftercorr",))})


def test_submit_line_reads_aftercorr() -> None:
    assert requested_dependency("sbatch --array=0-3 --dependency=aftercorr:2 job.sh") == ((2, "aftercorr"),)
    assert requested_dependency("sbatch -a 0-3 -d aftercorr:2:4,afterok:7 job.sh") == \
        ((2, "aftercorr"), (4, "aftercorr"), (7, "afterok"))
    with pytest.raises(ValueError, match="12_3 is not a job id"):
        requested_dependency("sbatch --dependency=aftercorr:12_3 job.sh")


def test_a_history_enforces_aftercorr_on_the_corresponding_recorded_task() -> None:
    # Array 2's task 1 (job 2) is replayed; its task 0 (job 3) ended before the replay's start, and
    # task 2 (job 4) is running at it. Array 5's task 1 (job 5) waits for job 2 in the replay; task 0
    # (job 6) was satisfied by the record (its parent task ran): no dependency left; task 2 (job 7)
    # waits for a job running at the start: left at its recorded Eligible, counted unenforced.
    line = "sbatch --array=0-2 --dependency=aftercorr:2 job.sh"
    replayed = [task(2, 2, 1, 50), task(5, 5, 1, 10), task(6, 5, 0, 10), task(7, 5, 2, 10)]
    recorded = {job_id: RecordedOutcome(0.0, submit_line=line) for job_id in (5, 6, 7)}
    found = history_dependencies(replayed, [task(4, 2, 2, 500)], recorded, ended=[task(3, 2, 0, 10)])
    # kept as aftercorr:2 for the model to pair among the replayed tasks (job 2, index 1): written
    # afterok:2 it would name array 2 as a whole, 2 being the array's job id
    assert found.enforced == {5: Dependency((2,), kinds=("aftercorr",))}
    assert found.unenforced == 1
    notes = dependency_notes(found)
    assert "aftercorr" in notes[0]
    assert "aftercorr" not in notes[1]
