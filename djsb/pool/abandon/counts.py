"""Deallocation-count rules of paper 002 sec. III: X0, N1(n), N2(n), N3(n) and D(m, d)."""

from __future__ import annotations

from dataclasses import dataclass

from djsb.pool.abandon.base import (
    ABANDON_POLICIES,
    SECONDS_PER_HOUR,
    AbandonPolicy,
    Dedicated,
    Evidence,
    Verdict,
    abandon_if,
    count,
    hours,
)
from djsb.pool.tasks import EndCause, History, deallocations


@ABANDON_POLICIES.register("X0")
@dataclass(frozen=True, slots=True)
class Unlimited(AbandonPolicy):
    """X0: never abandon; a task ends only when it completes or its submitter removes it."""

    def verdict(self, history: History, evidence: Evidence) -> Verdict:
        return Verdict.RETRY


@ABANDON_POLICIES.register("N1")
@dataclass(frozen=True, slots=True)
class MaxDeallocations(AbandonPolicy):
    """N1(n): abandon at the n-th deallocation, whatever its cause (Condor's default policy)."""

    n: int
    PARAMS = {"n": count}
    REQUIRED = ("n",)

    def verdict(self, history: History, evidence: Evidence) -> Verdict:
        return abandon_if(deallocations(history) >= self.n)


@ABANDON_POLICIES.register("N2")
@dataclass(frozen=True, slots=True)
class MaxDeallocationsButUsers(AbandonPolicy):
    """N2(n): abandon at the n-th deallocation not caused by an interactive user logging in."""

    n: int
    PARAMS = {"n": count}
    REQUIRED = ("n",)

    def verdict(self, history: History, evidence: Evidence) -> Verdict:
        return abandon_if(deallocations(history, ignore=EndCause.USER) >= self.n)


@ABANDON_POLICIES.register("N3")
@dataclass(frozen=True, slots=True)
class MaxDeallocationsButReboots(AbandonPolicy):
    """N3(n): abandon at the n-th deallocation not caused by a reboot."""

    n: int
    PARAMS = {"n": count}
    REQUIRED = ("n",)

    def verdict(self, history: History, evidence: Evidence) -> Verdict:
        return abandon_if(deallocations(history, ignore=EndCause.REBOOT) >= self.n)


@ABANDON_POLICIES.register("D")
@dataclass(frozen=True, slots=True)
class DedicatedAfter(AbandonPolicy):
    """D(m, d) after n deallocations: a task deallocated n times is identified as miscreant and
    moves to ``m`` dedicated computers (high-end type, no users, no reboots, sec. VI of 002), where
    one run of at most ``d_hours`` either completes it or abandons it."""

    n: int
    m: int
    d_hours: float
    PARAMS = {"n": count, "m": count, "d_hours": hours}
    REQUIRED = ("n", "m", "d_hours")

    def verdict(self, history: History, evidence: Evidence) -> Verdict:
        return Verdict.DEDICATE if deallocations(history) >= self.n else Verdict.RETRY

    def dedicated(self) -> Dedicated:
        return Dedicated(self.m, self.d_hours * SECONDS_PER_HOUR)

