"""No backfilling: Slurm's builtin scheduler, the main pass alone (SchedulerType=sched/builtin)."""

from djsb.model.backfill.base import BACKFILL_POLICIES, BackfillPolicy

POLICY = BACKFILL_POLICIES.register("none")(BackfillPolicy("none", max_reservations=0, enabled=False))
