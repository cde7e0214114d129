"""Execution-time rules of paper 002 sec. III-D: accrued time A1(t), A2(t), A3(t), individual I1(t).

"Tasks are subject to an upper bound t on their cumulative execution time, and are abandoned if
deallocated and over this bound. Furthermore, we investigate the impact of discounting
deallocations due to interactive users and reboots from a task's accrued execution time": A2 and
A3 leave out of the accrued time the runs that ended by an interactive user (A2) or by a reboot
(A3). I1 bounds each single run ("individual time"); like a system-provided run-time estimate
(sec. IV of 002) it is enforced while the task runs: a watchdog ends the run at t. The bound is
strict, as 002 writes it: "I1(t): Abandon if individual time > t". A run the watchdog stopped was
still going at t (a task that completes at t completes), so its time exceeds t and it is
abandoned; a run a user, a reboot or a failure ended after exactly t hours is retried.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from djsb.pool.abandon.base import (
    ABANDON_POLICIES,
    AbandonPolicy,
    Evidence,
    Verdict,
    abandon_if,
)
from djsb.pool.readers import hours
from djsb.pool.tasks import EndCause, History, accrued_time, longest_run
from djsb.pool.units import HOUR


@dataclass(frozen=True, slots=True)
class _AccruedBound(AbandonPolicy):
    """Abandon a deallocated task whose accrued time (less runs ended by ``IGNORED``) exceeds t."""

    t_hours: float
    PARAMS = {"t_hours": hours}
    REQUIRED = ("t_hours",)
    IGNORED: ClassVar[EndCause | None] = None

    def verdict(self, history: History, evidence: Evidence) -> Verdict:
        return abandon_if(accrued_time(history, ignore=self.IGNORED) > self.t_hours * HOUR)


@ABANDON_POLICIES.register("A1")
@dataclass(frozen=True, slots=True)
class AccruedTime(_AccruedBound):
    """A1(t): abandon if deallocated with more than t hours accrued over all its runs."""


@ABANDON_POLICIES.register("A2")
@dataclass(frozen=True, slots=True)
class AccruedTimeButUsers(_AccruedBound):
    """A2(t): as A1, the runs ended by an interactive user not counted."""

    IGNORED = EndCause.USER


@ABANDON_POLICIES.register("A3")
@dataclass(frozen=True, slots=True)
class AccruedTimeButReboots(_AccruedBound):
    """A3(t): as A1, the runs ended by a reboot not counted."""

    IGNORED = EndCause.REBOOT


@ABANDON_POLICIES.register("I1")
@dataclass(frozen=True, slots=True)
class IndividualTime(AbandonPolicy):
    """I1(t): abandon a task once one of its runs goes past t hours (the watchdog stops it at t)."""

    t_hours: float
    PARAMS = {"t_hours": hours}
    REQUIRED = ("t_hours",)

    def verdict(self, history: History, evidence: Evidence) -> Verdict:
        return abandon_if(history[-1].cause is EndCause.LIMIT or longest_run(history) > self.t_hours * HOUR)

    def run_limit(self) -> float:
        return self.t_hours * HOUR
