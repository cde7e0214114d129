"""When a live slurmctld ran its backfill passes, seen through ``sdiag`` (issue 14).

Whether a job submitted near a backfill pass is backfilled at once or five seconds later decides
much of a small replay, so the model must pass when Slurm passed, to well under a second. Slurm
does not publish that schedule: sched/backfill sleeps ``bf_interval`` after a pass, only 1 s after
one it skipped (no new work, a completing job, many pending RPCs: backfill.c's ``short_sleep``),
and sdiag's "Last cycle when" is to the whole second. Its "Total cycles" counter, though, steps at
each pass: asked every tenth of a second during a replay, it brackets each pass between the last
answer without it and the first with it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from djsb.calibrate.slurm_config import backfill_cycles


@dataclass
class BackfillWatch:
    """Backfill passes bracketed by successive ``sdiag`` answers (``ask`` returns one, or None)."""

    ask: Callable[[], str | None]
    clock: Callable[[], float] = time.time
    passes: list[tuple[float, float]] = field(default_factory=list)
    """Each pass seen: (its time estimate, half the bracket: the estimate's uncertainty)."""
    count: int | None = None
    asked_at: float = 0.0

    def look(self) -> None:
        """Ask sdiag once; a counter that stepped since the last answer is a pass in between."""
        before = self.clock()
        answer = self.ask()
        after = self.clock()
        count = backfill_cycles(answer) if answer is not None else None
        if count is None:
            return
        if self.count is not None and count > self.count:
            self.passes.append(((self.asked_at + after) / 2, (after - self.asked_at) / 2))
        self.count, self.asked_at = count, before
