"""What ``djsb run --resume`` does before it redoes the unfinished cells: end the earlier attempts' jobs.

A harness that was killed (SIGKILL, a crash) cancelled nothing: its jobs still run, or wait, or
stay suspended for ever. Redoing their cells beside them would measure both attempts
competing for the same CPUs. So the resume reads the run's write-ahead ledger
(djsb.harness.ledger), asks the module which of the jobs whose end was never recorded are still
alive (by submission token where the module can tag jobs, by the recorded id otherwise), cancels
them, and says which.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from djsb.clock import Clock
from djsb.harness.ledger import CANCELLED, Submission, outstanding
from djsb.harness.rundir import RunDirectory
from djsb.jobs import JobModule, JobState


def live_jobs(module: JobModule, submissions: Sequence[Submission]) -> dict[str, str]:
    """The id of each of ``submissions`` whose job the scheduler still queues, runs or holds
    suspended, by token: found by its token, else by a poll of its recorded id (a job the
    scheduler no longer knows is gone)."""
    alive = module.find_by_token([s.token for s in submissions])
    ids = [s.job_id for s in submissions if s.job_id is not None and s.token not in alive]
    statuses = module.poll(ids) if ids else {}
    for submission in submissions:
        if submission.job_id is None or submission.job_id not in statuses:
            continue
        state = statuses[submission.job_id].state
        if not state.finished and state is not JobState.UNKNOWN:
            alive[submission.token] = submission.job_id
    return alive


def cancel_live(module: JobModule, pending: Sequence[Submission],
                record: Callable[[Submission, str], None]) -> list[Submission]:
    """Cancel each of ``pending`` whose job is still alive (:func:`live_jobs`), calling ``record``
    with it and its id once cancelled (a ledger's ``cancelled`` row, so no later resume looks for
    it again). Returns the cancelled submissions, with their ids."""
    alive = live_jobs(module, pending) if pending else {}
    cancelled: list[Submission] = []
    for submission in pending:
        job_id = alive.get(submission.token)
        if job_id is None:
            continue
        module.cancel(job_id)
        record(submission, job_id)
        cancelled.append(replace(submission, job_id=job_id))
    return cancelled


def cancel_earlier_jobs(run: RunDirectory, module: JobModule, clock: Clock) -> tuple[list[Submission], int]:
    """Cancel every job of an earlier attempt that is still alive, each noted in the ledger as
    cancelled. Returns the cancelled submissions (with their ids) and how many submissions were
    looked for."""
    pending = outstanding(run.ledger_entries(), run.recorded_jobs())

    def record(submission: Submission, job_id: str) -> None:
        run.write_ledger(CANCELLED, submission.token, time=clock.epoch(clock.now()), name=submission.name,
                         job_id=job_id)

    return cancel_live(module, pending, record), len(pending)
