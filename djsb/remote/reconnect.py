"""Re-establishing a dropped SSH connection with exponential back-off.

A connection held for hours drops (the server-side session killed, a network blip, a login node
rebooting). A transport that finds its connection gone before it sends a command reconnects here
and reports the gap as an :class:`~djsb.jobs.outage.Outage`, so the driver marks what overlapped
it as it does for a scheduler outage. A command whose connection dropped while it ran is the
caller's to retry (djsb.jobs.scheduler_base.RetryingTransport): only the caller knows whether
running it twice is safe (a submit is not).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from djsb.errors import RunError
from djsb.jobs.outage import Outage
from djsb.remote.errors import RemoteUnusable

FIRST_DELAY_S = 0.5
MAX_DELAY_S = 15.0


def backoff_delays(first: float = FIRST_DELAY_S, cap: float = MAX_DELAY_S) -> Iterator[float]:
    """The waits between reconnection attempts: doubling from ``first``, at most ``cap``."""
    delay = first
    while True:
        yield delay
        delay = min(2 * delay, cap)


class Reconnector:
    """Calls ``connect`` until it succeeds, waiting ``backoff_delays`` in between, for at most
    ``give_up_after`` seconds (or until ``stop_deadline``); a refusal that will not change
    (``RemoteUnusable.retry`` false, e.g. a changed host key) ends it at once. ``on_outage`` hears
    of each gap it bridged."""

    def __init__(self, name: str, give_up_after: float,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.name = name
        self.give_up_after = give_up_after
        self.sleep = sleep
        self.on_outage: Callable[[Outage], None] | None = None
        self.stop_deadline: float | None = None
        """Set when the run is stopping (time.monotonic): no reconnection is waited for past it."""

    def reopen(self, connect: Callable[[], None], *, lost_at: float, command: str, why: str,
               report: bool) -> None:
        """Connect again after the connection was found lost at ``lost_at`` (Unix s) by ``command``."""
        deadline = time.monotonic() + self.give_up_after
        if self.stop_deadline is not None:
            deadline = min(deadline, self.stop_deadline)
        attempts = 1  # the command that found the connection lost
        for delay in backoff_delays():
            try:
                connect()
                break
            except RemoteUnusable as exc:
                if not exc.retry:
                    raise RunError(f"{self.name}: cannot reconnect: {exc.message}") from None
                attempts += 1
                if time.monotonic() + delay > deadline:
                    raise RunError(f"{self.name}: connection lost ({why}) and not re-established "
                                   f"within {self.give_up_after:g} s: {exc.message}") from None
            self.sleep(delay)
        if report and self.on_outage is not None:
            self.on_outage(Outage(lost_at, time.time(), self.name, attempts, command,
                                  f"connection lost: {why}"))
