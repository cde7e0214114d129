"""Computer selection policies of paper 002 sec. III: C1, C2 and C3.

C1 picks at random among the free computers, awake ones first (Condor's default). C2 targets the
least used computers (ref. [6] of 002): the free computer with the largest share of idle time.
C3 ranks clusters by Rank(c) of sec. III-B,

    Rank(c) = (sum over s in c of s_idle / s_total) / |c|,

and picks a free computer of the best-ranked cluster that has one (awake first, then at random).
s_idle / s_total is the share of the time a computer is not used interactively, measured on the
pool's history: the interactive log of an earlier period, which is all an administrator can rank
on, never the sessions of the period being simulated (a user's next login is not known in
advance). Ranking on the simulated period's own sessions would give C2 foresight of each
computer's future: in a drawn pool every computer of a room follows its room's usage law, so the
only thing a history tells about one computer is its room's popularity, and picking by the
computer's share of its own future is an oracle no policy has. C2 and C3 rank once per run.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from djsb.pool.computers import Computer
from djsb.pool.interactive import Interruptions
from djsb.pool.tasks import EndCause


def idle_share(interruptions: Interruptions, horizon: float) -> float:
    """s_idle / s_total of a computer: the share of ``[0, horizon)`` without an interactive user,
    on its history (the interactive log of the earlier period the policies rank on)."""
    used = sum(end - start for start, end in interruptions.spans(EndCause.USER))
    return 1.0 - used / horizon


def cluster_ranks(cluster_of: Sequence[int], shares: Sequence[float]) -> dict[int, float]:
    """Rank(c) of every cluster: the mean idle share of its computers (sec. III-B of 002)."""
    totals: dict[int, list[float]] = {}
    for cluster, share in zip(cluster_of, shares, strict=True):
        totals.setdefault(cluster, []).append(share)
    return {cluster: sum(values) / len(values) for cluster, values in totals.items()}


@dataclass
class PlacementContext:
    """What a placement policy may look at: per computer, its cluster, idle share and when it was
    last busy (the simulation keeps ``last_busy_end`` up to date); a computer is awake while
    less than ``sleep_after`` seconds have passed since."""

    computers: Sequence[Computer]
    shares: Sequence[float]
    ranks: dict[int, float]
    rng: random.Random
    last_busy_end: list[float]
    sleep_after: float


Chooser = Callable[[Collection[int], float, PlacementContext], int]
"""(free computer indices, now, context) -> the chosen index."""


def _awake_first(candidates: list[int], now: float, ctx: PlacementContext) -> int:
    cutoff, last = now - ctx.sleep_after, ctx.last_busy_end
    awake = [c for c in candidates if last[c] > cutoff]
    return ctx.rng.choice(awake or candidates)


def random_awake_first(free: Collection[int], now: float, ctx: PlacementContext) -> int:
    """C1: a random free computer, an awake one if there is any."""
    return _awake_first(sorted(free), now, ctx)


def least_used(free: Collection[int], now: float, ctx: PlacementContext) -> int:
    """C2: the free computer with the largest idle share (lowest index on a tie)."""
    return max(sorted(free), key=lambda c: ctx.shares[c])


def best_cluster(free: Collection[int], now: float, ctx: PlacementContext) -> int:
    """C3: a free computer of the best-ranked cluster that has one, awake first, then at random."""
    best = max(ctx.ranks[ctx.computers[c].cluster] for c in free)
    candidates = sorted(c for c in free if ctx.ranks[ctx.computers[c].cluster] == best)
    return _awake_first(candidates, now, ctx)


PLACEMENTS: dict[str, Chooser] = {"C1": random_awake_first, "C2": least_used, "C3": best_cluster}
