"""What a site's accounting says happened to its nodes besides jobs: node events (DOWN, DRAIN over
time) and reservations, as sacctmgr prints them. ``djsb history`` replays both: the node events as
the model's :mod:`~djsb.model.node_events` (:func:`model_events`), the reservations as its
:mod:`~djsb.model.reservations` (:func:`model_reservations`), with one note for what it cannot
take, never dropped silently.

A parser is a function from the text to records; a bad line is one error naming its line.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from djsb.errors import InputError
from djsb.jobs.hostlist import compress_hostlist, expand_hostlist
from djsb.model.node_events import NodeEvent as ModelEvent
from djsb.model.reservations import MODELLED_FLAGS, REPEATS, AdvanceReservation
from djsb.workloads.job import TraceJob
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


SEVERITY = ("DRAIN", "FAIL", "DOWN")
"""The model's out-of-service states, least severe first: a node in several at once (a drained node
that stops responding) is in the most severe one."""


def model_state(state: str) -> str | None:
    """The model's state for a sacctmgr event state (``DOWN*``, ``IDLE+DRAIN``, ``MIXED+FAIL``, ...):
    its most severe of DOWN (a node not responding, ``*``, is DOWN once SlurmdTimeout passed), FAIL
    and DRAIN; None for a state that takes no node out of service."""
    words = state.upper().replace("*", "").replace("+", " ").split()
    found = [rank for rank, name in enumerate(SEVERITY) if name in words or f"{name}ED" in words
             or (name == "DRAIN" and "DRAINING" in words)]
    return SEVERITY[max(found)] if found else None


def model_events(events: Sequence[NodeEvent], origin: float, span: tuple[float, float],
                 nodes: Collection[str]) -> tuple[tuple[ModelEvent, ...], list[str]]:
    """The model's node events for a site's within the replay's ``span`` (begin, end; times in
    seconds from ``origin``, as the events' become), on the modelled ``nodes``: per node, the most
    severe state of the events under way, entered and left as they begin and end (an event still
    open lasts to the replay's end). And one note per node outside the model and per state the
    model does not take."""
    notes: list[str] = []
    spans: dict[str, list[tuple[float, float, str, str]]] = {}
    begin = span[0]
    for event in events:
        state = model_state(event.state)
        end = math.inf if event.end is None else event.end - origin
        if end <= begin or event.start - origin > span[1]:
            continue
        if state is None:
            notes.append(f"node {event.node}'s state {event.state} takes no node out of service in the model")
        elif event.node not in nodes:
            notes.append(f"node {event.node} ({event.state}) is in no modelled partition: its event is "
                         "left out")
        else:
            start = max(event.start - origin, begin)
            spans.setdefault(event.node, []).append((start, end, state, event.reason))
    found = []
    for node, intervals in sorted(spans.items()):
        instants = sorted({t for start, end, _, _ in intervals for t in (start, end) if t < math.inf})
        now_state = None
        for instant in instants:
            active = [(SEVERITY.index(state), state, reason) for start, end, state, reason in intervals
                      if start <= instant < end]
            state, reason = (max(active)[1:]) if active else (None, "")
            if state != now_state:
                found.append(ModelEvent(instant, node, state or "RESUME", reason))
                now_state = state
    return tuple(sorted(found, key=lambda event: event.at)), notes


def model_reservations(records: Sequence[ReservationRecord], origin: float, span: tuple[float, float],
                       nodes: Collection[str]) -> tuple[tuple[AdvanceReservation, ...], list[str]]:
    """The model's reservations for a site's that overlap the replay's ``span`` (times in seconds
    from ``origin``), on its modelled ``nodes``; each record is one window (sacctmgr lists each
    window of a repeating reservation apart). And one note per flag the model does not take and per
    reservation holding no modelled node."""
    found, notes = [], []
    for held in records:
        start, end = held.start - origin, held.end - origin
        if end <= span[0] or start > span[1]:
            continue
        names = [name for name in expand_hostlist(held.nodes, check=False) if name in nodes]
        if not names:
            notes.append(f"reservation {held.name} holds no node of the modelled partitions ({held.nodes}): "
                         "left out")
            continue
        flags = [flag for flag in held.flags.split(",") if flag]
        kept = tuple(flag for flag in flags if flag in MODELLED_FLAGS and flag not in REPEATS)
        unmodelled = [flag for flag in flags if flag not in MODELLED_FLAGS]
        if unmodelled:
            notes.append(f"reservation {held.name}'s flag(s) {', '.join(unmodelled)} have no model: "
                         "replayed as a reservation of its nodes for no job")
        if "MAGNETIC" in kept:
            notes.append(f"reservation {held.name} is MAGNETIC and sacctmgr lists no Users or Accounts: "
                         "every job may be drawn into it")
        found.append(AdvanceReservation(held.name, compress_hostlist(names), start, end - start, kept))
    return tuple(found), notes


def in_reservations(jobs: Sequence[TraceJob],
                    held: Sequence[AdvanceReservation]) -> tuple[list[TraceJob], list[str]]:
    """``jobs`` with the reservation each ran in (sacct's Reservation) where the replay models it, and
    without it where it does not (no record of it in the replay's span, or none of its nodes
    modelled): such a job would be refused as asking for no reservation the cluster has. And one note
    saying how many jobs lost theirs."""
    names = {reservation.name for reservation in held}
    outside = [job for job in jobs if job.reservation is not None and job.reservation not in names]
    if not outside:
        return list(jobs), []
    lost = ", ".join(sorted({str(job.reservation) for job in outside}))
    ids = {job.job_id for job in outside}
    kept = [dataclasses.replace(job, reservation=None) if job.job_id in ids else job for job in jobs]
    return kept, [f"{len(outside)} job(s) ran in reservation(s) {lost}, which the replay does not model (no "
                  "record of it in the span, or none of its nodes): replayed as asking for none"]
