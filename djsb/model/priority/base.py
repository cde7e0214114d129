"""What a priority plugin is: it sets ``job.priority`` (larger runs first) and its factors.

Slurm computes a job's priority when it is submitted and recomputes every pending job's priority
every PriorityCalcPeriod (slurm.conf; default 5 minutes) in its decay thread
(priority_multifactor.html). The model does the same: :meth:`on_submit` at submission and
:meth:`recompute` from the first scheduling pass at or after each ``calc_period`` boundary, so
between two recomputations the queue order only changes by insertions. ``calc_period = 0``
declares priorities static (FIFO), and the model never recomputes them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from djsb.model.cluster_spec import ClusterSpec
from djsb.model.job import SimJob


@dataclass(frozen=True, slots=True)
class PriorityContext:
    """What a plugin may know about the machine and its users, given once before the run."""

    cluster: ClusterSpec
    associations: tuple[tuple[str, str], ...]  # (user, account) pairs of the workload
    start: float = 0.0  # the replay's clock when it starts (Unix seconds for a calibration)
    epoch: float = 0.0
    """The wall-clock time of the clock's 0 (Unix seconds of the site's local time read as UTC): where
    calendar periods fall (:mod:`djsb.model.usage_reset`)."""


class PriorityPlugin(ABC):
    """Base class of the priority plugins (one per file in this package)."""

    name: str = "base"
    calc_period: float = 0.0
    calc_phase: float = 0.0
    """Recomputations fall at ``calc_phase + k * calc_period`` (Slurm's decay thread runs every
    PriorityCalcPeriod from its own start, on Slurm's clock)."""

    def setup(self, ctx: PriorityContext) -> None:  # noqa: B027 - optional hook
        """Learn the machine and the users before the first submission."""

    @abstractmethod
    def on_submit(self, job: SimJob, now: float) -> None:
        """Set the priority of a newly submitted job."""

    def on_start(self, job: SimJob, now: float) -> None:  # noqa: B027 - optional hook
        """A job started (usage accounting)."""

    def on_end(self, job: SimJob, now: float) -> None:  # noqa: B027 - optional hook
        """A job ended (usage accounting)."""

    def recompute(self, queue: Sequence[SimJob], now: float) -> None:  # noqa: B027 - static by default
        """Recompute the priority of every pending job (called every ``calc_period``)."""
