"""A dependency on a job array as a whole: ``sbatch --dependency=afterok:123`` where 123 is a job
array's job id (its tasks' array job id, sacct's ``123_4``; no ``_task``) waits for every task.

Slurm 22.05, job_scheduler.c: ``_find_dependent_job_ptr`` sets the dependency's ``array_task_id`` to
INFINITE when the job it names is an array's (its ``array_job_id`` is the id named and it is a task or
the array's meta record), also when a task's own job id is that id; ``test_job_dependency`` then
tests the array as one job with job_mgr.c's ``test_job_array_complete`` (every task COMPLETE),
``test_job_array_completed`` (every task ended) and ``test_job_array_pending`` (any task pending),
which ``_test_job_dependency_common`` reads as it reads one job's state:

* ``after``: satisfied once no task is pending (each started, or ended without starting);
* ``afterany``: satisfied once every task ended;
* ``afterok``: once every task ended, satisfied if each COMPLETED, else failed (never satisfied);
* ``afternotok``: once every task ended, satisfied if one did not complete, else failed.

So a failed task fails an ``afterok`` only when the array's last task ends, and an ``afternotok`` is
satisfied by one failed task, not only by all of them (as waiting for each task on its own would
ask). A task requeued after it started does not make ``after`` wait again: Slurm keeps a fulfilled
dependency. ``aftercorr`` falls back on this ``afterok`` when the parent array has no task of the
dependent's index (:mod:`djsb.model.aftercorr`). An id that is no array's is the one job it names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from djsb.model.aftercorr import ArrayTasks
from djsb.workloads.job import TraceJob

WHOLE_ARRAY_KINDS = ("after", "afterok", "afterany", "afternotok")
"""The ways of waiting that name a job array's id for the whole array (``aftercorr`` pairs tasks)."""


class ArrayProgress:
    """Where the tasks of one job array waited for as a whole stand during a replay: the tasks not
    started yet (pending), those not ended yet, and whether one ended otherwise than COMPLETED."""

    __slots__ = ("failed", "pending", "unended")

    def __init__(self, tasks: Iterable[int]) -> None:
        self.pending = set(tasks)
        self.unended = set(self.pending)
        self.failed = False

    def started(self, task: int) -> None:
        """Task ``task`` started: it is no longer pending (a requeue does not make it so again)."""
        self.pending.discard(task)

    def ended(self, task: int, state: str) -> None:
        """Task ``task`` ended (or was cancelled, started or not) in ``state``."""
        self.pending.discard(task)
        if task in self.unended:
            self.unended.discard(task)
            self.failed |= state != "COMPLETED"

    def verdict(self, kind: str) -> bool | None:
        """Whether a dependent waiting ``kind`` for the whole array is satisfied (True), can never be
        (False), or still waits (None); see the module docstring."""
        if kind == "after":
            return None if self.pending else True
        if self.unended:
            return None
        return kind == "afterany" or (kind == "afterok") != self.failed

    def failure(self, kind: str) -> str:
        """Why a dependent waiting ``kind`` can never be satisfied, for the rejected table."""
        return "every task COMPLETED" if kind == "afternotok" else "a task did not complete"


def resolve(child: TraceJob, edges: Mapping[int, str],
            arrays: ArrayTasks) -> tuple[dict[int, str], dict[int, str]]:
    """``child``'s parents (``edges``: parent id -> how it waits) as waits on one job each and waits
    on a whole array (array job id -> how), each ``aftercorr`` turned into the ``afterok`` it is: on
    the parent array's task of ``child``'s own index, else on the whole array, else on the job named
    (:mod:`djsb.model.aftercorr`). An ``aftercorr`` wins over another way of waiting for the same job."""
    jobs: dict[int, str] = {}
    whole: dict[int, str] = {}
    for parent, kind in edges.items():
        tasks = arrays.get(parent)
        if kind == "aftercorr":
            index = child.array_task[1] if child.array_task is not None else None
            if tasks is not None and index in tasks:
                jobs[tasks[index]] = "afterok"
            elif tasks is not None:
                whole[parent] = "afterok"
            else:
                jobs[parent] = "afterok"
        elif tasks is not None:
            whole.setdefault(parent, kind)
        else:
            jobs.setdefault(parent, kind)
    return jobs, whole
