"""PriorityUsageResetPeriod: when priority/multifactor's decay thread sets every usage to zero.

Slurm 22.05's ``_decay_thread`` (priority_multifactor.c) checks at the top of each of its runs
(every PriorityCalcPeriod) whether the run's instant has reached ``next_reset``; if so it calls
``_reset_usage`` (every association's and every QoS's ``usage_raw``, the usage fair share reads,
``usage_tres_raw``, the usage GrpTRESMins reads, and ``grp_used_wall`` to 0; not
``grp_used_tres_run_secs``, what GrpTRESRunMins counts), sets ``last_reset`` to that boundary and asks
``_next_reset`` for the next one. Only then does the run decay the usages and charge the running jobs
(``_apply_decay``, ``_apply_new_usage``), so what the running jobs ran since the previous run is
charged after the reset and survives it, while what a job charged at its end before the run does not.
``last_reset`` starts at the thread's start when no state file says otherwise (a slurmctld started at
the replay's start), so the first boundary is the first one after the start.

``_next_reset`` works on the local wall clock (``localtime_r``, midnight, ``slurm_mktime``): DAILY the
next midnight; WEEKLY the midnight that starts the next Sunday (``7 - tm_wday`` days after the day's
midnight: a week on from a Sunday); MONTHLY the 1st of the next month; QUARTERLY the 1st of the next of
April, July, October and January; YEARLY the next 1st of January. DAILY and WEEKLY skip the boundaries
already a whole period behind the thread's clock (their ``while`` loops). NOW resets once, at the
thread's first run (slurmctld's start: the replay's start), NONE never.

The model's clock counts seconds; a calendar needs the absolute time. ``epoch`` is the wall-clock time
of the clock's 0 in Unix seconds of the site's local time read as UTC (what a history's sacct times are,
``Workload.time_origin``), so UTC midnights are the site's local midnights. A calibration runs on the
Unix clock itself (epoch 0): its calendar is UTC's, right when the Slurm host keeps UTC. A replay of a
workload without a date (epoch 0) starts on Thursday 1 January 1970. A DST change, which moves Slurm's
DAILY boundary by an hour (``SECS_PER_DAY`` added to a local midnight), is not modelled.
"""

from __future__ import annotations

import datetime as dt
import math

from djsb.slurm_text import RESET_PERIODS

CALENDAR = RESET_PERIODS[2:]
"""The periods that fall on the calendar (DAILY to YEARLY)."""
DAY = 86400.0
WEEK = 7 * DAY
_UNIX = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def next_reset(period: str, last_reset: float, now: float) -> float:
    """``_next_reset(period, last_reset)`` with the thread's clock at ``now``: the next boundary of a
    calendar ``period`` after the day of ``last_reset`` (Unix seconds of a wall clock read as UTC)."""
    last = _UNIX + dt.timedelta(seconds=last_reset)
    midnight = (last.replace(hour=0, minute=0, second=0, microsecond=0) - _UNIX).total_seconds()
    if period == "daily":
        at = midnight + DAY
        while at + DAY < now:
            at += DAY
        return at
    if period == "weekly":
        at = midnight + DAY * (7 - (last.weekday() + 1) % 7)  # tm_wday counts from Sunday
        while at + WEEK < now:
            at += WEEK
        return at
    year, month = last.year, last.month
    if period == "monthly":
        year, month = (year, month + 1) if month < 12 else (year + 1, 1)
    elif period == "quarterly":
        year, month = (year, 4) if month <= 3 else (year, 7) if month <= 6 else (year, 10) if month <= 9 \
            else (year + 1, 1)
    elif period == "yearly":
        year, month = year + 1, 1
    else:
        raise ValueError(f"{period!r} is not a calendar period ({', '.join(CALENDAR)})")
    return (dt.datetime(year, month, 1, tzinfo=dt.timezone.utc) - _UNIX).total_seconds()


class UsageReset:
    """The decay thread's ``next_reset`` on the model's clock, for a calendar ``period``: its first
    boundary after the thread's start ``start``, then each next one as :meth:`advance` moves on."""

    __slots__ = ("period", "epoch", "boundary")

    def __init__(self, period: str, epoch: float, start: float) -> None:
        self.period = period
        self.epoch = epoch
        self.boundary = self._next(start, start)

    def _next(self, last: float, now: float) -> float:
        return next_reset(self.period, last + self.epoch, now + self.epoch) - self.epoch

    def due(self, now: float) -> bool:
        """Does a decay thread run at ``now`` reset usage (``now >= next_reset``)?"""
        return now >= self.boundary

    def advance(self, now: float) -> None:
        """The reset of the run at ``now`` is done: ``last_reset`` is the boundary, the next one after it."""
        self.boundary = self._next(self.boundary, now)


def usage_reset(period: str, epoch: float, start: float) -> UsageReset | None:
    """The calendar resets of ``period`` from a thread started at ``start`` (None: NONE or NOW)."""
    return UsageReset(period, epoch, start) if period in CALENDAR else None


def run_at(boundary: float, calc_period: float, phase: float) -> float:
    """The decay thread's first run at or after ``boundary``: its runs fall at ``phase + k * calc_period``."""
    return phase + math.ceil((boundary - phase) / calc_period) * calc_period
