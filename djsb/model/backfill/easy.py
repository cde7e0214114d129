"""EASY backfilling: one reservation per partition, for its first job that cannot start (Lifka,
JSSPP 1995, for one machine; a partition is one such machine that may share nodes with others)."""

from djsb.model.backfill.base import BACKFILL_POLICIES, BackfillPolicy

POLICY = BACKFILL_POLICIES.register("easy")(BackfillPolicy("easy", max_reservations=1))
