"""EASY backfilling: one reservation, for the first job that cannot start (Lifka, JSSPP 1995)."""

from djsb.model.backfill.base import BackfillPolicy

POLICY = BackfillPolicy("easy", max_reservations=1)
