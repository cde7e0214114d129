"""The output directory of a command: made before anything runs, never mixed with another's files.

Every command that writes a directory (``run``, ``simulate``, ``replay-stats``, ``pool``, ``sweep``,
``calibrate``, ``reproduce``, ``compare``) takes it through :func:`output_directory`:

- a directory that already holds files is refused (one line, exit 2, nothing touched), unless the
  command may take it as it is (``reusable``: ``run`` reuses a directory no run submitted a job
  from) or is told to continue it (``--resume``, where the command has one);
- with ``--force`` the old directory is replaced: moved aside (a rename, atomic within one file
  system), the command writes into a new empty one, and the old one is deleted once the command
  succeeds, or moved back if it fails, so two commands' files never mix and a failed ``--force``
  loses nothing. ``--force`` replaces only a directory a DJSB command wrote (one holding one of
  :data:`DJSB_FILES`, at its top or one level down) and not one a live run holds (its lock files
  taken), so a mistyped ``-o ~ --force`` removes nothing;
- a directory the command made is removed, with whatever was written in it, if the command fails,
  unless ``keep`` says it holds what a ``--resume`` continues from.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from djsb.errors import InputError, RunError, os_error_line
from djsb.filelock import FileLock

DJSB_FILES = frozenset({"config.yaml", "meta.json", "jobs.csv", "metrics.json", "sweep.json", "sweep.csv",
                        "calibration.json", "ledger.csv", "reproduce.csv", "compare.csv", "report.html"})
"""Files DJSB commands write into their output directories: a directory holding one was written by
DJSB, and ``--force`` may replace it."""
LOCK_NAMES = ("run.lock", ".locks/*")
"""The lock files of a run or calibration (djsb.harness.runlock) and of a sweep's points
(djsb.sweep.sweep_dir), relative to their directory."""


def is_empty(path: Path) -> bool:
    """Whether ``path`` is missing or an empty directory."""
    return not path.exists() or (path.is_dir() and not any(path.iterdir()))


def written_by_djsb(path: Path) -> bool:
    """Whether the directory holds a file a DJSB command writes (:data:`DJSB_FILES`), at its top or
    in a directory directly under it (a reproduction's sweeps, a sweep's points)."""
    tops = [path, *(entry for entry in path.iterdir() if entry.is_dir())]
    return any((top / name).is_file() for top in tops for name in DJSB_FILES)


def holder(path: Path) -> str | None:
    """Who holds one of the directory's locks (:data:`LOCK_NAMES`), or None if no live process does."""
    for pattern in LOCK_NAMES:
        for lock_file in path.glob(pattern):
            held_by = FileLock.holder(lock_file)
            if held_by is not None:
                return held_by
    return None


def refuse_occupied(path: Path, *, force: bool, key: str, resume: str | None = None,
                    reusable: Callable[[Path], bool] = is_empty) -> None:
    """Raise InputError unless a command may write into ``path``: it is missing or ``reusable``
    (by default: empty), or ``force`` and it is a DJSB output no live process holds. ``key`` names
    the option or config key that chose the directory; ``resume`` is how to continue it, if the
    command can."""
    if path.exists() and not path.is_dir():
        raise InputError(f"{path} is a file, not a directory", key=key)
    if reusable(path):
        return
    if not force:
        how = f"continue it with {resume}, " if resume else ""
        raise InputError(f"{path} already exists and is not empty: {how}replace it with --force, or give "
                         "another directory", key=key)
    if not written_by_djsb(path):
        raise InputError(f"{path} holds no DJSB output (none of {', '.join(sorted(DJSB_FILES))}): --force "
                         "replaces only what DJSB wrote; remove it yourself or give another directory",
                         key=key)
    busy = holder(path)
    if busy is not None:
        raise InputError(f"{path} is in use by a live djsb process ({busy}); wait for it to end, or stop it",
                         key=key)


def outermost_missing(path: Path) -> Path | None:
    """The outermost directory of ``path`` (itself or a parent) that does not exist yet."""
    missing = None
    for directory in (path.absolute(), *path.absolute().parents):
        if directory.exists():
            break
        missing = directory
    return missing


def make_directory(path: Path, key: str) -> Path | None:
    """Make ``path`` (and its parents), so that an impossible or unwritable one (``-o /proc/x``) is
    one line and exit 2 before anything runs; return the outermost directory made."""
    made = outermost_missing(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the output directory {path}: {exc.strerror}", key=key) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError(f"cannot write into the output directory {path}: permission denied", key=key)
    return made


@contextlib.contextmanager
def output_directory(path: Path, *, key: str = "-o", force: bool = False, resume: str | None = None,
                     reusable: Callable[[Path], bool] = is_empty,
                     keep: Callable[[Path], bool] = lambda path: False) -> Iterator[Path]:
    """The output directory of a command, checked (:func:`refuse_occupied`), its old contents moved
    aside with ``force``, and made; see the module docstring for what a failure leaves."""
    refuse_occupied(path, force=force, key=key, resume=resume, reusable=reusable)
    aside = None
    if not reusable(path):
        aside = path.with_name(f".{path.name}.replaced-{uuid.uuid4().hex[:8]}")
        os.rename(path, aside)
    try:
        made = make_directory(path, key)
    except InputError:
        if aside is not None:
            os.rename(aside, path)
        raise
    try:
        yield path
    except BaseException as exc:
        if isinstance(exc, OSError):
            exc = with_written_file(exc, path)
        kept = keep(path)
        if not kept:
            discard(path, made)
            if aside is not None:
                os.rename(aside, path)
        elif aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
        if isinstance(exc, OSError):
            what = ("" if kept else ", the old one restored" if aside is not None
                    else ", removed" if made else "")
            raise RunError(f"{os_error_line(exc)} (output directory {path}{what})") from exc
        raise
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)


def discard(path: Path, made: Path | None) -> None:
    """Remove what a failed command wrote: the directories it made (``made``, the outermost), or,
    in a directory that existed empty, its contents."""
    if made is not None:
        shutil.rmtree(made, ignore_errors=True)
        return
    for entry in path.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def with_written_file(exc: OSError, directory: Path) -> OSError:
    """``exc``, naming the file last written under ``directory`` when it names none: a write that
    fails on a full disk names no file (only ``open`` does), and the file it was writing is the one
    it had just created or grown. Unchanged when it names a file or ``directory`` holds none."""
    if exc.filename is not None or exc.errno is None:
        return exc
    files = [Path(root, name) for root, _, names in os.walk(directory) for name in names]
    stamped = [(stat.st_mtime_ns, path) for path in files if (stat := _stat(path)) is not None]
    if not stamped:
        return exc
    return OSError(exc.errno, exc.strerror, str(max(stamped)[1]))


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None
