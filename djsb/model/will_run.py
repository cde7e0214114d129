"""A backfill pass's plan as Slurm makes it: the will-run test and whole-node reservations.

The model's own planner finds a waiting job's earliest start on future free capacity. Slurm's
sched/backfill plans differently, and on a small cluster the difference decides which jobs
backfill:

- **Reservations hold whole nodes** in a table of time slots (backfill.c ``node_space``, built
  afresh each pass), from their start to their end, both rounded *down* to ``bf_resolution``
  (``start_time = (start_time / backfill_resolution) * backfill_resolution``, the same for
  ``end_reserve``; at least one resolution long, never before the table's first slot). A job
  tested for ``[start, start + limit]`` may use only the nodes no slot overlapping that window
  (``end > start`` and ``begin <= start + limit``) reserves: :meth:`NodeSpace.available`.
- **The start comes from the select plugin's will-run test** (``_will_run_test``,
  cons_common/job_test.c, 22.05), which knows running jobs only: if the job fits now on those
  nodes, it starts now; otherwise running jobs are removed in order of their expected end
  (start + time limit), in batches: the first batch takes every job ending up to the first end
  rounded up to the next multiple of 30 s, plus 30 s; the window then doubles until it reaches the
  next job's end. After each batch the job is tried on what is free, and the start is the
  expected end of the last job removed (for a job already past its limit, KillWait after its
  limit, at least a second from now: ``_guess_job_end``): :class:`WillRunTest`. Only jobs on
  usable nodes are removed, but the bound is checked as the code checks it: after a removal,
  against the *next running job of the whole list* (``list_peek_next``), whether or not it runs
  on usable nodes; a job skipped for running elsewhere checks nothing. So when the jobs just past
  a removed one run elsewhere, the next usable job joins the batch whatever its end (seen in a
  record made with ``DebugFlags=Backfill``: a job ending 1 s past the bound removed in the first
  batch, its start then past the next reserved slot's boundary, tried later).
- **Later starts are tried past reserved slots** (``TRY_LATER``): when the job does not fit, or
  would start after the first slot boundary where a reserved node frees, it is tried again from
  that boundary; a start whose run would overlap a reservation on its nodes is tried again from
  that start. :meth:`NodeSpace.later_start` gives the boundary.

This plan is Slurm's heuristic, not a capacity-exact one: a reservation may move later from one
pass to the next (the batches shift as jobs end: seen on KTH-SP2, 1,590 s later), and a
reservation's end rounded down lets the next one on its nodes begin up to ``bf_resolution`` early.
So :class:`~djsb.model.invariants.InvariantChecker` checks the starts of such a pass (no node
oversubscribed) but not its reservations, whose invariants hold for the model's own planner only.

Costs grow with the reservations of a pass times the running jobs. A pass keeps what only its own
starts change (:class:`WillRunTest`, with each running job's slots on each usable set listed once)
and the table as split slots of node bit masks (:class:`NodeSpace`), allocates a trace job only
once the usable nodes free as many slots as its CPUs, and stops walking the queue where no job left
could fit the free capacity: ``djsb simulate`` of KTH-SP2's first 10,000 jobs under
``marenostrum4`` takes about 2.5 times the CPU time it takes with the model's own planner
(bench/bench_simulate.py).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
from bisect import bisect_right, insort
from collections.abc import Callable, Collection, Hashable, Iterable, Sequence

from djsb.model.cluster_state import ClusterState
from djsb.model.partition_rows import PartitionRows
from djsb.model.placement import Placement

WILL_RUN_WINDOW = 30
"""Seconds of the will-run test's first batch window (``int time_window = 30``)."""

Allocate = Callable[[ClusterState], Placement | None]
"""A job's allocation rules on a cluster state (the live one or a future view of it)."""

Holding = tuple[float, Placement, Sequence[float] | None, int, int]
"""A running job as the will-run test sees it: (expected end, its placement (its GPUs with it),
memory per node, job id, its partition's index). Jobs expected to end together are removed in job
id order: slurmctld's job_list keeps jobs in their creation order and the test sorts it by end
with glibc's merge sort, which is stable."""


class WillRunTest:
    """The will-run test of one pass: when and where a job could start on some usable nodes, given
    the running jobs ``holdings``, as the module docstring says.

    A pass asks it for every job it tests, and again for each later try, while only the pass's
    own starts change what it depends on (the free slots and memory, the running jobs). So it keeps
    what depends on those alone until :meth:`started` says they changed: the partitions as the
    select plugin sees them (capacity free, every node counted), the running jobs on each usable
    set, and the answers for each job request (``key``) on each usable set. A job that needs
    ``slots`` free slots at least (its CPUs: no allocation takes more from a node than the node has
    free) is tried only once the usable nodes free that many, so most batches cost no allocation.
    """

    def __init__(self, state: ClusterState, holdings: Sequence[Holding], now: float,
                 kill_wait: float = 30.0, sharing: Collection[int] = ()) -> None:
        """``sharing``: the ids of the running jobs that share their cores (for the rule between
        partitions, :mod:`djsb.model.partition_rows`)."""
        self.state = state
        self.sharing = set(sharing)
        self.holdings = sorted(map(_with_nodes, holdings), key=_end_of)  # by expected end, then id
        self.now = now
        self.kill_wait = kill_wait
        self.nodes = frozenset(range(len(state.node_free)))
        self.select = copy.copy(state)
        """The select plugin's view: capacity free in every partition, the free slots and memory
        per node of the instant tested (set by :meth:`view` before each allocation)."""
        self.select.partitions = [dataclasses.replace(p, free=p.capacity) for p in state.partitions]
        self.usable: dict[frozenset[int], tuple[list[int], bytearray, int, list[_OnUsable]]] = {}
        """Per usable set: its free slots now (0 on the other nodes), which of them have one, their
        positive sum, and the running jobs on it (what each holds there alone)."""
        self.answers: dict[tuple[frozenset[int], Hashable], tuple[float, Placement] | None] = {}
        self.gpus = bool(state.gpu_types)
        """Whether the nodes have GPUs, which a removed running job gives back too."""
        self.capped = frozenset(p for p, used in enumerate(state.part_used) if used is not None)
        """The partitions with a MaxCPUsPerNode, whose CPUs held per node a removed job of theirs
        lowers (what ``_allocate_sc`` counts against the cap)."""

    def started(self, holding: Holding, shares: bool = False) -> None:
        """A job started now and runs as ``holding`` (sharing its cores or not): the cluster state and
        the running jobs changed."""
        if shares:
            self.sharing.add(holding[3])
        insort(self.holdings, _with_nodes(holding), key=_end_of)
        self.usable.clear()
        self.answers.clear()

    def view(self, free: list[int], has_free: bytearray, memory: list[float | None],
             gpus: list[list[int]] | None = None, used: list[list[int] | None] | None = None,
             rows: PartitionRows | None = None) -> ClusterState:
        """The select plugin's view with these free slots (``has_free``: which nodes have one),
        memory and GPUs per node (and CPUs each capped partition's jobs hold per node, and the
        counts of the rule between partitions), valid until the next call (allocating reads them,
        never writes)."""
        view = self.select
        view.node_free, view.node_has_free, view.node_mem_free = free, has_free, memory
        if rows is not None:
            view.rows = rows
        if gpus is not None:
            view.node_gpu_free = gpus
        if used is not None:
            view.part_used = used
        return view

    def test(self, usable: frozenset[int], allocate: Allocate, key: Hashable | None = None,
             slots: int = 0) -> tuple[float, Placement] | None:
        """When and where a job could start on the nodes ``usable``, removing the running jobs batch
        by batch; None if it never fits. ``key`` names the job's request when ``allocate``'s answer
        depends on it and the view alone (the answer is then remembered), None otherwise;
        ``slots``: the free slots the usable nodes must offer together before ``allocate`` can
        succeed (0: no such bound)."""
        if key is None:
            return self._test(usable, allocate, slots)
        memo = (usable, key)
        if memo not in self.answers:
            self.answers[memo] = self._test(usable, allocate, slots)
        return self.answers[memo]

    def _base(self, usable: frozenset[int]) -> tuple[list[int], bytearray, int, list[_OnUsable]]:
        base = self.usable.get(usable)
        if base is None:
            state = self.state
            free, has_free = list(state.node_free), bytearray(state.node_has_free)
            for node in self.nodes - usable:
                free[node] = has_free[node] = 0
            holdings = self.holdings
            on_usable = [_on(held, usable, holdings[i + 1][0] if i + 1 < len(holdings) else None,
                             held[4] in self.sharing)
                         for i, held in enumerate(holdings) if not usable.isdisjoint(held[3])]
            base = self.usable[usable] = (free, has_free, sum(f for f in free if f > 0), on_usable)
        return base

    def _test(self, usable: frozenset[int], allocate: Allocate,
              slots: int) -> tuple[float, Placement] | None:
        now = self.now
        base_free, base_has_free, offered, pending = self._base(usable)
        free, has_free = list(base_free), bytearray(base_has_free)
        memory = list(self.state.node_mem_free)
        gpus = [list(node) for node in self.state.node_gpu_free] if self.gpus else None
        used = [None if held is None else list(held) for held in self.state.part_used] \
            if self.capped else None
        rows = self.state.rows.copy() if self.state.rows is not None else None
        if offered >= slots:
            alloc = allocate(self.view(free, has_free, memory, gpus, used, rows))
            if alloc is not None:
                return now, alloc
        window, aligned, k = WILL_RUN_WINDOW, None, 0
        while k < len(pending):
            while True:
                end, held, peek, part, shares = pending[k]
                if rows is not None:  # _will_run_test's job_res_rm_job: its rows and node_state too
                    rows.commit(part, [(node, count) for node, count, _, _ in held], -1, shares)
                part_used = used[part] if used is not None else None
                if aligned is None:
                    aligned = end + (window - math.fmod(end, window))
                for node, count, held_memory, held_gpus in held:
                    free[node] += count
                    offered += count  # a bound: what the node offers grows by at most this
                    has_free[node] = free[node] > 0
                    if held_memory is not None and memory[node] is not None:
                        memory[node] = memory[node] + held_memory  # type: ignore[operator]
                    if held_gpus is not None and gpus is not None:
                        gpus[node] = [have + back for have, back in zip(gpus[node], held_gpus, strict=True)]
                    if part_used is not None:
                        part_used[node] -= count
                last, k = end, k + 1
                if k == len(pending) or peek is None or peek > aligned + window:
                    break
            window *= 2
            while peek is not None and peek > aligned + window:
                window *= 2
            if offered >= slots:
                alloc = allocate(self.view(free, has_free, memory, gpus, used, rows))
                if alloc is not None:
                    return self._start_after(last), alloc
        return None

    def _start_after(self, end: float) -> float:
        """When a job that fits once the running job expected to end at ``end`` is gone can start:
        then, or for a job already past its limit (``end`` not after now) ``kill_wait`` after its
        limit, at least a second from now (cons_common job_test.c ``_guess_job_end``)."""
        now = self.now
        if end > now:
            return end
        guess = end + self.kill_wait
        return guess if guess > now else now + 1.0


_Held = tuple[float, list[tuple[int, int]], Sequence[float] | None, frozenset[int], int,
              Sequence[tuple[int, ...]] | None, int]
"""A :data:`Holding` with its ``(node, slots)`` listed and its nodes as a set, its job id, then its
GPUs per node (None: it holds none) and its partition's index."""


def _with_nodes(holding: Holding) -> _Held:
    end, held, memory, job_id, part = holding
    pairs = list(held)
    return end, pairs, memory, frozenset(node for node, _ in pairs), job_id, held.gpus, part


def _end_of(holding: _Held) -> tuple[float, int]:
    return holding[0], holding[4]


_OnUsable = tuple[float, list[tuple[int, int, float | None, tuple[int, ...] | None]], float | None, int, bool]
"""A running job as seen on some usable nodes: its expected end, ``(node, slots, memory, GPUs)`` on
each of its nodes among them (memory or GPUs None: the job holds none there), the expected end
of the running job after it in the whole list, usable or not (None: it is the last), its
partition's index and whether it shares its cores."""


def _on(holding: _Held, usable: frozenset[int], peek: float | None, shares: bool) -> _OnUsable:
    """What ``holding`` holds on the nodes ``usable``; ``peek``: the next running job's end;
    ``shares``: whether its job shares its cores."""
    end, held, memory, _, _, gpus, part = holding
    return end, [(node, count, None if memory is None else memory[i], None if gpus is None else gpus[i])
                 for i, (node, count) in enumerate(held) if node in usable], peek, part, shares


@dataclasses.dataclass(frozen=True, slots=True)
class Hold:
    """Whole nodes a reservation keeps over ``[begin, end)`` (``nodes``: a bit mask, bit i for node i)."""

    begin: float
    end: float
    nodes: int


class NodeSpace:
    """One pass's reservations (backfill.c ``node_space``): whole nodes over rounded windows.

    The table is kept as its slots, split where a reservation begins or ends (``bounds``: each
    slot's begin, the last one running to the end of time; ``reserved``: the nodes each keeps, as a
    bit mask: bit i for node i), so a reservation updates the slots it covers and a scan reads the
    slots from its start on with integer operations, whatever the node count."""

    def __init__(self, now: float, resolution: float) -> None:
        self.resolution = resolution
        self.origin = self._floor(now)
        self.holds: list[Hold] = []
        self.bounds: list[float] = [self.origin]
        self.reserved: list[int] = [0]
        self.sets: dict[int, frozenset[int]] = {}
        """The nodes of each mask a scan gave, one set object per mask (its hash is then computed once)."""

    def _floor(self, t: float) -> float:
        res = self.resolution
        return math.floor(t / res) * res if res > 0 and math.isfinite(t) else t

    def window(self, start: float, end: float) -> tuple[float, float]:
        """A reservation's ``[begin, end)`` for a run over ``[start, end)`` (the module docstring)."""
        begin = max(self._floor(start), self.origin)
        return begin, max(self._floor(end), begin + self.resolution)

    def reserve(self, nodes: Iterable[int] | Placement, start: float, end: float) -> Hold:
        """Keep ``nodes`` (or those of a placement) whole for a run planned over ``[start, end)``."""
        hold = Hold(*self.window(start, end), node_mask(nodes))
        self.holds.append(hold)
        first, stop = self._split(hold.begin), self._split(hold.end)
        reserved = self.reserved
        for k in range(first, stop):
            reserved[k] |= hold.nodes
        return hold

    def _split(self, t: float) -> int:
        """The index of the slot beginning at ``t`` (at or after the origin), splitting the slot
        holding ``t`` there if none does; the new slot keeps the nodes of the one split."""
        bounds = self.bounds
        k = bisect_right(bounds, t)
        if bounds[k - 1] == t:
            return k - 1
        bounds.insert(k, t)
        self.reserved.insert(k, self.reserved[k - 1])
        return k

    def scan(self, nodes: Sequence[int], start: float, end: float) -> tuple[frozenset[int], float | None]:
        """What a try over ``[start, end]`` may use and where the next try begins, as
        ``_attempt_backfill`` scans its slots (backfill.c, 22.05): ``nodes`` that no slot
        overlapping the window (``slot end > start`` and ``slot begin <= end``) reserves, and the
        end of the first slot after ``start`` whose successor offers a node of ``nodes`` that the
        slots scanned so far do not (None: trying later cannot help). A slot is looked at for the
        next try before its overlap test, so the first slot past the window counts too."""
        usable = _mask_of(nodes if isinstance(nodes, tuple) else tuple(nodes))
        bounds, reserved = self.bounds, self.reserved
        last = len(bounds) - 1
        k = max(bisect_right(bounds, start) - 1, 0)  # the first slot ending after start
        avail, later = usable, None
        free = usable & ~reserved[k]
        while True:
            if k == last:
                if bounds[k] <= end:
                    avail &= free
                break
            successor = usable & ~reserved[k + 1]
            if later is None and successor & ~(avail & free):
                later = bounds[k + 1]
            if bounds[k] > end:
                break
            avail &= free
            free, k = successor, k + 1
        found = self.sets.get(avail)
        if found is None:
            found = self.sets[avail] = _nodes_of(avail)
        return found, later

    def overlaps(self, nodes: Iterable[int] | Placement, start: float, end: float) -> bool:
        """Whether a run over ``[start, end)`` on ``nodes`` (or those of a placement) would use a
        reserved node (both rounded as a reservation is: backfill.c ``_test_resv_overlap``)."""
        begin, stop = self.window(start, end)
        wanted = node_mask(nodes)
        return any(hold.end > begin and hold.begin < stop and hold.nodes & wanted for hold in self.holds)


def node_mask(nodes: Iterable[int] | Placement) -> int:
    """``nodes`` (or the nodes of a placement, from its runs) as a bit mask: bit i set for node i."""
    mask = 0
    if isinstance(nodes, Placement):
        for first, count, _ in nodes.runs:
            mask |= ((1 << count) - 1) << first
        return mask
    for node in nodes:
        mask |= 1 << node
    return mask


@functools.lru_cache(maxsize=256)
def _mask_of(nodes: tuple[int, ...]) -> int:
    """:func:`node_mask` of a partition's nodes, made once per partition."""
    return node_mask(nodes)


def _nodes_of(mask: int) -> frozenset[int]:
    """The nodes of a bit mask."""
    nodes = []
    while mask:
        low = mask & -mask
        nodes.append(low.bit_length() - 1)
        mask ^= low
    return frozenset(nodes)
