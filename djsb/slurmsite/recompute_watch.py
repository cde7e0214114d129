"""When a live Slurm's multifactor plugin recomputed the priorities, seen through ``squeue``.

Under priority/multifactor the priorities of pending jobs change only when the plugin's decay
thread runs (priority_multifactor.c, ``_decay_thread``): at its start, then every
PriorityCalcPeriod after it to the microsecond (its timer is the start's ``gettimeofday``, to
which each turn adds the period). A job placed just before or just after a recomputation can
overtake another, so the model must recompute when Slurm did. The thread's start is not
published: it is created when the plugin loads, after slurmctld's boot (seconds later on a loaded
host), so ``BOOT_TIME`` only bounds it. The pending jobs' priorities do show it: asked a few times
a second, the answer in which they changed and the one before bracket the run, and the brackets
of several runs, folded onto one period, narrow its phase.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

DECAY_THREAD = "priority"
"""How the decay thread's runs are filed beside the schedulers' passes (passes.csv)."""
PENDING_PRIORITIES = ("squeue", "--noheader", "--states=PENDING", "--format=%i %Q")
"""Each pending job's id and integer priority, one per line."""


def parse_priorities(text: str) -> dict[str, int]:
    """``squeue --format='%i %Q'`` lines as {job id: priority}."""
    priorities: dict[str, int] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1].isdigit():
            priorities[fields[0]] = int(fields[1])
    return priorities


def calc_phase(runs: list[tuple[float, float]], period: float) -> tuple[float, float] | None:
    """The phase within ``period`` at which the ``runs`` (each bracketed by two Unix times) were
    seen, and its uncertainty: the midpoint and half-width of the brackets' common part, folded
    onto one period; if they have none (a run seen late behind a busy controller), the median of
    their midpoints and half their spread. None without runs bracketed within half a period."""
    runs = [(low, high) for low, high in runs if high - low < period / 2]  # a longer gap tells nothing
    if not runs or period <= 0:
        return None
    reference = math.fmod(runs[0][0], period)

    def folded(t: float) -> float:
        """``t`` as an offset from the first run's phase, in [-period/2, period/2)."""
        return (math.fmod(t, period) - reference + period / 2) % period - period / 2

    lows = [folded(low) for low, _ in runs]
    highs = [low + (high - start) for low, (start, high) in zip(lows, runs, strict=True)]
    low, high = max(lows), min(highs)
    if low <= high:
        middle, half = (low + high) / 2, (high - low) / 2
    else:
        middles = sorted((a + b) / 2 for a, b in zip(lows, highs, strict=True))
        middle, half = middles[len(middles) // 2], (middles[-1] - middles[0]) / 2
    return (reference + middle) % period, half


@dataclass
class RecomputeWatch:
    """Recomputations seen in successive answers of ``ask`` (squeue's :data:`PENDING_PRIORITIES`,
    or None when it failed), asked at most every ``every`` seconds."""

    ask: Callable[[], str | None]
    clock: Callable[[], float] = time.time
    every: float = 0.25
    runs: list[tuple[float, float]] = field(default_factory=list)
    """Each recomputation seen: after the answer before it was asked, before the one that showed
    it came (Unix seconds)."""
    priorities: dict[str, int] = field(default_factory=dict)
    asked_at: float = -math.inf

    def look(self) -> None:
        """Ask once if ``every`` has passed; a job whose priority changed since the last answer
        means the thread ran in between."""
        before = self.clock()
        if before - self.asked_at < self.every:
            return
        answer = self.ask()
        after = self.clock()
        if answer is None:
            return
        seen = parse_priorities(answer)
        if any(seen[job] != priority for job, priority in self.priorities.items() if job in seen):
            self.runs.append((self.asked_at, after))
        self.priorities, self.asked_at = seen, before
