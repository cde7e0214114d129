"""QoS limits on running jobs: a job held by one is skipped by every pass, not blocking its
partition (Slurm's MaxJobsPerUser of a QoS; the pending reason QOSMaxJobsPerUserLimit)."""

from __future__ import annotations

from djsb.model.job import SimJob


class RunningLimits:
    """Running jobs per (user, QoS), kept up to date by the starts and ends of one replay."""

    def __init__(self) -> None:
        self.running: dict[tuple[str, str], int] = {}

    def allows(self, job: SimJob) -> bool:
        """Whether the job's QoS lets its user start one more job now."""
        limit = job.qos.max_jobs_per_user
        return limit is None or self.running.get((job.trace.user, job.qos.name), 0) < limit

    def started(self, job: SimJob) -> None:
        """Count a job that starts."""
        key = (job.trace.user, job.qos.name)
        self.running[key] = self.running.get(key, 0) + 1

    def ended(self, job: SimJob) -> None:
        """Count a job that ends (finished, killed or cancelled while started)."""
        self.running[(job.trace.user, job.qos.name)] -= 1
