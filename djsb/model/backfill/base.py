"""What a backfill policy decides in the model's backfill pass.

The pass itself is the configured planner's (djsb/model/backfill/planner.py): it walks the queue in
priority order and starts a job now when it fits without taking capacity reserved for an earlier
one. A policy says whether the pass runs at all and how many of the jobs that cannot start get a
reservation in each partition (Mu'alem & Feitelson, IEEE TPDS 12(6), 2001: EASY reserves for the
first, conservative for all), whichever planner makes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from djsb.registry import Registry


@dataclass(frozen=True, slots=True)
class BackfillPolicy:
    """``name`` as configured; ``max_reservations`` per partition and pass (inf: every job tested);
    ``enabled`` False means no backfill pass (the main pass alone schedules)."""

    name: str
    max_reservations: float
    enabled: bool = True


BACKFILL_POLICIES: Registry[BackfillPolicy] = Registry("backfill policy", "djsb.model.backfill")
"""Every policy by name: one file of this package each (``policy.scheduler.backfill`` selects)."""
