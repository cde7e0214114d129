"""Following a run's jobs from their submission until their end is recorded.

Each job is submitted between two durable ledger rows (djsb.harness.ledger), then followed by one
query per poll for every job not yet recorded. A job is recorded (jobs.csv, through
:class:`~djsb.harness.records.RunRecords`) once its final state is known: one the scheduler shows
ended but not yet how (Slurm's COMPLETING) counts as ended for its cell and waits in ``ending``. A
job that did not complete as asked (djsb.harness.job_failures) is recorded failed, ended if it still
runs, and fails its cell (:class:`CellFailed`).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import NoReturn

from djsb.clock import Clock
from djsb.errors import RunError
from djsb.harness.app_output import parse_app_output, reports_expected
from djsb.harness.job_failures import (
    FINAL_STATE_WAIT_S,
    LOST_AFTER_POLLS,
    end_failure,
    report_failure,
    requeue_reason,
)
from djsb.harness.job_setup import JobSetup
from djsb.harness.ledger import SUBMITTED, SUBMITTING
from djsb.harness.records import RunRecords
from djsb.harness.reference import Reference
from djsb.harness.rundir import CellKey
from djsb.harness.stop import StopRequest
from djsb.harness.tracked import Tracked
from djsb.jobs import JobModule, JobRequest, JobState, JobStatus
from djsb.transport import Transport, free_bytes


class CellFailed(RunError):
    """One cell cannot be measured (a job of it did not complete as asked, or the scheduler refused
    one): it is recorded as failed with this one-line reason and the run goes on with the next cell."""


@dataclass(eq=False)
class JobTracker:
    """The jobs of a run not yet recorded: ``live`` (not seen ended) and ``ending`` (ended, final state
    not yet known); ``cell_jobs``, every job submitted since :meth:`start_cell`."""

    module: JobModule
    transport: Transport
    clock: Clock
    setup: JobSetup
    records: RunRecords
    stop: StopRequest
    poll_interval: float
    progress: Callable[[str], None]
    live: dict[str, Tracked] = field(default_factory=dict, init=False)
    ending: dict[str, Tracked] = field(default_factory=dict, init=False)
    cell_jobs: list[Tracked] = field(default_factory=list, init=False)

    def start_cell(self) -> None:
        self.cell_jobs = []

    def is_live(self, job: Tracked) -> bool:
        """Whether no poll has seen ``job`` end yet."""
        return job.job_id in self.live

    def submit(self, app: str, index: int, key: CellKey, work: list[str], *,
               colocate_with: str | None = None, oversubscribe: bool = False,
               iterations: int | None = None) -> Tracked:
        """Submit one job of ``app`` doing ``work`` (``iterations`` of it, when counted) and follow it."""
        request = self.setup.prepare(app, index, key, work, colocate_with=colocate_with,
                                     oversubscribe=oversubscribe)
        self.stop.check()
        submit_time = self.clock.epoch(self.clock.now())
        job_id = self.submit_with_ledger(request, submit_time)
        job = Tracked(request, job_id, app, index, submit_time, iterations=iterations)
        self.live[job_id] = job
        self.cell_jobs.append(job)
        self.progress(f"submitted {request.name} as job {job_id}")
        return job

    def submit_with_ledger(self, request: JobRequest, submit_time: float) -> str:
        """``module.submit`` between two durable ledger rows: the token and name before it, so a job
        whose id never comes back (the harness killed meanwhile) can still be found; the id after."""
        run = self.records.run
        run.write_ledger(SUBMITTING, request.token, time=submit_time, name=request.name)
        job_id = self.module.submit(request)
        run.write_ledger(SUBMITTED, request.token, time=self.clock.epoch(self.clock.now()), job_id=job_id)
        return job_id

    def suspend(self, job: Tracked) -> None:
        self.module.suspend(job.job_id)
        job.suspended_since = self.clock.now()
        self.progress(f"suspended {job.request.name}")

    def resume(self, job: Tracked) -> None:
        self.module.resume(job.job_id)
        if job.suspended_since is not None:
            job.suspended_s += self.clock.now() - job.suspended_since
        job.suspended_since = None
        self.progress(f"resumed {job.request.name}")

    def wait_until(self, done: Callable[[], bool], key: CellKey, reference: Reference | None) -> None:
        """Until ``done()``: wait a poll interval, then :meth:`poll`."""
        while not done():
            self.stop.wait(self.poll_interval)
            self.poll(key, reference)

    def settle(self, key: CellKey, reference: Reference | None) -> None:
        """Wait until every job of the cell that ended has its final state recorded (its slowdown
        against ``reference`` in the execution stage)."""
        self.wait_until(lambda: not self.ending, key, reference)

    def take_unrecorded(self) -> list[Tracked]:
        """Every job not yet recorded (live, or ended without a final state), no longer followed."""
        jobs = [*self.live.values(), *self.ending.values()]
        self.live.clear()
        self.ending.clear()
        return jobs

    def poll(self, key: CellKey, reference: Reference | None) -> list[Tracked]:
        """One query for every job not yet recorded; records the ones whose final state it learnt and
        returns the live jobs whose end it saw. Raises CellFailed, with the job's reason, when a job
        did not complete as asked: ended in another state, left no report, or was started again by
        the scheduler (requeued)."""
        if not self.live and not self.ending:
            return []
        statuses = self.module.poll([*self.live, *self.ending])
        now = self.clock.epoch(self.clock.now())
        ended: list[Tracked] = []
        for job_id, job in [*self.live.items(), *self.ending.items()]:
            status = statuses.get(job_id)
            if status is None:
                continue
            job.unknown_polls = job.unknown_polls + 1 if status.state is JobState.UNKNOWN else 0
            job.status = status
            requeued = requeue_reason(job, status)
            if requeued:
                self.fail(job, key, reference, requeued)
            if status.state in (JobState.RUNNING, JobState.SUSPENDED) and job.seen_start is None:
                job.seen_start = now
            lost = job.unknown_polls >= LOST_AFTER_POLLS
            if not (status.state.finished or lost):
                continue
            if job_id in self.live:
                job.seen_end = now
                del self.live[job_id]
                ended.append(job)
            waited = now - (job.seen_end or now)
            if not (status.final or lost or waited >= FINAL_STATE_WAIT_S):
                self.ending[job_id] = job
                continue
            self.ending.pop(job_id, None)
            failure = self.failure(job, status, lost, waited)
            if failure:
                self.fail(job, key, reference, failure)
            self.records.add_job(job, key, reference)
        return ended

    def failure(self, job: Tracked, status: JobStatus, lost: bool, waited: float) -> str:
        """Why ``job``, ended with ``status``, is not a measurement of what was asked ('' if it is);
        the bundled application's report is read only when the job completed."""
        failure = end_failure(job, status, lost=lost, waited=waited)
        if failure or not (self.module.runs_commands and reports_expected(job.request.argv)):
            return failure
        output = parse_app_output(self.transport.read_text(job.request.stdout_path) or "")
        failure = report_failure(job.describe(), output, job.request.total_tasks, job.iterations)
        if failure:
            self.check_disk(job.request.stdout_path)
        return failure

    def check_disk(self, path: str) -> None:
        """Raise "No space left on device" naming ``path`` when the file system holding it is full: a
        job whose report could not be written there failed for the disk, not for the benchmark, and
        every later job would fail alike; the run stops with one line saying so."""
        if free_bytes(self.transport, str(PurePath(path).parent)) == 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    def fail(self, job: Tracked, key: CellKey, reference: Reference | None, reason: str) -> NoReturn:
        """Record ``job`` as failed with ``reason``, end it if it still runs, and fail its cell."""
        self.live.pop(job.job_id, None)
        self.ending.pop(job.job_id, None)
        if not job.status.state.finished or not job.status.final:
            self.module.cancel(job.job_id)
        if job.status.state is JobState.COMPLETED or not job.status.state.finished:
            job.status = replace(job.status, state=JobState.FAILED)
        job.status = replace(job.status, reason=reason)
        if job.seen_end is None:
            job.seen_end = self.clock.epoch(self.clock.now())
        self.records.add_job(job, key, reference)
        raise CellFailed(reason)
