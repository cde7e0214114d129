"""What a reproduction reports: claims of a paper declared before measuring, what we measured, and a
verdict computed from the two alone.

A :class:`Claim` names the paper's statement (its section, sentence or table cell), the metric, the
paper's value and a :class:`Rule` with its reason: the range of measured values that reproduce the
statement (a band around the paper's value, a direction, an interval). A :class:`Measured` is our
value over samples or seeds with an interval (a single deterministic run: low = high = the value, and
says so). :func:`decide` turns the interval and the rule into ``reproduced`` (the whole interval
inside the rule's range), ``not reproduced`` (wholly outside, or not measured) or ``inconclusive``
(straddling its boundary). A note is text and never enters the verdict.

``explained`` is earned by a run, not by a note: a ``not reproduced`` row names a counterfactual row
of the same reproduction (the same claim, run with the stated cause removed), and it is
``explained`` only when that row's own verdict is ``reproduced``.

A row that cannot fail is not a claim: one whose measured value is a copy of an input it declares,
or whose rule accepts every value the metric can take, is refused (:class:`NotAClaim`); such
descriptions of inputs and setups go to the setup table (:class:`SetupRow`, setup.csv), not counted.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from djsb.benchmark_metrics import mean_ci95

COLUMNS = ("paper", "item", "source", "paper_value", "measured", "low", "high", "rule", "verdict",
           "counterfactual", "note")
"""The columns of reproduce.csv, in order."""
SETUP_COLUMNS = ("paper", "item", "source", "paper_value", "value", "note")
"""The columns of setup.csv (inputs and setups, not claims), in order."""
REPRODUCED, NOT_REPRODUCED = "reproduced", "not reproduced"
INCONCLUSIVE, EXPLAINED = "inconclusive", "explained"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, EXPLAINED)


class NotAClaim(ValueError):
    """A row that cannot fail was offered as a claim: it belongs in the setup table."""


@dataclass(frozen=True)
class Rule:
    """The measured values that reproduce a claim: ``low`` .. ``high`` (either may be infinite;
    ``strict``: the bounds themselves are outside, as for a direction), and why this range."""

    low: float
    high: float
    reason: str
    strict: bool = False

    def inside(self, value: float) -> bool:
        """Whether ``value`` reproduces the claim."""
        if math.isnan(value):
            return False
        if self.strict:
            return self.low < value < self.high
        return self.low <= value <= self.high

    def describe(self) -> str:
        """The rule column: the accepted range, then its reason."""
        open_, close = ("(", ")") if self.strict else ("[", "]")
        return f"{open_}{_number(self.low)}, {_number(self.high)}{close}: {self.reason}"


def band(paper: float, relative: float, reason: str) -> Rule:
    """Within ``relative`` of the paper's value (0.25: +-25 %)."""
    ends = sorted((paper * (1 - relative), paper * (1 + relative)))
    return Rule(ends[0], ends[1], f"within {relative:.0%} of the paper's value; {reason}")


def factor(paper: float, times: float, reason: str) -> Rule:
    """Within a factor ``times`` of the (positive) paper's value, either way."""
    return Rule(paper / times, paper * times, f"within a factor {times:g} of the paper's value; {reason}")


def above(pivot: float, reason: str) -> Rule:
    """Strictly above ``pivot``: also a direction the paper states in words, without a value."""
    return Rule(pivot, math.inf, f"above {pivot:g}; {reason}", strict=True)


def below(pivot: float, reason: str) -> Rule:
    """Strictly below ``pivot``: also a direction the paper states in words, without a value."""
    return Rule(-math.inf, pivot, f"below {pivot:g}; {reason}", strict=True)


def direction(paper: float, pivot: float, reason: str, margin: float = 0.0) -> Rule:
    """On the paper's side of ``pivot`` by more than ``margin``: a ratio above or below 1, a
    difference above or below 0."""
    if paper > pivot:
        return above(pivot + margin, f"the paper's side; {reason}")
    if paper < pivot:
        return below(pivot - margin, f"the paper's side; {reason}")
    raise ValueError(f"the paper's value {paper:g} is on neither side of {pivot:g}")


def interval(low: float, high: float, reason: str) -> Rule:
    """In ``[low, high]``: the paper's "around X" or "at most Y" made explicit."""
    return Rule(low, high, reason)


@dataclass(frozen=True)
class Measured:
    """Our value and its interval, and how they were obtained (samples, seeds, the interval's kind)."""

    value: float
    low: float
    high: float
    how: str

    @classmethod
    def single(cls, value: float, what: str = "one deterministic run") -> Measured:
        """A value with no spread to measure: low = high = value."""
        return cls(value, value, value, f"{what}: no interval (low = high = measured)")

    @classmethod
    def t_interval(cls, samples: Sequence[float], what: str) -> Measured:
        """The samples' mean and its two-sided 95 % Student t interval."""
        values = [float(v) for v in samples]
        if any(math.isnan(v) for v in values):
            return cls(math.nan, math.nan, math.nan, f"{what}: a sample is not a number")
        mean, half = mean_ci95(values)
        return cls(mean, mean - half, mean + half, f"mean of {len(values)} {what}, 95 % t interval")

    @classmethod
    def spread(cls, samples: Sequence[float], what: str) -> Measured:
        """The samples' median and their whole range (few samples of a statistic whose mean means
        nothing, such as a count of instants)."""
        values = [float(v) for v in samples]
        return cls(statistics.median(values), min(values), max(values),
                   f"median of {len(values)} {what}, interval: their range")


def decide(measured: Measured, rule: Rule) -> str:
    """The verdict of an interval under a rule: ``reproduced`` when both ends are inside its range,
    ``not reproduced`` when the interval lies wholly outside (or is not a number), ``inconclusive``
    when it straddles a boundary."""
    ends = (measured.low, measured.high)
    if any(math.isnan(x) for x in (measured.value, *ends)):
        return NOT_REPRODUCED
    if all(rule.inside(x) for x in ends):
        return REPRODUCED
    below = measured.high < rule.low or (rule.strict and measured.high <= rule.low)
    above = measured.low > rule.high or (rule.strict and measured.low >= rule.high)
    return NOT_REPRODUCED if below or above else INCONCLUSIVE


@dataclass(frozen=True)
class Claim:
    """A statement of the paper, declared before measuring: a short ``item``, its ``source`` (section
    and sentence, or table and cell), the ``metric`` we measure for it, the paper's value and the rule.
    ``attainable``: the values the metric can take in our setup; a rule accepting all of them
    cannot fail."""

    item: str
    source: str
    metric: str
    paper_value: float
    rule: Rule
    attainable: tuple[float, float] = (-math.inf, math.inf)

    def __post_init__(self) -> None:
        low, high = self.attainable
        if self.rule.inside(low) and self.rule.inside(high):
            raise NotAClaim(f"{self.item!r}: its rule accepts every value the metric can take "
                            f"({_number(low)} to {_number(high)}); it belongs in the setup table")


@dataclass(frozen=True)
class Row:
    """A claim, what we measured for it, and optionally the counterfactual row (its ``item``) that
    would explain a failure. ``inputs``: the input values the measurement starts from; a measured
    value equal to one of them is a copy, not a measurement."""

    claim: Claim
    measured: Measured
    counterfactual: str = ""
    note: str = ""
    inputs: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, value in self.inputs.items():
            if math.isclose(self.measured.value, value, rel_tol=1e-9, abs_tol=1e-12):
                raise NotAClaim(f"{self.claim.item!r}: its measured value is a copy of the input {name} "
                                f"({_number(value)}); it belongs in the setup table")

    def own_verdict(self) -> str:
        """The verdict of this row's interval under its rule, ignoring any counterfactual."""
        return decide(self.measured, self.claim.rule)


@dataclass(frozen=True)
class SetupRow:
    """An input or setup of the reproduction, beside the paper's where it gives one: not a claim."""

    item: str
    source: str
    value: str
    paper_value: str = ""
    note: str = ""


@dataclass(frozen=True)
class Figure:
    """One of our figures, relative to the output directory, beside the paper's figure it redraws."""

    path: Path
    paper_figure: str
    caption: str


@dataclass(frozen=True)
class PaperMark:
    """A paper's value drawn on one of our figures: in the panel ``panel``, at ``at`` (a bar, a
    category or an x value), from the claim ``item`` (its paper value, or our value it is relative to
    times the paper's ratio)."""

    panel: str
    at: str | float
    value: float
    item: str


@dataclass
class Reproduction:
    """What one paper's reproduction measured: its claim rows, its setup rows and figures."""

    paper: str
    title: str
    setup: str
    rows: list[Row] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    setup_rows: list[SetupRow] = field(default_factory=list)

    def verdicts(self) -> dict[str, str]:
        """Each row's verdict by item: its own, or ``explained`` when it is ``not reproduced`` and
        the counterfactual it names is ``reproduced`` (the same claim: paper value and rule)."""
        by_item = {row.claim.item: row for row in self.rows}
        if len(by_item) != len(self.rows):
            raise ValueError(f"paper {self.paper}: two rows share an item")
        result = {}
        for item, row in by_item.items():
            verdict = row.own_verdict()
            if row.counterfactual:
                other = by_item.get(row.counterfactual)
                if other is None or other is row:
                    raise ValueError(f"{item!r}: its counterfactual {row.counterfactual!r} is not another "
                                     "row of this reproduction")
                if (other.claim.paper_value, other.claim.rule) != (row.claim.paper_value, row.claim.rule):
                    raise ValueError(f"{item!r}: its counterfactual {row.counterfactual!r} tests another "
                                     "claim (paper value or rule differ)")
                if verdict == NOT_REPRODUCED and other.own_verdict() == REPRODUCED:
                    verdict = EXPLAINED
            result[item] = verdict
        return result

    def tallies(self) -> dict[str, int]:
        """How many rows have each verdict (every verdict, zeros included)."""
        counts = Counter(self.verdicts().values())
        return {verdict: counts.get(verdict, 0) for verdict in VERDICTS}

    def csv_rows(self) -> list[dict[str, str]]:
        """The rows of reproduce.csv."""
        verdicts = self.verdicts()
        return [{"paper": self.paper, "item": row.claim.item, "source": row.claim.source,
                 "paper_value": _number(row.claim.paper_value), "measured": _number(row.measured.value),
                 "low": _number(row.measured.low), "high": _number(row.measured.high),
                 "rule": row.claim.rule.describe(), "verdict": verdicts[row.claim.item],
                 "counterfactual": row.counterfactual,
                 "note": "; ".join(part for part in (f"metric: {row.claim.metric}", row.measured.how,
                                                     row.note) if part)}
                for row in self.rows]

    def setup_csv_rows(self) -> list[dict[str, str]]:
        """The rows of setup.csv."""
        return [{"paper": self.paper, "item": s.item, "source": s.source, "paper_value": s.paper_value,
                 "value": s.value, "note": s.note} for s in self.setup_rows]


def _number(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.4g}"
