"""Progress of long work (a run's cells, a trace replay, a sweep's points) and the messages around it:
the one progress implementation of every long command.

On a terminal (the stream is a tty) the bar is tqdm's, redrawn in place with its rate and time left,
and messages scroll above it (``tqdm.write``). Otherwise (CI logs, files) each update is a plain
line, at most one every ``line_every`` seconds, so a log stays readable; its estimate extrapolates
the rate observed since this process started: work done before it (a resumed run's finished cells)
does not count as fast progress (tqdm's ``initial`` does the same on a terminal). Under ``-q``
neither shows.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from tqdm import tqdm

PREFIX = "djsb: "

QUIET, NORMAL, VERBOSE = 0, 1, 2
"""How much a command says on stderr (``-q``, default, ``-v``): quiet keeps only errors and what
needs the user's attention (failed points, jobs left behind); verbose prints every progress update
as a line and, on an error, the traceback behind its one-line message."""
_verbosity = NORMAL


def set_verbosity(level: int) -> None:
    """Set how much every command of this process says (the CLI's -q/-v)."""
    global _verbosity
    _verbosity = level


def verbosity() -> int:
    return _verbosity


def say(message: str, level: int = NORMAL) -> None:
    """``djsb: message`` on stderr when the verbosity is at least ``level`` (QUIET: always); a bar
    drawn on stderr is cleared first and redrawn under the message."""
    if _verbosity >= level:
        tqdm.write(PREFIX + message, file=sys.stderr)
        sys.stderr.flush()


def estimate_finish(done: float, total: float, started: float, now: float,
                    done_at_start: float = 0.0) -> float | None:
    """When the work should end: ``now`` + the remaining work at the rate observed since ``started``.

    None until some work was done in this process (no rate yet); ``now`` once all is done.
    """
    if done >= total:
        return now
    progressed = done - done_at_start
    if progressed <= 0 or now <= started:
        return None
    return now + (total - done) * (now - started) / progressed


def format_duration(seconds: float) -> str:
    """A short duration: 45s, 3m20s, 2h05m."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


class Progress:
    """A progress report of ``total`` units of work on ``stream`` (stderr by default; nothing under
    ``-q``): a tqdm bar on a terminal, plain throttled lines otherwise."""

    def __init__(self, label: str, total: float, *, done: float = 0.0, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.time, tty: bool | None = None,
                 line_every: float = 0.0) -> None:
        self.label = label
        self.total = total
        self.done = done
        self.done_at_start = done
        self.silent = stream is None and _verbosity == QUIET
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.line_every = 0.0 if _verbosity == VERBOSE else line_every
        self.started = clock()
        self.last_output = -float("inf")
        self.end_shown = False
        tty = self.stream.isatty() if tty is None else tty
        self.bar = (tqdm(total=_whole(total), initial=_whole(done), desc=PREFIX + label, unit=f" {label}",
                         file=self.stream, dynamic_ncols=True, mininterval=0.2)
                    if tty and not self.silent else None)

    def status(self) -> str:
        """``label done/total (percent), ETA duration (clock time)`` as of now."""
        now = self.clock()
        share = self.done / self.total if self.total > 0 else 1.0
        text = f"{self.label} {self.done:g}/{self.total:g} ({100 * share:.0f}%)"
        if self.done >= self.total:
            return f"{text}, done in {format_duration(now - self.started)}"
        finish = estimate_finish(self.done, self.total, self.started, now, self.done_at_start)
        if finish is None:
            return f"{text}, ETA unknown"
        at = time.strftime("%H:%M:%S", time.localtime(finish))
        return f"{text}, ETA {format_duration(finish - now)} ({at})"

    def update(self, done: float) -> None:
        """Set the work done so far and show it (throttled); the end (all done, "done in") shows at
        once, and only once however often it is reported again (a poller that finds the work done
        on two polls)."""
        self.done = done
        if self.bar is not None:
            self.bar.update(_whole(done - self.bar.n))
            return
        now = self.clock()
        ends = done >= self.total
        if self.silent or self.end_shown or not (ends or now - self.last_output >= self.line_every):
            return
        self.stream.write(PREFIX + self.status() + "\n")
        self.stream.flush()
        self.last_output = now
        self.end_shown = ends

    def advance(self, amount: float = 1.0) -> None:
        """Count ``amount`` more units of work done."""
        self.update(self.done + amount)

    def log(self, message: str) -> None:
        """A message line; on a terminal it scrolls above the bar, which is redrawn under it."""
        if self.silent:
            return
        if self.bar is not None:
            self.bar.write(PREFIX + message, file=self.stream)
        else:
            self.stream.write(PREFIX + message + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line on a terminal, so what follows starts on a fresh line."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _whole(amount: float) -> float:
    """A count as tqdm should show it: 3, not 3.0."""
    return int(amount) if float(amount).is_integer() else amount
