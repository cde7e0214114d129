"""Backfill policies of the model, one per module of this package, registered by name.

Every module here registers a :class:`~djsb.model.backfill.base.BackfillPolicy` in
``BACKFILL_POLICIES`` (djsb/registry.py, the one registry class of DJSB), which imports them all at
first use, so a new policy is one new file. The name is what ``SchedulerConfig.backfill``
(``policy.scheduler.backfill`` in a config) selects.
"""

from djsb.model.backfill.base import BACKFILL_POLICIES, BackfillPolicy

__all__ = ["BACKFILL_POLICIES", "BackfillPolicy"]
