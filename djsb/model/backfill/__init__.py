"""Backfill policies and planners of the model, one per module of this package, registered by name.

A *policy* (:class:`~djsb.model.backfill.base.BackfillPolicy`, in ``BACKFILL_POLICIES``) says whether
the backfill pass runs and how many reservations each partition gets: ``SchedulerConfig.backfill``
(``policy.scheduler.backfill``) selects it. A *planner*
(:class:`~djsb.model.backfill.planner.BackfillPlanner`, in ``BACKFILL_PLANNERS``) makes the pass:
``SchedulerConfig.bf_planner`` selects it (``bf_will_run: true`` is ``bf_planner: will_run``). Both
registries (djsb/registry.py, the one registry class of DJSB) import every module here at first use,
so a new policy or planner is one new file.
"""

from djsb.model.backfill.base import BACKFILL_POLICIES, BackfillPolicy
from djsb.model.backfill.planner import BACKFILL_PLANNERS, BackfillPlanner, BackfillPreemption, BackfillView

__all__ = ["BACKFILL_PLANNERS", "BACKFILL_POLICIES", "BackfillPlanner", "BackfillPolicy",
           "BackfillPreemption", "BackfillView"]
