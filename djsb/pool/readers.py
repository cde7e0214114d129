"""Value readers of the pool config shared by its sections (bounded numbers, counts, names)."""

from __future__ import annotations

from djsb.yamlnodes import Located, as_int, as_number


def positive(node: Located) -> float:
    """A number > 0."""
    return as_number(node, 0.0, strict=True)


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
