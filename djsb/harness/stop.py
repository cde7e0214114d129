"""Stopping a run when asked (SIGINT/SIGTERM): a flag the signal handler sets and every wait checks.

A signal handler may only set the flag and cut the scheduler command that runs short; the run
itself raises :class:`Interrupted` at its next wait or submission, and the driver then cancels its
jobs and keeps its records.
"""

from __future__ import annotations

from djsb.clock import Clock
from djsb.errors import RunError
from djsb.jobs import JobModule

STOP_GRACE_S = 2.5
"""Once asked to stop, scheduler commands (the running one, then the cancellations) get this long, so
that the run ends within 5 s of SIGINT/SIGTERM even while the scheduler does not answer."""


class Interrupted(RunError):
    """The run was asked to stop (SIGINT/SIGTERM); its jobs were cancelled, its records kept."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(f"interrupted by {signal_name}")
        self.signal_name = signal_name


class StopRequest:
    """Whether the run was asked to stop, and the waits that notice it."""

    def __init__(self, module: JobModule, clock: Clock) -> None:
        self.module = module
        self.clock = clock
        self.signal_name: str | None = None

    @property
    def requested(self) -> bool:
        return self.signal_name is not None

    def request(self, signal_name: str) -> None:
        """Ask the run to stop at the next wait (safe to call from a signal handler)."""
        self.signal_name = signal_name
        self.module.request_stop(STOP_GRACE_S)
        wake = getattr(self.clock, "wake", None)
        if wake is not None:
            wake()

    def check(self) -> None:
        """Raise :class:`Interrupted` once a stop was requested."""
        if self.signal_name is not None:
            raise Interrupted(self.signal_name)

    def wait(self, seconds: float) -> None:
        """Sleep ``seconds`` on the run's clock, unless a stop was or gets requested."""
        self.check()
        self.clock.sleep(seconds)
        self.check()
