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

from djsb.pool.abandon.base import (
    AbandonPolicy,
    CauseBound,
    Evidence,
    Verdict,
    abandon_if,
    discounting,
    rule,
)
from djsb.pool.readers import hours
from djsb.pool.tasks import EndCause, History, accrued_time, longest_run
from djsb.pool.units import HOUR


@rule("A1")
class AccruedTime(CauseBound):
    """A1(t): abandon if deallocated with more than t hours accrued over all its runs."""

    t_hours: float
    PARAMS = {"t_hours": hours}
    REQUIRED = ("t_hours",)

    def past(self, history: History, ignore: EndCause | None) -> bool:
        return accrued_time(history, ignore=ignore) > self.t_hours * HOUR


AccruedTimeButUsers = discounting(AccruedTime, "A2", EndCause.USER,
                                  "A2(t): as A1, the runs ended by an interactive user not counted.")
AccruedTimeButReboots = discounting(AccruedTime, "A3", EndCause.REBOOT,
                                    "A3(t): as A1, the runs ended by a reboot not counted.")


@rule("I1")
class IndividualTime(AbandonPolicy):
    """I1(t): abandon a task once one of its runs goes past t hours (the watchdog stops it at t)."""

    t_hours: float
    PARAMS = {"t_hours": hours}
    REQUIRED = ("t_hours",)

    def verdict(self, history: History, evidence: Evidence) -> Verdict:
        return abandon_if(history[-1].cause is EndCause.LIMIT or longest_run(history) > self.t_hours * HOUR)

    def run_limit(self) -> float:
        return self.t_hours * HOUR
