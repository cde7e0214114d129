"""Progress of long work (a run's cells, a trace replay) with its estimated finish time.

On a terminal (the stream is a tty) one bar line is redrawn in place and messages scroll above it;
otherwise (CI logs, files) each update is a plain line, at most one every ``line_every`` seconds,
so a log stays readable. The estimate extrapolates the rate observed since this process started:
work done before it (a resumed run's finished cells) does not count as fast progress.
"""

from __future__ import annotations

import io
import sys
import time
from collections.abc import Callable
from typing import TextIO

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
    """``djsb: message`` on stderr when the verbosity is at least ``level`` (QUIET: always)."""
    if _verbosity >= level:
        print(PREFIX + message, file=sys.stderr, flush=True)


class _Discard(io.TextIOBase):
    """Where a quiet command's progress goes."""

    def write(self, text: str) -> int:
        return len(text)


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
    """A progress report of ``total`` units of work on ``stream`` (stderr by default)."""

    def __init__(self, label: str, total: float, *, done: float = 0.0, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.time, tty: bool | None = None, line_every: float = 0.0,
                 redraw_every: float = 0.2, width: int = 30) -> None:
        self.label = label
        self.total = total
        self.done = done
        self.done_at_start = done
        quiet = stream is None and _verbosity == QUIET
        self.stream = stream if stream is not None else _Discard() if quiet else sys.stderr
        self.clock = clock
        self.tty = self.stream.isatty() if tty is None else tty
        self.line_every = 0.0 if _verbosity == VERBOSE else line_every
        self.redraw_every = redraw_every
        self.width = width
        self.started = clock()
        self.last_output = -float("inf")
        self.bar_shown = False

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

    def bar(self) -> str:
        """The bar drawn on a terminal: ``[#####-----] status``."""
        share = min(1.0, self.done / self.total) if self.total > 0 else 1.0
        filled = round(self.width * share)
        return f"[{'#' * filled}{'-' * (self.width - filled)}] {self.status()}"

    def update(self, done: float) -> None:
        """Set the work done so far and show it (throttled)."""
        self.done = done
        now = self.clock()
        final = done >= self.total
        if self.tty:
            if final or now - self.last_output >= self.redraw_every:
                self._draw()
                self.last_output = now
        elif final or now - self.last_output >= self.line_every:
            self.stream.write(PREFIX + self.status() + "\n")
            self.stream.flush()
            self.last_output = now

    def advance(self, amount: float = 1.0) -> None:
        """Count ``amount`` more units of work done."""
        self.update(self.done + amount)

    def log(self, message: str) -> None:
        """A message line; on a terminal it scrolls above the bar, which is redrawn under it."""
        if self.tty and self.bar_shown:
            self.stream.write("\r\x1b[K")
        self.stream.write(PREFIX + message + "\n")
        if self.tty and self.bar_shown:
            self.stream.write(self.bar())
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line on a terminal, so what follows starts on a fresh line."""
        if self.tty and self.bar_shown:
            self.stream.write("\n")
            self.stream.flush()
            self.bar_shown = False

    def _draw(self) -> None:
        self.stream.write("\r\x1b[K" + self.bar())
        self.stream.flush()
        self.bar_shown = True
