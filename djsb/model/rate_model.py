"""How fast running jobs progress: the pluggable rate model of the simulation.

A job carries ``run_time`` seconds of *work*; it progresses at a *rate* (seconds of work per
second of simulated time) and ends when its work is done, or at its time limit. Without a rate
model (trace replay) every running job goes at rate 1, so it ends at start + run_time, and the
simulation never asks for rates: replay pays nothing for the feature. With a
:class:`RateModel`, the simulation asks it for every running job's rate after each instant
where something changed (a start, an end, a suspension, a resume, a resize, the end of a resume
stall); a job whose rate changed gets a new END event and its old one becomes stale.

Whatever the model says, a suspended job or one stalled after its resume (``stall_until``) makes
no progress: the simulation applies that itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from djsb.model.cluster_state import ClusterState
from djsb.model.job import SimJob


class RateModel(Protocol):
    """Rates of the running, non-suspended jobs given everything that runs now."""

    def rates(self, active: Sequence[SimJob], state: ClusterState, now: float) -> list[float]:
        """One rate per job of ``active`` (parallel list); > 0 unless the job cannot progress."""
        ...
