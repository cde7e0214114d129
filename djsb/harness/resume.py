"""What ``djsb run --resume`` does before it redoes the unfinished cells: end the earlier attempts' jobs.

A harness that was killed (SIGKILL, a crash) cancelled nothing: its jobs still run, or wait, or
stay suspended for ever. Redoing their cells beside them would measure both attempts
competing for the same CPUs. And a job whose end was recorded may still come back: Slurm requeues
a job whose launch failed on a dead node, --no-requeue or not, once it marks the node down. So the
resume reads the run's write-ahead ledger (djsb.harness.ledger), asks the module which of its jobs,
whatever end was recorded, the scheduler still holds (by submission token where the module can tag
jobs, by the recorded id otherwise), cancels them until they are gone (djsb.harness.ending), and
says which.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from djsb.clock import Clock
from djsb.harness.ending import end_for_good
from djsb.harness.ledger import CANCELLED, Submission, submissions
from djsb.harness.rundir import RunDirectory
from djsb.jobs import JobModule


def live_jobs(module: JobModule, submissions: Sequence[Submission]) -> dict[str, str]:
    """The id of each of ``submissions`` whose job the scheduler still holds (queued, running,
    suspended, or ending without a final state: :meth:`JobModule.still_held`), by token: found by
    its token, else by its recorded id (a job the scheduler no longer knows is gone)."""
    alive = module.find_by_token([s.token for s in submissions])
    ids = [s.job_id for s in submissions if s.job_id is not None and s.token not in alive]
    held = module.still_held(ids) if ids else {}
    alive.update((s.token, s.job_id) for s in submissions if s.job_id is not None and s.job_id in held)
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


def cancel_earlier_jobs(run: RunDirectory, module: JobModule, clock: Clock, poll_interval: float = 1.0,
                        progress: Callable[[str], None] = lambda message: None,
                        ) -> tuple[list[Submission], int]:
    """Cancel every job of an earlier attempt the scheduler still holds, whatever end was recorded,
    each noted in the ledger as cancelled, and wait until they are gone; those that are not go to
    uncancelled.txt, said through ``progress``. Returns the cancelled submissions (with their ids)
    and how many submissions were looked for (every one in the ledger)."""
    every = list(submissions(run.ledger_entries()).values())

    def record(submission: Submission, job_id: str) -> None:
        run.write_ledger(CANCELLED, submission.token, time=clock.epoch(clock.now()), name=submission.name,
                         job_id=job_id)

    cancelled = cancel_live(module, every, record)
    left, why = end_for_good(module, {str(s.job_id): s.name for s in cancelled}, clock, poll_interval,
                             progress=progress)
    if left:
        path = run.add_uncancelled(left)
        progress(f"warning: not confirmed ended ({why}): " + ", ".join(f"{name} (job {job_id})"
                                                                       for job_id, name in left.items())
                 + f"; listed in {path}")
    return cancelled, len(every)
