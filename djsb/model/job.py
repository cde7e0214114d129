"""The model's mutable view of one job while it is simulated."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from djsb.model.cluster_spec import QosSpec
from djsb.model.cluster_state import PartitionState
from djsb.model.placement import Placement
from djsb.model.reasons import NONE
from djsb.model.shape import JobShape
from djsb.workloads.job import TraceJob

FACTOR_NAMES = ("age", "size", "fairshare", "qos", "partition")
RESERVED_FIRST = 1 << 20
PREEMPTOR_FIRST = 1 << 21
"""Subtracted from the first element of the sort key of a job asking for a reservation: above any
PriorityTier (at most 65533), so such jobs come first (job_scheduler.c ``sort_job_queue2``)."""


@dataclass(slots=True, eq=False)
class SimJob:
    """A trace job plus everything the scheduler decides about it.

    ``limit`` is the time limit the model enforces (requested time, else the partition MaxTime,
    else unlimited); ``need`` is its size in units of its partition (see ``ClusterState.need``);
    ``plan`` is the duration the backfill planner plans it for (its ``plan_duration``: the limit
    rounded up to bf_resolution, or the limit itself under the will-run planner).
    ``sort_key`` orders the queue like Slurm: jobs asking for a reservation first, then partition
    PriorityTier, then priority (both descending), then submit time, then job id, but under
    preempt/qos a job of a QoS of higher ``preempt_rank`` before all
    (:func:`~djsb.model.preemption.preempt_ranks`)
    (priority_multifactor.html, "Jobs are selected to be evaluated by the scheduler in the following
    order"; job_scheduler.c ``sort_job_queue2``).

    Progress: ``left`` seconds of work (at rate 1) remain as of time ``since``, done at ``rate``
    seconds of work per second; the job's END event is the heap entry numbered ``end_seq`` (older
    END entries are stale and skipped). ``alloc`` is where it runs, a
    :class:`~djsb.model.placement.Placement` (runs of nodes, iterable as ``(node, slots)`` pairs);
    ``memory`` is what the job holds on each node of ``alloc``; ``tasks`` its tasks per node when it
    has a :class:`JobShape`; ``cpus`` the CPUs it runs on now (its size after a resize; a suspended
    job takes them back at its resume). ``reason`` is its pending reason as Slurm names it
    (:mod:`djsb.model.reasons`), the last one it had once it started, and ``sacct_reason`` the
    last one that was a limit's (not Priority or Resources), the one sacct shows; ``queued`` the number of
    main passes before it joined the queue, ``tested`` the number of the last pass that tested it
    (:class:`~djsb.model.reasons.PassRecord`). ``requeues`` counts the times a node going DOWN under it
    sent it back to the queue, a node going DOWN or a preemption; ``ended_by`` says why it ended
    early (NODE_FAIL, PREEMPTED; "" for its own end or limit); ``preempted_by`` the job that last
    preempted it, and ``preempt_at`` when it is stopped for that one (inf: not preempted), or
    ``suspended_at`` when that one last suspended it (None: never; :mod:`djsb.model.suspension`);
    ``sliced`` whether gang scheduling's time-slicing holds it suspended (it keeps its CPUs then:
    :mod:`djsb.model.gang`);
    ``resv_end`` when it is ended for its reservation's end (inf: runs in none) and ``reservation``
    the one it runs in: the one it asked for, or a MAGNETIC one that drew it
    (:mod:`djsb.model.reserved_jobs`).
    """

    trace: TraceJob
    part: PartitionState
    qos: QosSpec
    limit: float
    need: int
    eligible: float
    plan: float = 0.0
    priority: float = 0.0
    factors: dict[str, float] = field(default_factory=dict)
    sort_key: tuple[float, float, float, int] = (0.0, 0.0, 0.0, 0)
    preempt_rank: int = 0
    start: float | None = None
    end: float | None = None
    alloc: Placement = field(default_factory=Placement)
    killed: bool = False
    backfilled: bool = False
    priority_at_start: float = 0.0
    factors_at_start: dict[str, float] = field(default_factory=dict)
    shape: JobShape | None = None
    cpus: int = 0
    memory: list[float] | None = None
    tasks: list[int] | None = None
    left: float = 0.0
    rate: float = 1.0
    since: float = 0.0
    end_seq: int = -1
    stall_until: float = -math.inf
    suspended_since: float | None = None
    suspended_total: float = 0.0
    sliced: bool = False
    cancelled: bool = False
    finished: bool = False
    reason: str = NONE
    sacct_reason: str = NONE
    queued: int = 0
    tested: int = 0
    requeues: int = 0
    ended_by: str = ""
    preempted_by: int | None = None
    preempt_at: float = math.inf
    suspended_at: float | None = None
    resv_end: float = math.inf
    reservation: str | None = None

    @property
    def state(self) -> str:
        """Slurm's name of the job's state: PENDING, RUNNING, SUSPENDED, COMPLETED, TIMEOUT, CANCELLED,
        NODE_FAIL, PREEMPTED."""
        if self.cancelled:
            return "CANCELLED"
        if self.finished:
            return self.ended_by or ("TIMEOUT" if self.killed else "COMPLETED")
        if self.start is None:
            return "PENDING"
        return "SUSPENDED" if self.suspended_since is not None else "RUNNING"


    @property
    def job_id(self) -> int:
        """The trace's job id."""
        return self.trace.job_id

    def requeue(self, eligible: float) -> None:
        """Back to pending, eligible again at ``eligible``, to start from scratch: its node went
        DOWN under it, or it was preempted (Slurm keeps the job id and runs the job anew)."""
        self.requeues += 1
        self.eligible = eligible
        self.start = self.end = self.suspended_since = None
        self.alloc, self.memory, self.tasks = Placement(), None, None
        self.killed = self.backfilled = False
        self.rate, self.end_seq, self.suspended_total, self.stall_until = 1.0, -1, 0.0, -math.inf
        self.preempt_at = self.resv_end = math.inf
        self.reservation = None

    def work_until(self, now: float) -> None:
        """Account the work done from ``since`` to ``now`` at the current ``rate``."""
        self.left = max(0.0, self.left - self.rate * (now - self.since))
        self.since = now

    def update_sort_key(self) -> None:
        """Recompute ``sort_key`` after a priority change."""
        trace = self.trace
        first = RESERVED_FIRST if trace.reservation is not None else 0
        first += self.preempt_rank * PREEMPTOR_FIRST
        self.sort_key = (-self.part.spec.priority_tier - first, -self.priority, trace.submit, trace.job_id)
