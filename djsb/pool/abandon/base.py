"""The abandon-policy interface, its registry and the config reader that builds one.

On each deallocation the simulation asks the task's policy for a :class:`Verdict` given the
task's history (its runs, the last one being the deallocation just happened) and the
:class:`Evidence` the pool has gathered (what completed tasks looked like, a seeded RNG). A
policy may also bound how long one run may last (I1's watchdog).
"""

from __future__ import annotations

import enum
import math
import random
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar, cast

from djsb.pool.tasks import EndCause, History
from djsb.registry import Registry, UnknownName
from djsb.yamlnodes import Located, as_str, read_fields


class Verdict(enum.Enum):
    RETRY = "retry"          # back to the queue
    ABANDON = "abandon"      # the task is terminated
    DEDICATE = "dedicate"    # move to the dedicated computers of D(m, d)


@dataclass
class Evidence:
    """What the pool has learnt so far, for the history-based rules (P1, P2) and random ones."""

    rng: random.Random
    completed_deallocations: list[int] = field(default_factory=list)  # kept sorted
    completed_accrued: list[float] = field(default_factory=list)      # seconds, kept sorted


@dataclass(frozen=True, slots=True)
class Dedicated:
    """D(m, d): ``computers`` dedicated computers (no users, no reboots), runs cut at ``max_seconds``."""

    computers: int
    max_seconds: float


class AbandonPolicy(ABC):
    """One rule of sec. III-D of paper 002. Subclasses are frozen dataclasses of their parameters."""

    PARAMS: ClassVar[dict[str, Callable[[Located], Any]]] = {}
    REQUIRED: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def verdict(self, history: History, evidence: Evidence) -> Verdict:
        """What to do with a task just deallocated (``history[-1]`` is that deallocation)."""

    def run_limit(self) -> float:
        """The longest one run may last, in seconds (a watchdog ends it with cause LIMIT)."""
        return math.inf

    def dedicated(self) -> Dedicated | None:
        """The dedicated computers this policy sends tasks to, if any."""
        return None


ABANDON_POLICIES: Registry[type[AbandonPolicy]] = Registry("abandon policy", "djsb.pool.abandon")


P = TypeVar("P", bound=AbandonPolicy)


def rule(code: str) -> Callable[[type[P]], type[P]]:
    """Class decorator: the policy made a frozen, slotted dataclass of its parameters (as every
    policy is) and registered as ``code`` (what ``policy.abandon.rule`` names)."""
    def make(cls: type[P]) -> type[P]:
        made = dataclass(frozen=True, slots=True)(cls)
        ABANDON_POLICIES.register(code)(made)
        return made
    return make


def abandon_if(condition: bool) -> Verdict:
    return Verdict.ABANDON if condition else Verdict.RETRY


@dataclass(frozen=True, slots=True)
class CauseBound(AbandonPolicy):
    """A bound on a measure of a task's runs (paper 002's N and A rules): a deallocated task is
    abandoned once the measure, the runs ended by ``IGNORED`` left out, is past the bound. Each such
    rule has 002's three variants: every run counted (1), the runs an interactive user ended left out
    (2), those a reboot ended (3); :func:`discounting` makes 2 and 3 from 1."""

    IGNORED: ClassVar[EndCause | None] = None

    @abstractmethod
    def past(self, history: History, ignore: EndCause | None) -> bool:
        """Whether the measure of ``history`` less the runs ended by ``ignore`` is past the bound."""

    def verdict(self, history: History, evidence: Evidence) -> Verdict:
        return abandon_if(self.past(history, self.IGNORED))


B = TypeVar("B", bound=CauseBound)


def discounting(first: type[B], code: str, cause: EndCause, doc: str) -> type[B]:
    """The variant of rule ``first`` (N1, A1) that leaves the runs ended by ``cause`` out of its
    measure, registered as ``code`` (N2, A3...), named as ``first`` followed by But and the cause
    (MaxDeallocationsButUsers) and documented by ``doc``."""
    name = f"{first.__name__}But{cause.name.title()}s"
    variant = type(name, (first,), {"__slots__": (), "__doc__": doc, "__module__": first.__module__,
                                    "__qualname__": name, "IGNORED": cause})
    ABANDON_POLICIES.register(code)(variant)
    return cast("type[B]", variant)


def build_abandon(node: Located) -> AbandonPolicy:
    """The policy a ``policy.abandon`` mapping describes: ``{rule: N1, n: 3}``."""
    rule_node = node.get("rule")
    if rule_node is None:
        raise node.error("missing key 'rule'")
    try:
        cls = ABANDON_POLICIES.get(as_str(rule_node))
    except UnknownName as exc:
        raise rule_node.error(str(exc)) from exc
    params = Located({k: v for k, v in node.items() if k != "rule"}, node.line, node.key, node.source)
    return cls(**read_fields(params, cls.PARAMS, cls.REQUIRED))
