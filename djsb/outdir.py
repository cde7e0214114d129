"""The output directory of a command: marked with what wrote it, one writer at a time, never mixed
with another's files, and nothing of a user's lost.

Every command that writes a directory (``run``, ``simulate``, ``replay-stats``, ``pool``, ``sweep``,
``calibrate``, ``history``, ``reproduce``, ``compare``) takes it through :func:`output_directory`:

- **A marker.** Each output directory holds :data:`MARKER`, a JSON file naming the command that
  wrote it (its kind and its command line), DJSB's version, when it started and when it finished
  (absent while it runs, or if it was interrupted). ``--force`` replaces, and ``--resume``
  continues, only a directory whose marker is of the command's own kind; anything else is refused
  in one line that says what the directory holds. A directory without a marker (a user's files,
  or a result of a DJSB older than markers) is never deleted.
- **One writer.** The command holds an exclusive lock beside the directory (``.NAME.djsb-lock`` in
  its parent, djsb.filelock) from before it looks at the directory until it is done with it, so a
  second command writing the same directory fails at once, naming the first; a live run's own
  locks (:data:`LOCK_NAMES`) keep a ``--force`` out too. The lock file is removed when released.
- **Atomic results.** A command whose result is written in one go (``simulate``, ``replay-stats``,
  ``history``, ``reproduce``, ``compare``) writes beside the directory (``.NAME.djsb-new-*``) and
  renames its result into place once complete; with ``--force`` the two are exchanged in one
  ``renameat2(RENAME_EXCHANGE)`` (two renames where the file system lacks it) and the old one
  deleted. Whatever stops it (an error, SIGINT, SIGTERM) the directory is as it was before, and the
  scratch is removed. A command that writes as it goes and can be continued (``run``, ``sweep``,
  ``pool``, ``calibrate``: ``in_place``) writes into the directory itself; with ``--force`` the old
  one is moved aside first and deleted once the new one exists, or moved back if the command
  fails before it wrote anything worth keeping (``keep``).
- **Leftovers.** A scratch or aside directory whose command was killed (SIGKILL, a power cut)
  carries the marker and the name of this module; the next command on the same directory, holding
  its lock, removes it and says so.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import shlex
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from djsb.errors import InputError, RunError, Signalled, os_error_line
from djsb.filelock import FileLock, LockHeld
from djsb.progress import say
from djsb.version import djsb_version

MARKER = ".djsb-output.json"
"""The file that says a DJSB command wrote its directory, which command, and whether it finished."""
LOCK_NAMES = ("run.lock", ".locks/*")
"""The lock files of a run or calibration (djsb.harness.runlock) and of a sweep's points
(djsb.sweep.sweep_dir), relative to their directory."""
LISTED_ENTRIES = 4
"""How many of a refused directory's entries its message names."""


@dataclass(frozen=True)
class Marker:
    """What wrote an output directory: the command's kind (``simulate``...), its command line, the
    version of DJSB, when it started and, once it completed, when it finished."""

    kind: str
    command: str
    version: str
    started: str
    finished: str | None = None

    def describe(self) -> str:
        """"a complete djsb simulate output (started ...)" or "an unfinished ..."."""
        state = "a complete" if self.finished else "an unfinished (interrupted or failed)"
        return f"{state} djsb {self.kind} output (started {self.started}, djsb {self.version})"


def new_marker(kind: str) -> Marker:
    """The marker of a directory this process's command starts writing now."""
    return Marker(kind, command_line(), djsb_version(), time.strftime("%Y-%m-%dT%H:%M:%S%z"))


def command_line() -> str:
    """This process's djsb command as typed (for a marker and a lock's holder)."""
    return shlex.join(["djsb", *sys.argv[1:]])


def read_marker(path: Path) -> Marker | None:
    """The directory's marker, or None if it has none (or one DJSB cannot read: not DJSB's)."""
    try:
        data = json.loads((path / MARKER).read_text())
        return Marker(**{key: data.get(key) for key in Marker.__dataclass_fields__})
    except (OSError, ValueError, TypeError):
        return None


def write_marker(path: Path, marker: Marker) -> None:
    """Write the directory's marker whole (beside, then renamed over the old one)."""
    partial = path / f"{MARKER}.partial"
    partial.write_text(json.dumps(asdict(marker), indent=1) + "\n")
    os.replace(partial, path / MARKER)


def mark_finished(path: Path) -> None:
    """Record that the command writing ``path`` completed (a run's report written, a sweep's
    last point done)."""
    marker = read_marker(path)
    if marker is not None:
        write_marker(path, Marker(**{**asdict(marker), "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z")}))


def is_empty(path: Path) -> bool:
    """Whether ``path`` is missing, or a directory holding nothing but, at most, a marker (what a
    command killed before it wrote anything leaves)."""
    if not path.exists():
        return True
    return path.is_dir() and all(entry.name == MARKER for entry in path.iterdir())


def holder(path: Path) -> str | None:
    """Who holds one of the directory's locks (:data:`LOCK_NAMES`), or None if no live process does."""
    for pattern in LOCK_NAMES:
        for lock_file in path.glob(pattern):
            held_by = FileLock.holder(lock_file)
            if held_by is not None:
                return held_by
    return None


def what_is_in(path: Path) -> str:
    """A directory's contents for a message: its marker's description, or its first entries."""
    marker = read_marker(path)
    if marker is not None:
        return marker.describe()
    names = sorted(entry.name + ("/" if entry.is_dir() else "") for entry in path.iterdir())
    shown = ", ".join(names[:LISTED_ENTRIES]) + (f" and {len(names) - LISTED_ENTRIES} more"
                                                 if len(names) > LISTED_ENTRIES else "")
    return f"files no DJSB command marked as its output ({shown})"


def require_output(path: Path, kind: str, *, key: str) -> Marker:
    """The marker of ``path`` if a ``djsb {kind}`` wrote it; else InputError naming what is there
    (what ``--resume`` checks before it continues a directory)."""
    if not path.is_dir():
        raise InputError(f"{path} is not a directory", key=key)
    marker = read_marker(path)
    if marker is None or marker.kind != kind:
        holds = what_is_in(path) if any(path.iterdir()) else "nothing"
        raise InputError(f"{path} holds {holds}: only a djsb {kind} output can be continued", key=key)
    return marker


def refuse_occupied(path: Path, *, kind: str, force: bool, key: str, resume: str | None = None,
                    reusable: Callable[[Path], bool] = is_empty) -> None:
    """Raise InputError unless a command of ``kind`` may write into ``path``: it is missing or
    ``reusable`` (by default: empty), or ``force`` and it holds a ``djsb {kind}`` output no live
    process holds. ``key`` names the option or config key that chose the directory; ``resume`` is
    how to continue it, if the command can."""
    if path.exists() and not path.is_dir():
        raise InputError(f"{path} is a file, not a directory", key=key)
    if reusable(path):
        return
    marker = read_marker(path)
    if marker is None or marker.kind != kind:
        refusal = ("--force replaces only a djsb {kind} output: remove it yourself or give another directory"
                   if force else "give another directory (--force replaces only a djsb {kind} output)")
        raise InputError(f"{path} already exists and holds {what_is_in(path)}: {refusal.format(kind=kind)}",
                         key=key)
    if not force:
        how = f"continue it with {resume}, " if resume else ""
        raise InputError(f"{path} already exists and holds {what_is_in(path)}: {how}replace it with --force, "
                         "or give another directory", key=key)
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


def make_directory(path: Path, key: str) -> None:
    """Make ``path`` (and its parents), so that an impossible or unwritable one (``-o /proc/x``) is
    one line and exit 2 before anything runs."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the output directory {path}: {exc.strerror}", key=key) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError(f"cannot write into the output directory {path}: permission denied", key=key)


def make_parent(path: Path, key: str) -> None:
    """Make the directory ``path`` goes in (where its lock and scratch go too); a file on the way
    (``-o a-file/out``) or an impossible place (``-o /proc/x``) is one line and exit 2."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        reason = os.strerror(errno.ENOTDIR)  # a file stands where a directory must be
    except OSError as exc:
        reason = exc.strerror or str(exc)
    else:
        return
    raise InputError(f"cannot create the output directory {path}: {reason}", key=key)


def beside(path: Path, role: str) -> Path:
    """A hidden name in ``path``'s parent for its lock, scratch or aside directory."""
    suffix = "" if role == "lock" else f"-{uuid.uuid4().hex[:8]}"
    return path.with_name(f".{path.name}.djsb-{role}{suffix}")


@contextlib.contextmanager
def writer_lock(path: Path, key: str) -> Iterator[None]:
    """Hold the lock beside ``path`` (whose parent must exist) for the block; another holder is
    InputError naming it. The lock file is removed on release: a process that opened it before
    then finds, once it has the flock, that the name no longer leads to its file, and tries again."""
    lock_path = beside(path, "lock")
    me = f"pid {os.getpid()}: {command_line()}"
    while True:
        try:
            lock = FileLock.acquire(lock_path, me)
        except LockHeld as held:
            raise InputError(f"{path} is being written by another djsb command ({held.holder}); wait for it "
                             "to end, or give another directory", key=key) from None
        except OSError as exc:
            raise InputError(f"cannot create the output directory {path}: {exc.strerror}", key=key) from None
        if lock.is_current():
            break
        lock.release()
    try:
        yield
    finally:
        lock_path.unlink(missing_ok=True)
        lock.release()


def is_unmarked_scratch(path: Path) -> bool:
    """True for a scratch directory its command was killed in before it wrote its marker: empty,
    or holding only the marker's partial file, so nothing can be lost by removing it."""
    return all(entry.name == f"{MARKER}.partial" for entry in path.iterdir())


def remove_leftovers(path: Path) -> None:
    """Remove the scratch and aside directories of earlier commands on ``path`` that were killed
    before they could (their names and markers say they are DJSB's; the caller holds the lock)."""
    for role in ("new", "old"):
        for leftover in path.parent.glob(f".{path.name}.djsb-{role}-*"):
            if leftover.is_dir() and not leftover.is_symlink() and (
                    read_marker(leftover) is not None or is_unmarked_scratch(leftover)):
                shutil.rmtree(leftover, ignore_errors=True)
                say(f"removed {leftover}, left by a djsb command that was killed")


def exchange(first: Path, second: Path) -> bool:
    """Swap two existing paths in one atomic step (Linux renameat2 RENAME_EXCHANGE); False where
    the C library or the file system does not offer it."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    at_cwd, rename_exchange = -100, 2
    if renameat2(at_cwd, os.fsencode(first), at_cwd, os.fsencode(second), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(second))


def put_in_place(scratch: Path, path: Path) -> None:
    """Make the complete result ``scratch`` the directory ``path``, deleting what ``path`` held."""
    if not path.exists():
        os.rename(scratch, path)
        return
    if exchange(scratch, path):
        shutil.rmtree(scratch)
        return
    aside = beside(path, "old")
    os.rename(path, aside)
    os.rename(scratch, path)
    shutil.rmtree(aside)


def never(path: Path) -> bool:
    return False


@contextlib.contextmanager
def output_directory(path: Path, *, kind: str, key: str = "-o", force: bool = False,
                     resume: str | None = None, reusable: Callable[[Path], bool] = is_empty,
                     keep: Callable[[Path], bool] = never, in_place: bool = False,
                     ends_with_block: bool = True) -> Iterator[Path]:
    """The directory a command of ``kind`` writes, locked and checked (:func:`refuse_occupied`);
    yields where to write: a scratch directory beside ``path`` that becomes it once the block
    completes, or with ``in_place`` ``path`` itself, marked finished when the block completes
    unless ``ends_with_block`` is False (a run, whose block only makes its directory, marks it
    itself). See the module docstring for what a failure or a signal leaves; a Signalled that
    passes through gets ``left`` saying it."""
    if path.name in ("", ".", ".."):
        path = path.resolve()
    if path.is_symlink():
        path = path.resolve()  # the link stays and leads to the new result
    made = outermost_missing(path.parent)
    make_parent(path, key)
    try:
        with writer_lock(path, key):
            remove_leftovers(path)
            refuse_occupied(path, kind=kind, force=force, key=key, resume=resume, reusable=reusable)
            if in_place:
                yield from _write_in_place(path, kind, key, reusable, keep, resume)
                if ends_with_block:
                    mark_finished(path)
            else:
                yield from _write_beside(path, kind)
    except BaseException:
        if made is not None and not path.exists():
            shutil.rmtree(made, ignore_errors=True)
        raise


def _write_beside(path: Path, kind: str) -> Iterator[Path]:
    scratch = beside(path, "new")
    try:
        scratch.mkdir()  # inside: a signal as it returns still removes it
        write_marker(scratch, new_marker(kind))
        yield scratch
        mark_finished(scratch)
        put_in_place(scratch, path)
    except BaseException as exc:
        named = with_written_file(exc, scratch) if isinstance(exc, OSError) else None
        shutil.rmtree(scratch, ignore_errors=True)
        if isinstance(exc, Signalled):
            exc.left = f"nothing written; {path} is as it was"
        elif named is not None:
            if named.filename is not None and Path(named.filename).is_relative_to(scratch):
                named.filename = str(path / Path(named.filename).relative_to(scratch))  # its name to be
            raise RunError(f"{os_error_line(named)} (nothing written; {path} is as it was)") from exc
        raise


def _write_in_place(path: Path, kind: str, key: str, reusable: Callable[[Path], bool],
                    keep: Callable[[Path], bool], resume: str | None) -> Iterator[Path]:
    aside, made = None, False
    try:
        if not reusable(path):
            aside = beside(path, "old")
            os.rename(path, aside)
        made = not path.exists()
        make_directory(path, key)
        if read_marker(path) is None:
            write_marker(path, new_marker(kind))
    except BaseException as exc:  # a refusal, or a signal before the block: put back what was there
        if made:
            shutil.rmtree(path, ignore_errors=True)
        if aside is not None and aside.exists():
            os.rename(aside, path)
        if isinstance(exc, Signalled):
            exc.left = f"nothing written; {path} is as it was"
        raise
    try:
        yield path
    except BaseException as exc:
        if isinstance(exc, OSError):
            exc = with_written_file(exc, path)
        kept = keep(path)
        if kept:
            left = f"{path} kept, marked unfinished" + (f": continue it with {resume}" if resume else "")
        else:
            discard(path, made)
            left = f"{path} removed" if made else f"{path} emptied"
            if aside is not None:
                os.rename(aside, path)
                left = f"{path} restored as it was"
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
        if isinstance(exc, Signalled):
            exc.left = left
        elif isinstance(exc, OSError):
            raise RunError(f"{os_error_line(exc)} (output directory {left})") from exc
        raise
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)


def discard(path: Path, made: bool) -> None:
    """Remove what a failed command wrote: the directory if it made it, or, in a directory that
    existed empty, its contents."""
    if made:
        shutil.rmtree(path, ignore_errors=True)
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
