"""When each computer is taken from the pool: interactive sessions, nightly reboots and failures.

All three are independent of the pool's tasks (a user logs in whether or not a task runs, and a
task never keeps a user out: it is evicted), so they are drawn once per computer before the
simulation, from the pool's seeded RNG: every policy compared on one seed sees the same users,
reboots and failures (common random numbers). The result is an :class:`Interruptions` per
computer: disjoint, sorted busy intervals, each with the cause that evicts a task running when
it starts.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from dataclasses import dataclass

from djsb.pool.computers import ClusterSpec, PoolSpec
from djsb.pool.tasks import EndCause
from djsb.pool.units import DAY, HOUR

Interval = tuple[float, float, EndCause]


@dataclass(frozen=True, slots=True)
class Interruptions:
    """A computer's busy intervals ``[starts[i], ends[i])`` (disjoint, sorted) and their causes."""

    starts: tuple[float, ...]
    ends: tuple[float, ...]
    causes: tuple[EndCause, ...]

    @classmethod
    def of(cls, intervals: list[Interval]) -> Interruptions:
        merged = merge_causes(intervals)
        return cls(tuple(i[0] for i in merged), tuple(i[1] for i in merged), tuple(i[2] for i in merged))

    def covering(self, t: float) -> int | None:
        """Index of the interval that holds instant ``t``, if any."""
        i = bisect_right(self.starts, t) - 1
        return i if i >= 0 and self.ends[i] > t else None

    def next_start(self, t: float) -> int | None:
        """Index of the first interval starting after ``t``, if any."""
        i = bisect_right(self.starts, t)
        return i if i < len(self.starts) else None

    def spans(self, cause: EndCause | None = None) -> list[tuple[float, float]]:
        """The intervals as ``(start, end)``, only those of ``cause`` if given."""
        triples = zip(self.starts, self.ends, self.causes, strict=True)
        return [(s, e) for s, e, c in triples if cause in (None, c)]


def merge_causes(intervals: list[Interval]) -> list[Interval]:
    """Overlapping intervals joined; a joined interval keeps the cause of the one that began first."""
    merged: list[Interval] = []
    for start, end, cause in sorted(intervals, key=lambda i: (i[0], i[1])):
        if merged and start <= merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], end), last[2])
        else:
            merged.append((start, end, cause))
    return merged


def sessions(cluster: ClusterSpec, horizon: float, rng: random.Random) -> list[tuple[float, float]]:
    """One computer's interactive sessions: idle gap, session, idle gap, ... while the room is open."""
    mean_idle, mean_session = cluster.mean_idle_minutes * 60.0, cluster.mean_session_minutes * 60.0
    out = []
    for opens, closes in cluster.open_spans(horizon):
        t = opens + rng.expovariate(1.0 / mean_idle)
        while t < closes:
            end = min(t + rng.expovariate(1.0 / mean_session), closes)
            out.append((t, end))
            t = end + rng.expovariate(1.0 / mean_idle)
    return out


def reboots(pool: PoolSpec, user_sessions: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The nightly reboots at ``reboot_hour``, skipped on a night a user is logged in then."""
    out = []
    starts = [start for start, _ in user_sessions]  # sessions are sorted and disjoint
    t = pool.reboot_hour * HOUR
    while t < pool.horizon:
        last = bisect_right(starts, t) - 1
        if last < 0 or user_sessions[last][1] <= t:
            out.append((t, t + pool.reboot_minutes * 60.0))
        t += DAY
    return out


def failures(pool: PoolSpec, rng: random.Random) -> list[tuple[float, float]]:
    """Hardware/software failures: a Poisson process of mean gap ``failure_mtbf_days``."""
    out = []
    rate = 1.0 / (pool.failure_mtbf_days * DAY)
    t = rng.expovariate(rate)
    while t < pool.horizon:
        out.append((t, t + pool.failure_repair_hours * HOUR))
        t += rng.expovariate(rate)
    return out


def draw_interruptions(pool: PoolSpec, cluster: ClusterSpec, rng: random.Random) -> Interruptions:
    """Everything that takes one computer of ``cluster`` away from the pool over the horizon."""
    users = sessions(cluster, pool.horizon, rng)
    intervals: list[Interval] = [(s, e, EndCause.USER) for s, e in users]
    intervals += [(s, e, EndCause.REBOOT) for s, e in reboots(pool, users)]
    intervals += [(s, e, EndCause.OTHER) for s, e in failures(pool, rng)]
    return Interruptions.of(intervals)
