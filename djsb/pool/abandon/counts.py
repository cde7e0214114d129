"""Deallocation-count rules of paper 002 sec. III: X0, N1(n), N2(n), N3(n) and D(m, d)."""

from __future__ import annotations

from djsb.pool.abandon.base import (
    AbandonPolicy,
    CauseBound,
    Dedicated,
    Evidence,
    Verdict,
    discounting,
    rule,
)
from djsb.pool.readers import at_least_one, hours
from djsb.pool.tasks import EndCause, History, deallocations
from djsb.pool.units import HOUR


@rule("X0")
class Unlimited(AbandonPolicy):
    """X0: never abandon; a task ends only when it completes or its submitter removes it."""

    def verdict(self, history: History, evidence: Evidence) -> Verdict:
        return Verdict.RETRY


@rule("N1")
class MaxDeallocations(CauseBound):
    """N1(n): abandon at the n-th deallocation, whatever its cause (Condor's default policy)."""

    n: int
    PARAMS = {"n": at_least_one}
    REQUIRED = ("n",)

    def past(self, history: History, ignore: EndCause | None) -> bool:
        return deallocations(history, ignore=ignore) >= self.n


MaxDeallocationsButUsers = discounting(
    MaxDeallocations, "N2", EndCause.USER,
    "N2(n): abandon at the n-th deallocation not caused by an interactive user logging in.")
MaxDeallocationsButReboots = discounting(
    MaxDeallocations, "N3", EndCause.REBOOT,
    "N3(n): abandon at the n-th deallocation not caused by a reboot.")


@rule("D")
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
