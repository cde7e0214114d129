"""Random rules of paper 002 sec. III-D: R1(p), E1 and E2 (exponential in count or accrued time).

R1(p) abandons a deallocated task with probability p. E1 and E2 abandon it with probability
P(f) = 1 - exp(-k f), 0 <= k <= 1: f is the deallocation count n for E1 and the accrued time for
E2, here in hours (paper 002 does not give the unit; its figs. 7 rescale k by 1e-3 and 1e-10).
Draws come from the pool's seeded RNG, so a run is reproducible.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass

from djsb.pool.abandon.base import AbandonPolicy, Evidence, Verdict, abandon_if, rule
from djsb.pool.readers import probability
from djsb.pool.tasks import History, accrued_time, deallocations
from djsb.pool.units import HOUR


@dataclass(frozen=True, slots=True)
class _RandomAbandon(AbandonPolicy):
    """Abandon with the probability :meth:`chance` gives for the task's history."""

    @abstractmethod
    def chance(self, history: History) -> float:
        """The probability of abandoning the task now."""

    def verdict(self, history: History, evidence: Evidence) -> Verdict:
        return abandon_if(evidence.rng.random() < self.chance(history))


@rule("R1")
class ConstantChance(_RandomAbandon):
    """R1(p): abandon with probability p at every deallocation."""

    p: float
    PARAMS = {"p": probability}
    REQUIRED = ("p",)

    def chance(self, history: History) -> float:
        return self.p


@rule("E1")
class ExponentialInCount(_RandomAbandon):
    """E1(f=n): abandon with probability 1 - exp(-k n), n the deallocations so far."""

    k: float
    PARAMS = {"k": probability}
    REQUIRED = ("k",)

    def chance(self, history: History) -> float:
        return 1.0 - math.exp(-self.k * deallocations(history))


@rule("E2")
class ExponentialInAccrued(ExponentialInCount):
    """E2(f=t): abandon with probability 1 - exp(-k t), t the accrued hours of all runs."""

    def chance(self, history: History) -> float:
        return 1.0 - math.exp(-self.k * accrued_time(history) / HOUR)
