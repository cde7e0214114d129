"""Cluster description (nodes, partitions, QoS) and the live allocation state of the model.

Resources follow Slurm's ``select/cons_tres`` with ``CR_Core``: a job gets cores on one or more
nodes, first fit in the partition's node order (Slurm fills the lowest-indexed usable nodes).
A partition may instead be *exclusive* (Slurm ``OverSubscribe=EXCLUSIVE``): its jobs get whole
idle nodes, as the BSC Slurm simulator of paper 004 sec. 3.1.1 always does.

``OverSubscribe`` (slurm.conf, partition section): ``NO`` lets one job use a core, ``FORCE[:N]``
lets up to N jobs share a core (Slurm's default N is 4), and ``YES[:N]`` lets a job share cores
only when it asks for ``--oversubscribe`` (:attr:`djsb.model.shape.JobShape.oversubscribe`;
trace jobs never ask, so on a YES partition they behave as on a NO one). The asking job may go
on cores that a job which did not ask holds (how DJSB's analytics joins the simulation, which is
submitted without the option); the model does not keep such a node out of sharing. A node's capacity is
``cores * N`` *slots* and a job holds one slot per CPU. A job that may not share needs *idle*
cores, counted as ``free slots - cores * (N - 1)``: jobs fill idle cores before they share one
(Slurm's cons_tres tries row 0 of a partition before the others), so that count is exact until a
sharing job ends while others still share, and conservative afterwards (jobs never migrate).
Memory, when both the node and the job give it, is a per-node constraint.

Slots may go negative: a resumed job (``scontrol resume``) or a job growing back to its CPUs
takes them again without any check, as Slurm does; nothing new starts on such a node until it
drops below its capacity again (see :mod:`djsb.model.invariants`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from djsb.errors import ConfigError

_OVERSUBSCRIBE = re.compile(r"^(NO|YES|FORCE|EXCLUSIVE)(?::(\d+))?$")


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One compute node: ``cores`` CPUs and optionally ``memory_mb`` of memory."""

    name: str
    cores: int
    memory_mb: float | None = None


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    """A Slurm partition: a node set with job limits and a scheduling tier.

    ``nodes`` None means every node of the cluster. ``max_time`` (seconds) is Slurm's MaxTime and
    also the limit of jobs that give none (Slurm's DefaultTime falls back to MaxTime).
    ``priority_tier`` orders partitions before job priority; ``priority_job_factor`` feeds the
    multifactor partition factor (Slurm ``PriorityJobFactor``).
    """

    name: str
    nodes: tuple[str, ...] | None = None
    min_cpus: int = 1
    max_cpus: int | None = None
    max_time: float | None = None
    priority_tier: int = 1
    priority_job_factor: int = 1
    oversubscribe: str = "NO"

    @property
    def exclusive(self) -> bool:
        """Whole-node allocation (``OverSubscribe=EXCLUSIVE``)."""
        return self.oversubscribe.upper().startswith("EXCLUSIVE")

    @property
    def share(self) -> int:
        """How many jobs may share one core (1 unless ``YES[:N]`` or ``FORCE[:N]``)."""
        kind, count = self._oversubscribe()
        if kind in ("FORCE", "YES"):
            return int(count) if count else 4
        return 1

    @property
    def forced(self) -> bool:
        """Every job may share cores (``FORCE[:N]``), whether it asks or not."""
        return self._oversubscribe()[0] == "FORCE"

    def _oversubscribe(self) -> tuple[str, str | None]:
        match = _OVERSUBSCRIBE.match(self.oversubscribe.upper())
        if not match:
            raise ConfigError(f"invalid OverSubscribe value {self.oversubscribe!r}: use NO, YES[:N], "
                              "FORCE[:N] or EXCLUSIVE", key=f"partitions.{self.name}.oversubscribe")
        kind, count = match.groups()
        return kind, count


@dataclass(frozen=True, slots=True)
class QosSpec:
    """A Slurm QoS: a priority (multifactor QoS factor, eq. 2.3 of 004) and per-user limits."""

    name: str
    priority: int = 0
    max_jobs_per_user: int | None = None
    max_wall: float | None = None


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """Everything static about the machine: nodes, partitions (the first is the default), QoS."""

    nodes: tuple[NodeSpec, ...]
    partitions: tuple[PartitionSpec, ...]
    qos: tuple[QosSpec, ...] = (QosSpec("normal"),)

    @classmethod
    def homogeneous(cls, n_nodes: int, cores: int, *, memory_mb: float | None = None,
                    partition: PartitionSpec | None = None,
                    qos: tuple[QosSpec, ...] = (QosSpec("normal"),)) -> ClusterSpec:
        """``n_nodes`` identical nodes named n0, n1, ... in one partition (default ``batch``)."""
        nodes = tuple(NodeSpec(f"n{i}", cores, memory_mb) for i in range(n_nodes))
        return cls(nodes, (partition or PartitionSpec("batch"),), qos)

    @property
    def total_cores(self) -> int:
        """Number of physical cores of the machine (S of eq. 2.2 of 004)."""
        return sum(n.cores for n in self.nodes)


@dataclass(slots=True)
class PartitionState:
    """Derived, per-partition view kept in sync with the node counters."""

    spec: PartitionSpec
    index: int
    node_ids: tuple[int, ...]
    exclusive: bool
    cores_per_node: int
    capacity: int
    free: int = 0
    overlaps: tuple[int, ...] = field(default=())
    members: frozenset[int] = field(default=frozenset())
    cores: int = 0
    forced: bool = False
    keeps_spare: bool = False


class ClusterState:
    """Free slots and memory per node, plus per-partition free capacity in *units*.

    A partition's unit is a slot (core x share) for core allocation and a whole idle node for an
    exclusive partition; ``need`` turns a job into units of its partition. Keeping these totals up
    to date makes the common "does it fit now?" test O(1); node choice is done only on start.
    """

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        self.node_names = tuple(n.name for n in spec.nodes)
        index = {name: i for i, name in enumerate(self.node_names)}
        if len(index) != len(self.node_names):
            raise ConfigError("node names must be unique", key="cluster.nodes")
        if not spec.partitions:
            raise ConfigError("at least one partition is needed", key="cluster.partitions")
        node_share: dict[int, int] = {}
        parts: list[PartitionState] = []
        for p_index, part in enumerate(spec.partitions):
            try:
                ids = tuple(index[n] for n in part.nodes) if part.nodes is not None \
                    else tuple(range(len(self.node_names)))
            except KeyError as err:
                raise ConfigError(f"unknown node {err.args[0]!r}",
                                  key=f"partitions.{part.name}.nodes") from None
            if not ids:
                raise ConfigError("partition has no nodes", key=f"partitions.{part.name}.nodes")
            share = part.share
            for i in ids:
                if node_share.setdefault(i, share) != share:
                    raise ConfigError(f"node {self.node_names[i]} is in partitions with different "
                                      "OverSubscribe share counts", key=f"partitions.{part.name}")
            cores = {spec.nodes[i].cores for i in ids}
            if part.exclusive and len(cores) != 1:
                raise ConfigError("an exclusive partition needs nodes with equal core counts",
                                  key=f"partitions.{part.name}.nodes")
            cap = len(ids) if part.exclusive else sum(spec.nodes[i].cores * share for i in ids)
            parts.append(PartitionState(part, p_index, ids, part.exclusive, max(cores), cap, cap,
                                        members=frozenset(ids),
                                        cores=sum(spec.nodes[i].cores for i in ids), forced=part.forced,
                                        keeps_spare=share > 1 and not part.forced))
        self.partitions = parts
        self.by_name = {p.spec.name: p for p in parts}
        self.node_capacity = [spec.nodes[i].cores * node_share.get(i, 1) for i in range(len(spec.nodes))]
        self.node_cores = [n.cores for n in spec.nodes]
        self.node_spare = [spec.nodes[i].cores * (node_share.get(i, 1) - 1) for i in range(len(spec.nodes))]
        self.node_free = list(self.node_capacity)
        self.node_mem_free: list[float | None] = [n.memory_mb for n in spec.nodes]
        self.node_parts: list[list[int]] = [[] for _ in spec.nodes]
        for p in parts:
            for i in p.node_ids:
                self.node_parts[i].append(p.index)
        for p in parts:
            p.overlaps = tuple(sorted({q for i in p.node_ids for q in self.node_parts[i]} - {p.index}))
        self.busy_cores = 0

    def need(self, part: PartitionState, cpus: int, nodes: int | None) -> int:
        """Units of ``part`` a job of ``cpus`` CPUs (and optionally ``nodes`` nodes) occupies."""
        if part.exclusive:
            return max(nodes or 0, math.ceil(cpus / part.cores_per_node))
        return cpus

    def allocate(self, part: PartitionState, cpus: int, nodes: int | None,
                 memory_mb: float | None) -> list[tuple[int, int]] | None:
        """Choose ``[(node, slots), ...]`` for a trace job, first fit; None if it does not fit now.

        A trace job shares cores only on a FORCE partition (it never asks for oversubscription).
        Nothing is committed: call :meth:`commit` to take the resources.
        """
        if part.free < self.need(part, cpus, nodes):
            return None
        free = self.node_free
        cap = self.node_capacity
        if part.exclusive:
            want = self.need(part, cpus, nodes)
            chosen = [(i, cap[i]) for i in part.node_ids if free[i] == cap[i]][:want]
            return chosen if len(chosen) == want else None
        if part.keeps_spare:  # a YES partition: a trace job takes idle cores only
            free = [f - spare for f, spare in zip(free, self.node_spare, strict=True)]
        per_node = math.ceil(cpus / nodes) if nodes else None
        mem_per_cpu = memory_mb / cpus if memory_mb and cpus else None
        chosen = []
        remaining = cpus
        for i in part.node_ids:
            room = min(free[i], self.node_cores[i])  # a job never shares a core with itself
            take = min(room, remaining) if per_node is None else (per_node if room >= per_node else 0)
            mem = self.node_mem_free[i]
            if take > 0 and mem_per_cpu is not None and mem is not None:
                fit = int(mem // mem_per_cpu)
                take = min(take, fit) if per_node is None else (take if fit >= take else 0)
            if take > 0:
                take = min(take, remaining)
                chosen.append((i, take))
                remaining -= take
                if remaining == 0:
                    break
        return chosen if remaining == 0 else None

    def place(self, part: PartitionState, tasks: Sequence[int], cpus_per_task: int,
              memory_per_task: float | None, candidates: Sequence[int],
              may_share: bool) -> list[tuple[int, int]] | None:
        """``[(node, slots), ...]`` for a job laid out as ``tasks`` per node; None if it must wait.

        Each count of tasks goes on a distinct candidate node (in the candidates' order), first on
        idle cores; failing that, a job that may share takes the candidates holding the fewest
        slots (Slurm fills row 0 before oversubscribing). Memory is always consumable.
        """
        free, cores, spare, mem = self.node_free, self.node_cores, self.node_spare, self.node_mem_free

        def memory_fits(i: int, count: int) -> bool:
            have = mem[i]
            return memory_per_task is None or have is None or have >= count * memory_per_task

        def first_fit(order: Sequence[int], room: Callable[[int], int]) -> list[tuple[int, int]] | None:
            chosen: list[tuple[int, int]] = []
            used: set[int] = set()
            for count in tasks:
                want = count * cpus_per_task
                node = next((i for i in order if i not in used and want <= room(i)
                             and memory_fits(i, count)), None)
                if node is None:
                    return None
                used.add(node)
                chosen.append((node, want))
            return chosen

        members = part.members
        order = [i for i in candidates if i in members]
        idle = first_fit(order, lambda i: free[i] - spare[i])
        if idle is not None or not may_share:
            return idle
        least_used = sorted(order, key=lambda i: self.node_capacity[i] - free[i])
        return first_fit(least_used, lambda i: min(free[i], cores[i]))

    def commit(self, alloc: list[tuple[int, int]], cpus: int, memory: Sequence[float] | None,
               sign: int = 1) -> None:
        """Take (``sign=1``) or give back (``sign=-1``) an allocation's slots and the memory it
        holds on each node (``memory`` parallel to ``alloc``; None takes none)."""
        parts = self.partitions
        node_free = self.node_free
        for i, slots in alloc:
            cap = self.node_capacity[i]
            was_idle = node_free[i] == cap
            node_free[i] -= sign * slots
            now_idle = node_free[i] == cap
            for p_index in self.node_parts[i]:
                p = parts[p_index]
                if p.exclusive:
                    p.free += int(now_idle) - int(was_idle)
                else:
                    p.free -= sign * slots
        self.busy_cores += sign * cpus
        if memory is not None:
            self.commit_memory(alloc, memory, sign)

    def commit_memory(self, alloc: list[tuple[int, int]], memory: Sequence[float], sign: int) -> None:
        """Take or give back only the memory of an allocation (a suspended job keeps it)."""
        for k, (i, _) in enumerate(alloc):
            have = self.node_mem_free[i]
            if have is not None:
                self.node_mem_free[i] = have - sign * memory[k]

    def amount_in(self, part: PartitionState, alloc: list[tuple[int, int]]) -> int:
        """Units of ``part`` that an allocation (made in any partition) holds."""
        members = part.members
        if part.exclusive:
            return sum(1 for i, _ in alloc if i in members)
        return sum(s for i, s in alloc if i in members)
