"""The lock of a run directory: one `djsb run` (or `--resume`) at a time may use it.

Two runs in one directory would both redo the same unfinished cells and interleave their records
(issue 8: two `--resume` at once duplicated a cell and left an empty summary). The lock is an
exclusive ``flock`` on ``RUN_DIR/run.lock``, which holds the holder's pid for the message the
second run prints. The kernel drops a flock when its holder dies, however it dies (SIGKILL
included), so a stale lock file never blocks the next ``--resume``.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

from djsb.errors import InputError

LOCK_FILE = "run.lock"


class RunDirectoryInUse(InputError):
    """Another live process holds the run directory's lock (exit status 2)."""


def lock_holder(handle: IO[str]) -> str:
    """The pid the lock's holder wrote, or a placeholder while it has not written it yet."""
    handle.seek(0)
    return handle.read().strip() or "not yet written"


class RunLock:
    """An exclusive lock on one run directory, held until :meth:`release` or the process's end."""

    def __init__(self, directory: Path, handle: IO[str]) -> None:
        self.directory = directory
        self._handle: IO[str] | None = handle

    @classmethod
    def acquire(cls, directory: Path, *, key: str) -> RunLock:
        """Lock ``directory`` (which must exist) for this process; if another process holds it,
        raise RunDirectoryInUse naming ``key`` (the option that chose the directory) and its pid."""
        handle = (directory / LOCK_FILE).open("a+")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = lock_holder(handle)
            handle.close()
            raise RunDirectoryInUse(f"{directory} is in use by another djsb run (pid {holder}); wait for it "
                                    "to end, or stop it", key=key) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        return cls(directory, handle)

    def release(self) -> None:
        """Unlock (closing the file drops the flock); the lock file stays, harmless."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
