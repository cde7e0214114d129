"""The job record every workload reader produces and the scheduler model consumes."""

from __future__ import annotations

from dataclasses import dataclass, field

from djsb.workloads.gpus import GpuRequest


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One job of a workload, in trace terms (times in seconds from the workload's start).

    ``requested_time`` is the user's time limit (None: the partition's maximum applies);
    ``run_time`` is how long the job really ran (or would run if unlimited), so a job whose
    run_time exceeds requested_time is killed at its limit by the model unless told otherwise.
    ``estimated`` says that ``requested_time`` was replaced by another estimate
    (djsb/workloads/estimate.py); ``user_estimate`` then holds the user's request as recorded
    (None: the trace recorded none). :attr:`user_request` reads the right one of the two.
    ``gpus`` is what the job asks of GPUs (None: none, as every trace without GPUs). ``array`` is
    the job array a task belongs to when the array is throttled, ``(array job id, most tasks running
    at once)`` (sbatch ``--array=...%N``; None: no throttle to enforce); ``array_task`` which task of
    which job array the job is, ``(array job id, task index)`` (sacct's JobID ``123_4``; None: not an
    array task), throttled or not: what an ``aftercorr`` dependency pairs tasks by and
    ``bf_max_job_array_resv`` counts reservations of. ``reservation`` is the
    advance reservation the job asks to run in (sbatch ``--reservation``; None: none); ``name`` its
    name (sbatch ``--job-name``, sacct's JobName; None: not recorded), which ``singleton``
    dependencies group jobs by; ``exclusive`` whether it asked whole nodes for itself (sbatch
    ``--exclusive``); ``requeue`` whether Slurm may requeue it (sbatch ``--requeue`` /
    ``--no-requeue``; None: the cluster's JobRequeue), when its node fails or a preemption would.
    """

    job_id: int
    submit: float
    run_time: float
    cpus: int
    requested_time: float | None = None
    memory_mb: float | None = None
    nodes: int | None = None
    user: str = "u0"
    account: str = "a0"
    partition: str | None = None
    qos: str | None = None
    depends_on: tuple[int, ...] = field(default=())
    user_estimate: float | None = None
    estimated: bool = False
    gpus: GpuRequest | None = None
    array: tuple[int, int] | None = None
    array_task: tuple[int, int] | None = None
    reservation: str | None = None
    name: str | None = None
    exclusive: bool = False
    requeue: bool | None = None

    @property
    def user_request(self) -> float | None:
        """The time the user asked for, whatever limit the replay gives the job (None: no request
        recorded, so nothing says how well this user estimates)."""
        return self.user_estimate if self.estimated else self.requested_time


STARTED_BY = ("main", "backfill", "submit")
"""Which of Slurm's passes started a job, as sacct's Flags say (``SchedMain``, ``SchedBackfill``,
``SchedSubmit``: the main scheduler, the backfill scheduler, or the submission itself)."""


@dataclass(frozen=True, slots=True)
class RecordedOutcome:
    """What the scheduler that really ran a job recorded of its scheduling, to compare a replay with.

    Times are seconds from the workload's origin, as ``TraceJob.submit``. ``eligible`` is when the
    job could first start (after a begin time, a dependency or an array throttle; None: not
    recorded); ``started_by`` is the pass that started it (one of :data:`STARTED_BY`, None when the
    record does not say, as for a launch that failed); ``state`` and ``reason`` are as recorded
    (``COMPLETED``, ``NODE_FAIL``...; the last pending reason); ``priority`` is the job's priority as
    recorded; ``node_list`` the nodes it ran on, in Slurm's hostlist form; ``submit_line`` the command
    that submitted it (sacct's SubmitLine, Slurm >= 20.11), whose options a replay may not model."""

    start: float
    eligible: float | None = None
    started_by: str | None = None
    state: str = ""
    reason: str = ""
    priority: int | None = None
    node_list: str = ""
    submit_line: str = ""
