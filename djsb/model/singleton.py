"""The ``singleton`` dependency (``sbatch --dependency=singleton``): a job that asks it waits while
another job of its user with its name (``TraceJob.name``, sbatch ``--job-name``) runs or is
suspended, or is pending with a smaller job id, whether that one asked it or not (job_scheduler.c
``test_job_dependency``, whose ``_find_singleton_job`` finds such a job). So at most one job of a
(user, name) runs at a time among those that ask it, and they run in job-id order.

The jobs of a group are known from their submission on; the test is made at the submission of a job
asking it and, for the first of a group's waiting ones, at each end or cancellation of a job of the
group (Slurm tests it at every pass; nothing else of the group's can satisfy it in between).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from djsb.model.job import SimJob
    from djsb.workloads.job import TraceJob

Group = tuple[str, str]
"""A user and a job name."""


def group(trace: TraceJob) -> Group:
    """The (user, name) group of a job (a job without a name is in its user's group of no name)."""
    return trace.user, trace.name or ""


class Singletons:
    """The jobs of the groups of which some job asks ``singleton`` (``groups``), by group, and the
    ones that wait for it."""

    def __init__(self, groups: set[Group]) -> None:
        self.members: dict[Group, list[SimJob]] = {key: [] for key in groups}
        self.waiting: dict[Group, list[SimJob]] = {}

    def submitted(self, job: SimJob, asks: bool) -> bool:
        """``job`` was submitted (asking ``singleton`` or not); whether it must wait for it."""
        members = self.members.get(group(job.trace))
        if members is None:
            return False
        members.append(job)
        if asks and _blocked(job, members):
            self.waiting.setdefault(group(job.trace), []).append(job)
            return True
        return False

    def released(self, left: SimJob) -> SimJob | None:
        """A job of a group ended or was cancelled: the first job of its group waiting for
        ``singleton`` that no longer has to (None: none)."""
        key = group(left.trace)
        waiting = self.waiting.get(key)
        if not waiting:
            return None
        members = self.members[key]
        members[:] = [job for job in members if not (job.finished or job.cancelled)]
        first = min(waiting, key=lambda job: job.job_id)
        if first.cancelled:
            waiting.remove(first)
            return self.released(left)
        if _blocked(first, members):
            return None
        waiting.remove(first)
        return first


def _blocked(job: SimJob, members: list[SimJob]) -> bool:
    """Whether another job of ``job``'s group runs, is suspended or is pending with a smaller id
    (``_find_singleton_job``)."""
    return any(not (other.finished or other.cancelled)
               and (other.start is not None or other.job_id < job.job_id)
               for other in members if other is not job)
