"""A dependency on a job array's id waits for the whole array (djsb/model/array_dependency.py):
job_scheduler.c ``_find_dependent_job_ptr`` makes the dependency's task INFINITE, and
``test_job_dependency`` tests the array with job_mgr.c ``test_job_array_complete`` (every task
COMPLETE), ``test_job_array_completed`` (every task ended) and ``test_job_array_pending`` (any task
pending), read by ``_test_job_dependency_common`` as one job's state.

Every case runs textbook EASY (passes at every event, no rounding), jobs killed at their limit (a
TIMEOUT is the model's failed task), on one node, so every start is worked by hand below. As in a
sacct dump, a task's job id is its own (JobIDRaw) and the array's job id is that of one of its tasks:
array 2 is tasks 2 (index 2), 3 (index 0) and 4 (index 1).
"""

from __future__ import annotations

import dataclasses

from djsb.history.dependencies import dependency_notes, history_dependencies
from djsb.model import TEXTBOOK, ClusterSpec, Simulation
from djsb.model.array_dependency import ArrayProgress, resolve
from djsb.model.dependency import Dependency
from djsb.workloads.job import RecordedOutcome, TraceJob
from djsb.workloads.submit_line import requested_dependency

KILL = dataclasses.replace(TEXTBOOK, extend_limit=False)  # Slurm kills a job at its time limit


def task(job_id: int, index: int, run: float, limit: float | None = None, cpus: int = 1) -> TraceJob:
    """Task ``index`` of array 2: submitted at 0, running ``run`` s (killed at ``limit``)."""
    return TraceJob(job_id, 0.0, run, cpus, requested_time=limit or run, array_task=(2, index))


def job(job_id: int, run: float = 10.0, cpus: int = 1) -> TraceJob:
    """A job outside any array, submitted at 0."""
    return TraceJob(job_id, 0.0, run, cpus, requested_time=run)


def run(jobs: list[TraceJob], dependencies: dict[int, Dependency],
        cores: int = 8) -> tuple[Simulation, dict[int, float]]:
    """The simulation on one node of ``cores`` cores, run, and each started job's start."""
    sim = Simulation(jobs, ClusterSpec.homogeneous(1, cores), KILL, dependencies=dependencies)
    frame = sim.run().jobs
    return sim, {int(i): float(s) for i, s in zip(frame["job_id"], frame["start"], strict=True)}


ARRAY = [task(2, 2, 50), task(3, 0, 100), task(4, 1, 30)]
"""Array 2, all three tasks started at 0: job 2 ends at 50, job 3 at 100, job 4 at 30."""


def on(kind: str, parent: int = 2) -> Dependency:
    return Dependency((parent,), kinds=(kind,))


def test_afterok_and_afterany_on_the_array_s_id_wait_for_every_task() -> None:
    # afterok:2 names array 2 (job 2's array job id is 2): every task COMPLETE at 100, when job 3 ends;
    # read as job 2 alone it would start at 50. afterany:2 likewise (every task ended) at 100.
    # afterok:4 names job 4 alone: job 4 is a task of array 2, not an array's id (NO_VAL), at 30.
    _, starts = run([*ARRAY, job(8), job(9), job(10)],
                    {8: on("afterok"), 9: on("afterany"), 10: on("afterok", 4)})
    assert starts == {2: 0.0, 3: 0.0, 4: 0.0, 8: 100.0, 9: 100.0, 10: 30.0}


def test_after_on_the_array_waits_until_no_task_is_pending() -> None:
    # 5 cores, tasks of 2 CPUs each: jobs 2 (0-50) and 3 (0-100) start at 0, job 4 waits for job 2's
    # 2 cores, and starts at 50. after:2 is fulfilled once test_job_array_pending is false: at 50,
    # when job 4 starts, leaving 1 core for job 8 (1 CPU). On job 2 alone it would start at 0.
    tasks = [task(2, 2, 50, cpus=2), task(3, 0, 100, cpus=2), task(4, 1, 30, cpus=2)]
    _, starts = run([*tasks, job(8)], {8: on("after")}, cores=5)
    assert starts == {2: 0.0, 3: 0.0, 4: 50.0, 8: 50.0}
    _, alone = run([*tasks, job(8)], {8: on("after", 3)}, cores=5)
    assert alone[8] == 0.0


def test_afterok_fails_only_when_the_array_s_last_task_ends() -> None:
    # Job 4 (task 1) asks 30 s but needs 60: TIMEOUT at 30. afterok:2 is failed once every task ended
    # (is_completed, not is_complete): at 100, when job 3 ends, job 8 is cancelled; job 9, afterany on
    # job 8, is satisfied by that cancellation and starts at 100 (waiting on each task alone, job 8
    # would be cancelled at 30 and job 9 start then).
    tasks = [task(2, 2, 50), task(3, 0, 100), task(4, 1, 60, limit=30)]
    sim, starts = run([*tasks, job(8), job(9)], {8: on("afterok"), 9: on("afterany", 8)})
    assert starts == {2: 0.0, 3: 0.0, 4: 0.0, 9: 100.0}
    assert (sim.job(4).state, sim.job(8).state) == ("TIMEOUT", "CANCELLED")
    assert dict(sim.rejected) == {8: "cancelled: dependency never satisfied (array 2: a task did not complete)"}


def test_afternotok_wants_one_failed_task_once_all_ended() -> None:
    # One task failed (job 4, TIMEOUT at 30): afternotok:2 is satisfied when the last task ends, at 100,
    # though jobs 2 and 3 COMPLETED (waiting on each task alone it would never be). Every task
    # COMPLETED: failed at 100, job 8 cancelled.
    failing = [task(2, 2, 50), task(3, 0, 100), task(4, 1, 60, limit=30)]
    _, starts = run([*failing, job(8)], {8: on("afternotok")})
    assert starts[8] == 100.0
    sim, starts = run([*ARRAY, job(8)], {8: on("afternotok")})
    assert 8 not in starts
    assert dict(sim.rejected) == {8: "cancelled: dependency never satisfied (array 2: every task COMPLETED)"}


def test_a_cancelled_pending_task_is_ended_for_the_whole_array() -> None:
    # 3 cores: jobs 2, 3 and 5 start at 0; job 4 (task 1) waits on job 5 (afterok), which asks 20 s but
    # needs 40: TIMEOUT at 20, so job 4 is cancelled pending at 20, ended and not COMPLETE. Job 8's
    # afterany:2 is satisfied when job 3 ends at 100; job 9's afterok:2 fails then.
    tasks = [task(2, 2, 50), task(3, 0, 100), task(4, 1, 30)]
    sim, starts = run([*tasks, TraceJob(5, 0.0, 40.0, 1, requested_time=20.0), job(8), job(9)],
                      {4: on("afterok", 5), 8: on("afterany"), 9: on("afterok")}, cores=3)
    assert starts == {2: 0.0, 3: 0.0, 5: 0.0, 8: 100.0}
    assert (sim.job(4).state, sim.job(9).state) == ("CANCELLED", "CANCELLED")


def test_resolve_splits_jobs_from_whole_arrays() -> None:
    arrays = {2: {2: 2, 0: 3, 1: 4}}
    child = TraceJob(7, 0.0, 1.0, 1, array_task=(7, 1))
    assert resolve(child, {2: "afterok", 4: "afterany", 9: "after"}, arrays) == (
        {4: "afterany", 9: "after"}, {2: "afterok"})
    # aftercorr: the task of the child's own index (job 4), or the whole array without one
    assert resolve(child, {2: "aftercorr"}, arrays) == ({4: "afterok"}, {})
    assert resolve(dataclasses.replace(child, array_task=None), {2: "aftercorr"}, arrays) == ({}, {2: "afterok"})
    progress = ArrayProgress([2, 3])
    progress.started(2)
    assert [progress.verdict(kind) for kind in ("after", "afterok")] == [None, None]
    progress.ended(3, "CANCELLED")  # cancelled pending: no longer pending, ended, not complete
    assert progress.verdict("after") is True
    progress.ended(2, "COMPLETED")
    assert [progress.verdict(kind) for kind in ("afterok", "afterany", "afternotok")] == [False, True, True]


def test_submit_line_reads_the_whole_array() -> None:
    assert requested_dependency("sbatch --dependency=afterok:12_*:7 job.sh") == ((12, "afterok"), (7, "afterok"))


def test_a_history_keeps_a_dependency_on_an_array_for_the_model() -> None:
    # Array 2 in the dump: task 3 (index 0) ended before the replay's start, tasks 2 and 4 are
    # replayed. afterok:2 / after:2 / afterany:2_* are kept on the array (the model waits for its
    # replayed tasks); the ended task 3 TIMEOUT: an afterok on the array can never be satisfied (left
    # to the record, unenforced), an afternotok on it waits for the replayed tasks as afterany.
    replayed = [task(2, 2, 50), task(4, 1, 30), *(job(i) for i in range(8, 13))]
    lines = {8: "afterok:2", 9: "after:2", 10: "afterany:2_*", 11: "afternotok:2", 12: "afterok:2,afterok:4"}
    recorded = {i: RecordedOutcome(0.0, submit_line=f"sbatch --dependency={line} job.sh")
                for i, line in lines.items()}
    ended = [task(3, 0, 100)]
    completed = history_dependencies(replayed, [], {**recorded, 3: RecordedOutcome(0.0, state="COMPLETED")}, ended)
    assert completed.enforced == {8: on("afterok"), 9: on("after"), 10: on("afterany"), 11: on("afternotok"),
                                  12: Dependency((2, 4), kinds=("afterok", "afterok"))}
    failed = history_dependencies(replayed, [], {**recorded, 3: RecordedOutcome(0.0, state="TIMEOUT")}, ended)
    assert failed.enforced == {9: on("after"), 10: on("afterany"), 11: on("afterany")}
    assert failed.unenforced == 2
    assert "afterok on an array" in dependency_notes(failed)[1]
    # a task running at the start: the array's dependents keep their recorded Eligible
    running = history_dependencies(replayed, [task(3, 0, 100)], recorded)
    assert running.enforced == {} and running.unenforced == 5
