"""The live allocation state of the model over a cluster's description (:mod:`djsb.model.cluster_spec`).

Resources follow Slurm's ``select/cons_tres`` with ``CR_Core``: a job gets cores on one or more
nodes, first fit in the partition's node order (Slurm fills the lowest-indexed usable nodes).
A partition may instead be *exclusive* (Slurm ``OverSubscribe=EXCLUSIVE``): its jobs get whole
idle nodes, as the BSC Slurm simulator of paper 004 sec. 3.1.1 always does. A trace job asking
``--exclusive`` (``TraceJob.exclusive``) takes whole idle nodes of any partition, all their slots
(:meth:`ClusterState._whole_nodes`; not a job asking GPUs or laid out by a shape, placed as usual).

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
Under ``PreemptMode`` GANG the jobs sharing a partition's cores take turns (:mod:`djsb.model.gang`):
a job the rotation suspends keeps its slots, so this state does not change with it.
A node of a partition that shares cores may also be in partitions that do not (NO), whose jobs take
idle cores there; which jobs may start beside which then follows :mod:`djsb.model.partition_rows`.
Memory, when both the node and the job give it, is a per-node constraint. GPUs are one too
(:mod:`djsb.model.gpus`): a job asking some is placed node by node on the nodes holding enough
free GPUs of its type, and holds them, like its memory, until it ends (a suspended job keeps
both: cons_common's ``JOB_RES_ACTION_RESUME`` gives back only cores, job_resources.h).

Allocations are :class:`~djsb.model.placement.Placement` runs of consecutive nodes, and first fit
skips nodes without a free slot and takes groups of consecutive nodes in equal state at once, so
replaying a trace on 1,024 one-core nodes costs about what it costs on 32 nodes of 32 cores (LANL-CM5
is such a trace). The per-node lists (``node_free``, ``node_mem_free``) stay the state every reader sees; only
:meth:`ClusterState.commit` changes ``node_free``, which keeps the free-slot flags in step.

Slots may go negative: a resumed job (``scontrol resume``) or a job growing back to its CPUs
takes them again without any check, as Slurm does; nothing new starts on such a node until it
drops below its capacity again (see :mod:`djsb.model.invariants`).
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from djsb.errors import ConfigError
from djsb.model.cluster_spec import ClusterSpec, PartitionSpec
from djsb.model.cons_tres import GpuSets, best_fit
from djsb.model.gpus import GpuDemand, demand, gpu_types, split
from djsb.model.partition_rows import PartitionRows, applies, node_shares
from djsb.model.placement import Placement, Run
from djsb.workloads.gpus import GpuRequest

T = TypeVar("T")


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
    segments: tuple[tuple[int, int], ...] = field(default=())
    uniform: bool = False


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
        members: list[tuple[int, ...]] = []
        for part in spec.partitions:
            try:
                ids = tuple(index[n] for n in part.nodes) if part.nodes is not None \
                    else tuple(range(len(self.node_names)))
            except KeyError as err:
                raise ConfigError(f"unknown node {err.args[0]!r}",
                                  key=f"partitions.{part.name}.nodes") from None
            if not ids:
                raise ConfigError("partition has no nodes", key=f"partitions.{part.name}.nodes")
            members.append(ids)
        node_share = node_shares(spec.partitions, members, self.node_names)
        self.node_capacity = [spec.nodes[i].cores * node_share[i] for i in range(len(spec.nodes))]
        self.node_cores = [n.cores for n in spec.nodes]
        self.node_spare = [spec.nodes[i].cores * (node_share[i] - 1) for i in range(len(spec.nodes))]
        parts: list[PartitionState] = []
        for p_index, (part, ids) in enumerate(zip(spec.partitions, members, strict=True)):
            cores = {spec.nodes[i].cores for i in ids}
            if part.exclusive and len(cores) != 1:
                raise ConfigError("an exclusive partition needs nodes with equal core counts",
                                  key=f"partitions.{part.name}.nodes")
            cap = len(ids) if part.exclusive else sum(self.node_capacity[i] for i in ids)
            spares = {self.node_spare[i] for i in ids}
            parts.append(PartitionState(part, p_index, ids, part.exclusive, max(cores), cap, cap,
                                        members=frozenset(ids),
                                        cores=sum(spec.nodes[i].cores for i in ids), forced=part.forced,
                                        keeps_spare=max(spares) > 0 and not part.forced,
                                        segments=_segments(ids),
                                        uniform=len(cores) == 1 and len(spares) == 1))
        self.partitions = parts
        self.by_name = {p.spec.name: p for p in parts}
        self.node_free = list(self.node_capacity)
        self.node_mem_free: list[float | None] = [n.memory_mb for n in spec.nodes]
        self.node_parts: list[list[int]] = [[] for _ in spec.nodes]
        for p in parts:
            for i in p.node_ids:
                self.node_parts[i].append(p.index)
        for p in parts:
            p.overlaps = tuple(sorted({q for i in p.node_ids for q in self.node_parts[i]} - {p.index}))
        self.busy_cores = 0
        self.node_has_free = bytearray(free > 0 for free in self.node_free)
        """1 where a node has a free slot (kept by :meth:`commit`): the first fit skips the others."""
        self.has_memory = any(n.memory_mb is not None for n in spec.nodes)
        self.part_used: list[list[int] | None] = [
            None if p.spec.max_cpus_per_node is None else [0] * len(spec.nodes) for p in parts]
        """Per partition with a MaxCPUsPerNode, the CPUs its running jobs hold on each node (kept by
        :meth:`commit` given the job's partition); None for a partition without one."""
        self.member_prefix = [list(itertools.accumulate((int(i in p.members) for i in range(len(spec.nodes))),
                                                        initial=0)) for p in parts]
        """Per partition, how many of nodes 0 .. i-1 it holds (at index i): members of a run in O(1)."""
        self.memberships = list(zip(parts, self.member_prefix, strict=True))
        self.gpu_types = gpu_types([n.gpus for n in spec.nodes])
        """The cluster's GPU types in order (empty: no GPUs, and no GPU state is kept)."""
        self.node_gpus = [[dict(n.gpus).get(name, 0) for name in self.gpu_types] for n in spec.nodes]
        """Each node's GPUs per type, in :attr:`gpu_types`' order."""
        self.node_gpu_free = [list(gpus) for gpus in self.node_gpus]
        """Each node's free GPUs per type (only :meth:`commit_gpus` changes them)."""
        self.busy_gpus = 0
        self.cons_tres_select = False
        part_rows = [p.spec.share for p in parts]  # _create_part_data: max_share rows, or 1
        self.rows = PartitionRows(part_rows, len(spec.nodes)) \
            if applies(members, part_rows, len(spec.nodes)) else None
        """Per node, the slots held by partitions of two rows or more and by jobs that do not share
        cores, for the rule between partitions of :mod:`djsb.model.partition_rows` (None: no node is
        in two partitions one of which has two rows or more, and the rule never applies)."""
        """Choose nodes as Slurm's cons_tres does (:mod:`djsb.model.cons_tres`) for jobs without a
        node count, memory or an exclusive partition, instead of first fit."""

    def need(self, part: PartitionState, cpus: int, nodes: int | None, exclusive: bool = False) -> int:
        """Units of ``part`` a job of ``cpus`` CPUs (and optionally ``nodes`` nodes) occupies; one
        asking ``exclusive`` whole nodes on a partition that is not exclusive needs at least that
        many of its smallest nodes' slots."""
        if part.exclusive:
            return max(nodes or 0, math.ceil(cpus / part.cores_per_node))
        if exclusive:
            return max(nodes or 0, math.ceil(cpus / part.cores_per_node)) * \
                min(self.node_capacity[i] for i in part.node_ids)
        return cpus

    def copy(self) -> ClusterState:
        """A copy whose counters (everything :meth:`commit` and :meth:`commit_gpus` change) are its
        own: a plan that gives jobs' resources back without touching the live state."""
        twin = copy.copy(self)
        twin.partitions = [replace(p) for p in self.partitions]
        twin.by_name = {p.spec.name: p for p in twin.partitions}
        twin.memberships = list(zip(twin.partitions, self.member_prefix, strict=True))
        twin.node_free = list(self.node_free)
        twin.node_has_free = bytearray(self.node_has_free)
        twin.node_mem_free = list(self.node_mem_free)
        twin.part_used = [None if used is None else list(used) for used in self.part_used]
        twin.node_gpu_free = [list(gpus) for gpus in self.node_gpu_free]
        twin.rows = self.rows.copy() if self.rows is not None else None
        return twin

    def without(self, nodes: frozenset[int]) -> ClusterState:
        """A view of this state in which ``nodes`` offer nothing (no free slot), for placing a job
        on the others; allocating on it reads, never writes, and its placement commits on this
        state."""
        view = copy.copy(self)
        view.node_free = [0 if i in nodes else free for i, free in enumerate(self.node_free)]
        view.node_has_free = bytearray(0 if i in nodes else flag for i, flag in enumerate(self.node_has_free))
        return view

    def allocate(self, part: PartitionState, cpus: int, nodes: int | None,
                 memory_mb: float | None, gpus: GpuRequest | None = None,
                 exclusive: bool = False) -> Placement | None:
        """Choose the nodes and slots of a trace job, first fit; None if it does not fit now.

        A trace job shares cores only on a FORCE partition (it never asks for oversubscription).
        Nodes are visited in groups of consecutive nodes offering equal room, so the cost follows
        the number of such groups rather than the number of nodes; a job asking ``gpus`` is placed
        node by node (:meth:`_allocate_gpus`). Nothing is committed: call :meth:`commit` (and
        :meth:`commit_gpus`) to take the resources.
        """
        need = self.need(part, cpus, nodes)
        if part.free < need:
            return None
        if self.part_used[part.index] is not None:
            return self.capped(part).allocate(part, cpus, nodes, memory_mb, gpus)
        if gpus is not None:
            return self._allocate_gpus(part, cpus, nodes, memory_mb,
                                       self.gpu_demand(gpus, gpus.tasks(cpus), part=part))
        if part.exclusive:  # whole idle nodes: each offers its capacity, the job needs ``need`` of them
            return self._first_fit(part, need * part.cores_per_node, None, None)
        if exclusive:
            return self._whole_nodes(part, cpus, nodes, memory_mb)
        per_node = math.ceil(cpus / nodes) if nodes else None
        mem_per_cpu = memory_mb / cpus if memory_mb and cpus else None
        if self.cons_tres_select and per_node is None:
            return self._best_fit(part, cpus, mem_per_cpu if self.has_memory else None)
        return self._first_fit(part, cpus, per_node, mem_per_cpu)

    def capped(self, part: PartitionState) -> ClusterState:
        """A view of this state in which each node of ``part`` offers a job of ``part`` no more CPUs
        than its MaxCPUsPerNode less those the partition's running jobs hold there (cons_common.c
        ``_allocate_sc``: ``avail_cpus = MIN(cpu_count, max_cpus_per_node - used_cpu_count)``, the
        used CPUs those of the partition's own jobs, ``part_core_map``); allocating on it reads,
        never writes. A planning view counts those still held at the instant it plans for
        (:mod:`djsb.model.node_plan`, :mod:`djsb.model.will_run`)."""
        used, cap = self.part_used[part.index], part.spec.max_cpus_per_node
        assert used is not None and cap is not None
        free, spare = list(self.node_free), self.node_spare
        for i in part.node_ids:
            free[i] = min(free[i], spare[i] + cap - used[i])
        view = copy.copy(self)
        view.node_free = free
        view.node_has_free = bytearray(slots > 0 for slots in free)
        view.part_used = [None] * len(self.partitions)
        return view

    def _whole_nodes(self, part: PartitionState, cpus: int, nodes: int | None,
                     memory_mb: float | None) -> Placement | None:
        """A job asking ``--exclusive`` on a partition that is not exclusive: idle nodes, first fit,
        each taken whole (all its slots: no other job may share it), until they hold its CPUs and
        number its ``nodes`` (select/cons_tres with ``share_res`` 0: cons_common's
        ``_get_job_node_req`` gives NODE_CR_RESERVED, which only idle nodes meet, and
        ``whole_node`` gives the job all their cores); each must hold its memory spread over the
        fewest nodes it could take."""
        least = max(nodes or 0, math.ceil(cpus / part.cores_per_node))
        per_node = memory_mb / least if memory_mb else None
        taken: list[tuple[int, int]] = []
        cores = 0
        for i in part.node_ids:
            memory = self.node_mem_free[i]
            if self.node_free[i] != self.node_capacity[i] or (per_node is not None and memory is not None
                                                              and memory < per_node):
                continue
            taken.append((i, self.node_capacity[i]))
            cores += self.node_cores[i]
            if cores >= cpus and len(taken) >= least:
                return Placement.of(taken)
        return None

    def gpu_demand(self, request: GpuRequest, tasks: int, tasks_per_node: int | None = None, *,
                   part: PartitionState) -> GpuDemand:
        """What placement tests of a GPU request of a job of ``tasks`` tasks in ``part``."""
        return demand(request, self.gpu_types, tasks, tasks_per_node, whole=part.exclusive)

    def _allocate_gpus(self, part: PartitionState, cpus: int, nodes: int | None, memory_mb: float | None,
                       want: GpuDemand) -> Placement | None:
        """A trace job asking GPUs, node by node: each node of ``part`` offers the CPUs (as
        :meth:`_first_fit` counts them: idle cores, memory, ``cpus / nodes`` with a node count, a
        whole idle node on an exclusive partition) its free GPUs let the job hold
        (:meth:`GpuDemand.offer`), those GPUs no more than its CPUs and memory give with
        ``--cpus-per-gpu`` and ``--mem-per-gpu`` (:meth:`GpuDemand.usable`). The nodes are taken
        in the order of cons_tres's weights (most co-located GPUs first, :meth:`GpuDemand.near`;
        then by index), or under ``cons_tres_select`` without a node count by cons_tres's sets
        (:func:`~djsb.model.cons_tres.best_fit`), until the CPUs and the GPUs are covered; the
        placement records the GPUs held on each node."""
        if not want.types:
            return None
        per_node = math.ceil(cpus / nodes) if nodes and not part.exclusive else None
        slots = self.need(part, cpus, nodes) * part.cores_per_node if part.exclusive else cpus
        by_memory = self.has_memory and not part.exclusive
        mem_per_cpu = memory_mb / cpus if memory_mb and cpus and by_memory else None
        spare = self.node_spare if part.keeps_spare else None
        gpu_free, gpu_all = self.node_gpu_free, self.node_gpus
        bounded = want.bounded and not want.whole  # an exclusive job holds whole nodes anyway
        rooms: list[tuple[int, int]] = []
        usable: dict[int, int] = {}
        for i in part.node_ids:
            free = self.node_free[i]
            if part.exclusive:
                room = free if free == self.node_capacity[i] else 0
            else:
                room = _offer(min(free - (spare[i] if spare else 0), self.node_cores[i]),
                              self.node_mem_free[i], per_node, mem_per_cpu)
            have = want.free(gpu_free[i])
            if room > 0 and (not want.whole or have == want.free(gpu_all[i])):
                if bounded:
                    have = want.usable(have, room, self.node_mem_free[i])
                room = want.offer(room, have)
                if per_node is not None and room < per_node:
                    room = 0
            else:
                room = 0
            rooms.append((i, room))
            usable[i] = have
        room_of = dict(rooms)
        if self.cons_tres_select and per_node is None and not part.exclusive:
            weight = {i: -want.near(have) for i, have in usable.items()}
            taken = best_fit(rooms, slots, GpuSets(weight, usable, want.total or 0))
            if taken is None:
                return None
            nodes_taken = [i for i, _ in taken]
        else:
            nodes_taken, left, lacking = [], slots, want.total or 0
            for i in sorted((i for i, room in rooms if room > 0), key=lambda i: -want.near(usable[i])):
                nodes_taken.append(i)
                left -= room_of[i]
                lacking -= usable[i]
                if left <= 0 and lacking <= 0:
                    break
            if left > 0 or lacking > 0:
                return None
            nodes_taken.sort()
        if part.exclusive and len(nodes_taken) * part.cores_per_node > slots:
            return None  # an exclusive job's GPUs must fit on the whole nodes its CPUs take
        chosen = _spread([(i, room_of[i]) for i in nodes_taken], slots)
        if chosen is None:
            return None
        held, lacking = [], want.total or 0
        for i, take in chosen:
            count = want.held(take // want.task_cpus, usable[i], lacking)
            lacking -= count
            held.append(split(gpu_free[i], want.types, count))
        return Placement.of(chosen, tuple(held))

    def _best_fit(self, part: PartitionState, cpus: int, mem_per_cpu: float | None) -> Placement | None:
        """cons_tres's choice (:func:`djsb.model.cons_tres.best_fit`) over every node of ``part``,
        each node offering the CPUs its free memory holds at ``mem_per_cpu`` at most (cons_tres's
        ``_allocate_sc``, job_test.c, 22.05, lowers a node's CPUs until their memory fits). A job of
        a FORCE partition is placed on idle cores when they hold it, and shares cores only
        otherwise (cons_common job_test.c ``_job_test``: step 1 seeks idle CPUs across all
        partitions, and only a job that finds none goes on to the partition's rows, step 4)."""
        if part.forced:
            idle = self._best_fit_over(part, cpus, mem_per_cpu, self.node_spare)
            if idle is not None:
                return idle
        return self._best_fit_over(part, cpus, mem_per_cpu, self.node_spare if part.keeps_spare else None)

    def _best_fit_over(self, part: PartitionState, cpus: int, mem_per_cpu: float | None,
                       spare: list[int] | None) -> Placement | None:
        """:meth:`_best_fit` with each node offering its free slots less ``spare`` (its cores' shared
        slots: its idle cores are left; None: every free slot)."""
        memory = self.node_mem_free
        rooms = [(i, _offer(min(self.node_free[i] - (spare[i] if spare else 0), self.node_cores[i]),
                            memory[i], None, mem_per_cpu)) for i in part.node_ids]
        taken = best_fit(rooms, cpus)
        return None if taken is None else Placement.of(taken)

    def _first_fit(self, part: PartitionState, slots: int, per_node: int | None,
                   mem_per_cpu: float | None) -> Placement | None:
        """Take ``slots`` from the partition's nodes in order, each node giving what it offers.

        On a node offering ``room`` the job takes ``min(room, slots left)``; with a node count
        (``per_node``) a node offers ``per_node`` when it has that many cores and the memory for
        them, else nothing. Nodes without a free slot offer nothing and are skipped at C speed;
        the others are read in windows that double (from ``slots`` nodes, at least 32), so the cost follows
        the nodes the job needs rather than the partition's size.
        """
        runs: list[Run] = []
        remaining = slots
        has_free = self.node_has_free
        window = max(32, slots)  # a node with a free slot mostly offers at least one
        for a, b in part.segments:
            first = has_free.find(1, a, b)
            while first >= 0:
                end = has_free.find(0, first, b)
                end = b if end < 0 else end
                while first < end:
                    stop = min(end, first + window)
                    window *= 2
                    for count, room in self._rooms(part, first, stop, per_node, mem_per_cpu):
                        if room > 0:
                            whole = min(count, remaining // room)
                            if whole:
                                _append_run(runs, first, whole, room)
                                remaining -= whole * room
                            if whole < count and remaining:
                                _append_run(runs, first + whole, 1, remaining)
                                remaining = 0
                            if not remaining:
                                return Placement(runs)
                        first += count
                first = has_free.find(1, end, b)
        return None

    def _rooms(self, part: PartitionState, first: int, stop: int, per_node: int | None,
               mem_per_cpu: float | None) -> list[tuple[int, int]]:
        """``(count, room)`` for each group of consecutive nodes in equal state from ``first`` to
        ``stop - 1``: the slots each node of the group offers the job."""
        if part.uniform and (mem_per_cpu is None or not self.has_memory):
            cores, capacity = self.node_cores[first], self.node_capacity[first]
            groups = _groups(self.node_free[first:stop])
            if part.exclusive:
                return [(count, capacity if free == capacity else 0) for free, count in groups]
            spare = self.node_spare[first] if part.keeps_spare else 0
            if per_node is None:  # what _offer gives without memory, without its call per group
                return [(count, min(free - spare, cores)) for free, count in groups]
            return [(count, _offer(min(free - spare, cores), None, per_node, None)) for free, count in groups]
        spares = self.node_spare[first:stop] if part.keeps_spare else [0] * (stop - first)
        state = list(zip(self.node_free[first:stop], self.node_cores[first:stop], spares,
                         self.node_mem_free[first:stop], strict=True))
        return [(count, _offer(min(free - spare, cores), memory, per_node, mem_per_cpu))
                for (free, cores, spare, memory), count in _groups(state)]

    def place(self, part: PartitionState, tasks: Sequence[int], cpus_per_task: int,
              memory_per_task: float | None, candidates: Sequence[int],
              may_share: bool, gpus: GpuDemand | None = None) -> Placement | None:
        """The nodes and slots for a job laid out as ``tasks`` per node; None if it must wait.

        Each count of tasks goes on a distinct candidate node (in the candidates' order), first on
        idle cores; failing that, a job that may share takes the candidates holding the fewest
        slots (Slurm fills row 0 before oversubscribing). Memory is always consumable; so are the
        ``gpus`` a job asks: a node takes a count of tasks only with the GPUs they need
        (:meth:`GpuDemand.offer`), and a count per job must be covered by the nodes chosen.
        """
        if self.part_used[part.index] is not None:
            return self.capped(part).place(part, tasks, cpus_per_task, memory_per_task, candidates,
                                           may_share, gpus)
        free, cores, spare, mem = self.node_free, self.node_cores, self.node_spare, self.node_mem_free
        gpu_free = self.node_gpu_free

        def holds(i: int, count: int) -> bool:
            """Whether node ``i`` has the memory and GPUs of ``count`` tasks."""
            have = mem[i]
            if gpus is not None:
                cpus = count * cpus_per_task
                usable = gpus.free(gpu_free[i])
                if gpus.bounded:
                    usable = gpus.usable(usable, cpus, have)
                if gpus.offer(cpus, usable, cpus_per_task) < cpus:
                    return False
            return memory_per_task is None or have is None or have >= count * memory_per_task

        def first_fit(order: Sequence[int], room: Callable[[int], int]) -> list[tuple[int, int]] | None:
            chosen: list[tuple[int, int]] = []
            used: set[int] = set()
            for count in tasks:
                want = count * cpus_per_task
                node = next((i for i in order if i not in used and want <= room(i)
                             and holds(i, count)), None)
                if node is None:
                    return None
                used.add(node)
                chosen.append((node, want))
            return chosen

        members = part.members
        order = [i for i in candidates if i in members]
        chosen = first_fit(order, lambda i: free[i] - spare[i])
        if chosen is None and may_share:
            least_used = sorted(order, key=lambda i: self.node_capacity[i] - free[i])
            chosen = first_fit(least_used, lambda i: min(free[i], cores[i]))
        if chosen is None:
            return None
        if gpus is None:
            return Placement.of(chosen)
        if not gpus.types:
            return None
        held, lacking = [], gpus.total or 0
        for (i, cpus), count in zip(chosen, tasks, strict=True):
            have = gpus.free(gpu_free[i])
            if gpus.bounded:
                have = gpus.usable(have, cpus, mem[i])
            taken = gpus.held(count, have, lacking)
            lacking -= taken
            held.append(split(gpu_free[i], gpus.types, taken))
        return None if lacking > 0 else Placement.of(chosen, tuple(held))

    def commit(self, alloc: Placement, cpus: int, memory: Sequence[float] | None,
               sign: int = 1, part: PartitionState | None = None, shares: bool = False) -> None:
        """Take (``sign=1``) or give back (``sign=-1``) an allocation's slots and the memory it
        holds on each node (``memory`` parallel to ``alloc``'s nodes; None takes none), for a job of
        ``part`` (None: no job's, as a node out of service holds its slots) that ``shares`` its cores
        or not (:func:`djsb.model.allocation.shares_cores`)."""
        if part is not None:
            if (used := self.part_used[part.index]) is not None:
                for i, slots in alloc:
                    used[i] += sign * slots
            if self.rows is not None:
                self.rows.commit(part.index, alloc, sign, shares)
        node_free, has_free = self.node_free, self.node_has_free
        memberships = self.memberships
        for first, count, slots in alloc.runs:
            end = first + count
            delta = sign * slots
            before = node_free[first:end]
            value = before[0]
            if before.count(value) == count:  # equal nodes (the common case): C-speed updates
                after = [value - delta] * count
                has_free[first:end] = (b"\x01" if value > delta else b"\x00") * count
            else:
                after = [free - delta for free in before]
                has_free[first:end] = bytes(free > 0 for free in after)
            node_free[first:end] = after
            for p, prefix in memberships:
                inside = prefix[end] - prefix[first]
                if not inside:
                    continue
                if not p.exclusive:
                    p.free -= delta * inside
                    continue
                idle = p.cores_per_node  # an exclusive partition's nodes are all alike
                if inside == count:
                    p.free += after.count(idle) - before.count(idle)
                else:
                    p.free += sum((now == idle) - (was == idle) for i, was, now
                                  in zip(range(first, end), before, after, strict=True) if i in p.members)
        self.busy_cores += sign * cpus
        if memory is not None:
            self.commit_memory(alloc, memory, sign)

    def commit_gpus(self, alloc: Placement, sign: int = 1) -> None:
        """Take (``sign=1``) or give back (``sign=-1``) the GPUs an allocation holds, if any."""
        if alloc.gpus is None:
            return
        gpu_free = self.node_gpu_free
        for (i, _), held in zip(alloc, alloc.gpus, strict=True):
            node = gpu_free[i]
            for t, count in enumerate(held):
                node[t] -= sign * count
            self.busy_gpus += sign * sum(held)

    def commit_memory(self, alloc: Placement, memory: Sequence[float], sign: int) -> None:
        """Take or give back only the memory of an allocation (a suspended job keeps it)."""
        for k, (i, _) in enumerate(alloc):
            have = self.node_mem_free[i]
            if have is not None:
                self.node_mem_free[i] = have - sign * memory[k]

    def amount_in(self, part: PartitionState, alloc: Placement) -> int:
        """Units of ``part`` that an allocation (made in any partition) holds."""
        prefix = self.member_prefix[part.index]
        if part.exclusive:
            return sum(prefix[first + count] - prefix[first] for first, count, _ in alloc.runs)
        return sum(slots * (prefix[first + count] - prefix[first]) for first, count, slots in alloc.runs)


def _segments(ids: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """``ids`` (a partition's nodes in its order) as ranges ``(a, b)`` of consecutive rising indices."""
    segments: list[tuple[int, int]] = []
    for i in ids:
        if segments and segments[-1][1] == i:
            segments[-1] = (segments[-1][0], i + 1)
        else:
            segments.append((i, i + 1))
    return tuple(segments)


def _groups(values: list[T]) -> list[tuple[T, int]]:
    """``(value, count)`` for each stretch of equal consecutive ``values``."""
    if values.count(values[0]) == len(values):  # one stretch, found at C speed
        return [(values[0], len(values))]
    return [(value, len(list(group))) for value, group in itertools.groupby(values)]


def _append_run(runs: list[Run], first: int, count: int, slots: int) -> None:
    """Add ``count`` nodes from ``first`` holding ``slots`` each, merged into the last run if it
    ends just before with the same slots."""
    if runs:
        last_first, last_count, last_slots = runs[-1]
        if last_slots == slots and last_first + last_count == first:
            runs[-1] = (last_first, last_count + count, slots)
            return
    runs.append((first, count, slots))


def _spread(rooms: Sequence[tuple[int, int]], cpus: int) -> list[tuple[int, int]] | None:
    """``cpus`` over nodes offering ``rooms`` (node, CPUs), one on each and the rest in node order
    (dist_tasks.c's block distribution: each node of a job runs one task at least); None if there
    are more nodes than CPUs."""
    if len(rooms) > cpus:
        return None
    left = cpus - len(rooms)
    spread = []
    for node, room in rooms:
        more = min(room - 1, left)
        spread.append((node, 1 + more))
        left -= more
    return spread if not left else None


def _offer(room: int, memory: float | None, per_node: int | None, mem_per_cpu: float | None) -> int:
    """Slots a node with ``room`` idle cores and ``memory`` free offers a trace job: at most what
    its memory holds at ``mem_per_cpu``; with a node count, ``per_node`` or nothing."""
    fit = int(memory // mem_per_cpu) if mem_per_cpu is not None and memory is not None else room
    if per_node is not None:
        return per_node if room >= per_node and fit >= per_node else 0
    return min(room, fit)
