"""Run a command and move files: on this machine (the remote transports are in djsb.remote).

Command-based job modules produce shell command strings (paper 001 sec. 2.2); a transport runs them
with a timeout and returns what they printed. Every value pasted into a command must already be
quoted with ``shlex.quote`` by whoever built it.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from djsb.errors import RunError, naming


@dataclass(frozen=True)
class CommandResult:
    """What a command left behind."""

    command: str
    returncode: int
    stdout: str
    stderr: str


class CommandTimeout(RunError):
    """A command did not finish within its timeout (e.g. a Slurm CLI while slurmctld is down)."""


class ConnectionLost(CommandTimeout):
    """The connection to a remote host dropped while a command ran: whether the command took
    effect is unknown, so only a caller that knows it is safe to repeat (or can find what it did,
    like a submit's token) retries it. The transport reconnects on its next use."""


STOP_CHECK_S = 0.2
"""How often a running command's deadlines are checked."""


def _kill_group(process: subprocess.Popen[str]) -> None:
    """SIGKILL the command and everything it started (its own session), then reap it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.communicate()


def run_process(argv: list[str], command: str, timeout: float, stop_by: Callable[[], float | None],
                stdin: str | None = None) -> CommandResult:
    """Run ``argv`` in its own session (``stdin`` fed to it), killed with all it started at
    ``timeout`` or at the deadline ``stop_by()`` gives (time.monotonic; asked again while it runs,
    as a signal handler may set one); ``command`` names it in the result and errors."""
    deadline = time.monotonic() + timeout
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE, text=True,
                          start_new_session=True) as process:
        feed = stdin  # given once: communicate refuses input once it has started
        while True:
            try:
                stdout, stderr = process.communicate(feed, timeout=STOP_CHECK_S)
                break
            except subprocess.TimeoutExpired:
                feed = None
                stop = stop_by()
                limit = deadline if stop is None else min(deadline, stop)
                if time.monotonic() >= limit:
                    _kill_group(process)
                    why = f"timed out after {timeout:g} s" if limit == deadline else "cut short"
                    raise CommandTimeout(f"command {why}: {command}") from None
    return CommandResult(command, process.returncode, stdout, stderr)


class Transport(Protocol):
    """Where commands run and files live."""

    def run(self, command: str, timeout: float = 60.0) -> CommandResult: ...

    def write_text(self, path: str, text: str) -> None: ...

    def read_text(self, path: str) -> str | None: ...

    def close(self) -> None: ...


def free_bytes(transport: Transport, path: str) -> int | None:
    """The bytes an unprivileged writer may still write on the file system holding ``path`` (POSIX
    ``df -P -k``, here or on a login node); None when df does not say."""
    result = transport.run(shlex.join(["df", "-P", "-k", "--", path]), timeout=30)
    lines = result.stdout.splitlines()
    fields = lines[-1].split() if result.returncode == 0 and len(lines) >= 2 else []
    return int(fields[3]) * 1024 if len(fields) >= 6 and fields[3].isdigit() else None


class LocalTransport:
    """Commands through ``/bin/sh -c`` on this machine; files on the local file system.

    ``stop_by`` cuts commands short (the one running included: it may be called from a signal
    handler), so a run asked to stop never waits for a CLI hanging on an unreachable scheduler.
    """

    def __init__(self) -> None:
        self._stop_by: float | None = None

    def stop_by(self, deadline: float) -> None:
        """Kill any command still running at ``deadline`` (time.monotonic), from now on."""
        self._stop_by = deadline

    def run(self, command: str, timeout: float = 60.0) -> CommandResult:
        return run_process(["/bin/sh", "-c", command], command, timeout, lambda: self._stop_by)

    def write_text(self, path: str, text: str) -> None:
        target = Path(path)
        tmp = target.with_name(target.name + ".tmp")
        with naming(target):
            tmp.write_text(text)
            tmp.replace(target)

    def read_text(self, path: str) -> str | None:
        try:
            return Path(path).read_text()
        except OSError:
            return None

    def close(self) -> None:
        return None
