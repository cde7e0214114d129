"""Typed errors of DJSB.

Library code raises these; only the CLI turns them into one-line messages and exit codes
(0 ok, 1 run failed, 2 bad input).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def naming(path: str | os.PathLike[str]) -> Iterator[None]:
    """An OSError raised inside that names no file gets ``path`` as its file: only ``open`` names
    the file it fails on, and a write to a full disk fails after it ("No space left on device",
    where the user needs to know what was being written)."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None or exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror, os.fspath(path)) from exc


EXCERPT_CHARS = 16
"""The most characters of an input an error quotes: enough to find the line, too few to echo what a
mistaken path made DJSB read (``Include /etc/shadow``)."""


def excerpt(text: str) -> str:
    """``text`` quoted for an error message, cut to :data:`EXCERPT_CHARS` characters."""
    cut = text[:EXCERPT_CHARS]
    return repr(cut) + ("..." if len(text) > EXCERPT_CHARS else "")


def one_line(text: str) -> str:
    """A multi-line tool message as one line (its lines joined by ' / '), for logs and CSV cells."""
    return " / ".join(line.strip() for line in text.splitlines() if line.strip())


def os_error_line(exc: OSError) -> str:
    """An OSError as one line: the file (or address) it concerns, then the system's reason."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    return f"{exc.filename}: {reason}" if exc.filename else reason


def read_input(path: Path) -> str:
    """The text of the input file at ``path`` (a footprint, a results file): one that cannot be read
    is an InputError naming it, so the CLI says which file and why in one line, exit 2."""
    try:
        return path.read_text()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(path)) from None


class DjsbError(Exception):
    """Base class of every error DJSB raises on purpose."""


class InputError(DjsbError):
    """Bad input (config file, trace, command-line value): the CLI exits with status 2.

    ``source`` names the file, ``line`` the 1-based line in it (when known) and ``key`` the dotted key
    path or field, so the one-line message points the user to the exact place to fix.
    """

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None,
                 key: str | None = None) -> None:
        self.message = message
        self.source = source
        self.line = line
        self.key = key
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = ""
        if self.source:
            where = self.source + (f":{self.line}" if self.line else "") + ": "
        key = f"{self.key}: " if self.key else ""
        return f"{where}{key}{self.message}"


class ConfigError(InputError):
    """An invalid experiment configuration."""


class TraceError(InputError):
    """An unreadable workload trace."""


class RunError(DjsbError):
    """The run itself failed (a job could not be submitted, a scheduler is unreachable): exit 1."""


class JobModuleError(RunError):
    """A job module command failed or returned output it cannot parse."""


class SchedulerStopped(JobModuleError):
    """A scheduler command given up because the run was asked to stop (SIGINT/SIGTERM)."""


class SubmitRejected(JobModuleError):
    """The scheduler answered a submission with a refusal (not an outage): the request itself, e.g.
    its placement, cannot be run. The driver corrects it or fails only the cell it belongs to."""


class Signalled(BaseException):
    """SIGINT or SIGTERM arrived while a command ran (djsb.interrupts): a BaseException, as
    KeyboardInterrupt is, so that no ``except Exception`` swallows it on its way to the CLI, which
    exits 130/143 with one line. ``left`` says what the command left behind, set by whoever cleaned
    up (djsb.outdir: the output directory restored, removed or kept to be continued); ``done``
    what the command did on its way out (its jobs cancelled)."""

    def __init__(self, signal_name: str, done: str | None = None) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name
        self.done = done
        self.left: str | None = None

    def line(self) -> str:
        """The one line the CLI prints."""
        said = "; ".join(part for part in (self.done, self.left) if part)
        return f"interrupted by {self.signal_name}" + (f": {said}" if said else "")
