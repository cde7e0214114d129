"""Job dependencies the model enforces: Slurm's ``after``, ``afterok``, ``afterany``,
``afternotok``, ``aftercorr`` (:mod:`djsb.model.aftercorr`: task *i* of an array after task *i* of
another, an ``afterok`` on it) and ``singleton`` (:mod:`djsb.model.singleton`), and Autosubmit's
submit-on-parent-end.

A trace's own ``TraceJob.depends_on`` stays informational (its submit times already follow the
dependencies); a workflow hands the model explicit :class:`Dependency` records instead, so replaying
a trace costs nothing extra.

Two ways to wait for parents (paper 004 sec. 3.3.2):

* ``on_parent_end=False`` (Slurm, ``sbatch --dependency=afterok:...``): the job is submitted at its
  submit time but is not eligible, hence never considered by a pass, until every parent COMPLETED;
  its wait (start - submit) includes that hold, as ``sacct`` reports it.
* ``on_parent_end=True`` (Autosubmit): the job is submitted exactly when its last parent completes,
  so its submit time equals that parent's end time and its wait is pure queue time. The thesis'
  simulator could not do this and precomputed submit times instead (004 sec. 3.3.2, fig. 3.7).

Each parent is waited for in one way (sbatch(1) ``--dependency``; several joined by ``,`` must all
be satisfied, as Slurm's ``test_job_dependency`` in job_scheduler.c requires): ``after``, until it
started or was cancelled (``DEPEND_AFTER``: a parent not pending); ``afterok``, until it COMPLETED
(``aftercorr``: the corresponding task, or the tasks it stands for, each so);
``afternotok``, until it ended in any other state (FAILED, TIMEOUT, CANCELLED...); ``afterany``,
until it ended whatever its state. A parent that ends so that its dependent's way can
never be satisfied (an ``afterok`` parent that TIMEOUT, an ``afternotok`` one that COMPLETED), or is
rejected, cancels that dependent and its own in turn (Slurm with ``kill_invalid_depend``; without
it they pend forever, DependencyNeverSatisfied, which ends the same for the schedule; Autosubmit
never submits them); each is listed in the result's ``rejected`` table with the reason.

A parent id that is a job array's job id (its tasks' ``TraceJob.array_task``) names the whole array,
as in Slurm (:mod:`djsb.model.array_dependency`): ``afterok:123`` waits for every task of array 123.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from djsb.errors import InputError
from djsb.model.aftercorr import ArrayTasks, array_tasks
from djsb.model.array_dependency import ArrayProgress, resolve
from djsb.model.reasons import DEPENDENCY
from djsb.model.singleton import Singletons, group

if TYPE_CHECKING:
    from djsb.model.job import SimJob
    from djsb.workloads.job import TraceJob


@dataclass(frozen=True, slots=True)
class Dependency:
    """The parents a job waits for (their job ids), how it waits for each (``kinds``, aligned with
    ``parents``; none given: ``afterok`` for all), whether it is submitted only then (see the
    module docstring) and whether it waits as a ``singleton`` too."""

    parents: tuple[int, ...]
    on_parent_end: bool = False
    kinds: tuple[str, ...] = ()
    singleton: bool = False

    def __post_init__(self) -> None:
        if self.singleton and self.on_parent_end:
            raise ValueError("a singleton job waits in the queue: it cannot be submitted at its parents' end")
        if self.kinds and len(self.kinds) != len(self.parents):
            raise ValueError(f"{len(self.kinds)} kinds of dependency for {len(self.parents)} parents")
        unknown = sorted(set(self.kinds) - set(KINDS))
        if unknown:
            raise ValueError(f"dependency kind {unknown[0]!r} is not modelled: use {', '.join(KINDS)}")

    def edges(self) -> tuple[tuple[int, str], ...]:
        """Each parent with how it is waited for."""
        return tuple(zip(self.parents, self.kinds or ("afterok",) * len(self.parents), strict=True))


KINDS = ("after", "afterok", "afterany", "afternotok", "aftercorr")
"""The ways of waiting for a parent the model enforces (sbatch(1) ``--dependency``)."""


def satisfies(kind: str, state: str) -> bool:
    """Whether a parent that ended in ``state`` satisfies a dependent waiting for it by ``kind``
    (job_scheduler.c ``test_job_dependency``: afterok, and aftercorr of the corresponding task, need
    COMPLETED, afternotok any other end; after and afterany any end)."""
    return kind in ("afterany", "after") or (kind in ("afterok", "aftercorr")) == (state == "COMPLETED")


class DependencyTracker:
    """Who waits for whom during one replay, and what a parent's end releases or cancels.

    Made only for a replay given dependencies, so a trace without any costs nothing. Jobs it cancels
    are appended to ``rejected``, the replay's list of (job id, reason).
    """

    def __init__(self, dependencies: Mapping[int, Dependency], by_id: dict[int, TraceJob],
                 rejected: list[tuple[int, str]]) -> None:
        """Record every dependency; each job id, a job's and its parents', must be in ``by_id``, the
        replay's jobs (a job submitted when its last parent completes gets that submit time there)."""
        self.by_id = by_id
        self.rejected = rejected
        self.children: dict[int, list[tuple[int, str]]] = {}  # parent id -> (waiting job id, how)
        self.missing: dict[int, int] = {}  # job id -> parents not COMPLETED yet
        self.on_parent_end: set[int] = set()  # jobs submitted when their last parent completes
        self.held: dict[int, SimJob] = {}  # submitted afterok jobs whose parents have not all completed
        self.dropped: dict[int, str] = {}  # job id -> why a failed parent cancelled it
        self.started: set[int] = set()  # parents with ``after`` dependents, once they started
        self.arrays: dict[int, ArrayProgress] = {}  # array job id -> its tasks, for whole-array waits
        self.array_children: dict[int, list[tuple[int, str]]] = {}  # array job id -> (waiting id, how)
        self.task_array: dict[int, int] = {}  # task job id -> its array, waited for as a whole
        self.singleton = {job_id for job_id, dependency in dependencies.items() if dependency.singleton}
        self.singles = Singletons({group(by_id[job_id]) for job_id in self.singleton if job_id in by_id}) \
            if self.singleton else None
        arrays: ArrayTasks | None = None  # the replay's job arrays, gathered for the first dependency
        for job_id, dependency in dependencies.items():
            edges = dict(dependency.edges())  # a parent named twice is waited for once, the last way
            whole: dict[int, str] = {}  # array job id -> how the job waits for the whole array
            if edges and job_id in by_id:
                arrays = array_tasks(by_id.values()) if arrays is None else arrays
                edges, whole = resolve(by_id[job_id], edges, arrays)
            unknown = sorted(p for p in (job_id, *edges) if p not in by_id)
            if unknown:
                raise InputError(f"dependency of job {job_id} names unknown job {unknown[0]}", key="workload")
            if not edges and not whole and not dependency.singleton:
                continue
            self.missing[job_id] = len(edges) + len(whole) + dependency.singleton
            for parent, kind in edges.items():
                self.children.setdefault(parent, []).append((job_id, kind))
            for array_id, kind in whole.items():
                assert arrays is not None
                if array_id not in self.arrays:
                    self.arrays[array_id] = ArrayProgress(arrays[array_id].values())
                    self.task_array.update(dict.fromkeys(arrays[array_id].values(), array_id))
                self.array_children.setdefault(array_id, []).append((job_id, kind))
            if dependency.on_parent_end:
                self.on_parent_end.add(job_id)

    def hold(self, job: SimJob) -> bool:
        """Keep a submitted job out of the queue (pending, in no pass) while a parent has not ended
        its way; say whether it is held. Its reason is then Dependency, which sacct keeps. A
        ``singleton`` it asks is satisfied now if no job of its group holds it."""
        if self.singles is not None and not self.singles.submitted(job, job.job_id in self.singleton) \
                and job.job_id in self.singleton:
            self.missing[job.job_id] -= 1
        if self.missing.get(job.job_id):
            self.held[job.job_id] = job
            job.reason = job.sacct_reason = DEPENDENCY
            return True
        return False

    def parent_ended(self, parent: SimJob, now: float) -> tuple[list[int], list[SimJob]]:
        """A job left (ended, cancelled) at ``now``: the jobs it was the last unsatisfied parent of,
        as (ids to submit now, their submission moved to ``now``; held jobs, eligible from ``now``).
        A dependent its end can never satisfy is cancelled then, and is in turn a parent that ended
        CANCELLED for its own dependents (which an ``afterany`` or ``afternotok`` one satisfies)."""
        submit: list[int] = []
        eligible: list[SimJob] = []
        if self.singles is not None and (released := self.singles.released(parent)) is not None:
            self._satisfied(released.job_id, now, submit, eligible)
        ended = [(parent.job_id, parent.state)]
        while ended:
            parent_id, state = ended.pop()
            for child, kind in self.children.get(parent_id, ()):
                if child in self.dropped or not self.missing.get(child):
                    continue
                if kind == "after" and parent_id in self.started:
                    continue  # satisfied when it started
                if not satisfies(kind, state):
                    self._cancel(child, f"parent {parent_id} {state}")
                    ended.append((child, "CANCELLED"))
                    continue
                self._satisfied(child, now, submit, eligible)
            array_id = self.task_array.get(parent_id)
            if array_id is not None:
                self.arrays[array_id].ended(parent_id, state)
                cancelled = self._array_settled(array_id, now, submit, eligible)
                ended += [(child, "CANCELLED") for child in cancelled]
        return submit, eligible

    def watches(self, job_id: int) -> bool:
        """Whether a job's start matters to a dependent: it has dependents, or is a task of an array
        a job waits for as a whole."""
        return job_id in self.children or job_id in self.task_array

    def parent_started(self, parent: SimJob, now: float) -> tuple[list[int], list[SimJob]]:
        """A job started at ``now``: its ``after`` dependents it was the last unsatisfied parent of,
        as :meth:`parent_ended` gives them."""
        submit: list[int] = []
        eligible: list[SimJob] = []
        if parent.job_id in self.started:
            return submit, eligible  # started again after a requeue: counted once
        self.started.add(parent.job_id)
        for child, kind in self.children.get(parent.job_id, ()):
            if kind == "after" and child not in self.dropped and self.missing.get(child):
                self._satisfied(child, now, submit, eligible)
        array_id = self.task_array.get(parent.job_id)
        if array_id is not None:
            self.arrays[array_id].started(parent.job_id)
            self._array_settled(array_id, now, submit, eligible)  # a started task fails no wait
        return submit, eligible

    def _array_settled(self, array_id: int, now: float, submit: list[int],
                       eligible: list[SimJob]) -> list[int]:
        """The jobs waiting for array ``array_id`` as a whole whose wait its tasks now decide: each one
        satisfied counted (:meth:`_satisfied`), each one that never can be cancelled and returned."""
        progress = self.arrays[array_id]
        waiting: list[tuple[int, str]] = []
        cancelled: list[int] = []
        for child, kind in self.array_children.get(array_id, ()):
            if child in self.dropped or not self.missing.get(child):
                continue
            verdict = progress.verdict(kind)
            if verdict is None:
                waiting.append((child, kind))
            elif verdict:
                self._satisfied(child, now, submit, eligible)
            else:
                self._cancel(child, f"array {array_id}: {progress.failure(kind)}")
                cancelled.append(child)
        self.array_children[array_id] = waiting
        return cancelled

    def _satisfied(self, child: int, now: float, submit: list[int], eligible: list[SimJob]) -> None:
        """One more parent of ``child`` satisfied at ``now``; with the last, it goes to ``submit``
        (its submission moved to ``now``) or, held, to ``eligible``."""
        self.missing[child] -= 1
        if self.missing[child]:
            return
        if child in self.on_parent_end:
            self.by_id[child] = dataclasses.replace(self.by_id[child], submit=now)
            submit.append(child)
        elif child in self.held:
            job = self.held.pop(child)
            job.eligible = now
            eligible.append(job)

    def _cancel(self, child: int, reason: str) -> None:
        """Cancel ``child``, whose dependency can never be satisfied: CANCELLED if it was submitted,
        listed in ``rejected`` either way."""
        why = self.dropped[child] = f"cancelled: dependency never satisfied ({reason})"
        held = self.held.pop(child, None)
        if held is not None:
            held.cancelled = True
        if held is not None or child in self.on_parent_end:
            self.rejected.append((child, why))  # a job not submitted yet is listed when it is

    def drop_dependents(self, parent_id: int, reason: str) -> None:
        """Cancel every job waiting for ``parent_id``, a job rejected at its submission (it never
        existed for Slurm, so no way of waiting is satisfied), and theirs in turn. A rejected task
        cancels the jobs waiting for its whole array too: sbatch refuses an array whole."""
        stack = self._dependents(parent_id)
        while stack:
            child = stack.pop()
            if child in self.dropped or not self.missing.get(child):
                continue
            self._cancel(child, reason)
            stack += self._dependents(child)

    def _dependents(self, job_id: int) -> list[int]:
        """The jobs waiting for ``job_id``: for it, or for its array as a whole."""
        children = [child for child, _ in self.children.get(job_id, ())]
        array_id = self.task_array.get(job_id)
        if array_id is not None:
            children += [child for child, _ in self.array_children.get(array_id, ())]
        return children

    def unsatisfied(self) -> list[tuple[int, str]]:
        """At the end of a replay: the jobs whose parents never all completed, with the reason."""
        return [(job_id, "dependency never satisfied (its parents never all completed)")
                for job_id, count in self.missing.items() if count and job_id not in self.dropped]

