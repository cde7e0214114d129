"""Ending jobs for good: cancelled, and confirmed gone from the scheduler.

A cancel is a request, not a result. Slurm shows a job whose node died COMPLETING until it marks the
node down (SlurmdTimeout), ignores a cancel meanwhile, and then requeues the job if its launch had
failed there, --no-requeue or not: a job of a failed cell, cancelled once, ran minutes after the run
had ended. So the driver (a failed cell's jobs, the jobs live when a run ends) and ``--resume`` (an
earlier attempt's jobs) cancel, then poll until the scheduler holds none of them
(:meth:`JobModule.still_held`), cancelling again each one it shows queued or running once more.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from djsb.clock import Clock
from djsb.errors import RunError
from djsb.jobs import JobModule, JobState

END_WAIT_S = 900.0
"""How long a cancelled job may stay held: Slurm's default SlurmdTimeout (300 s) before a dead node's
jobs are failed or requeued, three times over."""


def end_for_good(module: JobModule, jobs: Mapping[str, str], clock: Clock, poll_interval: float, *,
                 stopping: Callable[[], bool] = lambda: False, timeout: float = END_WAIT_S,
                 progress: Callable[[str], None] = lambda message: None) -> tuple[dict[str, str], str]:
    """Cancel ``jobs`` (id -> name) and wait until the scheduler holds none of them, cancelling again
    each it shows pending, running or suspended (requeued) at a poll; stop waiting after ``timeout``
    seconds, or when the scheduler cannot say which it holds. Returns the ones not confirmed gone
    (id -> name) and why they are not (empty when none is left); when ``stopping()``, nothing is
    waited for and only the ones the scheduler could not be told to cancel are returned."""
    left = dict(jobs)
    started = clock.now()
    deadline = started + timeout
    cancel = list(left)
    told = False
    while left:
        unreached = set()
        for job_id in cancel:
            try:
                module.cancel(job_id)
            except RunError as exc:
                unreached.add(job_id)
                progress(f"could not cancel job {job_id}: {exc}")
        if stopping():
            return ({job_id: name for job_id, name in left.items() if job_id in unreached},
                    "the scheduler could not be told to cancel them before the run stopped")
        try:
            held = module.still_held(list(left))
        except RunError as exc:
            progress(f"could not ask whether job(s) {', '.join(left)} ended: {exc}")
            return left, (f"the scheduler could not say whether they ended, "
                          f"{clock.now() - started:.0f} s after the first cancel")
        left = {job_id: name for job_id, name in left.items() if job_id in held}
        if not left:
            return {}, ""
        if clock.now() >= deadline:
            return left, f"still held by the scheduler after {timeout:.0f} s of cancelling"
        if not told:
            progress("waiting for the scheduler to end " + ", ".join(
                f"{name} (job {job_id}, {held[job_id].state.value if held[job_id].final else 'ending'})"
                for job_id, name in left.items()))
            told = True
        cancel = [job_id for job_id in left if held[job_id].state in
                  (JobState.PENDING, JobState.RUNNING, JobState.SUSPENDED)]
        clock.sleep(poll_interval)
    return {}, ""


@dataclass(eq=False)
class JobEnder:
    """Ends a run's jobs for good (:func:`end_for_good`) and keeps the ones it could not confirm gone
    (``uncancelled``, id -> name, for uncancelled.txt at the run's end)."""

    module: JobModule
    clock: Clock
    poll_interval: float
    stopping: Callable[[], bool]
    progress: Callable[[str], None]
    listed_in: Path
    uncancelled: dict[str, str] = field(default_factory=dict, init=False)

    def end(self, jobs: Mapping[str, str]) -> None:
        """Cancel ``jobs`` (id -> name) and wait until the scheduler holds none of them, so that none
        runs after its cell failed or the run ended; once the run is asked to stop, only cancelled,
        not waited for. The ones not confirmed gone go to ``uncancelled``."""
        if not jobs:
            return
        left, why = end_for_good(self.module, jobs, self.clock, self.poll_interval, stopping=self.stopping,
                                 progress=self.progress)
        self.uncancelled.update(left)
        if left and not self.stopping():
            self.progress(f"warning: not confirmed ended ({why}): " + ", ".join(
                f"{name} (job {job_id})" for job_id, name in left.items()) + f"; listed in {self.listed_in}")
