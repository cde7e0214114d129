"""What a site's accounting says happened to its nodes besides jobs: node events (DOWN, DRAIN over
time) and reservations, as sacctmgr prints them. The model has neither (a replay keeps every node in
service and holds no reservation), so ``djsb history`` reads them to say so: one note per event or
reservation that overlaps the history, never dropped silently.

A parser is a function from the text to records; a bad line is one error naming its line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from djsb.errors import InputError
from djsb.workloads.sacct_columns import parse_sacct_time

EVENTS_COMMAND = ("sacctmgr --noheader --parsable2 show events start=START end=END "
                  "format=NodeName,Start,End,State,Reason,User")
"""The command whose output :func:`parse_node_events` reads (docs/history.md)."""
RESERVATIONS_COMMAND = ("sacctmgr --noheader --parsable2 show reservation start=START end=END "
                        "format=Name,NodeNames,TimeStart,TimeEnd,Flags")
"""The command whose output :func:`parse_reservations` reads (docs/history.md)."""


@dataclass(frozen=True)
class NodeEvent:
    """A node out of service: from ``start`` to ``end`` (Unix seconds; None: still), in ``state``
    (DOWN, DOWN*, DRAIN...) for ``reason``."""

    node: str
    start: float
    end: float | None
    state: str
    reason: str


@dataclass(frozen=True)
class ReservationRecord:
    """A reservation: its nodes (a hostlist) from ``start`` to ``end`` (Unix seconds), its flags."""

    name: str
    nodes: str
    start: float
    end: float
    flags: str


def _fields(line: str, count: int, number: int, source: str) -> list[str]:
    fields = line.split("|")
    if len(fields) < count:
        raise InputError(f"expected {count} '|'-separated fields, got {len(fields)}", source=source,
                         line=number)
    return fields


def _time(text: str, number: int, source: str) -> float | None:
    try:
        return parse_sacct_time(text)
    except ValueError as exc:
        raise InputError(str(exc), source=source, line=number) from None


def parse_node_events(text: str, source: str = "events") -> list[NodeEvent]:
    """The node events of :data:`EVENTS_COMMAND`'s output (cluster-wide events, with no node name,
    left out)."""
    events = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        node, start, end, state, reason = _fields(line, 6, number, source)[:5]
        began = _time(start, number, source)
        if not node:
            continue
        if began is None:
            raise InputError(f"node {node}'s event has no start", source=source, line=number)
        events.append(NodeEvent(node, began, _time(end, number, source), state, reason))
    return events


def parse_reservations(text: str, source: str = "reservations") -> list[ReservationRecord]:
    """The reservations of :data:`RESERVATIONS_COMMAND`'s output."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, nodes, start, end, flags = _fields(line, 5, number, source)[:5]
        began, ended = _time(start, number, source), _time(end, number, source)
        if began is None or ended is None:
            raise InputError(f"reservation {name} has no start or end", source=source, line=number)
        found.append(ReservationRecord(name, nodes, began, ended, flags))
    return found


def site_event_notes(events: Sequence[NodeEvent], reservations: Sequence[ReservationRecord],
                     begin: float, end: float) -> list[str]:
    """One note per node event and reservation overlapping the history's span [``begin``, ``end``]
    (Unix seconds), saying what the replay does instead."""
    notes = []
    for event in events:
        if event.start <= end and (event.end is None or event.end >= begin):
            lasted = f"for {event.end - event.start:.0f} s" if event.end is not None else "to the end"
            notes.append(f"node {event.node} was {event.state} ({event.reason}) {lasted} from "
                         f"{event.start - begin:.0f} s into the history: the model keeps it in service")
    for held in reservations:
        if held.start <= end and held.end >= begin:
            notes.append(f"reservation {held.name} held {held.nodes} ({held.flags}) for "
                         f"{held.end - held.start:.0f} s from {held.start - begin:.0f} s into the history: "
                         "the model holds no reservation, its nodes run other jobs")
    return notes
