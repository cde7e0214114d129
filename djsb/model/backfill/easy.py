"""EASY backfilling: one reservation, for the first job that cannot start (Lifka, JSSPP 1995)."""

from djsb.model.backfill.base import BACKFILL_POLICIES, BackfillPolicy

POLICY = BACKFILL_POLICIES.register("easy")(BackfillPolicy("easy", max_reservations=1))
