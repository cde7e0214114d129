"""An exclusive lock on a file that names its holder: one writer at a time, the others told who.

The lock is a non-blocking ``flock`` on the file, which then holds a line naming the holder (a pid,
a Slurm job) for the message a second process prints. The kernel drops a flock when its holder
dies, however it dies (SIGKILL included), so a stale lock file never blocks anyone.

Limits: flock excludes processes of one machine, and of several machines only where the file
system passes it on: NFS (Linux clients map it to a byte-range lock of the server; a crashed
client's lock lasts until the server's lease ends, about 90 s), GPFS, and Lustre when mounted with
``-o flock`` (with ``localflock`` it holds on one node only; without either, flock fails and the
error propagates).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO


class LockHeld(Exception):
    """Another live process holds the lock; ``holder`` is what it wrote in the lock file."""

    def __init__(self, path: Path, holder: str) -> None:
        super().__init__(f"{path} is locked by {holder}")
        self.path = path
        self.holder = holder


def lock_holder(handle: IO[str]) -> str:
    """What the lock's holder wrote, or a placeholder while it has not written it yet."""
    handle.seek(0)
    return handle.read().strip() or "a process that has not named itself yet"


class FileLock:
    """An exclusive flock on one file, held until :meth:`release` or the process's end."""

    def __init__(self, path: Path, handle: IO[str]) -> None:
        self.path = path
        self._handle: IO[str] | None = handle

    @classmethod
    def acquire(cls, path: Path, holder: str) -> FileLock:
        """Lock ``path`` (created if missing; its directory must exist) and write ``holder`` in it;
        raise LockHeld with the holder's line if another process holds it."""
        handle = path.open("a+")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = lock_holder(handle)
            handle.close()
            raise LockHeld(path, other) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{holder}\n")
        handle.flush()
        return cls(path, handle)

    @staticmethod
    def holder(path: Path) -> str | None:
        """Who holds the lock on ``path`` (what it wrote), or None if no live process does; the file
        is only read (taking the lock for an instant), never written."""
        with path.open() as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return lock_holder(handle)
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return None

    def is_current(self) -> bool:
        """Whether the file locked is still the one ``path`` names (not removed or replaced since it
        was opened): a lock on a removed file excludes nobody."""
        if self._handle is None:
            return False
        try:
            return os.fstat(self._handle.fileno()).st_ino == os.stat(self.path).st_ino
        except FileNotFoundError:
            return False

    def release(self) -> None:
        """Unlock (closing the file drops the flock); the lock file stays, harmless."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
