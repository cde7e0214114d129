"""The operations a job module applies to a model it drives, each at the model's current time and
followed by the event-triggered passes, as a job end is (the simulated job module drives the model
this way): :meth:`JobOperations.submit` a job (optionally with a
:class:`~djsb.model.shape.JobShape`), :meth:`~JobOperations.job` to query it,
:meth:`~JobOperations.cancel` (scancel), :meth:`~JobOperations.suspend` and
:meth:`~JobOperations.resume` (scontrol), and :meth:`~JobOperations.resize` (DLB-DROM's malleability
in paper 001's cooperative scenario). :class:`~djsb.model.simulation.Simulation` has them; time
moves on with its ``advance``.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Sequence

from djsb.errors import RunError
from djsb.model.allocation import held_units, shares_cores
from djsb.model.backfill.planner import BackfillPlanner
from djsb.model.cluster_state import ClusterState
from djsb.model.dependency import DependencyTracker
from djsb.model.events import SUBMIT, WAKE
from djsb.model.invariants import InvariantChecker
from djsb.model.job import SimJob
from djsb.model.limits import RunningLimits
from djsb.model.pass_timing import PassTiming
from djsb.model.placement import Placement
from djsb.model.queue import JobQueue
from djsb.model.shape import JobShape
from djsb.workloads.job import TraceJob


class ModelError(RunError):
    """An operation the model cannot do (unknown job, suspending a pending job, ...)."""


class JobOperations(ABC):
    """The operations on jobs of a model at ``now``; the core supplies its state and its steps."""

    now: float
    state: ClusterState
    queue: JobQueue
    limits: RunningLimits
    passes: PassTiming
    planner: BackfillPlanner
    checker: InvariantChecker | None
    deps: DependencyTracker | None
    by_id: dict[int, TraceJob]
    jobs: dict[int, SimJob]
    shapes: dict[int, JobShape]
    amounts: dict[int, list[tuple[int, int]]]
    rejected: list[tuple[int, str]]
    rates_dirty: bool

    @abstractmethod
    def advance(self, until: float) -> None:
        """Process every event up to and including ``until``."""

    @abstractmethod
    def _push(self, time: float, kind: int, key: int) -> int:
        """Push an event."""

    @abstractmethod
    def _end(self, job: SimJob, now: float, cause: str = "") -> None:
        """A running job ends now."""

    @abstractmethod
    def _parent_ended(self, parent: SimJob, now: float) -> None:
        """A job with dependents left."""

    @abstractmethod
    def _main_pass(self, now: float, periodic: bool) -> None:
        """A main pass now."""

    @abstractmethod
    def _backfill_pass(self, now: float) -> None:
        """A backfill pass now."""

    @abstractmethod
    def _settle(self, now: float) -> None:
        """The end of an instant."""

    @abstractmethod
    def _held_by_hand(self, job: SimJob, now: float) -> None:
        """``scontrol suspend`` suspended ``job``, which gave its CPUs back (the gang scheduler's hook)."""

    @abstractmethod
    def _released_by_hand(self, job: SimJob, now: float) -> None:
        """``scontrol resume`` resumed ``job``, which took its CPUs back (the gang scheduler's hook)."""

    def submit(self, trace: TraceJob, shape: JobShape | None = None) -> SimJob:
        """Submit a job now (its ``submit`` field is ignored); raise ModelError if it is rejected."""
        if trace.job_id in self.by_id:
            raise ModelError(f"duplicate job id {trace.job_id}")
        if trace.submit != self.now:
            trace = dataclasses.replace(trace, submit=self.now)
        if shape is not None:
            if shape.tasks * shape.cpus_per_task != trace.cpus:
                raise ModelError(f"job {trace.job_id}: {trace.cpus} CPUs but a shape of "
                                 f"{shape.tasks} x {shape.cpus_per_task}")
            self.shapes[trace.job_id] = shape
        self.by_id[trace.job_id] = trace
        self._push(self.now, SUBMIT, trace.job_id)
        self.advance(self.now)
        job = self.jobs.get(trace.job_id)
        if job is None:
            reason = next(r for job_id, r in self.rejected if job_id == trace.job_id)
            raise ModelError(f"job {trace.job_id} rejected: {reason}")
        return job

    def job(self, job_id: int) -> SimJob:
        """The model's view of a submitted job (state, times, nodes)."""
        job = self.jobs.get(job_id)
        if job is None:
            raise ModelError(f"unknown job {job_id}")
        return job

    def node_names(self, job: SimJob) -> list[str]:
        """Names of the nodes a job runs on, in allocation order."""
        return [self.state.node_names[i] for i, _ in job.alloc]

    def cancel(self, job_id: int) -> None:
        """``scancel``: a pending job leaves the queue, a running or suspended one ends now."""
        job = self.job(job_id)
        now = self.now
        if job.finished or job.cancelled:
            return
        if job.start is None:
            if not self.limits.withdrawn(job) and (
                    self.deps is None or self.deps.held.pop(job_id, None) is None):
                self.queue.cancel(job)
            job.cancelled = True
            if self.deps is not None:
                self._parent_ended(job, now)
        else:
            job.cancelled = True
            job.killed = False
            self._end(job, now)
            job.end = now
        self._after_operation(now)

    def suspend(self, job_id: int) -> None:
        """``scontrol suspend``: the job keeps its memory, frees its CPUs, which other jobs
        (backfilled ones included) may take, and stops progressing; suspended time does not count
        against its time limit."""
        job = self._running_job(job_id)
        if job.suspended_since is not None:
            return
        now = self.now
        job.work_until(now)
        self.rates_dirty = True
        job.suspended_since = now
        job.end_seq = -1
        self.state.commit(job.alloc, job.cpus, None, sign=-1, part=job.part, shares=shares_cores(job))
        del self.amounts[job.job_id]
        if self.checker is not None:
            self.checker.on_suspend(job, now)
        self._held_by_hand(job, now)
        self._after_operation(now)

    def resume(self, job_id: int, stall: float = 0.0) -> None:
        """``scontrol resume``: take the CPUs back whether or not others use them now (Slurm does not
        check), which may over-allocate a node: no job starts there until it is below capacity
        again. No progress for ``stall`` seconds."""
        job = self._running_job(job_id)
        if job.suspended_since is None:
            return
        now = self.now
        job.suspended_total += now - job.suspended_since
        job.suspended_since = None
        job.since = now
        job.rate = 0.0
        self.state.commit(job.alloc, job.cpus, None, part=job.part, shares=shares_cores(job))
        self.amounts[job.job_id] = held_units(self.state, job)
        if stall > 0:
            job.stall_until = now + stall
            self._push(job.stall_until, WAKE, job.job_id)
        if self.checker is not None:
            self.checker.on_resume(job, now, self.planner.planned_end(job, now))
        self.rates_dirty = True
        self._released_by_hand(job, now)
        self._after_operation(now)

    def resize(self, job_id: int, cpus_per_node: Sequence[int]) -> None:
        """Set a started job's CPUs on each of its nodes (parallel to its allocation): a malleable
        job shrinking or growing, as DLB-DROM does in paper 001's cooperative scenario.

        Shrinking frees CPUs now, which other jobs may use without oversubscription; growing takes
        them back without a check (the job's own CPUs, lent and returned). A suspended job's new
        size applies when it resumes.
        """
        job = self._running_job(job_id)
        if job.part.exclusive:
            raise ModelError(f"job {job_id} is in an exclusive partition: it holds whole nodes")
        if len(cpus_per_node) != len(job.alloc) or min(cpus_per_node) < 1:
            raise ModelError(f"job {job_id}: give at least one CPU on each of its {len(job.alloc)} nodes")
        new = job.alloc.resized(cpus_per_node)
        now = self.now
        if job.suspended_since is None:
            job.work_until(now)
            delta = Placement.of((node, cpus - old)
                                 for (node, cpus), (_, old) in zip(new, job.alloc, strict=True))
            self.state.commit(delta, delta.slots, None, part=job.part, shares=shares_cores(job))
            job.cpus = sum(cpus_per_node)
            job.alloc = new
            self.amounts[job.job_id] = held_units(self.state, job)
        else:
            job.alloc = new
            job.cpus = sum(cpus_per_node)
        if self.checker is not None:
            self.checker.on_resize(job, now)
        self.rates_dirty = True
        self._after_operation(now)

    def _running_job(self, job_id: int) -> SimJob:
        job = self.job(job_id)
        if job.start is None or job.finished or job.cancelled:
            raise ModelError(f"job {job_id} is {job.state}, not running")
        return job

    def _after_operation(self, now: float) -> None:
        """An operation changed the allocation now: run the event-triggered passes, as on a job end."""
        self.passes.touch()
        self._main_pass(now, periodic=False)
        if self.passes.event_bf:
            self._backfill_pass(now)
        self._settle(now)

