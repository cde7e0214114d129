"""Node-level backfill planning: each node's free slots and free memory (and free GPUs of each type)
as step functions of time.

A partition's aggregate :class:`~djsb.model.profile.Profile` counts units, which is exact for core
allocation without memory, node counts or task layouts. Where a job's placement depends on more,
the backfill pass plans at node level, as Slurm's sched/backfill does with node bitmaps over time:
a node's free slots and free memory are step functions (running jobs give theirs back at their
planned end, starts and reservations take specific nodes over ``[start, start + plan)``), and a
job fits during ``[t, t + d)`` when the model's own allocation rules
(:meth:`~djsb.model.cluster_state.ClusterState.allocate` and ``place``, first fit) succeed on each
node's *least* availability over that window. A reservation takes the nodes and amounts it was
planned on, so a later start that would eat into them does not fit. On the other nodes
availability only grows with time (running jobs end), so a start placed by the live state off
every reserved node fits the whole window: only a start that lands on a reserved node is placed
again on the window's minima. A partition with a MaxCPUsPerNode has, per node, the CPUs it may
still give its jobs as a step function too (its running jobs give theirs back at their planned
end, its starts and reservations take theirs), which a view of it caps the nodes by
(:meth:`~djsb.model.cluster_state.ClusterState.capped`). GPUs are planned as memory is: a job asking
some has its partition planned node by node (:meth:`~djsb.model.queue.JobQueue.plans_nodes`), its reservation
takes its nodes' GPUs over its window, and a job asking none still fits a node whose GPUs are all
taken if its cores are free.

On an ``OverSubscribe=YES:N`` partition a job that does not ask ``--oversubscribe`` gets cores no
other job uses (slurm.conf(5), OverSubscribe), so its reservation must find *idle* cores at its
start: ``free slots - cores x (N - 1)`` (:mod:`djsb.model.cluster_state`). Taking its slots keeps them
from a job that may not share either (it too needs idle cores), but a job that may share takes any
free slot, and could take the spare slot of the very core kept idle. So over such a reservation's
window a node offers a job that may share only what a job that may not offers: its free slots less
its spare ones.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable, Sequence

from djsb.model.cluster_state import ClusterState, PartitionState
from djsb.model.partition_rows import RowsPlan
from djsb.model.placement import Placement
from djsb.model.profile import Profile

Allocate = Callable[[ClusterState], Placement | None]
"""Runs a job's allocation rules on a cluster state (the live one or a planning view)."""

Holding = tuple[float, Placement, Sequence[float] | None, int, bool]
"""What a running job gives back and when: (planned end, its placement, memory per node, its
partition's index, whether it shares its cores); the placement's GPUs too."""

Given = tuple[float, float, Placement, Sequence[float] | None, int]
"""What a job gives back to a plan: (from, until, its placement or the part given, memory per node
or None, its partition's index); the placement's GPUs too."""


class NodePlan:
    """Future free slots and memory of every node, from the live state at ``now``."""

    def __init__(self, state: ClusterState, now: float, holdings: Iterable[Holding]) -> None:
        """``holdings``: the running jobs (a suspended one holds memory until further notice, so it
        is left out: its CPUs are already free and its memory stays taken)."""
        slot_releases: list[list[tuple[float, float]]] = [[] for _ in state.node_free]
        memory_releases: list[list[tuple[float, float]]] = [[] for _ in state.node_free]
        types = range(len(state.gpu_types))
        gpu_releases: list[list[list[tuple[float, float]]]] = [[[] for _ in types] for _ in state.node_free]
        cap_releases: dict[int, dict[int, list[tuple[float, float]]]] = {
            p.index: {node: [] for node in p.node_ids} for p in state.partitions
            if state.part_used[p.index] is not None}
        holdings = list(holdings)
        for end, alloc, memory, part, _ in holdings:
            for k, (node, slots) in enumerate(alloc):
                slot_releases[node].append((end, slots))
                if memory is not None:
                    memory_releases[node].append((end, memory[k]))
            capped = cap_releases.get(part) if cap_releases else None
            if capped is not None:
                for node, slots in alloc:
                    capped[node].append((end, slots))
            if alloc.gpus is not None:
                for (node, _), held in zip(alloc, alloc.gpus, strict=True):
                    for t, count in enumerate(held):
                        gpu_releases[node][t].append((end, count))
        self.state = state
        self.slots = [Profile(now, free, releases)
                      for free, releases in zip(state.node_free, slot_releases, strict=True)]
        self.memory = [None if free is None else Profile(now, free, releases)
                       for free, releases in zip(state.node_mem_free, memory_releases, strict=True)]
        self.gpus = [[Profile(now, free[t], releases[t]) for t in types]
                     for free, releases in zip(state.node_gpu_free, gpu_releases, strict=True)] \
            if types else None
        """Each node's free GPUs per type over time (None: the cluster has no GPUs)."""
        self.cpu_room = {part: {node: Profile(now, self._cap(part) - self._used(state, part)[node], releases)
                                for node, releases in by_node.items()}
                         for part, by_node in cap_releases.items()}
        """Per partition with a MaxCPUsPerNode, the CPUs each of its nodes may still give the
        partition's jobs over time (its running jobs give theirs back at their planned end)."""
        # The per-node minima decide in a view; a partition's live total is no shortcut there.
        self.parts = [dataclasses.replace(p, free=p.capacity) for p in state.partitions]
        self.reserved: set[int] = set()
        self.now = now
        self.idle_kept: dict[int, Profile] = {}
        """Per node with spare slots, how many reservations keep idle cores on it over time (those
        of jobs that may not share cores; see the module docstring)."""
        self.rows = None if state.rows is None else RowsPlan(
            state.rows, now, ((end, alloc, part, shares) for end, alloc, _, part, shares in holdings))
        """The counts of the rule between partitions over time (:mod:`djsb.model.partition_rows`;
        None where it never applies)."""

    def view(self, part: PartitionState, start: float, duration: float, *, shares: bool) -> ClusterState:
        """The cluster as a job of ``part`` running over ``[start, start + duration)`` may use it:
        each node of the partition at its least free slots and memory over that window. For a job
        that ``shares`` cores a node offers no spare slot while a reservation keeps idle cores on it."""
        free = list(self.state.node_free)
        memory = list(self.state.node_mem_free)
        for node in part.node_ids:
            free[node] = int(self.slots[node].lowest(start, duration))
            if shares and node in self.idle_kept:
                free[node] = min(free[node], int(self._lowest_unkept(node, start, duration)))
            profile = self.memory[node]
            if profile is not None:
                memory[node] = profile.lowest(start, duration)
        view = copy.copy(self.state)
        view.node_free, view.node_mem_free, view.partitions = free, memory, self.parts
        if self.rows is not None:
            view.rows = self.rows.view(part.node_ids, start, duration, part.index, shares)
        if self.gpus is not None:
            gpus = list(self.state.node_gpu_free)
            for node in part.node_ids:
                gpus[node] = [int(profile.lowest(start, duration)) for profile in self.gpus[node]]
            view.node_gpu_free = gpus
        view.node_has_free = bytearray(slots > 0 for slots in free)  # first fit skips by these flags
        room = self.cpu_room.get(part.index)
        if room is not None:
            used = list(self._used(self.state, part.index))
            for node in part.node_ids:
                used[node] = self._cap(part.index) - int(room[node].lowest(start, duration))
            view.part_used = list(self.state.part_used)
            view.part_used[part.index] = used
        return view

    def _cap(self, part: int) -> int:
        cap = self.state.partitions[part].spec.max_cpus_per_node
        assert cap is not None
        return cap

    @staticmethod
    def _used(state: ClusterState, part: int) -> list[int]:
        used = state.part_used[part]
        assert used is not None
        return used

    def _lowest_unkept(self, node: int, start: float, duration: float) -> float:
        """Least free slots of ``node`` over the window, less its spare slots wherever a
        reservation keeps idle cores on it."""
        slots, kept = self.slots[node], self.idle_kept[node]
        end = start + duration
        spare = self.state.node_spare[node]
        instants = {start, *(t for t in (*slots.times, *kept.times) if start < t < end)}
        return min(slots.free_at(t) - (spare if kept.free_at(t) > 0 else 0) for t in instants)

    def breakpoints(self, part: PartitionState) -> set[float]:
        """Instants where a node of ``part`` gains or loses availability (candidate starts)."""
        times: set[float] = set()
        for node in part.node_ids:
            times.update(self.slots[node].times)
            profile = self.memory[node]
            if profile is not None:
                times.update(profile.times)
            if self.gpus is not None:
                for profile in self.gpus[node]:
                    times.update(profile.times)
        for profile in self.cpu_room.get(part.index, {}).values():
            times.update(profile.times)
        return times

    def earliest_start(self, part: PartitionState, duration: float, allocate: Allocate,
                       starts: Iterable[float], *, shares: bool) -> tuple[float, Placement] | None:
        """The first of ``starts`` (ascending) where ``allocate`` succeeds over the window, and its
        nodes, for a job that ``shares`` cores or not (see :meth:`view`)."""
        for start in starts:
            alloc = allocate(self.view(part, start, duration, shares=shares))
            if alloc is not None:
                return start, alloc
        return None

    def holds_reserved(self, alloc: Sequence[tuple[int, int]]) -> bool:
        """Whether an allocation uses a node that a reservation takes."""
        return any(node in self.reserved for node, _ in alloc)

    def reserve(self, alloc: Placement, memory: Sequence[float] | None, start: float,
                duration: float, *, shares: bool, part: int | None = None) -> None:
        """Take what a reservation of a job of partition ``part`` keeps free on its nodes (see
        :meth:`take`) and mark them reserved; unless its job ``shares`` cores, its cores are kept
        idle (see the module docstring)."""
        self.take(alloc, memory, start, duration, part, shares=shares)
        if self.rows is not None and part is not None:
            self.rows.reserve(part, alloc, start, duration, shares)
        self.reserved.update(node for node, _ in alloc)
        if shares:
            return
        for node, _ in alloc:
            if self.state.node_spare[node]:
                kept = self.idle_kept.setdefault(node, Profile(self.now, 0))
                kept.take(start, duration, -1)  # one more reservation keeps idle cores there

    def reserve_whole(self, alloc: Placement, start: float, duration: float) -> None:
        """Keep a reservation's nodes whole over the window: no other job may use any slot of them,
        as sched/backfill's _add_reservation clears the nodes from every ``node_space`` record the
        reservation covers (backfill.c). A node's availability may go below zero there while
        running jobs still hold it; the view then offers none of it."""
        capacity = self.state.node_capacity
        for node, _ in alloc:
            self.slots[node].take(start, duration, capacity[node])
            if self.gpus is not None:
                for profile, count in zip(self.gpus[node], self.state.node_gpus[node], strict=True):
                    profile.take(start, duration, count)
        self.reserved.update(node for node, _ in alloc)

    def take(self, alloc: Placement, memory: Sequence[float] | None, start: float,
             duration: float, part: int | None = None, *, shares: bool = False) -> None:
        """Take an allocation's slots (and memory, parallel to ``alloc``; its GPUs; and for a job of
        partition ``part`` with a MaxCPUsPerNode, the CPUs it may still give; and its counts of the
        rule between partitions, as a job that ``shares`` its cores or not) over the window."""
        if self.rows is not None and part is not None:
            self.rows.take(part, alloc, start, duration, shares)
        room = self.cpu_room.get(part) if part is not None else None
        if room is not None:
            for node, slots in alloc:
                room[node].take(start, duration, slots)
        for k, (node, slots) in enumerate(alloc):
            self.slots[node].take(start, duration, slots)
            profile = self.memory[node]
            if memory is not None and profile is not None:
                profile.take(start, duration, memory[k])
            if alloc.gpus is not None and self.gpus is not None:
                for gpus, count in zip(self.gpus[node], alloc.gpus[k], strict=True):
                    if count:
                        gpus.take(start, duration, count)

    def without(self, given: Iterable[Given]) -> NodePlan:
        """A copy of the plan in which each of ``given`` (from, until, placement, memory per node or
        None, partition: what a job preempted or suspended gives back, and over when) is free again:
        the plan of a backfill pass with preemption on (:mod:`djsb.model.backfill.profile_planner`).
        Only the nodes given back are copied; the counts of the rule between partitions are this
        plan's (a job gone still counts there)."""
        plan = copy.copy(self)
        plan.slots, plan.memory = list(self.slots), list(self.memory)
        plan.gpus = None if self.gpus is None else list(self.gpus)
        plan.cpu_room = {part: dict(by_node) for part, by_node in self.cpu_room.items()}
        copied: set[int] = set()

        def give(profile: Profile, start: float, until: float, amount: float) -> Profile:
            if id(profile) not in copied:
                profile = profile.copy()
                copied.add(id(profile))
            profile.take(start, until - start, -amount)
            return profile

        for start, until, alloc, memory, part in given:
            start = max(start, self.now)
            if until <= start:
                continue
            room = plan.cpu_room.get(part)
            for k, (node, slots) in enumerate(alloc):
                plan.slots[node] = give(plan.slots[node], start, until, slots)
                held = plan.memory[node]
                if memory is not None and held is not None:
                    plan.memory[node] = give(held, start, until, memory[k])
                if room is not None:
                    room[node] = give(room[node], start, until, slots)
                if alloc.gpus is not None and plan.gpus is not None:
                    plan.gpus[node] = [give(gpus, start, until, count) if count else gpus
                                       for gpus, count in zip(plan.gpus[node], alloc.gpus[k], strict=True)]
        return plan

    def fits(self, alloc: Placement, memory: Sequence[float] | None, start: float, duration: float) -> bool:
        """Whether each node of ``alloc`` keeps its slots (and memory, parallel to ``alloc``) free over
        the window."""
        for k, (node, slots) in enumerate(alloc):
            if self.slots[node].lowest(start, duration) < slots:
                return False
            held = self.memory[node]
            if memory is not None and held is not None and held.lowest(start, duration) < memory[k]:
                return False
        return True
