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
  expected end of the last job removed: :func:`will_run`. Only jobs on usable nodes count.
- **Later starts are tried past reserved slots** (``TRY_LATER``): when the job does not fit, or
  would start after the first slot boundary where a reserved node frees, it is tried again from
  that boundary; a start whose run would overlap a reservation on its nodes is tried again from
  that start. :meth:`NodeSpace.later_start` gives the boundary.

This plan is Slurm's heuristic, not a capacity-exact one: a reservation may move later from one
pass to the next (the batches shift as jobs end: seen on KTH-SP2, 1,590 s later), and a
reservation's end rounded down lets the next one on its nodes begin up to ``bf_resolution`` early.
So :class:`~djsb.model.invariants.InvariantChecker` checks the starts of such a pass (no node
oversubscribed) but not its reservations, whose invariants hold for the model's own planner only.

Costs grow with the reservations of a pass times the running jobs: meant for calibration-sized
workloads (``SchedulerConfig.bf_will_run``; about 30 times the model's own planner), not for
replaying full traces.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math
from collections.abc import Callable, Iterable, Sequence

from djsb.model.cluster import ClusterState
from djsb.model.placement import Placement

WILL_RUN_WINDOW = 30
"""Seconds of the will-run test's first batch window (``int time_window = 30``)."""

Allocate = Callable[[ClusterState], Placement | None]
"""A job's allocation rules on a cluster state (the live one or a future view of it)."""

Holding = tuple[float, Sequence[tuple[int, int]], Sequence[float] | None]
"""A running job as the will-run test sees it: (expected end, its ``(node, slots)``, memory per node)."""


def free_view(state: ClusterState, free: list[int], memory: list[float | None]) -> ClusterState:
    """``state`` with these free slots and memory per node (a partition's totals no shortcut)."""
    view = copy.copy(state)
    view.node_free, view.node_mem_free = free, memory
    view.partitions = [dataclasses.replace(p, free=p.capacity) for p in state.partitions]
    view.node_has_free = bytearray(slots > 0 for slots in free)
    return view


def will_run(state: ClusterState, usable: frozenset[int], holdings: Sequence[Holding], now: float,
             allocate: Allocate) -> tuple[float, Placement] | None:
    """When and where a job could start on the nodes ``usable``, removing ``holdings`` (sorted by
    expected end) batch by batch as the module docstring says; None if it never fits."""
    free = [slots if node in usable else 0 for node, slots in enumerate(state.node_free)]
    memory = list(state.node_mem_free)
    alloc = allocate(free_view(state, free, memory))
    if alloc is not None:
        return now, alloc
    pending = [h for h in holdings if any(node in usable for node, _ in h[1])]
    window, aligned, k = WILL_RUN_WINDOW, None, 0
    while k < len(pending):
        while True:
            end, held, held_memory = pending[k]
            if aligned is None:
                aligned = end + (window - math.fmod(end, window))
            for i, (node, slots) in enumerate(held):
                if node in usable:
                    free[node] += slots
                    if held_memory is not None and memory[node] is not None:
                        memory[node] = memory[node] + held_memory[i]  # type: ignore[operator]
            last, k = end, k + 1
            if k == len(pending) or pending[k][0] > aligned + window:
                break
        window *= 2
        while k < len(pending) and pending[k][0] > aligned + window:
            window *= 2
        alloc = allocate(free_view(state, list(free), list(memory)))
        if alloc is not None:
            return max(last, now), alloc
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class Hold:
    """Whole nodes a reservation keeps over ``[begin, end)``."""

    begin: float
    end: float
    nodes: frozenset[int]


class NodeSpace:
    """One pass's reservations (backfill.c ``node_space``): whole nodes over rounded windows."""

    def __init__(self, now: float, resolution: float) -> None:
        self.resolution = resolution
        self.origin = self._floor(now)
        self.holds: list[Hold] = []

    def _floor(self, t: float) -> float:
        res = self.resolution
        return math.floor(t / res) * res if res > 0 and math.isfinite(t) else t

    def window(self, start: float, end: float) -> tuple[float, float]:
        """A reservation's ``[begin, end)`` for a run over ``[start, end)`` (the module docstring)."""
        begin = max(self._floor(start), self.origin)
        return begin, max(self._floor(end), begin + self.resolution)

    def reserve(self, nodes: Iterable[int], start: float, end: float) -> Hold:
        """Keep ``nodes`` whole for a run planned over ``[start, end)``."""
        hold = Hold(*self.window(start, end), frozenset(nodes))
        self.holds.append(hold)
        return hold

    def scan(self, nodes: Sequence[int], start: float, end: float) -> tuple[frozenset[int], float | None]:
        """What a try over ``[start, end]`` may use and where the next try begins, as
        ``_attempt_backfill`` scans its slots (backfill.c, 22.05): ``nodes`` that no slot
        overlapping the window (``slot end > start`` and ``slot begin <= end``) reserves, and the
        end of the first slot after ``start`` whose successor offers a node of ``nodes`` that the
        slots scanned so far do not (None: trying later cannot help). A slot is looked at for the
        next try before its overlap test, so the first slot past the window counts too."""
        usable = frozenset(nodes)
        slots = self._slots(usable)
        avail, later = usable, None
        for k, (begin, stop, free) in enumerate(slots):
            if stop > start and k + 1 < len(slots) and later is None \
                    and not slots[k + 1][2] <= avail & free:
                later = stop
            if stop <= start:
                continue
            if begin > end:
                break
            avail &= free
        return avail, later

    def _slots(self, usable: frozenset[int]) -> list[tuple[float, float, frozenset[int]]]:
        """The table's slots ``(begin, end, nodes of usable free)``, contiguous from the first; the
        last one runs to the end of time."""
        bounds = sorted({self.origin, *(t for hold in self.holds for t in (hold.begin, hold.end))})
        bounds.append(math.inf)
        return [(begin, stop, usable - self._reserved_at(usable, begin))
                for begin, stop in itertools.pairwise(bounds) if stop > begin]

    def overlaps(self, nodes: Iterable[int], start: float, end: float) -> bool:
        """Whether a run over ``[start, end)`` on ``nodes`` would use a reserved node (both rounded
        as a reservation is: backfill.c ``_test_resv_overlap``)."""
        begin, stop = self.window(start, end)
        wanted = frozenset(nodes)
        return any(hold.end > begin and hold.begin < stop and hold.nodes & wanted for hold in self.holds)

    def _reserved_at(self, members: frozenset[int], t: float) -> frozenset[int]:
        """Nodes of ``members`` reserved during the slot beginning at ``t``."""
        return frozenset(n for hold in self.holds if hold.begin <= t < hold.end for n in hold.nodes & members)
