"""The ``profile`` planner, the model's own backfill pass (the default).

It plans with each job's time limit rounded up to ``bf_resolution`` (running jobs end at start +
limit), tests at most ``bf_max_job_test`` jobs, starts those that fit now without taking capacity
reserved for earlier jobs, and reserves capacity for jobs that cannot start when their reserved
start lies within ``bf_window``. ``max_reservations`` of the backfill policy counts per partition:
EASY reserves for the first job of each partition that cannot start, conservative for all (a job
belongs to one partition; Mu'alem & Feitelson, IEEE TPDS 12(6), 2001).

Capacity is counted per partition (cores x share, or whole nodes for exclusive partitions;
:mod:`djsb.model.profile`), which is exact for core allocation alone. Where a queued job's placement
depends on more (:meth:`~djsb.model.queue.JobQueue.plans_nodes`: node memory, a node count on a
non-exclusive partition, a task layout or node list, shared cores, nodes shared with another
partition), the reservations of its partition and of the partitions sharing its nodes are planned
node by node as well (:mod:`djsb.model.node_plan`): each takes specific nodes, slots and memory (and
the units they hold), and once a partition holds such a reservation every start in it or in a
partition sharing its nodes must fit each node's least availability over its plan, so no backfilled
job delays a reserved one (checked by :mod:`djsb.model.invariants`). The plain case keeps the cheap
unit count. A start in one partition is also checked against the unit counts of every partition
sharing its nodes; as those partitions plan node by node, their reservations never claim the same
node twice. ``bf_node_reservations`` plans every reservation node by node, keeping its nodes whole;
``bf_round_reservations`` rounds reservations as sched/backfill does.

With preemption on (``view.preemption``), a job that may preempt running jobs is planned as the
will-run planner plans it (backfill.c ``_try_sched`` with ``slurm_find_preemptable_jobs``; cons_common
job_test.c ``_will_run_test`` with ``_build_cr_job_list``): if it does not start as things are, its
profiles (and node plan) are copied with what the jobs it may preempt hold given back from now
(their CPUs alone for one it would suspend). If it fits them now, the core preempts for it as the
main pass does (``_start_job``: ``select_nodes``, ``_run_now``), once the pass accepted the placement
and what its victims would give back (:class:`Preemptor`: every reservation of the pass kept); it
starts on the CPUs of the jobs it suspended, or, waiting for the jobs it preempted to end, gets its
units (and those nodes) reserved from now ("planned start of ... failed"). Otherwise it reserves
its earliest start over the jobs it may preempt, which keeps later jobs off what they hold. After a
preemption the pass's profiles are made anew (its reservations taken again) and its node plan gets
the victims' holdings back. A job being preempted gives back at the end of its grace time
(preempt.c ``_job_check_grace_internal``). The invariant checker is told which reservations a
preemptor made (planned over running jobs): it checks only the others, but counts those ahead of
them. Such a pass walks the
queue to its depth. Not planned: a preemptor of a partition planned node by node starts through the
core's placement only if it keeps the node plan's reservations in slots and memory (its GPUs, the
rule between partitions and MaxCPUsPerNode are counted on the core's own placement), and, as
:mod:`djsb.model.suspension` says, that a preemptor's slots go back to the jobs it suspended.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from djsb.model.allocation import allocate, job_memory, shares_cores
from djsb.model.array_resv import array_reservations
from djsb.model.backfill.planner import (
    BACKFILL_PLANNERS,
    BackfillPlanner,
    BackfillView,
    planned_end,
    whole,
)
from djsb.model.cluster_state import ClusterState, PartitionState
from djsb.model.invariants import Reservation
from djsb.model.job import SimJob
from djsb.model.node_plan import Given, NodePlan
from djsb.model.placement import Placement
from djsb.model.profile import Profile
from djsb.model.queue import Needs


@BACKFILL_PLANNERS.register("profile")
class ProfilePlanner(BackfillPlanner):
    """Availability profiles per partition, node-level plans where placement needs them."""

    def run(self, view: BackfillView) -> None:
        cfg, now = self.config, view.now
        state, queue = view.state, view.queue
        horizon = now + cfg.bf_window
        max_reservations = view.max_reservations
        profiles: dict[int, Profile] = {}
        nodes: NodePlan | None = None  # built at the first reservation that needs node-level planning
        node_level = set(range(len(state.partitions))) if cfg.bf_node_reservations else \
            queue.node_level_partitions() if any(queue.node_jobs) else set()
        node_planned: set[int] = set()  # partitions sharing a node with a node-level reservation
        checker = view.checker
        reservations: list[Reservation] = []  # for the invariant checker, kept only when it checks
        reserved: dict[int, int] = {}  # reservations made per partition
        parts_queued = 1 if len(state.partitions) == 1 else \
            len(queue.needs.least)  # the queue is not empty here
        parts_done = 0  # partitions with no reservation left to make
        earliest: dict[tuple[int, int, float], float] = {}
        startable: bool | None = None  # whether some queued job fits now: asked only when it decides
        preemption = view.preemption
        # the pass's reservations of units, to take again from profiles made anew after a preemption
        logged: list[tuple[int, float, float, float]] | None = [] if preemption is not None else None
        # Where each job walked costs a reservation, stop the walk where no job left fits its plan;
        # EASY's single reservation leaves the rest of its walk cheap (no reservation to plan). A job
        # that preempts may start where none fits: a pass with preemption on walks the whole depth.
        headroom = Headroom(queue.needs_by_plan.copy(), state.partitions, profiles, now) \
            if max_reservations > 1 and preemption is None else None
        arrays = array_reservations(cfg.bf_max_job_array_resv, view.array_tasks)
        for job in self.candidates(view, headroom, arrays, walk_all=preemption is not None):
            part = job.part
            may_reserve = reserved.get(part.index, 0) < max_reservations
            gone: Sequence[tuple[SimJob, bool]] | None = None  # the jobs it may preempt, asked once
            if not may_reserve and job.need > part.free \
                    and (preemption is None or not (gone := preemption.gone(job))):
                if startable is None:
                    startable = queue.something_fits()
                if not startable and parts_done >= parts_queued and preemption is None:
                    break  # no queued job fits anywhere and no partition has a reservation left to make
                continue
            profile = profiles.get(part.index)
            if profile is None:
                profile = profiles[part.index] = self._profile(view, part)
            duration = job.plan
            if profile.fits(now, duration, job.need):
                alloc = allocate(job, view.usable(job, state, duration))
                if alloc is not None and nodes is not None and part.index in node_planned \
                        and nodes.holds_reserved(alloc):
                    alloc = allocate(job, nodes.view(part, now, duration, shares=shares_cores(job)))
                if alloc is not None and self._overlaps_fit(state, part, alloc, profiles, now, duration):
                    if view.limits.blocks(job, alloc):
                        continue  # held by a QoS TRES limit: neither a start nor a reservation (backfill.c)
                    profile.take(now, duration, job.need)
                    for q in part.overlaps:
                        if q in profiles:
                            profiles[q].take(now, duration, state.amount_in(state.partitions[q], alloc))
                    view.start(job, alloc)
                    if nodes is not None:
                        nodes.take(alloc, job.memory, now, duration, part.index, shares=shares_cores(job))
                    startable = None
                    continue
            freed: dict[int, Profile] | None = None  # a preemptor's profiles, the jobs it may preempt gone
            given: Sequence[Given] = ()  # what those jobs give back to the plan
            waits: Placement | None = None  # where it waits for the jobs it preempted to end
            if preemption is not None:
                gone = preemption.gone(job) if gone is None else gone
                if gone:
                    given = self._giving(view, [(other, other.alloc, not cpus_only)
                                                for other, cpus_only in gone])
                    freed = self._given_back(view, part, given, profiles)
                    if freed[part.index].fits(now, duration, job.need):
                        test = Preemptor(self, view, job, profiles,
                                         nodes if part.index in node_planned else None)
                        placed = preemption.run_now(job, view.blocked(job, duration), test)
                        if test.alloc is not None:  # it suspended or preempted jobs: their ends moved
                            earliest.clear()  # and capacity grew: the searches start from now again
                            startable = None
                            if nodes is not None:
                                nodes = nodes.without(test.moved())
                            if placed is not None and not view.limits.blocks(job, placed):
                                view.start(job, placed)  # on the CPUs of the jobs it suspended
                                if nodes is not None:
                                    nodes.take(placed, job.memory, now, duration, part.index,
                                               shares=shares_cores(job))
                            assert logged is not None
                            self._renew(view, profiles, logged)  # the pass's starts are running jobs
                            profile = profiles[part.index]
                            if placed is not None:
                                continue
                            waits = test.alloc  # the start failed: reserved from now (backfill.c)
            if not may_reserve:
                continue
            if part.index in node_level:
                nodes = nodes or self._node_plan(view)
                found = (now, waits) if waits is not None \
                    else self._earliest_on_nodes(job, freed[part.index], nodes.without(given), now, horizon) \
                    if freed is not None else self._earliest_on_nodes(job, profile, nodes, now, horizon)
                if found is None:
                    continue
                start, alloc = found
                if view.limits.blocks(job, alloc):
                    continue  # acct_policy_job_runnable_post_select refuses it on these nodes: no reservation
                kept = _kept_free(job, alloc)
                held_from, held_for = self._reserved_window(start, duration)
                if cfg.bf_node_reservations:
                    nodes.reserve_whole(kept, held_from, held_for)
                else:
                    nodes.reserve(kept, job_memory(job, kept) if view.node_memory else None,
                                  held_from, held_for, shares=shares_cores(job), part=part.index)
                node_planned.update((part.index, *part.overlaps))
                on = tuple(node for node, _ in alloc)
                units = state.amount_in(part, kept)
            elif freed is not None:
                # a preemptor is planned over the jobs it may preempt (cons_common job_test.c
                # _will_run_test): its reservation keeps later jobs off what they hold
                found_start = now if waits is not None \
                    else freed[part.index].earliest_start(job.need, duration, now, horizon)
                if found_start is None:
                    continue
                start, on, units = found_start, (), job.need
            else:
                # Capacity only shrinks during a pass, so an equal request reserved earlier in the
                # pass bounds this one's start from below: resume the search there.
                shape = (part.index, job.need, duration)
                found_start = profile.earliest_start(job.need, duration, earliest.get(shape, now), horizon)
                if found_start is None:
                    continue
                start = earliest[shape] = found_start
                on, units = (), job.need
            window = self._reserved_window(start, duration)
            profile.take(*window, units)
            if logged is not None:
                logged.append((part.index, *window, units))
            if checker is not None:
                reservations.append(Reservation(job.job_id, part.index, start, duration, job.need, on,
                                                freed is not None))
            reserved[part.index] = reserved.get(part.index, 0) + 1
            parts_done += reserved[part.index] >= max_reservations
            if arrays is not None:
                arrays.reserved(job)
        if checker is not None:
            checker.check_reservations(now, reservations)

    def _profile(self, view: BackfillView, part: PartitionState) -> Profile:
        """``part``'s free units from now on: running jobs give theirs back at their planned end
        (:meth:`planned_end`, inlined: this runs at every backfill pass over every running job), but
        those running in a reservation's window to its end, whose nodes it takes whole (counted once)."""
        index, running, now = part.index, view.running, view.now
        overdue = now + max(self.config.bf_resolution, 1.0)
        inside = view.reserved_jobs
        grace = view.preemption is not None  # a job being preempted gives back at its grace time's end
        releases = [(now if inside and running[job_id].resv_end < math.inf
                     else self.released(running[job_id], now) if grace
                     else end if end > now else overdue, amount)
                    for job_id, amounts in view.amounts.items()
                    for end in (planned_end(running[job_id]),)
                    for p, amount in amounts if p == index]
        profile = Profile(now, part.free, releases)
        for begin, end, nodes in view.windows(now + self.config.bf_window):
            units = view.state.amount_in(part, whole(view.state, nodes))
            if units:  # the reservation's nodes are taken over its window
                profile.take(max(begin, now), end - max(begin, now), units)
        return profile

    def _giving(self, view: BackfillView, victims: Iterable[tuple[SimJob, Placement, bool]]) -> list[Given]:
        """What each of ``victims`` (a running job, the slots it gives, whether it gives all it holds
        rather than CPUs alone, as one suspended does) gives back to the plan, from now until the
        plan had it give them back."""
        now, inside = view.now, view.reserved_jobs
        return [(now, now if inside and victim.resv_end < math.inf else self.released(victim, now),
                 slots if whole else Placement.of(slots), victim.memory if whole else None, victim.part.index)
                for victim, slots, whole in victims]

    @staticmethod
    def _given_back(view: BackfillView, part: PartitionState, given: Sequence[Given],
                    profiles: dict[int, Profile]) -> dict[int, Profile]:
        """Copies of the pass's profiles of ``part`` and of the partitions sharing its nodes, with
        ``given`` free again: the profiles a preemptor is tested and planned on (cons_common
        job_test.c ``_build_cr_job_list``: the preemptable jobs gone)."""
        state = view.state
        copies = {p: profiles[p].copy() for p in (part.index, *part.overlaps) if p in profiles}
        for start, until, slots, _, _ in given:
            for p, profile in copies.items():
                units = state.amount_in(state.partitions[p], slots)
                if units and until > start:
                    profile.take(start, until - start, -units)
        return copies

    def _renew(self, view: BackfillView, profiles: dict[int, Profile],
               logged: Sequence[tuple[int, float, float, float]]) -> None:
        """The pass's profiles made anew after a preemption moved running jobs' ends (the pass's
        starts are among the running jobs, the jobs suspended are not), its reservations of units
        taken again."""
        for p in profiles:
            profiles[p] = self._profile(view, view.state.partitions[p])
        for p, held_from, held_for, units in logged:
            if p in profiles:
                profiles[p].take(held_from, held_for, units)

    def _reserved_window(self, start: float, duration: float) -> tuple[float, float]:
        """What a reservation holds, as (from, for how long): its planned run, or with
        ``bf_round_reservations`` both ends rounded down to ``bf_resolution`` boundaries as
        Slurm's _attempt_backfill does before _add_reservation (backfill.c). A candidate whose run
        overlaps the rounded window may not start, even when it would end before the exact start."""
        res = self.config.bf_resolution
        if not self.config.bf_round_reservations or res <= 0:
            return start, duration
        held_from = math.floor(start / res) * res
        return held_from, math.floor((start + duration) / res) * res - held_from

    def _node_plan(self, view: BackfillView) -> NodePlan:
        """Every node's future free slots and memory; a suspended job holds its memory throughout."""
        now = view.now
        ends = self.released if view.preemption is not None else self.planned_end
        holdings = [(ends(job, now), alloc, memory, job.part.index, shares_cores(job))
                    for job, alloc, memory in view.holdings()]
        plan = NodePlan(view.state, now, holdings)
        for begin, end, nodes in view.windows(now + self.config.bf_window):
            plan.reserve_whole(whole(view.state, nodes), max(begin, now), end - max(begin, now))
        return plan

    @staticmethod
    def _earliest_on_nodes(job: SimJob, profile: Profile, nodes: NodePlan, now: float,
                           horizon: float) -> tuple[float, Placement] | None:
        """Earliest start (and nodes) of a job planned node by node: the first instant from which its
        partition's units stay free for its plan (a necessary condition) and its allocation rules
        succeed on every node's least availability over that plan."""
        duration, need = job.plan, job.need
        first = profile.earliest_start(need, duration, now, horizon)
        if first is None:
            return None
        times = sorted(t for t in nodes.breakpoints(job.part).union(profile.times) if first <= t <= horizon)
        starts = (t for t in times if profile.fits(t, duration, need))
        return nodes.earliest_start(job.part, duration, lambda view: allocate(job, view), starts,
                                    shares=shares_cores(job))

    @staticmethod
    def _overlaps_fit(state: ClusterState, part: PartitionState, alloc: Placement,
                      profiles: dict[int, Profile], now: float, duration: float) -> bool:
        """A start in ``part`` must not eat capacity reserved in a partition sharing its nodes."""
        for q in part.overlaps:
            if q in profiles:
                amount = state.amount_in(state.partitions[q], alloc)
                if amount and not profiles[q].fits(now, duration, amount):
                    return False
        return True


class Preemptor:
    """A preemptor's test in a pass (:class:`~djsb.model.backfill.planner.BackfillPreemption`'s
    ``accept``): it may start now on a placement only if, once its victims gave back what they give
    (:meth:`ProfilePlanner._giving`), it keeps every reservation of the pass, in its partition's
    units and those of the partitions sharing its nodes (:meth:`ProfilePlanner._overlaps_fit`), and
    on a partition planned node by node the slots and memory of each node; as will-run's start
    keeps off the nodes reserved over its run (backfill.c ``_start_job``). It keeps what it
    accepted last: where the preemptor starts (``alloc``) and what its victims give back."""

    def __init__(self, planner: ProfilePlanner, view: BackfillView, job: SimJob, profiles: dict[int, Profile],
                 nodes: NodePlan | None) -> None:
        self.planner, self.view, self.job, self.profiles, self.nodes = planner, view, job, profiles, nodes
        self.alloc: Placement | None = None
        self.victims: list[SimJob] = []
        self.given: list[Given] = []

    def __call__(self, alloc: Placement, victims: Sequence[tuple[SimJob, Placement]], suspends: bool) -> bool:
        view, job, now = self.view, self.job, self.view.now
        given = self.planner._giving(view, [(victim, slots, not suspends) for victim, slots in victims])
        after = self.planner._given_back(view, job.part, given, self.profiles)
        if not after[job.part.index].fits(now, job.plan, job.need) \
                or not self.planner._overlaps_fit(view.state, job.part, alloc, after, now, job.plan):
            return False
        if self.nodes is not None and not self.nodes.without(given).fits(
                alloc, job_memory(job, alloc) if view.node_memory else None, now, job.plan):
            return False
        self.alloc, self.victims, self.given = alloc, [victim for victim, _ in victims], given
        return True

    def moved(self) -> list[Given]:
        """What the victims give back to the plan now that they are suspended (from now: their CPUs
        are free) or preempted (from the end of their grace time: :meth:`BackfillPlanner.released`)."""
        now = self.view.now
        return [(self.planner.released(victim, now) if victim.preempt_at < math.inf else start, until, slots,
                 memory, part)
                for victim, (start, until, slots, memory, part) in zip(self.victims, self.given, strict=True)]


class Headroom:
    """:class:`~djsb.model.backfill.planner.Startable` for this planner: whether a job a pass has
    not walked yet (``left``, per partition and planned duration) could still start. The pass
    starts a job only if its partition's profile keeps its need free over its planned run from now
    (:meth:`Profile.fits`; before the partition has a profile, or for a job planned for no time,
    the free capacity now, which its allocation needs). Starts and reservations only take
    capacity, so once no job left fits, none will in this pass: its walk stops there
    (:meth:`BackfillPlanner.candidates`) instead of planning reservations it drops.

    The group that fitted last (``witness``) is asked first; the others only when it no longer fits."""

    def __init__(self, left: Needs[tuple[int, float]], parts: Sequence[PartitionState],
                 profiles: dict[int, Profile], now: float) -> None:
        self.left = left
        self.parts = parts
        self.profiles = profiles
        self.now = now
        self.witness: tuple[int, float] | None = None

    def room(self, group: tuple[int, float]) -> float:
        """The most units a job of ``group`` (partition, planned duration) could start with now."""
        p, plan = group
        profile = self.profiles.get(p)
        if profile is None or plan <= 0:
            return self.parts[p].free
        return profile.lowest(self.now, plan)

    def any(self) -> bool:
        """Could a job not walked yet start now?"""
        least = self.left.least
        witness = self.witness
        if witness is not None and witness in least and least[witness] <= self.room(witness):
            return True
        for group, need in least.items():
            if group != witness and need <= self.room(group):
                self.witness = group
                return True
        return False

    def remove(self, job: SimJob) -> None:
        """The pass reached ``job``."""
        self.left.remove((job.part.index, job.plan), job.need)


def _kept_free(job: SimJob, alloc: Placement) -> Placement:
    """What a reservation keeps free on its nodes for the allocation rules to succeed again: what
    they took, except that a trace job with a node count needs room for cpus / nodes (rounded up)
    on each of its nodes, the one taking the remainder included
    (:meth:`~djsb.model.cluster_state.ClusterState.allocate`); its GPUs as they are."""
    trace = job.trace
    if job.shape is not None or not trace.nodes or trace.exclusive:
        return alloc
    per_node = math.ceil(trace.cpus / trace.nodes)
    return Placement.of(((node, per_node) for node, _ in alloc), alloc.gpus)
