"""The lock of a run directory: one `djsb run` (or `--resume`) at a time may use it.

Two runs in one directory would both redo the same unfinished cells and interleave their records
(two `--resume` at once would duplicate a cell and leave an empty summary). The lock is an
exclusive flock (djsb.filelock) on ``RUN_DIR/run.lock``, which holds the holder's pid for the
message the second run prints; a holder's death, even by SIGKILL, drops it.
"""

from __future__ import annotations

import os
from pathlib import Path

from djsb.errors import InputError
from djsb.filelock import FileLock, LockHeld

LOCK_FILE = "run.lock"


class RunDirectoryInUse(InputError):
    """Another live process holds the run directory's lock (exit status 2)."""


class RunLock:
    """An exclusive lock on one run directory, held until :meth:`release` or the process's end."""

    def __init__(self, directory: Path, lock: FileLock) -> None:
        self.directory = directory
        self._lock = lock

    @classmethod
    def acquire(cls, directory: Path, *, key: str) -> RunLock:
        """Lock ``directory`` (which must exist) for this process; if another process holds it,
        raise RunDirectoryInUse naming ``key`` (the option that chose the directory) and its pid."""
        try:
            lock = FileLock.acquire(directory / LOCK_FILE, str(os.getpid()))
        except LockHeld as held:
            raise RunDirectoryInUse(f"{directory} is in use by another djsb run (pid {held.holder}); wait "
                                    "for it to end, or stop it", key=key) from None
        return cls(directory, lock)

    def release(self) -> None:
        """Let another run use the directory (the lock file stays, harmless)."""
        self._lock.release()
