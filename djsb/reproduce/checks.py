"""What a reproduction reports: each item of a paper beside our measurement, and whether they agree.

An item pairs the paper's value (cited: "Table II of 002") with ours and an agreement rule stated
before measuring: a tolerance around the paper's value, or the side of a pivot the paper's value is
on (a ratio above or below 1: the paper's direction). A row ``agrees`` is ``yes`` when the rule
holds; ``explained`` when it does not but measured evidence (a number in the explanation) says
why our setup differs from the paper's; ``no`` otherwise. Every row's note states the rule, so every
``no`` and ``explained`` row has one.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

COLUMNS = ("paper", "item", "paper_value", "measured", "agrees", "note")
"""The columns of reproduce.csv, in order."""


@dataclass(frozen=True)
class Within:
    """Agrees when the measurement is within ``factor`` of the paper's value (either way)."""

    factor: float

    def holds(self, paper: float, measured: float) -> bool:
        if paper == 0:
            return measured == 0
        ratio = measured / paper
        return ratio > 0 and 1 / self.factor <= ratio <= self.factor

    def describe(self) -> str:
        return f"rule: within a factor {self.factor:g} of the paper's value"


@dataclass(frozen=True)
class Between:
    """Agrees when the measurement lies in ``[low, high]`` (a paper's "around X" made explicit)."""

    low: float
    high: float

    def holds(self, paper: float, measured: float) -> bool:
        return self.low <= measured <= self.high

    def describe(self) -> str:
        return f"rule: measured in [{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class SameSide:
    """Agrees when the measurement is on the same side of ``pivot`` as the paper's value: the
    paper's direction (a ratio of two policies above or below 1, a difference above or below 0)."""

    pivot: float = 1.0

    def holds(self, paper: float, measured: float) -> bool:
        side = (paper > self.pivot) - (paper < self.pivot)
        return side == (measured > self.pivot) - (measured < self.pivot)

    def describe(self) -> str:
        return f"rule: same side of {self.pivot:g} as the paper (its direction)"


Rule = Within | Between | SameSide


@dataclass(frozen=True)
class Check:
    """One item: the paper's value and ours under a rule; ``evidence`` says, with a measured number,
    why our setup differs from the paper's when the rule fails for that reason. ``fitted`` names the
    model constant that was fitted to this very value: the measurement then confirms nothing, and
    the row is never ``yes``."""

    item: str
    paper_value: float
    measured: float
    rule: Rule
    detail: str = ""
    evidence: str = ""
    fitted: str = ""

    def __post_init__(self) -> None:
        if self.evidence and not re.search(r"\d", self.evidence):
            raise ValueError(f"evidence for {self.item!r} gives no measured number: {self.evidence!r}")

    def agrees(self) -> str:
        """``yes``, ``explained`` or ``no`` (see the module docstring)."""
        if self.fitted:
            return "explained"
        if not math.isnan(self.measured) and self.rule.holds(self.paper_value, self.measured):
            return "yes"
        return "explained" if self.evidence else "no"

    def note(self) -> str:
        """The rule, what was measured, and the evidence of an explained disagreement."""
        verdict = self.agrees()
        parts = [self.rule.describe(), self.detail]
        if self.fitted:
            parts.append(f"not a prediction: {self.fitted}")
        elif verdict == "explained":
            parts.append(f"why: {self.evidence}")
        return "; ".join(part for part in parts if part)

    def row(self, paper: str) -> dict[str, str]:
        """The row of reproduce.csv."""
        return {"paper": paper, "item": self.item, "paper_value": _number(self.paper_value),
                "measured": _number(self.measured), "agrees": self.agrees(), "note": self.note()}


def _number(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.4g}"


@dataclass(frozen=True)
class Figure:
    """One of our figures, relative to the output directory, beside the paper's figure it redraws."""

    path: Path
    paper_figure: str
    caption: str


@dataclass
class Reproduction:
    """What one paper's reproduction measured: its checks and figures, and what was run."""

    paper: str
    title: str
    setup: str
    checks: list[Check] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)

    def rows(self) -> list[dict[str, str]]:
        return [check.row(self.paper) for check in self.checks]
