"""What holds a site's jobs that a history replay enforces, read from sacct's SubmitLine: their
dependencies, and the throttle of their job array.

A job that asked ``--dependency`` of the kinds the model enforces (after, afterok, afterany, afternotok
and aftercorr on jobs the replay also runs, and singleton on its user's jobs of its name, sacct's
JobName: djsb/model/dependency.py) is queued at its submission and becomes eligible when its parents
end *in the replay*, so a what-if that moves a parent moves its dependents too. An ``aftercorr:123``
of task *i* waits for task *i* of array 123 (JobID ``123_i``), or for the tasks or job it falls back
on (djsb/model/aftercorr.py), found among every job of the dump: those ended before the replay's
start included. Its other waits are the record's: a job whose dependency the model cannot enforce
(any-of ``?``, an array task, a delay, or a parent running when the replay starts) is queued at its
recorded Eligible time, as every job without a SubmitLine is. A parent that ended before the replay
starts, or that the dump does not hold, satisfied its dependents by the record (they ran), and is
dropped from their dependency.

A task of an array submitted with a throttle (``--array=1-6%2``; its JobID ``123_4``) is queued at
its submission too: the replay runs at most that many tasks of the array at once
(:mod:`djsb.model.limits`), where the record's Eligible of a throttled task is when Slurm let it go.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from djsb.model.aftercorr import ArrayTasks, array_tasks, corresponding
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
    arrays: ArrayTasks | None = None  # the dump's job arrays, gathered for the first aftercorr
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
        if any(kind == "aftercorr" for _, kind in edges):
            arrays = array_tasks([*replayed, *running, *ended]) if arrays is None else arrays
            edges = _corresponding(job, edges, arrays)
        if any(parent in running_ids for parent, _ in edges):
            unenforced += 1
            continue
        kept = [(parent, kind) for parent, kind in edges if parent in replayed_ids]
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
                     "(any-of ?, an array task, a delay, or a parent running at the start): "
                     "each is queued at its recorded Eligible time")
    return notes


def _corresponding(child: TraceJob, edges: tuple[tuple[int, str], ...],
                   arrays: ArrayTasks) -> tuple[tuple[int, str], ...]:
    """``edges`` with each ``aftercorr`` parent replaced by the jobs it stands for, each waited for
    as ``afterok`` (djsb/model/aftercorr.py)."""
    return tuple(edge for parent, kind in edges
                 for edge in (((task, "afterok") for task in corresponding(child, parent, arrays))
                              if kind == "aftercorr" else ((parent, kind),)))


def array_notes(jobs: Sequence[TraceJob]) -> list[str]:
    """What the replay did with the throttled job arrays of ``jobs``."""
    arrays = {job.array[0] for job in jobs if job.array is not None}
    if not arrays:
        return []
    tasks = sum(1 for job in jobs if job.array is not None)
    return [f"{tasks} task(s) of {len(arrays)} job array(s) with a throttle (--array ...%N): each is "
            "queued at its submission and held while as many tasks of its array run (JobArrayTaskLimit)"]
