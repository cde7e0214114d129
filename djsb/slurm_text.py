"""Parsers of values as Slurm writes them in slurm.conf and ``scontrol show config`` (slurm.conf(5)).

Each is a function from Slurm's text to the model's value, raising ValueError that says what is
wrong with the text; the declarations of the model's settings (:class:`djsb.setting.SlurmKey`) name
them, so a site's slurm.conf is read through the declarations. They sit beside
:mod:`djsb.setting`, below the model that declares with them.
"""

from __future__ import annotations

import math

from djsb.yamlnodes import parse_duration

SCHEDULER_TYPES = {"sched/backfill": "conservative", "sched/builtin": "none"}
"""sched/backfill reserves for every job it tests (backfill.c ``_attempt_backfill``): the model's
conservative backfill; sched/builtin is the main pass alone."""
SELECT_TYPES = {"select/cons_tres": "cons_tres", "select/cons_res": "cons_tres"}
"""The select plugins whose node choice the model makes: cons_res chooses CPUs as cons_tres does."""


def slurm_time(text: str) -> float:
    """Seconds in a time Slurm prints (sbatch(1) --time formats, a bare number in minutes)."""
    return parse_duration(text, "min")


def seconds(text: str) -> float:
    """Seconds given as a bare number (SchedulerParameters' intervals)."""
    return parse_duration(text, "s")


def count(text: str) -> int:
    """A whole number of jobs, >= 0."""
    if not text.isdigit():
        raise ValueError("not a whole number of jobs >= 0")
    return int(text)


def integer(text: str) -> int:
    """A whole number, maybe negative (PriorityTier, PriorityJobFactor)."""
    try:
        return int(text)
    except ValueError:
        raise ValueError("not a whole number") from None


def time_limit(text: str) -> float | None:
    """A partition's MaxTime in seconds; UNLIMITED (INFINITE in slurm.conf) is no limit: None."""
    return None if text.upper() in ("UNLIMITED", "INFINITE") else slurm_time(text)


def oversubscribe(text: str) -> str:
    """A partition's OverSubscribe as the model shares its cores with replayed jobs: YES[:N] shares
    only between jobs that ask --oversubscribe, which replayed jobs never do, so it is NO; NO,
    FORCE[:N] and EXCLUSIVE as written."""
    value = text.upper()
    return "NO" if value.startswith("YES") else value


def count_or_unlimited(text: str) -> float:
    """A number of jobs where 0, Slurm's default, is no limit (the bf_max_job_* limits)."""
    return count(text) or math.inf


def flag(text: str) -> bool:
    """An option given by its name alone: on."""
    return True


def yes_no(text: str) -> bool:
    """``Yes`` (any case) is on, anything else off, as slurmctld reads PriorityFavorSmall."""
    return text.lower() == "yes"


def weight(text: str) -> float:
    """A priority weight: an unsigned integer in slurm.conf(5)."""
    return _non_negative(text, "not a number >= 0")


def scheduler_type(text: str) -> str:
    """The model's backfill policy for a SchedulerType (:data:`SCHEDULER_TYPES`)."""
    if text not in SCHEDULER_TYPES:
        raise ValueError("has no model (use sched/backfill or sched/builtin)")
    return SCHEDULER_TYPES[text]


def select_type(text: str) -> str:
    """The model's node choice for a SelectType (:data:`SELECT_TYPES`)."""
    if text not in SELECT_TYPES:
        raise ValueError("has no model (the model chooses nodes as select/cons_tres does)")
    return SELECT_TYPES[text]


def kill_wait_seconds(text: str) -> float:
    """KillWait as ``scontrol show config`` prints it ("30 sec") or slurm.conf gives it ("30")."""
    return _non_negative((text.split() or [""])[0], "not a number of seconds >= 0")


def _non_negative(text: str, problem: str) -> float:
    """``text`` as a finite number >= 0; ValueError saying ``problem`` otherwise."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value < math.inf:
        raise ValueError(problem)
    return value


def over_time_seconds(text: str) -> float:
    """OverTimeLimit in seconds ("0 min" from scontrol, minutes in slurm.conf); UNLIMITED has no
    model (Slurm itself only guesses when such a job ends)."""
    first = (text.split() or [""])[0]
    if not first.isdigit():
        raise ValueError("has no model (Slurm itself only guesses when such a job ends)")
    return 60.0 * int(first)


def fair_share_algorithm(text: str) -> str:
    """Fair Tree unless PriorityFlags has NO_FAIR_TREE (Slurm's default since 19.05)."""
    return "classic" if "NO_FAIR_TREE" in text else "fair_tree"
