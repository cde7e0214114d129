"""Why a job is not a measurement of what was asked: it was started twice, ended in another state, was
lost, or (the bundled application) left an incomplete report. Pure verdicts; ``''`` means none."""

from __future__ import annotations

from djsb.harness.app_output import AppOutput
from djsb.harness.tracked import Tracked
from djsb.jobs import JobState, JobStatus

LOST_AFTER_POLLS = 30
"""A job the scheduler no longer knows (purged, no accounting) for this many polls in a row is lost."""
FINAL_STATE_WAIT_S = 900.0
"""A job the scheduler shows ended but not yet how (Slurm's COMPLETING without accounting) is waited
for this long, then recorded failed: a node that died holds its jobs COMPLETING for SlurmdTimeout
(300 s by default) before Slurm decides their fate."""


def requeue_reason(job: Tracked, status: JobStatus) -> str:
    """Why ``job`` counts as started again ('' if it does not): the scheduler says it restarted it,
    or it is pending again after it was seen running (a requeue, e.g. after its node failed)."""
    if status.restarts:
        return (f"{job.request.name} (job {job.job_id}) was requeued by the scheduler ({status.restarts} "
                f"restart(s){', ' + status.reason if status.reason else ''}): a job that runs twice is "
                "another measurement")
    if job.seen_start is not None and status.state is JobState.PENDING:
        return (f"{job.request.name} (job {job.job_id}) is pending again after it ran (requeued"
                f"{', ' + status.reason if status.reason else ''}): a job that runs twice is another "
                "measurement")
    return ""


def end_failure(job: Tracked, status: JobStatus, *, lost: bool, waited: float) -> str:
    """Why ``job``, ended with ``status``, is not a measurement of what was asked, its report aside
    ('' if it is): ``lost`` to the scheduler, no final state ``waited`` seconds after its end, or
    another state than COMPLETED."""
    what = job.describe()
    if lost:
        return f"{what} is unknown to the scheduler for {LOST_AFTER_POLLS} polls: lost"
    if not status.final:
        return f"{what}: no final state from the scheduler within {waited:.0f} s of its end"
    if status.state is not JobState.COMPLETED:
        return f"{what} ended {status.state.value}" + (f" ({status.reason})" if status.reason else "")
    return ""


def report_failure(what: str, output: AppOutput, tasks: int, iterations: int | None) -> str:
    """Why a completed job of the bundled application did not do what was asked ('' if it did): each
    task reports its iterations and validation (djsb/apps/djsb_stream.c), ``iterations`` when counted."""
    if output.tasks_reported < tasks:
        return f"{what} completed but {tasks - output.tasks_reported} of its {tasks} task(s) left no report"
    if output.iterations is None:
        return f"{what} completed but reported no iterations"
    if iterations is not None and output.iterations < iterations:
        return f"{what} completed but did {output.iterations} of its {iterations} iterations"
    if output.validated is not True:
        return f"{what} completed but its results were not validated"
    return ""
