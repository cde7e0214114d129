"""Clocks the harness waits on: wall time against real schedulers, virtual time against the model.

The driver never calls ``time.sleep`` itself; it asks a clock, so the same driver runs in real time
against Slurm and in virtual time against the simulated cluster (DESIGN.md, "The job module API").
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Seconds as floats; ``now`` is monotonic, ``epoch`` maps it to Unix time for the records."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...

    def epoch(self, t: float) -> float: ...


WAKE_STEP_S = 0.05
"""How often a :class:`Wakeable` sleep looks at its flag: the delay between a wake and the sleeper."""


class Wakeable:
    """A sleep that a signal handler can cut short.

    A handler runs on the main thread between two bytecodes, possibly while that thread holds a lock
    (a ``threading.Event``'s, inside its ``wait`` or ``clear``): setting an Event from a handler can
    deadlock the process. ``wake`` only assigns a flag, which is safe anywhere; ``sleep`` sleeps in
    steps of WAKE_STEP_S and returns at the first step that sees it.
    """

    def __init__(self) -> None:
        self.woken = False

    def sleep(self, seconds: float) -> None:
        """Sleep ``seconds``, or until woken; a wake is consumed (the next sleep sleeps again)."""
        deadline = time.monotonic() + seconds
        while not self.woken:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(WAKE_STEP_S, left))
        self.woken = False

    def wake(self) -> None:
        self.woken = True


class WallClock:
    """Real time. ``sleep`` returns early when ``wake`` is called (e.g. by a signal handler)."""

    def __init__(self) -> None:
        self._offset = time.time() - time.monotonic()
        self._wakeable = Wakeable()

    def now(self) -> float:
        return time.monotonic()

    def epoch(self, t: float) -> float:
        return t + self._offset

    def sleep(self, seconds: float) -> None:
        self._wakeable.sleep(seconds)

    def wake(self) -> None:
        self._wakeable.wake()


class VirtualClock:
    """Virtual time that advances only when asked to sleep: a discrete-event model drives it."""

    def __init__(self, start: float = 0.0, epoch_offset: float = 0.0) -> None:
        self._t = start
        self._epoch_offset = epoch_offset

    def now(self) -> float:
        return self._t

    def epoch(self, t: float) -> float:
        return t + self._epoch_offset

    def sleep(self, seconds: float) -> None:
        self._t += max(0.0, seconds)
