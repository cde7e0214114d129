"""What holds a site's jobs that a history replay enforces, read from sacct's SubmitLine: their
dependencies, and the throttle of their job array.

A job that asked ``--dependency`` of the kinds the model enforces (after, afterok, afterany, afternotok
and aftercorr on jobs the replay also runs, and singleton on its user's jobs of its name, sacct's
JobName: djsb/model/dependency.py) is queued at its submission and becomes eligible when its parents
end *in the replay*, so a what-if that moves a parent moves its dependents too. An ``aftercorr:123``
of task *i* waits for task *i* of array 123 (JobID ``123_i``), or for the tasks or job it falls back
on (djsb/model/aftercorr.py); any other kind on ``123``, or on ``123_*``, the id of a job array
(the ``123`` of its tasks' JobIDs), waits for the whole array (djsb/model/array_dependency.py). The
arrays are found among every job of the dump, those ended before the replay's start included, and
the dependency is kept as written for the model to resolve among the replayed tasks. Its other waits
are the record's: a job whose dependency the model cannot enforce (any-of ``?``, an array task, a
delay, or a parent, or a task of an array waited for whole, running when the replay starts) is
queued at its recorded Eligible time, as every job without a SubmitLine is. A parent that ended
before the replay starts, or that the dump does not hold, satisfied its dependents by the record
(they ran), and is dropped from their dependency; so is a task of an array waited for whole, except
that one that ended before the start otherwise than COMPLETED already settles what the array's end
will decide: an ``afternotok`` on it waits for the rest as ``afterany``, and an ``afterok`` on it
(which Slurm never satisfies) is left to the record, as the dependencies the model cannot enforce.

A task of an array submitted with a throttle (``--array=1-6%2``; its JobID ``123_4``) is queued at
its submission too: the replay runs at most that many tasks of the array at once
(:mod:`djsb.model.limits`), where the record's Eligible of a throttled task is when Slurm let it go.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from djsb.model.aftercorr import ArrayTasks, array_tasks
from djsb.model.dependency import Dependency
from djsb.workloads.job import RecordedOutcome, TraceJob
from djsb.workloads.submit_line import requested_dependency, requested_singleton


@dataclass(frozen=True)
class HistoryDependencies:
    """The dependencies a replay enforces (job id: its parents among the replayed jobs), and how
    many jobs asked one it leaves to their recorded eligibility."""

    enforced: dict[int, Dependency]
    unenforced: int


def history_dependencies(replayed: Sequence[TraceJob], running: Sequence[TraceJob],
                         recorded: Mapping[int, RecordedOutcome],
                         ended: Sequence[TraceJob] = ()) -> HistoryDependencies:
    """The dependencies of the ``replayed`` jobs, with ``running`` those running when the replay
    starts and ``ended`` those ended before it (see the module docstring)."""
    replayed_ids = {job.job_id for job in replayed}
    running_ids = {job.job_id for job in running}
    enforced: dict[int, Dependency] = {}
    unenforced = 0
    arrays: ArrayTasks | None = None  # the dump's job arrays, gathered for the first dependency
    for job in replayed:
        outcome = recorded.get(job.job_id)
        line = outcome.submit_line if outcome is not None else ""
        if "--dependency" not in line and " -d" not in line:
            continue
        try:
            edges = requested_dependency(line)
        except ValueError:
            unenforced += 1
            continue
        if edges is None:
            continue
        arrays = array_tasks([*replayed, *running, *ended]) if arrays is None else arrays
        waits = [_wait(job, parent, kind, arrays.get(parent), replayed_ids, running_ids, recorded)
                 for parent, kind in edges]
        if any(wait == UNENFORCED for wait in waits):
            unenforced += 1
            continue
        kept = [wait for wait in waits if wait is not None]
        singleton = requested_singleton(line)
        if kept or singleton:
            enforced[job.job_id] = Dependency(tuple(parent for parent, _ in kept),
                                              kinds=tuple(kind for _, kind in kept), singleton=singleton)
    return HistoryDependencies(enforced, unenforced)


def dependency_notes(dependencies: HistoryDependencies) -> list[str]:
    """What the replay did with the jobs' dependencies."""
    notes = []
    if dependencies.enforced:
        notes.append(f"{len(dependencies.enforced)} job(s) asked --dependency (after, afterok, afterany, "
                     "afternotok, aftercorr, singleton) on jobs of the replay: each is queued at its "
                     "submission and eligible when its parents end in the replay")
    if dependencies.unenforced:
        notes.append(f"{dependencies.unenforced} job(s) asked a --dependency the model does not enforce "
                     "(any-of ?, an array task, a delay, a parent running at the start, or an "
                     "afterok on an array one of whose tasks failed before it): "
                     "each is queued at its recorded Eligible time")
    return notes


DONE = RecordedOutcome(0.0, state="COMPLETED")
"""A task the dump holds no outcome of: taken as completed, as the record let its dependents run."""
UNENFORCED = (0, "")
"""What :func:`_wait` gives for a wait the model cannot enforce (the job keeps its recorded Eligible)."""


def _wait(child: TraceJob, parent: int, kind: str, tasks: dict[int, int] | None, replayed: set[int],
          running: set[int], recorded: Mapping[int, RecordedOutcome]) -> tuple[int, str] | None:
    """How ``child`` waits for ``parent`` in the replay (``tasks``: the dump's tasks of the array of
    that job id, None if it is no array's): the edge kept, None when the record satisfied it, or
    :data:`UNENFORCED` (see the module docstring)."""
    if tasks is None:
        return UNENFORCED if parent in running else (parent, kind) if parent in replayed else None
    index = child.array_task[1] if child.array_task is not None else None
    if kind == "aftercorr" and index in tasks:  # the task of its own index: the model finds it too
        task = tasks[index]
        return UNENFORCED if task in running else (parent, kind) if task in replayed else None
    ids = tasks.values()
    if any(task in running for task in ids):
        return UNENFORCED
    if not any(task in replayed for task in ids):
        return None
    failed = any(task not in replayed and not recorded.get(task, DONE).state.startswith("COMPLETED")
                 for task in ids)
    if failed and kind in ("afterok", "aftercorr"):
        return UNENFORCED
    return (parent, "afterany" if failed and kind == "afternotok" else kind)


def array_notes(jobs: Sequence[TraceJob]) -> list[str]:
    """What the replay did with the throttled job arrays of ``jobs``."""
    arrays = {job.array[0] for job in jobs if job.array is not None}
    if not arrays:
        return []
    tasks = sum(1 for job in jobs if job.array is not None)
    return [f"{tasks} task(s) of {len(arrays)} job array(s) with a throttle (--array ...%N): each is "
            "queued at its submission and held while as many tasks of its array run (JobArrayTaskLimit)"]
