"""When a live slurmctld ran its scheduling passes, seen through ``sdiag``.

Whether a job is placed just before or just after another one ends, or is backfilled at once or
five seconds later, decides much of a small replay, so the model must pass when Slurm passed, to
well under a second. Slurm does not publish that schedule: sched/backfill sleeps ``bf_interval``
after a pass but only 1 s after one it skipped (backfill.c's ``short_sleep``: no new work, a
completing job, many pending RPCs), the main scheduler runs when its agent thread gets to a
request (submissions and job ends queue one) or every ``sched_interval``, and sdiag's "Last cycle
when" is to the whole second. sdiag's "Total cycles" counters, though, step at each pass of the
main scheduler and of the backfill scheduler: asked every tenth of a second during a replay, they
bracket each pass between the last answer without it and the first with it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from djsb.slurmsite.slurm_config import scheduler_cycles

SCHEDULERS = ("main", "backfill")


@dataclass
class PassWatch:
    """Passes of both schedulers bracketed by successive ``sdiag`` answers (``ask`` returns one,
    or None when sdiag failed)."""

    ask: Callable[[], str | None]
    clock: Callable[[], float] = time.time
    passes: dict[str, list[tuple[float, float]]] = field(default_factory=lambda: {s: [] for s in SCHEDULERS})
    """Per scheduler, each pass seen: (its time estimate, half the bracket: its uncertainty); a
    counter that stepped by k between two answers gives k passes at the same estimate."""
    counts: dict[str, int] = field(default_factory=dict)
    asked_at: float = 0.0

    def look(self) -> None:
        """Ask sdiag once; counters that stepped since the last answer are passes in between."""
        before = self.clock()
        answer = self.ask()
        after = self.clock()
        counts = scheduler_cycles(answer) if answer is not None else {}
        if not counts:
            return
        bracket = ((self.asked_at + after) / 2, (after - self.asked_at) / 2)
        for scheduler, count in counts.items():
            self.passes[scheduler] += [bracket] * max(0, count - self.counts.get(scheduler, count))
        self.counts, self.asked_at = counts, before
