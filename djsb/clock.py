"""Clocks the harness waits on: wall time against real schedulers, virtual time against the model.

The driver never calls ``time.sleep`` itself; it asks a clock, so the same driver runs in real time
against Slurm and in virtual time against the simulated cluster (DESIGN.md, "The job module API").
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    """Seconds as floats; ``now`` is monotonic, ``epoch`` maps it to Unix time for the records."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...

    def epoch(self, t: float) -> float: ...


class WallClock:
    """Real time. ``sleep`` returns early when ``wake`` is called (e.g. by a signal handler)."""

    def __init__(self) -> None:
        self._offset = time.time() - time.monotonic()
        self._wake = threading.Event()

    def now(self) -> float:
        return time.monotonic()

    def epoch(self, t: float) -> float:
        return t + self._offset

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._wake.wait(seconds)
        self._wake.clear()

    def wake(self) -> None:
        self._wake.set()


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
