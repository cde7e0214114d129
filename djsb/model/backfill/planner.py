"""What a backfill planner is: the code that makes one backfill pass, registered by name.

The core (djsb/model/simulation.py) decides when a backfill pass runs and whether it can start
anything; the planner registered under ``SchedulerConfig.planner`` makes it. It sees only a
:class:`BackfillView` of the core: the time, the queue in priority order, the running jobs and the
units they hold, the cluster state, the per-user limits, the backfill policy's reservation count and
the invariant checker. It walks the queue (:meth:`BackfillPlanner.candidates`), decides which jobs
start now and where, through the view's :attr:`BackfillView.start` (the core applies each decision at
once, so the rest of the pass sees it), and plans reservations for the others as the policy allows.
A planner also says how long it plans a job for and when it expects a running job to end, the rules
its reservations rest on; it holds only the configuration.

A new planner is one file: a subclass of :class:`BackfillPlanner` decorated with
``@BACKFILL_PLANNERS.register("name")``, in this package or anywhere imported before the
configuration names it.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from djsb.model.array_resv import ArrayReservations
from djsb.model.cluster_state import ClusterState, PartitionState
from djsb.model.invariants import InvariantChecker
from djsb.model.job import SimJob
from djsb.model.limits import RunningLimits
from djsb.model.placement import Placement
from djsb.model.queue import JobQueue, Needs, NeedsLeft
from djsb.model.reservations import ReservationPlan, Window
from djsb.registry import Registry


class PlannerOptions(Protocol):
    """The options of :class:`~djsb.model.scheduler.SchedulerConfig` a planner plans with (the
    configuration validates planner names against this package, so the planners name only these)."""

    @property
    def bf_resolution(self) -> float: ...
    @property
    def bf_window(self) -> float: ...
    @property
    def bf_max_job_test(self) -> float: ...
    @property
    def bf_max_job_user(self) -> float: ...
    @property
    def bf_max_job_part(self) -> float: ...
    @property
    def bf_max_job_array_resv(self) -> int: ...
    @property
    def bf_node_reservations(self) -> bool: ...
    @property
    def bf_round_reservations(self) -> bool: ...
    @property
    def kill_wait(self) -> float: ...


Accept = Callable[[Placement, Sequence[tuple[SimJob, Placement]], bool], bool]
"""Whether a pass lets a preemptor start on a placement once the jobs it would preempt or (True)
suspend give back what each gives (all it holds, or the slots the preemptor takes from one it
suspends): :class:`BackfillPreemption`."""


@dataclass(frozen=True, slots=True)
class BackfillPreemption:
    """What a pass needs of the core to let a job preempt (the core's preemption settings made
    them): ``gone(job)``, the running jobs ``job`` may preempt, each with whether it would give back
    its CPUs alone (suspended) rather than all it holds; ``run_now(job, excluded, accept)``, the
    start now that preempts for it, as the main pass's
    (:meth:`~djsb.model.machine_operations.MachineOperations._preempt`): where it starts on the CPUs
    of jobs it suspended, or None once it preempted the jobs it waits for (or waits for jobs being
    preempted already) on nodes but ``excluded``; ``accept`` (None: any) is asked of the placement
    the preemption would give it and of what its victims would give back before anything is
    preempted, and nothing is when it says no."""

    gone: Callable[[SimJob], Sequence[tuple[SimJob, bool]]]
    run_now: Callable[[SimJob, frozenset[int], Accept | None], Placement | None]


@dataclass(frozen=True, slots=True)
class BackfillView:
    """What one backfill pass plans with, made by the core for the pass.

    ``queue`` holds the queued jobs in priority order (``queue.jobs``) and their needs per partition;
    ``running`` the running jobs by id and ``amounts`` the units each holds per partition;
    ``max_reservations`` is the backfill policy's count per partition (inf: every job tested);
    ``node_memory`` says whether nodes have memory to plan; ``checker`` is the invariant checker, if
    one checks this replay.
    ``start(job, placement)`` is the planner's one decision: start ``job`` now on ``placement`` as a
    backfilled job. The core applies it before returning, so the state, the queue's needs and the
    limits the rest of the pass reads already count it. ``in_service`` gives what a running job's
    allocation and memory give back to the plan when it ends: all of it, but what is on nodes out of
    service (:mod:`djsb.model.node_service`), which the plan never gets (None: every node is in
    service); ``reservations`` the advance reservations, whose nodes no job may use over their
    windows (:mod:`djsb.model.reservations`); ``reserved_jobs`` whether jobs asking for one may be
    queued or running: no planner starts them, and those running hold nodes the windows already
    take (:mod:`djsb.model.reserved_jobs`); ``array_tasks`` whether the replay has tasks of job
    arrays, whose reservations ``bf_max_job_array_resv`` bounds (:mod:`djsb.model.array_resv`);
    ``preemption`` whether jobs may preempt, and how (None: no job may; a planner that does not plan
    preemption ignores it)."""

    now: float
    queue: JobQueue
    running: Mapping[int, SimJob]
    amounts: Mapping[int, Sequence[tuple[int, int]]]
    state: ClusterState
    limits: RunningLimits
    max_reservations: float
    node_memory: bool
    checker: InvariantChecker | None
    start: Callable[[SimJob, Placement], None]
    in_service: Callable[[Placement, list[float] | None], tuple[Placement, list[float] | None]] | None = None
    reservations: ReservationPlan | None = None
    reserved_jobs: bool = False
    array_tasks: bool = False
    preemption: BackfillPreemption | None = None

    def windows(self, horizon: float) -> list[Window]:
        """The advance reservations' windows from now to ``horizon``, each to plan as taken."""
        return self.reservations.windows(self.now, horizon) if self.reservations is not None else []

    def blocked(self, job: SimJob, duration: float) -> frozenset[int]:
        """The nodes of ``job``'s partition an advance reservation keeps from it run now for
        ``duration``."""
        if self.reservations is None:
            return frozenset()
        return frozenset(self.reservations.blocked(self.now, self.now + duration) & job.part.members)

    def usable(self, job: SimJob, state: ClusterState, duration: float) -> ClusterState:
        """``state`` without the nodes a reservation keeps from ``job`` run now for ``duration``."""
        if self.reservations is None:
            return state
        held = self.blocked(job, duration)
        return state.without(held) if held else state

    def holdings(self) -> Iterator[tuple[SimJob, Placement, list[float] | None]]:
        """Each running job that holds its CPUs (not suspended, or suspended by time-slicing), with the
        allocation and memory it gives back to the plan when it ends."""
        keep = self.in_service
        for job in self.running.values():
            if job.suspended_since is None or job.sliced:
                alloc, memory = keep(job.alloc, job.memory) if keep is not None else (job.alloc, job.memory)
                yield job, alloc, memory


def whole(state: ClusterState, nodes: frozenset[int]) -> Placement:
    """``nodes`` with every slot of each: what an advance reservation keeps."""
    return Placement.of((node, state.node_capacity[node]) for node in sorted(nodes))


class BackfillPlanner(ABC):
    """One replay's backfill passes under ``config``; each pass sees a :class:`BackfillView`."""

    def __init__(self, config: PlannerOptions) -> None:
        self.config = config

    @abstractmethod
    def run(self, view: BackfillView) -> None:
        """Make one backfill pass at ``view.now``, starting jobs through ``view.start``."""

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

    def ends_by(self, job: SimJob) -> float:
        """:meth:`expected_end`, or the end of its grace time once the job is being preempted
        (preempt.c ``_job_check_grace_internal``: ``end_time = MIN(end_time, preempt_time +
        grace_time)``; ``SimJob.preempt_at``, inf for a job no preemption ends)."""
        return min(self.expected_end(job), job.preempt_at)

    def planned_end(self, job: SimJob, now: float) -> float:
        """When the planner expects a running job to free its resources; one already due is
        expected a resolution from now."""
        planned = self.expected_end(job)
        return planned if planned > now else now + max(self.config.bf_resolution, 1.0)

    def released(self, job: SimJob, now: float) -> float:
        """:meth:`planned_end`, or the end of its grace time if sooner once the job is being
        preempted (:meth:`ends_by`): what a pass with preemption on plans with. A job whose grace
        time ends now still holds its nodes in this pass (its END comes after it): it is expected a
        resolution from now, as an overdue job is."""
        grace_end = job.preempt_at if job.preempt_at > now else now + max(self.config.bf_resolution, 1.0)
        return min(self.planned_end(job, now), grace_end)

    def candidates(self, view: BackfillView, startable: Startable | None = None,
                   arrays: ArrayReservations | None = None, walk_all: bool = False) -> Iterator[SimJob]:
        """The queued jobs a backfill pass tests, in queue order: at most ``bf_max_job_test``, none
        held by a QoS limit (asked as the pass reaches it: the pass's starts count;
        :meth:`~djsb.model.limits.RunningLimits.held_now` for TRES limits), at most
        ``bf_max_job_part`` of one partition and ``bf_max_job_user`` of one user: a job past either
        count toward ``bf_max_job_test`` but is not tested, and counts toward neither (backfill.c
        ``_job_exceeds_max_bf_param``, checked after the pass's depth is counted: the partition's
        count first, then the user's, both incremented only for a job tested). A task of a job array
        whose reservations in the pass reached ``bf_max_job_array_resv`` (``arrays``, which the
        planner tells of each reservation) is walked past before any of these counts
        (:mod:`djsb.model.array_resv`).

        Without an invariant checker the walk stops where no job left in the queue could start:
        by default where none could fit its partition's free capacity, or as the planner's
        ``startable`` (a tighter necessary condition of its starts) says. A pass only takes
        capacity, so none of them could start later in the pass, and the reservations it would
        still make are dropped with the pass (the core skips a whole pass on the first condition).
        Those reservations are what costs: sched/backfill plans one for every job it tests, the
        model's conservative policy too. A job asking for an advance reservation is walked past
        (:mod:`djsb.model.reserved_jobs`: only main passes start it). ``walk_all``: the walk does not
        stop there (a job that preempts may start where none fits the free capacity)."""
        left = None if view.checker is not None or walk_all \
            else startable or FreeCapacity(view.queue.needs.copy(), view.state.partitions)
        tested = 0
        config = self.config
        per_user: dict[str, int] | None = {} if math.isfinite(config.bf_max_job_user) else None
        per_part: dict[int, int] | None = {} if math.isfinite(config.bf_max_job_part) else None
        limits = view.limits
        inside = view.reserved_jobs
        pre, post = limits.pre or limits.arrays, limits.post  # no limit of either kind: no call per job
        for job in view.queue.jobs:
            if tested >= config.bf_max_job_test:
                return
            if left is not None:
                if not left.any():
                    return
                left.remove(job)
            if inside and job.trace.reservation is not None:
                continue
            if arrays is not None and arrays.walked_past(job):
                continue
            if (not pre or limits.allows(job)) and (not post or not limits.held_now(job)):
                tested += 1
                part = job.part.index
                if per_part is not None and per_part.get(part, 0) >= config.bf_max_job_part:
                    continue
                if per_user is not None:
                    user = job.trace.user
                    if per_user.get(user, 0) >= config.bf_max_job_user:
                        continue
                    per_user[user] = per_user.get(user, 0) + 1
                if per_part is not None:
                    per_part[part] = per_part.get(part, 0) + 1
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
    (:meth:`~djsb.model.cluster_state.ClusterState.allocate` refuses a job needing more than its
    partition's free units)."""

    def __init__(self, left: Needs[int] | NeedsLeft[int], parts: Sequence[PartitionState]) -> None:
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
