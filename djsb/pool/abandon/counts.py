"""Deallocation-count rules of paper 002 sec. III: X0, N1(n), N2(n), N3(n) and D(m, d)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from djsb.pool.abandon.base import (
    ABANDON_POLICIES,
    AbandonPolicy,
    Dedicated,
    Evidence,
    Verdict,
    abandon_if,
)
from djsb.pool.readers import at_least_one, hours
from djsb.pool.tasks import EndCause, History, deallocations
from djsb.pool.units import HOUR


@ABANDON_POLICIES.register("X0")
@dataclass(frozen=True, slots=True)
class Unlimited(AbandonPolicy):
    """X0: never abandon; a task ends only when it completes or its submitter removes it."""

    def verdict(self, history: History, evidence: Evidence) -> Verdict:
        return Verdict.RETRY


@dataclass(frozen=True, slots=True)
class _CountBound(AbandonPolicy):
    """Abandon at the n-th deallocation, those of cause ``IGNORED`` not counted."""

    n: int
    PARAMS = {"n": at_least_one}
    REQUIRED = ("n",)
    IGNORED: ClassVar[EndCause | None] = None

    def verdict(self, history: History, evidence: Evidence) -> Verdict:
        return abandon_if(deallocations(history, ignore=self.IGNORED) >= self.n)


@ABANDON_POLICIES.register("N1")
@dataclass(frozen=True, slots=True)
class MaxDeallocations(_CountBound):
    """N1(n): abandon at the n-th deallocation, whatever its cause (Condor's default policy)."""


@ABANDON_POLICIES.register("N2")
@dataclass(frozen=True, slots=True)
class MaxDeallocationsButUsers(_CountBound):
    """N2(n): abandon at the n-th deallocation not caused by an interactive user logging in."""

    IGNORED = EndCause.USER


@ABANDON_POLICIES.register("N3")
@dataclass(frozen=True, slots=True)
class MaxDeallocationsButReboots(_CountBound):
    """N3(n): abandon at the n-th deallocation not caused by a reboot."""

    IGNORED = EndCause.REBOOT


@ABANDON_POLICIES.register("D")
@dataclass(frozen=True, slots=True)
class DedicatedAfter(AbandonPolicy):
    """D(m, d) after n deallocations: a task deallocated n times is identified as miscreant and
    moves to ``m`` dedicated computers (high-end type, no users, no reboots, sec. VI of 002), where
    one run of at most ``d_hours`` either completes it or abandons it."""

    n: int
    m: int
    d_hours: float
    PARAMS = {"n": at_least_one, "m": at_least_one, "d_hours": hours}
    REQUIRED = ("n", "m", "d_hours")

    def verdict(self, history: History, evidence: Evidence) -> Verdict:
        return Verdict.DEDICATE if deallocations(history) >= self.n else Verdict.RETRY

    def dedicated(self) -> Dedicated:
        return Dedicated(self.m, self.d_hours * HOUR)
