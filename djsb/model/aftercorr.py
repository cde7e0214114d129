"""The ``aftercorr`` dependency (``sbatch --dependency=aftercorr:123``): task *i* of a job array waits
for task *i* of array 123 to complete successfully.

Slurm's job_scheduler.c ``_test_job_dependency_common`` (depend_type SLURM_DEPEND_AFTER_CORRESPOND)
looks up the parent array's task of the dependent's own index (``find_job_array_rec(dep_ptr->job_id,
job_ptr->array_task_id)``): if there is one, the dependency is fulfilled when that task is COMPLETE
(exit 0) and fails when it ended otherwise (DependencyNeverSatisfied; cancelled with
``kill_invalid_depend``). Without one (the dependent is no array task, the parent array has no task of
that index, or the parent is no array at all) it falls back on the parent as ``afterok`` does: the
whole array when 123 is an array's job id (``_find_dependent_job_ptr`` sets ``array_task_id`` to
INFINITE, and ``test_job_array_complete`` wants every task COMPLETE), the job itself otherwise.

So each ``aftercorr`` parent is an ``afterok``: on the task :func:`corresponding` gives from the
arrays of the replay's jobs (``TraceJob.array_task``), or on the whole array, which fails only once
every task ended, as Slurm's (:mod:`djsb.model.array_dependency`, where the tracker's resolution is).
"""

from __future__ import annotations

from collections.abc import Iterable

from djsb.workloads.job import TraceJob

ArrayTasks = dict[int, dict[int, int]]
"""Array job id -> task index -> the task's job id."""


def array_tasks(jobs: Iterable[TraceJob]) -> ArrayTasks:
    """The tasks of each job array among ``jobs``."""
    arrays: ArrayTasks = {}
    for job in jobs:
        if job.array_task is not None:
            array_id, index = job.array_task
            arrays.setdefault(array_id, {})[index] = job.job_id
    return arrays


def corresponding(child: TraceJob, parent: int, arrays: ArrayTasks) -> tuple[int, ...]:
    """The jobs ``child``'s ``aftercorr:parent`` waits for, each to COMPLETE (see the module
    docstring): the task of ``child``'s index of array ``parent``; else every task of that array;
    else ``parent`` itself (no array of that job id)."""
    tasks = arrays.get(parent)
    if tasks is None:
        return (parent,)
    task = child.array_task
    if task is not None and task[1] in tasks:
        return (tasks[task[1]],)
    return tuple(tasks.values())
