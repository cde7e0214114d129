"""Percentile rules of paper 002 sec. III-D, "leveraging historical information": P1(n,p), P2(t,p).

P1 abandons a deallocated task whose deallocation count n lies above the p-th percentile of the
counts of the tasks that completed so far in the pool; P2 does the same with the accrued time.
The percentile is the nearest-rank one (the smallest value with at least p% of the sample at or
below it). Until ``min_history`` tasks have completed there is no history and no task is abandoned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from djsb.pool.abandon.base import ABANDON_POLICIES, AbandonPolicy, Evidence, Verdict, abandon_if, percent
from djsb.pool.tasks import History, accrued_time, deallocations
from djsb.yamlnodes import as_int


def nearest_rank(sorted_values: Sequence[float], p: float) -> float:
    """The p-th percentile (0-100) of a sorted, non-empty sample by the nearest-rank method."""
    rank = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[rank - 1]


@ABANDON_POLICIES.register("P1")
@dataclass(frozen=True, slots=True)
class CountPercentile(AbandonPolicy):
    """P1(n, p): abandon if the deallocation count is above the p-th percentile of completed tasks'."""

    p: float
    min_history: int = 20
    PARAMS = {"p": percent, "min_history": lambda node: as_int(node, 1)}
    REQUIRED = ("p",)

    def verdict(self, history: History, evidence: Evidence) -> Verdict:
        sample = evidence.completed_deallocations
        return abandon_if(len(sample) >= self.min_history
                          and deallocations(history) > nearest_rank(sample, self.p))


@ABANDON_POLICIES.register("P2")
@dataclass(frozen=True, slots=True)
class AccruedPercentile(AbandonPolicy):
    """P2(t, p): abandon if the accrued time is above the p-th percentile of completed tasks'."""

    p: float
    min_history: int = 20
    PARAMS = {"p": percent, "min_history": lambda node: as_int(node, 1)}
    REQUIRED = ("p",)

    def verdict(self, history: History, evidence: Evidence) -> Verdict:
        sample = evidence.completed_accrued
        return abandon_if(len(sample) >= self.min_history
                          and accrued_time(history) > nearest_rank(sample, self.p))
