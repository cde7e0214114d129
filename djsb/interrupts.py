"""SIGINT and SIGTERM as an exception in every command: one line and exit 130/143, never a traceback.

Python turns SIGINT into KeyboardInterrupt and leaves SIGTERM to kill the process where it stands,
so a replay interrupted while it writes would leave a file that looks complete. Inside
:func:`signals_raise` both raise :class:`djsb.errors.Signalled` at the next bytecode instead, which
unwinds through the output directory's cleanup (djsb.outdir) like any error. A command that stops
by itself (``djsb run`` cancels its jobs; a sweep terminates its workers) installs its own handlers
for its duration and restores these after.

Once one signal was raised, later ones are ignored until the command has cleaned up: a second
Ctrl-C must not cut the cleanup of the first (a half-renamed directory). SIGKILL still ends it.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType

from djsb.errors import Signalled

SIGNALS = (signal.SIGINT, signal.SIGTERM)
EXIT_STATUS = {"SIGINT": 130, "SIGTERM": 143}
"""The shell's convention, 128 + the signal's number."""


def _raise(signum: int, frame: FrameType | None) -> None:
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    raise Signalled(signal.Signals(signum).name)


@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """Within: SIGINT and SIGTERM raise Signalled (the first one; the next are ignored); after: the
    handlers before. Also when this process was started ignoring SIGINT (a non-interactive shell's
    background job, a test runner's child), as ``djsb run`` always stops on it: a SIGINT sent to a
    djsb command ends it the same way wherever it was started."""
    previous = {sig: signal.signal(sig, _raise) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
