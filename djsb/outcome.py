"""What a command tells its user when it ends: the one stdout contract of every ``djsb`` command.

Every command ends with the same short block on stdout: what ran, where its results are, and its
headline numbers with their units. With ``--json`` the same content is one JSON object on stdout
and nothing else is printed there (progress and messages always go to stderr)::

    {"command": "simulate", "ran": "...", "results": "runs/x",
     "headline": {"mean_wait": {"value": 812.4, "unit": "s"}, ...}, "details": ...}

``details`` holds what the command printed above its block without ``--json`` (a table as a list
of rows), so a script never parses text. A headline value is a number, or null where none exists
(a metric of zero jobs); its unit is ``s``, ``kWh``, ``%``, ``cells``, ... or ``1`` for a
dimensionless ratio (a slowdown, a dynamicity).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DIMENSIONLESS = "1"
"""The unit of a ratio (a slowdown, a dynamicity, Kendall's tau), as in SI's "unit one"."""


@dataclass(frozen=True)
class Headline:
    """One headline number of a command, with its unit."""

    name: str
    value: float | int | None
    unit: str

    def text(self) -> str:
        """The value as the block shows it: a whole number as is, others to 4 significant digits."""
        if self.value is None or (isinstance(self.value, float) and not math.isfinite(self.value)):
            shown = "-"
        elif isinstance(self.value, int) or float(self.value).is_integer() and abs(self.value) < 1e15:
            shown = f"{int(self.value)}"
        else:
            shown = f"{self.value:.4g}"
        return shown if self.unit == DIMENSIONLESS else f"{shown} {self.unit}"


@dataclass(frozen=True)
class Outcome:
    """A command's end: what ran, where its results are, its headline numbers, and its details."""

    command: str
    ran: str
    results: Path | None
    headline: Sequence[Headline] = ()
    details: Any = field(default=None)

    def as_dict(self) -> dict[str, Any]:
        """The JSON object of ``--json`` (non-finite numbers as null: JSON has no NaN)."""
        return {"command": self.command, "ran": self.ran,
                "results": None if self.results is None else str(self.results),
                "headline": {h.name: {"value": _finite(h.value), "unit": h.unit} for h in self.headline},
                "details": _plain(self.details)}


def summary_block(outcome: Outcome) -> str:
    """The block every command prints last on stdout (without ``--json``)."""
    lines = [f"djsb {outcome.command}: {outcome.ran}"]
    if outcome.results is not None:
        lines.append(f"  results: {outcome.results}")
    width = max((len(h.name) for h in outcome.headline), default=0)
    lines += [f"  {h.name.ljust(width)}  {h.text()}" for h in outcome.headline]
    return "\n".join(lines)


def as_json(outcome: Outcome) -> str:
    """The one JSON object ``--json`` prints."""
    return json.dumps(outcome.as_dict(), indent=2, allow_nan=False)


def headlines(values: Mapping[str, Any], units: Mapping[str, str], names: Sequence[str]) -> list[Headline]:
    """The headline numbers ``names`` taken from ``values`` (a metrics.json), with ``units``' units;
    a name ``values`` lacks is left out."""
    return [Headline(name, values[name], units.get(name, DIMENSIONLESS)) for name in names if name in values]


def units_of(metrics: Mapping[str, Any], units: Mapping[str, str]) -> dict[str, str]:
    """metrics.json's ``units`` map: the unit of each of ``metrics``' keys that ``units`` knows.

    metrics.json keeps its values flat (``"mean_wait": 812.4``), so every reader of a scalar goes on
    working, and says their units beside them (``"units": {"mean_wait": "s"}``)."""
    return {name: unit for name, unit in units.items() if name in metrics}


def _finite(value: float | int | None) -> float | int | None:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _plain(value: Any) -> Any:
    """``value`` made JSON-safe: paths as strings, NaN and infinities as null."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float):
        return _finite(value)
    if hasattr(value, "item") and callable(value.item):  # a numpy scalar
        return _plain(value.item())
    return value
