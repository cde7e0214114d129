"""Advance reservations that keep nodes from the jobs outside them (``scontrol create reservation``;
slurm.conf(5), scontrol(1) "RESERVATIONS"), as Slurm 22.05's ``job_test_resv`` (reservation.c)
treats a job that asks for no reservation:

* a job may not use a reserved node if its run, from its start to its start plus its time limit,
  overlaps the reservation's window; the rest of the machine it may use. So a job whose limit would
  cross a maintenance window waits for its end, or starts now on the other nodes.
* A job that could not run on the nodes left even were they idle is skipped by the main pass
  without blocking its partition, with the reason ReqNodeNotAvail (``ESLURM_RESERVATION_MAINT`` /
  ``ESLURM_NODE_NOT_AVAIL``, job_scheduler.c); one that could but finds them busy waits for
  Resources, as any job does.
* The backfill planners plan the reserved nodes as taken over the window.
* Jobs running on the nodes when the window opens go on (``IGNORE_JOBS``: with whole-node
  reservations the model's jobs can only be running there if they began before the replay).

Flags: ``MAINT`` and ``IGNORE_JOBS`` and ``SPEC_NODES`` are what a maintenance window is and change
nothing above; ``DAILY`` and ``WEEKLY`` repeat the window every day or week. ``Users`` and
``Accounts`` say who may run inside it (``_valid_job_access_resv``); the jobs that ask for one with
``--reservation`` are :mod:`djsb.model.reserved_jobs`', as are ``FLEX`` (they may run outside its
nodes and window) and ``MAGNETIC`` (it draws the jobs asking for none). Other flags (``OVERLAP``...)
have no model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import MISSING, dataclass

from djsb.jobs.hostlist import expand_hostlist
from djsb.model.node_events import as_hostlist
from djsb.setting import read_record, setting
from djsb.yamlnodes import Located, as_duration, as_str

RESERVATIONS = "cluster.reservations[]"
"""Where a config writes a reservation's keys."""
MODELLED_FLAGS = ("MAINT", "IGNORE_JOBS", "SPEC_NODES", "DAILY", "WEEKLY", "FLEX", "MAGNETIC")
"""The flags the model takes (the module docstring)."""
REPEATS = {"DAILY": 86400.0, "WEEKLY": 7 * 86400.0}
"""The period of a repeating reservation, by flag."""
MAX_RESERVATIONS = 1000
"""Most reservations a config may give: each backfill pass may plan :data:`MAX_AHEAD` windows of each."""
MAX_AHEAD = 1000
"""Most windows of a repeating reservation a backfill pass plans ahead (nearly three years of a daily
one): a pass without a window limit (``bf_window: UNLIMITED``) would otherwise plan them all."""


def _names(node: Located) -> tuple[str, ...]:
    """A comma-separated list of names (users, accounts), as scontrol takes them."""
    return tuple(name.strip() for name in as_str(node).split(",") if name.strip())


def _flags(node: Located) -> tuple[str, ...]:
    flags = tuple(flag.strip().upper() for flag in as_str(node).split(",") if flag.strip())
    unknown = [flag for flag in flags if flag not in MODELLED_FLAGS]
    if unknown:
        raise node.error(f"flag {unknown[0]} has no model (modelled: {', '.join(MODELLED_FLAGS)})")
    if "DAILY" in flags and "WEEKLY" in flags:
        raise node.error("DAILY and WEEKLY cannot go together")
    return flags


@dataclass(frozen=True, slots=True)
class AdvanceReservation:
    """``nodes`` reserved from ``start`` for ``duration`` (seconds from the workload's origin)."""

    name: str = setting(MISSING, as_str, "", "ReservationName", "its name", where=RESERVATIONS)
    nodes: str = setting(MISSING, as_hostlist, "", "Nodes", "the nodes, a hostlist (n[0-3],n7)",
                         where=RESERVATIONS)
    start: float = setting(MISSING, lambda n: as_duration(n, unit="s"), "s", "StartTime",
                           "when it begins, from the workload's origin", where=RESERVATIONS)
    duration: float = setting(MISSING, lambda n: as_duration(n, unit="s", strict=True), "s", "Duration",
                              "how long it lasts", where=RESERVATIONS)
    flags: tuple[str, ...] = setting((), _flags, "", "Flags",
                                     "comma-separated: MAINT, IGNORE_JOBS, SPEC_NODES (no effect on "
                                     "the jobs outside), DAILY or WEEKLY (repeated), FLEX (its jobs may "
                                     "run outside its nodes and window), MAGNETIC (it draws the jobs "
                                     "asking for none that it allows)", where=RESERVATIONS)
    users: tuple[str, ...] = setting((), _names, "", "Users",
                                     "comma-separated: the users whose jobs may ask for it (none: anyone "
                                     "the accounts allow)", where=RESERVATIONS)
    accounts: tuple[str, ...] = setting((), _names, "", "Accounts",
                                        "comma-separated: the accounts whose jobs may ask for it (none: "
                                        "any account of the users allowed)", where=RESERVATIONS)

    @property
    def names(self) -> list[str]:
        """The names of its nodes."""
        return expand_hostlist(self.nodes)

    def allows(self, user: str, account: str) -> bool:
        """Whether a job of ``user`` under ``account`` may run in it (reservation.c
        ``_valid_job_access_resv`` without associations enforced: the user must be listed if users
        are, then the account if accounts are, but a reservation listing users and no account
        takes them under any account)."""
        if self.users and user not in self.users:
            return False
        if self.users and not self.accounts:
            return True
        return not self.accounts or account in self.accounts

    @property
    def period(self) -> float | None:
        """How often it repeats (None: once)."""
        return next((REPEATS[flag] for flag in self.flags if flag in REPEATS), None)


def read_reservations(items: Sequence[Located],
                      node_names: Sequence[str] | None) -> tuple[AdvanceReservation, ...]:
    """The reservations of a config's ``cluster.reservations`` list, each on nodes of ``node_names``
    (None: not checked here, the nodes not known yet) and named once."""
    if len(items) > MAX_RESERVATIONS:
        raise items[MAX_RESERVATIONS].error(f"at most {MAX_RESERVATIONS} reservations, got {len(items)}")
    found, seen = [], set()
    for item in items:
        held = read_record(item, AdvanceReservation)
        unknown = [name for name in held.names if node_names is not None and name not in node_names]
        if unknown:
            raise (item.get("nodes") or item).error(f"unknown node {unknown[0]!r}")
        if held.name in seen:
            raise (item.get("name") or item).error(f"reservation {held.name!r} is given twice")
        seen.add(held.name)
        found.append(held)
    return tuple(found)


Window = tuple[float, float, frozenset[int]]
"""A reservation's window: begin, end (seconds) and its nodes (indices)."""


class ReservationPlan:
    """The windows of ``reservations`` on a cluster of ``node_names`` (repeats opened as time goes)."""

    def __init__(self, reservations: Sequence[AdvanceReservation], node_names: Sequence[str]) -> None:
        index = {name: i for i, name in enumerate(node_names)}
        self.kinds = [(held.start, held.duration, held.period, frozenset(index[n] for n in held.names))
                      for held in reservations]
        self.numbers = {held.name: number for number, held in enumerate(reservations)}
        """Each reservation's number (its place in ``kinds``) by name."""

    def _first(self, start: float, duration: float, period: float | None, begin: float) -> float:
        """When the first window of a kind that ends after ``begin`` opens."""
        if period is None:
            return start
        return start + max(0, math.floor((begin - start - duration) / period) + 1) * period

    def windows(self, begin: float, end: float) -> list[Window]:
        """Every window overlapping ``[begin, end)`` (at most :data:`MAX_AHEAD` of each repeating
        reservation), in order of their begin."""
        found = []
        for start, duration, period, nodes in self.kinds:
            opens = self._first(start, duration, period, begin)
            for _ in range(MAX_AHEAD if period is not None else 1):
                if opens >= end:
                    break
                if opens + duration > begin:
                    found.append((opens, opens + duration, nodes))
                opens += period or 0.0
        return sorted(found, key=lambda window: window[0])

    def next_end(self, kind: int, after: float) -> float | None:
        """When the first window of reservation number ``kind`` that ends after ``after`` ends (None:
        none does)."""
        start, duration, period, _ = self.kinds[kind]
        end = self._first(start, duration, period, after) + duration
        return end if end > after else None

    def next_begin(self, kind: int, after: float) -> float | None:
        """When the first window of reservation number ``kind`` that opens after ``after`` opens
        (None: none does)."""
        start, duration, period, _ = self.kinds[kind]
        opens = self._first(start, duration, period, after)
        if opens > after:
            return opens
        return opens + period if period is not None else None

    def window_at(self, kind: int, now: float) -> tuple[float, float] | None:
        """The window of reservation number ``kind`` open at ``now`` (begin, end), None if none is."""
        start, duration, period, _ = self.kinds[kind]
        opens = self._first(start, duration, period, now)
        return (opens, opens + duration) if opens <= now < opens + duration else None

    def blocked(self, begin: float, end: float, but: int = -1) -> frozenset[int]:
        """The nodes of the windows overlapping a run over ``[begin, end)``: a job there may not use
        them (those of reservation number ``but`` left out: the job runs in that one)."""
        nodes: frozenset[int] = frozenset()
        for number, (start, duration, period, held) in enumerate(self.kinds):
            opens = self._first(start, duration, period, begin)
            if opens < end and opens + duration > begin and number != but:
                nodes |= held
        return nodes
