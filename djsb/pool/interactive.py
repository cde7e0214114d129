"""When each computer is taken from the pool: interactive sessions, nightly reboots and failures.

All three are independent of the pool's tasks (a user logs in whether or not a task runs, and a
task never keeps a user out: it is evicted), so they are drawn once per computer before the
simulation, from the pool's seeded RNG: every policy compared on one seed sees the same users,
reboots and failures (common random numbers). The result is an :class:`Interruptions` per
computer: disjoint, sorted busy intervals, each with the cause that evicts a task running when
it starts.
"""

from __future__ import annotations

import math
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


SHORT_GAP_MEDIAN_MINUTES = 6.3
SHORT_GAP_SIGMA = 0.9
SHORT_GAP_MEAN_MINUTES = SHORT_GAP_MEDIAN_MINUTES * math.exp(SHORT_GAP_SIGMA ** 2 / 2)  # 9.4 min


def long_gap_mean_minutes(cluster: ClusterSpec) -> float:
    """The mean of the long gaps that gives the cluster its ``mean_idle_minutes`` overall."""
    share = cluster.short_gap_share
    return (cluster.mean_idle_minutes - share * SHORT_GAP_MEAN_MINUTES) / (1.0 - share)


def idle_gap(cluster: ClusterSpec, rng: random.Random) -> float:
    """Seconds between a user logging off and the next logging in (fig. 4 of 002).

    002 gives the mean, 371 min, and two percentiles: 5% of the gaps are under 2 min and 1% under
    1 min. One exponential cannot have both (its P(< 2 min) would be 0.5%), nor can any mixture of
    exponentials (their P(< 2 min) is at most twice P(< 1 min)). A share q of short gaps,
    lognormal, mixed with long exponential ones can: with q = 1/2 the short gaps need
    P(< 2 min) = 0.1 and P(< 1 min) = 0.02, so ln 2 = (z(0.1) - z(0.02)) sigma = 0.772 sigma:
    sigma = 0.9, median = exp(2.054 sigma) = 6.3 min, mean 9.4 min; the long ones take the rest
    of the mean, (371 - 4.7) / 0.5 = 733 min. Overall P(< 2 min) = 0.051, P(< 1 min) = 0.011.
    """
    if rng.random() < cluster.short_gap_share:
        return 60.0 * rng.lognormvariate(math.log(SHORT_GAP_MEDIAN_MINUTES), SHORT_GAP_SIGMA)
    return rng.expovariate(1.0 / (60.0 * long_gap_mean_minutes(cluster)))


def sessions(cluster: ClusterSpec, horizon: float, rng: random.Random) -> list[tuple[float, float]]:
    """One computer's interactive sessions: idle gap, session, idle gap, ... while the room is open."""
    mean_session = cluster.mean_session_minutes * 60.0
    out = []
    for opens, closes in cluster.open_spans(horizon):
        t = opens + idle_gap(cluster, rng)
        while t < closes:
            end = min(t + rng.expovariate(1.0 / mean_session), closes)
            out.append((t, end))
            t = end + idle_gap(cluster, rng)
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
