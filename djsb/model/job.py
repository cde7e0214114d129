"""The model's mutable view of one job while it is simulated."""

from __future__ import annotations

from dataclasses import dataclass, field

from djsb.model.cluster import PartitionState, QosSpec
from djsb.workloads.job import TraceJob

FACTOR_NAMES = ("age", "size", "fairshare", "qos", "partition")


@dataclass(slots=True, eq=False)
class SimJob:
    """A trace job plus everything the scheduler decides about it.

    ``limit`` is the time limit the model enforces (requested time, else the partition MaxTime,
    else unlimited); ``need`` is its size in units of its partition (see ``ClusterState.need``);
    ``plan`` is the limit rounded up to bf_resolution, the duration the backfill planner uses.
    ``sort_key`` orders the queue like Slurm: partition PriorityTier, then priority (both
    descending), then submit time, then job id (priority_multifactor.html, "Jobs are selected to
    be evaluated by the scheduler in the following order").
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
    start: float | None = None
    end: float | None = None
    alloc: list[tuple[int, int]] = field(default_factory=list)
    killed: bool = False
    backfilled: bool = False
    priority_at_start: float = 0.0
    factors_at_start: dict[str, float] = field(default_factory=dict)

    @property
    def job_id(self) -> int:
        """The trace's job id."""
        return self.trace.job_id

    def update_sort_key(self) -> None:
        """Recompute ``sort_key`` after a priority change."""
        self.sort_key = (-self.part.spec.priority_tier, -self.priority, self.trace.submit,
                         self.trace.job_id)
