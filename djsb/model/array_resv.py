"""``bf_max_job_array_resv``: how many tasks of one job array a backfill pass reserves for.

Slurm keeps an array's pending tasks in one job record, and sched/backfill's ``_attempt_backfill``
(backfill.c) tests that record task after task (its ``goto next_task``): a task that fits now
starts, one that does not gets a reservation, counted in ``test_array_count``; once that count
reaches ``bf_max_job_array_resv`` (default 20) the pass leaves the record, so the array's other
pending tasks are neither started nor reserved for in that pass, and not counted as tested
(``bf_max_job_test``). With 0, ``_job_runnable_now`` drops the record before it is tested at all
(``pend_run_tasks >= bf_max_job_array_resv``): backfill never starts a pending task of an array.

The model holds each task as a job of its own (``TraceJob.array_task``), in queue order, so it
counts the reservations per array job id for the pass (Slurm's count restarts when another array's
record reserves in between, which only its copies of one record in several partitions show; a
model job is in one partition). Made only for a replay with array tasks, so the walk of any other
asks nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from djsb.model.job import SimJob


class ArrayReservations:
    """The reservations one backfill pass made per job array, against ``limit``
    (``bf_max_job_array_resv``)."""

    __slots__ = ("limit", "made")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.made: dict[int, int] = {}  # array job id -> reservations made for its tasks

    def walked_past(self, job: SimJob) -> bool:
        """Whether the pass leaves ``job`` untested: a task of an array that already has ``limit``
        reservations in this pass (every task with a limit of 0)."""
        task = job.trace.array_task
        return task is not None and self.made.get(task[0], 0) >= self.limit

    def reserved(self, job: SimJob) -> None:
        """The pass reserved for ``job``: one more for its array, if it is a task of one."""
        task = job.trace.array_task
        if task is not None:
            self.made[task[0]] = self.made.get(task[0], 0) + 1


def array_reservations(limit: int, array_tasks: bool) -> ArrayReservations | None:
    """The count for one pass of a replay that has array tasks (``array_tasks``); None otherwise."""
    return ArrayReservations(limit) if array_tasks else None
