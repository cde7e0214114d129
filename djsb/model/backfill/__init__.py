"""Backfill policies of the model, one per module of this package, registered by name.

Every module here defines ``POLICY``, a :class:`~djsb.model.backfill.base.BackfillPolicy`;
the package imports them all at first use, so a new policy is one new file. The name is what
``SchedulerConfig.backfill`` (``policy.scheduler.backfill`` in a config) selects.
"""

from __future__ import annotations

import importlib
import pkgutil

from djsb.model.backfill.base import BackfillPolicy


def _discover() -> dict[str, BackfillPolicy]:
    found: dict[str, BackfillPolicy] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name == "base":
            continue
        policy = importlib.import_module(f"{__name__}.{info.name}").POLICY
        found[policy.name] = policy
    return found


BACKFILL_POLICIES: dict[str, BackfillPolicy] = _discover()
"""Every policy by name."""

__all__ = ["BACKFILL_POLICIES", "BackfillPolicy"]
