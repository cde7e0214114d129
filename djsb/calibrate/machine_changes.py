"""A calibration's machine changes: nodes drained, failed, downed and resumed, and advance
reservations, made on Slurm during each replay and given to the model as it was given them.

The file's ``machine`` section takes a config's ``cluster.node_events`` and ``cluster.reservations``
(docs/reference/cluster.md), their times counted from the replay's start::

    machine:
      node_events:      # scontrol update nodename=NODES state=STATE reason=REASON, at `at`
        - {at: 30, nodes: m2, state: DRAIN, reason: calibrate}
        - {at: 150, nodes: m2, state: RESUME}
      reservations:     # scontrol create reservation, at the replay's start, beginning `start` s in
        - {name: djsb_cal, nodes: m4, start: 60, duration: 120, flags: "MAINT,IGNORE_JOBS"}

Unlike the rest of a calibration these need an operator's rights (scontrol update, create
reservation). What the model replays is what Slurm was given: a node event at the instant its
scontrol returned, a reservation from the StartTime and EndTime ``scontrol show reservation`` gives
back (in Unix seconds, ``SLURM_TIME_FORMAT=%s``: whole seconds, whatever the login node's time zone).
Whatever ends a replay, its reservations are deleted and the nodes it took out of service resumed:
SIGINT and SIGTERM unwind through :meth:`SlurmMachine.end`; against SIGKILL each change is recorded
in the run directory before it is made (:mod:`djsb.calibrate.machine_left`), and undone when the
calibration is continued or started again there.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from djsb.calibrate.machine_left import MachineRecord
from djsb.errors import ConfigError, RunError
from djsb.jobs.scontrol import parse_show_records
from djsb.model.cluster_spec import ClusterSpec
from djsb.model.node_events import NodeEvent, read_node_events
from djsb.model.reservations import AdvanceReservation, read_reservations
from djsb.model.sections import nonempty_list
from djsb.yamlnodes import Located

COLUMNS = ("kind", "name", "nodes", "what", "at", "end")
"""The table of what a replay did to the machine (``machine_RUN.csv``): ``kind`` event or
reservation, its name (a reservation's), nodes, the event's state or the reservation's flags, and
when (seconds from the replay's origin; a reservation's end too)."""
ENDED_MARGIN = 5.0
"""Seconds before a reservation's end from which a failed delete is taken for Slurm's own removal
of the reservation at its end."""

Run = Callable[[list[str], str], str]
"""Runs a command where Slurm is and returns its answer (a one-line error naming what it was
needed for when it fails)."""


@dataclass(frozen=True)
class MachineChanges:
    """The node events (time order) and reservations of a calibration, times from its start."""

    events: tuple[NodeEvent, ...] = ()
    reservations: tuple[AdvanceReservation, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.events or self.reservations)


def read_machine(node: Located) -> MachineChanges:
    """The ``machine`` section (its node names are checked against the cluster's by :func:`check_nodes`
    once Slurm has given them). A reservation lasts whole minutes: scontrol takes minutes."""
    node.check_keys(frozenset({"node_events", "reservations"}))
    events, reservations = node.get("node_events"), node.get("reservations")
    held_items = nonempty_list(reservations) if reservations is not None else []
    changes = MachineChanges(read_node_events(nonempty_list(events) if events is not None else [], None),
                             read_reservations(held_items, None))
    if not changes:
        raise node.error("expected node_events or reservations")
    for item, held in zip(held_items, changes.reservations, strict=True):
        if held.duration % 60 or held.period is not None:
            raise (item.get("duration") or item).error(
                "a calibration's reservation lasts whole minutes (scontrol's unit) and does not repeat")
    return changes


def check_nodes(changes: MachineChanges, cluster: ClusterSpec) -> None:
    """A ConfigError naming the first node of ``changes`` that is not one of ``cluster``'s."""
    known = {node.name for node in cluster.nodes}
    given = (("machine.node_events", changes.events), ("machine.reservations", changes.reservations))
    for key, items in given:
        for item in items:
            unknown = [name for name in item.names if name not in known]
            if unknown:
                raise ConfigError(f"unknown node {unknown[0]!r} (the calibration's partitions have "
                                  f"{', '.join(sorted(known))})", key=key)


class SlurmMachine:
    """One replay's machine changes on Slurm: :meth:`begin` at the replay's origin, :meth:`due` at
    every step of its waits, :meth:`end` whatever ended it; :meth:`table` what was done. ``record``:
    where each change is noted before it is made (None: nowhere, as in a test of the commands)."""

    def __init__(self, changes: MachineChanges, run: Run, clock: Callable[[], float],
                 record: MachineRecord | None = None) -> None:
        self.changes, self.run, self.clock, self.record = changes, run, clock, record
        self.origin = math.nan
        self.rows: list[dict[str, object]] = []
        self.next_event = 0
        self.created: list[str] = []
        self.out: set[str] = set()

    def begin(self, origin: float) -> None:
        """Create the reservations, each starting ``start`` s after ``origin``."""
        self.origin = origin
        for held in self.changes.reservations:
            wait = max(0, round(held.start - (self.clock() - origin)))
            flags = [f"flags={','.join(held.flags)}"] if held.flags else []
            if self.record is not None:
                self.record.reserving(held.name)
            self.run(["scontrol", "create", "reservation", f"reservationname={held.name}",
                      f"starttime=now+{wait}", f"duration={round(held.duration / 60)}", f"nodes={held.nodes}",
                      "users=root", *flags], f"the calibration's reservation {held.name}")
            self.created.append(held.name)
            argv = ["env", "SLURM_TIME_FORMAT=%s", "scontrol", "show", "reservation", held.name]
            shown = parse_show_records(self.run(argv, f"the times of the reservation {held.name}"))
            try:
                start, end = (float(shown[0][key]) for key in ("StartTime", "EndTime"))
            except (IndexError, KeyError, ValueError):
                raise RunError(f"scontrol show reservation {held.name} gave no StartTime and EndTime in "
                               "Unix seconds") from None
            self.rows.append({"kind": "reservation", "name": held.name, "nodes": held.nodes,
                              "what": ",".join(held.flags), "at": start - origin, "end": end - origin})

    def due(self) -> None:
        """Make the node events whose instant has come."""
        events = self.changes.events
        while self.next_event < len(events) and self.clock() - self.origin >= events[self.next_event].at:
            event = events[self.next_event]
            self.next_event += 1
            why = event.reason or "djsb calibrate"
            reason = [f"reason={why}"] if event.state != "RESUME" else []
            if reason and self.record is not None:
                self.record.taking_out(event.names, why)
            self.run(["scontrol", "update", f"nodename={event.nodes}", f"state={event.state}", *reason],
                     f"the calibration's node event at {event.at:g} s")
            if event.state == "RESUME":
                self.out -= set(event.names)
                if self.record is not None:
                    self.record.returned(event.names)
            else:
                self.out |= set(event.names)
            self.rows.append({"kind": "event", "name": "", "nodes": event.nodes, "what": event.state,
                              "at": self.clock() - self.origin, "end": math.nan})

    def end(self) -> None:
        """Delete the reservations made that Slurm has not removed at their end, and resume the
        nodes still out of service."""
        ends = {str(row["name"]): float(str(row["end"])) for row in self.rows if row["kind"] == "reservation"}
        for name in self.created:
            try:
                self.run(["scontrol", "delete", f"reservationname={name}"], f"deleting reservation {name}")
            except RunError:
                if self.clock() - self.origin < ends.get(name, math.inf) - ENDED_MARGIN:
                    raise
        self.created = []
        if self.out:
            nodes = ",".join(sorted(self.out))
            self.run(["scontrol", "update", f"nodename={nodes}", "state=RESUME"],
                     "resuming the calibration's nodes")
            self.out = set()
        if self.record is not None:
            self.record.clear()

    def table(self) -> pd.DataFrame:
        """What was done, :data:`COLUMNS`."""
        return pd.DataFrame(self.rows, columns=list(COLUMNS))


def model_machine(cluster: ClusterSpec, done: pd.DataFrame, origin: float) -> ClusterSpec:
    """``cluster`` with what a replay did to Slurm's machine (its :meth:`SlurmMachine.table`), on
    Slurm's clock (Unix seconds: ``origin`` plus the table's times), as the model replays it."""
    rows = done.to_dict("records")
    events = tuple(NodeEvent(origin + float(row["at"]), str(row["nodes"]), str(row["what"]))
                   for row in rows if row["kind"] == "event")
    held = tuple(AdvanceReservation(str(row["name"]), str(row["nodes"]), origin + float(row["at"]),
                                    float(row["end"]) - float(row["at"]), _flags(row["what"]))
                 for row in rows if row["kind"] == "reservation")
    return dataclasses.replace(cluster, events=events, reservations=held)


def _flags(what: object) -> tuple[str, ...]:
    """A reservation's flags as its table row keeps them (empty: a CSV's NaN)."""
    return tuple(flag for flag in what.split(",") if flag) if isinstance(what, str) else ()
