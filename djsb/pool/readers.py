"""Value readers of the pool config shared by its sections (bounded numbers, counts, times, names)."""

from __future__ import annotations

from collections.abc import Callable

from djsb.yamlnodes import TIME_UNITS, Located, TimeUnit, as_duration, as_int, as_number


def positive(node: Located) -> float:
    """A number > 0."""
    return as_number(node, 0.0, strict=True)


def time_in(unit: TimeUnit) -> Callable[[Located], float]:
    """A reader of a time > 0 in ``unit``, the unit its key's name says (``mean_idle_minutes``:
    minutes, as paper 002 gives them): a number of them, quoted or not, or a Slurm time (``6:11:00``
    is 371 minutes). An unquoted number is kept as written, not converted to seconds and back."""
    def read(node: Located) -> float:
        seconds = as_duration(node, unit=unit, strict=True)
        return float(node.value) if isinstance(node.value, (int, float)) else seconds / TIME_UNITS[unit][0]
    return read


minutes, hours, days = time_in("min"), time_in("h"), time_in("day")


def at_least_one(node: Located) -> int:
    """A whole number >= 1."""
    return as_int(node, 1)


def bounded(node: Located, upper: float, what: str, *, below: bool = False) -> float:
    """A number in ``[0, upper]`` (``[0, upper)`` if ``below``); ``what`` names it in the error."""
    value = as_number(node)
    if value > upper or (below and value == upper):
        raise node.error(f"must be {what} in [0, {upper:g}{')' if below else ']'}, got {value}")
    return value


def probability(node: Located) -> float:
    return bounded(node, 1.0, "a probability")


def share(node: Located) -> float:
    return bounded(node, 1.0, "a share")


def short_share(node: Located) -> float:
    """A share in [0, 1): some of it must be left to the other kind."""
    return bounded(node, 1.0, "a share", below=True)


def percent(node: Located) -> float:
    return bounded(node, 100.0, "a percentile")


def hour_of_day(node: Located) -> float:
    return bounded(node, 24.0, "an hour of the day")
