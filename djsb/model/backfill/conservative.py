"""Conservative backfilling: every job tested that cannot start gets a reservation, as Slurm's
sched/backfill plans the jobs it tests (Mu'alem & Feitelson, IEEE TPDS 12(6), 2001)."""

import math

from djsb.model.backfill.base import BACKFILL_POLICIES, BackfillPolicy

POLICY = BACKFILL_POLICIES.register("conservative")(BackfillPolicy("conservative", max_reservations=math.inf))
