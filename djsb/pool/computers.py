"""The pool's computers: clusters (rooms) with opening hours and interactive use (sec. V of 002).

Newcastle's pool had 1359 student desktops in 35 clusters; each room has its own opening hours
(9am-5pm teaching rooms to 24-hour ones), and how busy a room is with interactive users depends on
where it is (the library against a room deep in a school). A :class:`ClusterSpec` holds those
figures for one cluster; :class:`PoolSpec` the whole pool and its nightly maintenance.
"""

from __future__ import annotations

from dataclasses import dataclass

from djsb.pool.power import ComputerType
from djsb.pool.units import DAY, HOUR


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """One room of identical computers: when it is open and how its users come and go.

    While the room is open each computer alternates between an idle gap (mean
    ``mean_idle_minutes``; a share ``short_gap_share`` of them are the short gaps of a busy room,
    see :func:`djsb.pool.interactive.idle_gap`) and an interactive session (exponential, mean
    ``mean_session_minutes``); sessions end at closing time at the latest.
    """

    name: str
    computers: int
    kind: ComputerType
    open_hour: float = 0.0
    close_hour: float = 24.0
    mean_idle_minutes: float = 371.0   # sec. II-B of 002: the average idle interval
    mean_session_minutes: float = 60.0
    short_gap_share: float = 0.5

    def open_spans(self, horizon: float) -> list[tuple[float, float]]:
        """The ``(open, close)`` spans of the room over ``[0, horizon)``, day after day."""
        spans = []
        day = 0.0
        while day < horizon:
            start, end = day + self.open_hour * HOUR, day + self.close_hour * HOUR
            if start < horizon:
                spans.append((start, min(end, horizon)))
            day += DAY
        return spans


@dataclass(frozen=True, slots=True)
class PoolSpec:
    """The clusters and the pool-wide behaviour of its computers."""

    clusters: tuple[ClusterSpec, ...]
    horizon: float                       # seconds simulated (time 0 is midnight of day one)
    reboot_hour: float = 5.0             # "rebooted nightly around 5am unless a user is logged in"
    reboot_minutes: float = 5.0
    sleep_after_minutes: float = 30.0    # inactivity before a computer sleeps
    failure_mtbf_days: float = 60.0      # mean time between hardware/software failures per computer
    failure_repair_hours: float = 2.0

    @property
    def sleep_after(self) -> float:
        return self.sleep_after_minutes * 60.0


@dataclass(frozen=True, slots=True)
class Computer:
    """One desktop of the pool: its index, the index of its cluster and its type."""

    index: int
    cluster: int
    kind: ComputerType


def computers_of(pool: PoolSpec) -> list[Computer]:
    """Every computer of the pool, numbered cluster after cluster."""
    computers: list[Computer] = []
    for cluster_index, cluster in enumerate(pool.clusters):
        for _ in range(cluster.computers):
            computers.append(Computer(len(computers), cluster_index, cluster.kind))
    return computers
