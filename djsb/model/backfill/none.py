"""No backfilling: Slurm's builtin scheduler, the main pass alone (SchedulerType=sched/builtin)."""

from djsb.model.backfill.base import BackfillPolicy

POLICY = BackfillPolicy("none", max_reservations=0, enabled=False)
