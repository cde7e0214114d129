"""Computer types and their power draw (Table I of paper 002), and energy of a computer's timeline.

A computer is in one of three power states: active (an interactive user, a pool task or a reboot),
idle (awake with nothing to do) and asleep. It falls asleep after ``sleep_after`` seconds of
inactivity (paper 002 sec. I: computers "enter this state after a period of inactivity") and wakes
at once for a user or a task (wake-on-LAN).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

JOULES_PER_KWH = 3_600_000.0


@dataclass(frozen=True, slots=True)
class ComputerType:
    """A class of computer of Table I of paper 002: cores and watts drawn in each power state."""

    name: str
    cores: int
    active_watts: float
    idle_watts: float
    sleep_watts: float


COMPUTER_TYPES: dict[str, ComputerType] = {
    # Table I of 002; "legacy" gives ranges (100-180 W active, 50-80 W idle): their midpoints.
    "normal": ComputerType("normal", 2, 57.0, 40.0, 2.0),
    "high_end": ComputerType("high_end", 4, 114.0, 67.0, 3.0),
    "legacy": ComputerType("legacy", 2, 140.0, 65.0, 4.0),
}


def merge_intervals(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """The union of ``(start, end)`` intervals as sorted disjoint intervals (touching ones joined)."""
    merged: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def timeline_energy_kwh(kind: ComputerType, busy: Iterable[tuple[float, float]], horizon: float,
                        sleep_after: float) -> float:
    """Energy (kWh) one computer draws over ``[0, horizon)`` given the intervals it is active.

    Between two active intervals (and after the last one) it idles for at most ``sleep_after``
    seconds, then sleeps; it starts the horizon asleep.
    """
    joules = 0.0
    awake_until = 0.0  # before the first activity the computer is asleep
    cursor = 0.0
    for start, end in merge_intervals(busy):
        start, end = max(start, 0.0), min(end, horizon)
        if end <= start:
            continue
        joules += _rest_joules(kind, cursor, start, awake_until)
        joules += kind.active_watts * (end - start)
        cursor, awake_until = end, end + sleep_after
    joules += _rest_joules(kind, cursor, horizon, awake_until)
    return joules / JOULES_PER_KWH


def _rest_joules(kind: ComputerType, start: float, end: float, awake_until: float) -> float:
    """Joules of the inactive span ``[start, end)``: idle until ``awake_until``, asleep after."""
    idle = max(0.0, min(end, awake_until) - start)
    return kind.idle_watts * idle + kind.sleep_watts * (end - start - idle)
