"""Availability profile: free capacity (of a partition, or of one node) as a step function of time.

The backfill scheduler plans with it (Mu'alem & Feitelson's EASY/conservative backfilling, and
Slurm's sched/backfill node-availability timeline): running jobs give capacity back at their
planned end (start + time limit), reservations take capacity away over [start, start + limit).
Breakpoints are kept in two parallel sorted lists, so a query or an update costs O(breakpoints),
which is bounded by running jobs + reservations made in the pass (bf_max_job_test caps the latter).
Capacity is counted in whatever the caller plans with: partition units, a node's free slots, or
a node's free memory (djsb/model/node_plan.py).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable


class Profile:
    """``free[k]`` units are available during ``[times[k], times[k+1])``; the last step is open."""

    __slots__ = ("times", "free")

    def __init__(self, now: float, free_now: float, releases: Iterable[tuple[float, float]] = ()) -> None:
        times = [now]
        free = [free_now]
        last, level = now, free_now
        for t, amount in sorted(releases):
            level += amount
            if t <= last:  # at the previous breakpoint (or before now: released now)
                free[-1] = level
            else:
                times.append(t)
                free.append(level)
                last = t
        self.times = times
        self.free = free

    def copy(self) -> Profile:
        """A profile to change without changing this one."""
        other = Profile.__new__(Profile)
        other.times = self.times.copy()
        other.free = self.free.copy()
        return other

    def free_at(self, t: float) -> float:
        """Capacity free at instant ``t`` (t >= the profile's start)."""
        return self.free[bisect_right(self.times, t) - 1]

    def lowest(self, start: float, duration: float) -> float:
        """Least capacity free at any instant of ``[start, start + duration)`` (start >= the first time)."""
        times = self.times
        k = bisect_right(times, start) - 1
        return min(self.free[k:max(k + 1, bisect_left(times, start + duration))])

    def fits(self, start: float, duration: float, need: float) -> bool:
        """True if ``need`` units stay free during ``[start, start + duration)``."""
        times, free = self.times, self.free
        k = bisect_right(times, start) - 1
        end = start + duration
        while k < len(times) and times[k] < end:
            if free[k] < need:
                return False
            k += 1
        return True

    def earliest_start(self, need: float, duration: float, start: float,
                       horizon: float = math.inf) -> float | None:
        """First breakpoint t >= ``start``, t <= ``horizon``, where ``need`` fits for ``duration``.

        Candidate starts are ``start`` and later breakpoints (capacity only grows at breakpoints);
        a failing step j rules out every candidate before it, so the scan is linear.
        """
        times, free = self.times, self.free
        n = len(times)
        k = bisect_right(times, start) - 1
        candidate = start
        while candidate <= horizon:
            j = k
            end = candidate + duration
            while j < n and times[j] < end and free[j] >= need:
                j += 1
            if j == n or times[j] >= end:
                return candidate
            k = j + 1
            if k >= n:
                return None
            candidate = times[k]
        return None

    def _split(self, t: float) -> int:
        """Index of the step starting exactly at ``t``, inserting a breakpoint if needed."""
        times = self.times
        k = bisect_left(times, t)
        if k < len(times) and times[k] == t:
            return k
        times.insert(k, t)
        self.free.insert(k, self.free[k - 1])
        return k

    def take(self, start: float, duration: float, amount: float) -> None:
        """Subtract ``amount`` units over ``[start, start + duration)`` (a start or a reservation)."""
        first = self._split(max(start, self.times[0]))
        last = self._split(start + duration) if math.isfinite(start + duration) else len(self.times)
        free = self.free
        for k in range(first, last):
            free[k] -= amount
