"""Percentile rules of paper 002 sec. III-D, "leveraging historical information": P1(n,p), P2(t,p).

P1 abandons a deallocated task whose deallocation count n lies above the p-th percentile of the
counts of the tasks that completed so far in the pool; P2 does the same with the accrued time.
The percentile is the nearest-rank one (the smallest value with at least p% of the sample at or
below it). Until ``min_history`` tasks have completed there is no history and no task is abandoned.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from djsb.pool.abandon.base import AbandonPolicy, Evidence, Verdict, abandon_if, rule
from djsb.pool.readers import at_least_one, percent
from djsb.pool.tasks import History, accrued_time, deallocations


def nearest_rank(sorted_values: Sequence[float], p: float) -> float:
    """The p-th percentile (0-100) of a sorted, non-empty sample by the nearest-rank method."""
    rank = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[rank - 1]


@dataclass(frozen=True, slots=True)
class _PercentileBound(AbandonPolicy):
    """Abandon if the task's :meth:`measure` is above the p-th percentile of completed tasks'."""

    p: float
    min_history: int = 20
    PARAMS = {"p": percent, "min_history": at_least_one}
    REQUIRED = ("p",)

    @abstractmethod
    def measure(self, history: History) -> float:
        """The task's value of the measure."""

    @abstractmethod
    def sample(self, evidence: Evidence) -> Sequence[float]:
        """The completed tasks' values of the measure, sorted."""

    def verdict(self, history: History, evidence: Evidence) -> Verdict:
        sample = self.sample(evidence)
        known = len(sample) >= self.min_history
        return abandon_if(known and self.measure(history) > nearest_rank(sample, self.p))


@rule("P1")
class CountPercentile(_PercentileBound):
    """P1(n, p): the deallocation count against the completed tasks' counts."""

    def measure(self, history: History) -> float:
        return deallocations(history)

    def sample(self, evidence: Evidence) -> Sequence[float]:
        return evidence.completed_deallocations


@rule("P2")
class AccruedPercentile(_PercentileBound):
    """P2(t, p): the accrued time against the completed tasks' accrued times."""

    def measure(self, history: History) -> float:
        return accrued_time(history)

    def sample(self, evidence: Evidence) -> Sequence[float]:
        return evidence.completed_accrued
