"""What a backfill planner is: the code that makes one backfill pass, registered by name.

The core (djsb/model/simulation.py) decides when a backfill pass runs and whether it can start
anything; the planner registered under ``SchedulerConfig.planner`` makes it: it walks the queue
(:meth:`BackfillPlanner.candidates`), starts the jobs it may start now through
:meth:`~djsb.model.simulation.Simulation.start_job`, plans reservations for the others as the
backfill policy (``SchedulerConfig.backfill``: how many per partition) allows, and returns the ids
it started, which the core then takes out of the queue. A planner also says how long it plans a
job for and when it expects a running job to end, the rules its reservations rest on.

A new planner is one file: a subclass of :class:`BackfillPlanner` decorated with
``@BACKFILL_PLANNERS.register("name")``, in this package or anywhere imported before the
configuration names it.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

from djsb.registry import Registry

if TYPE_CHECKING:
    from djsb.model.cluster import PartitionState
    from djsb.model.job import SimJob
    from djsb.model.queue import Needs
    from djsb.model.simulation import Simulation


class BackfillPlanner(ABC):
    """One replay's backfill passes, on the state of ``sim`` (its queue, running jobs, cluster state,
    options and backfill policy)."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.config = sim.config

    @abstractmethod
    def run(self, now: float) -> set[int]:
        """Make one backfill pass now; return the ids of the jobs it started."""

    def plan_duration(self, limit: float) -> float:
        """How long the planner plans a job with time limit ``limit`` for (``SimJob.plan``): the
        limit rounded up to ``bf_resolution``, as sched/backfill counts time in slots of it."""
        res = self.config.bf_resolution
        if res <= 0 or not math.isfinite(limit):
            return limit
        return math.ceil(limit / res) * res

    def expected_end(self, job: SimJob) -> float:
        """When the planner expects a running job to end, ignoring overruns: start + time suspended
        + planned duration."""
        return planned_end(job)

    def planned_end(self, job: SimJob, now: float) -> float:
        """When the planner expects a running job to free its resources; one already due is
        expected a resolution from now."""
        planned = self.expected_end(job)
        return planned if planned > now else now + max(self.config.bf_resolution, 1.0)

    def candidates(self, startable: Startable | None = None) -> Iterator[SimJob]:
        """The queued jobs a backfill pass tests, in queue order: at most ``bf_max_job_test``, none
        held by a per-user QoS limit (asked as the pass reaches it: the pass's starts count).

        Without an invariant checker the walk stops where no job left in the queue could start:
        by default where none could fit its partition's free capacity, or as the planner's
        ``startable`` (a tighter necessary condition of its starts) says. A pass only takes
        capacity, so none of them could start later in the pass, and the reservations it would
        still make are dropped with the pass (the core skips a whole pass on the first condition).
        Those reservations are what costs: sched/backfill plans one for every job it tests, the
        model's conservative policy too."""
        sim = self.sim
        left = None if sim.checker is not None else startable or FreeCapacity(sim.queue.needs.copy(),
                                                                             sim.state.partitions)
        tested = 0
        for job in sim.queue.jobs:
            if tested >= self.config.bf_max_job_test:
                return
            if left is not None:
                if not left.any():
                    return
                left.remove(job)
            if sim.limits.allows(job):
                tested += 1
                yield job


class Startable(Protocol):
    """The jobs a backfill pass has not walked yet, and whether one of them could still start."""

    def any(self) -> bool:
        """Could a job not walked yet start now?"""

    def remove(self, job: SimJob) -> None:
        """The pass reached ``job``."""


class FreeCapacity:
    """:class:`Startable` by the jobs' needs per partition (``left``): one could start only if it
    fits its partition's free capacity now
    (:meth:`~djsb.model.cluster.ClusterState.allocate` refuses a job needing more than its
    partition's free units)."""

    def __init__(self, left: Needs[int], parts: Sequence[PartitionState]) -> None:
        self.left = left
        self.parts = parts

    def any(self) -> bool:
        """Could a job not walked yet start now?"""
        return self.left.fit(self.parts)

    def remove(self, job: SimJob) -> None:
        """The pass reached ``job``."""
        self.left.remove(job.part.index, job.need)


def planned_end(job: SimJob) -> float:
    """A running job's planned end, ignoring overruns: start + time suspended + planned duration."""
    assert job.start is not None
    return job.start + job.suspended_total + job.plan


BACKFILL_PLANNERS: Registry[type[BackfillPlanner]] = Registry("backfill planner", "djsb.model.backfill")
"""Every planner class by name (``policy.scheduler.bf_planner`` selects)."""
