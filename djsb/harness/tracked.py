"""A job the driver submitted and follows until its end is recorded: what it asked, what the polls saw."""

from __future__ import annotations

from dataclasses import dataclass, field

from djsb.jobs import JobRequest, JobState, JobStatus


@dataclass
class Tracked:
    """A job the driver submitted and follows until it ends (times on the run's clock, Unix seconds,
    except ``suspended_since``, a reading of the clock)."""

    request: JobRequest
    job_id: str
    app: str
    index: int
    submit: float
    status: JobStatus = field(default_factory=lambda: JobStatus(JobState.PENDING))
    seen_start: float | None = None
    seen_end: float | None = None
    suspended_since: float | None = None
    suspended_s: float = 0.0
    shared_with_sim: bool = False
    unknown_polls: int = 0
    iterations: int | None = None

    def describe(self) -> str:
        """``name (job id)``, as messages name a job."""
        return f"{self.request.name} (job {self.job_id})"
