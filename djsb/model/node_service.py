"""Which nodes are in service during a replay, applying :mod:`djsb.model.node_events` to the cluster
state.

A node out of service offers nothing: the service *holds* its free slots (a commit of no CPUs, so
the utilisation counts only jobs), and takes the slots each job running there gives back when it
ends, until the node is resumed. The main pass therefore never starts a job there, and the backfill
planners see what Slurm's do, whose plans cover only available nodes: a running job's slots on
such a node never come back (:meth:`NodeService.in_service`). Capacity lost is recorded per
outage (out_of_service.csv: node, state, start, end, reason).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from djsb.errors import ConfigError
from djsb.model.cluster_state import ClusterState
from djsb.model.node_events import NodeEvent
from djsb.model.placement import Placement

OUTAGE_COLUMNS = ("node", "state", "start", "end", "cores", "reason")
"""The columns of out_of_service.csv: one row per time a node was out of service (``end`` empty: to
the end of the replay)."""


@dataclass(slots=True)
class Outage:
    """A node out of service since ``start`` in ``state`` for ``reason``."""

    state: str
    start: float
    reason: str


class NodeService:
    """The nodes of ``state`` out of service, after ``events`` (each named node must exist)."""

    def __init__(self, state: ClusterState, events: Sequence[NodeEvent]) -> None:
        self.state = state
        index = {name: i for i, name in enumerate(state.node_names)}
        self.events: list[tuple[float, tuple[int, ...], NodeEvent]] = []
        for number, event in enumerate(events):
            unknown = [name for name in event.names if name not in index]
            if unknown:
                raise ConfigError(f"unknown node {unknown[0]!r}", key=f"node_events[{number}].nodes")
            self.events.append((event.at, tuple(index[name] for name in event.names), event))
        self.out: dict[int, Outage] = {}
        """The nodes out of service now, each with its outage."""
        self.held: dict[int, int] = {}
        """The slots the service holds on each node out of service."""
        self.outages: list[tuple[str, str, float, float | None, int, str]] = []
        """Each finished outage as a row of out_of_service.csv."""

    def apply(self, number: int, now: float) -> tuple[list[int], list[int]]:
        """Apply event ``number`` (its index in time order) now: (the nodes it changed, those that
        went DOWN, whose running jobs the core ends)."""
        _, nodes, event = self.events[number]
        changed, down = [], []
        for node in nodes:
            outage = self.out.get(node)
            if event.state == "RESUME":
                if outage is not None:
                    self._close(node, outage, now)
                    del self.out[node]
                    self._give(node)
                    changed.append(node)
                continue
            if outage is not None and (outage.state == "DOWN" or event.state != "DOWN"):
                continue  # already out, as much or more (a drained node going DOWN goes on below)
            if outage is not None:
                self._close(node, outage, now)
            self.out[node] = Outage(event.state, now, event.reason)
            self._take(node)
            changed.append(node)
            if event.state == "DOWN":
                down.append(node)
        return changed, down

    def absorb(self, alloc: Placement) -> None:
        """A job gave ``alloc`` back: hold what it freed on nodes out of service."""
        for node, _ in alloc:
            if node in self.out:
                self._take(node)

    def in_service(self, alloc: Placement,
                   memory: list[float] | None) -> tuple[Placement, list[float] | None]:
        """A running job's ``alloc`` and ``memory`` on the nodes in service only: what it gives back
        to the plan when it ends."""
        out = self.out
        if not out or not any(node in out for node, _ in alloc):
            return alloc, memory
        keep = [k for k, (node, _) in enumerate(alloc) if node not in out]
        pairs = list(alloc)
        gpus = tuple(alloc.gpus[k] for k in keep) if alloc.gpus is not None else None
        return (Placement.of((pairs[k] for k in keep), gpus),
                [memory[k] for k in keep] if memory is not None else None)

    def close(self, now: float) -> None:
        """The replay ended at ``now``: the outages still open are recorded as lasting to the end."""
        for node, outage in sorted(self.out.items()):
            self.outages.append((self.state.node_names[node], outage.state, outage.start, None,
                                 self.state.node_cores[node], outage.reason))
        self.out.clear()

    def _close(self, node: int, outage: Outage, now: float) -> None:
        self.outages.append((self.state.node_names[node], outage.state, outage.start, now,
                             self.state.node_cores[node], outage.reason))

    def _take(self, node: int) -> None:
        free = self.state.node_free[node]
        if free > 0:
            self.state.commit(Placement.of([(node, free)]), 0, None)
            self.held[node] = self.held.get(node, 0) + free

    def _give(self, node: int) -> None:
        slots = self.held.pop(node, 0)
        if slots:
            self.state.commit(Placement.of([(node, slots)]), 0, None, sign=-1)
