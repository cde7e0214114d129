"""Job dependencies the model enforces: Slurm's ``afterok`` and Autosubmit's submit-on-parent-end.

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

A parent that ends in any other state (TIMEOUT, CANCELLED) or is rejected cancels its dependents and
theirs in turn (Slurm with ``kill_invalid_depend``; Autosubmit never submits them); each is listed in
the result's ``rejected`` table with the reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from djsb.errors import InputError

if TYPE_CHECKING:
    from djsb.model.job import SimJob
    from djsb.workloads.job import TraceJob


@dataclass(frozen=True, slots=True)
class Dependency:
    """The parents a job waits for (their job ids) and how it waits (see the module docstring)."""

    parents: tuple[int, ...]
    on_parent_end: bool = False


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
        self.children: dict[int, list[int]] = {}  # parent id -> ids of the jobs waiting for it
        self.missing: dict[int, int] = {}  # job id -> parents not COMPLETED yet
        self.on_parent_end: set[int] = set()  # jobs submitted when their last parent completes
        self.held: dict[int, SimJob] = {}  # submitted afterok jobs whose parents have not all completed
        self.dropped: dict[int, str] = {}  # job id -> why a failed parent cancelled it
        for job_id, dependency in dependencies.items():
            parents = set(dependency.parents)
            unknown = sorted(p for p in (job_id, *parents) if p not in by_id)
            if unknown:
                raise InputError(f"dependency of job {job_id} names unknown job {unknown[0]}", key="workload")
            if not parents:
                continue
            self.missing[job_id] = len(parents)
            for parent in parents:
                self.children.setdefault(parent, []).append(job_id)
            if dependency.on_parent_end:
                self.on_parent_end.add(job_id)

    def hold(self, job: SimJob) -> bool:
        """Keep a submitted ``afterok`` job out of the queue (pending, reason Dependency, in no pass)
        while a parent has not completed; say whether it is held."""
        if self.missing.get(job.job_id):
            self.held[job.job_id] = job
            return True
        return False

    def parent_ended(self, parent: SimJob, now: float) -> tuple[list[int], list[SimJob]]:
        """A job left (ended, cancelled) at ``now``: the jobs it was the last parent of, as (ids to
        submit now, their submission moved to ``now``; held jobs, eligible from ``now``); unless it
        COMPLETED, none, and its dependents are all cancelled."""
        submit: list[int] = []
        eligible: list[SimJob] = []
        children = self.children.get(parent.job_id)
        if children is None:
            return submit, eligible
        if parent.state != "COMPLETED":
            self.drop_dependents(parent.job_id, f"parent {parent.job_id} {parent.state}")
            return submit, eligible
        for child in children:
            self.missing[child] -= 1
            if self.missing[child]:
                continue
            if child in self.on_parent_end:
                self.by_id[child] = dataclasses.replace(self.by_id[child], submit=now)
                submit.append(child)
            elif child in self.held:
                job = self.held.pop(child)
                job.eligible = now
                eligible.append(job)
        return submit, eligible

    def drop_dependents(self, parent_id: int, reason: str) -> None:
        """Cancel every job waiting for ``parent_id``, and theirs in turn (their dependency can
        never be satisfied); a submitted one is CANCELLED, all are listed in ``rejected``."""
        stack = list(self.children.get(parent_id, ()))
        while stack:
            child = stack.pop()
            if child in self.dropped or not self.missing.get(child):
                continue
            why = self.dropped[child] = f"cancelled: dependency never satisfied ({reason})"
            held = self.held.pop(child, None)
            if held is not None:
                held.cancelled = True
            if held is not None or child in self.on_parent_end:
                self.rejected.append((child, why))  # an afterok job not submitted yet is listed then
            stack += self.children.get(child, ())

    def unsatisfied(self) -> list[tuple[int, str]]:
        """At the end of a replay: the jobs whose parents never all completed, with the reason."""
        return [(job_id, "dependency never satisfied (its parents never all completed)")
                for job_id, count in self.missing.items() if count and job_id not in self.dropped]
