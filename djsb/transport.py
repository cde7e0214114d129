"""Run a command and move files: on this machine, or on a remote login node over SSH.

Command-based job modules produce shell command strings (paper 001 sec. 2.2); a transport runs them
with a timeout and returns what they printed. Every value pasted into a command must already be
quoted with ``shlex.quote`` by whoever built it.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from djsb.errors import RunError


@dataclass(frozen=True)
class CommandResult:
    """What a command left behind."""

    command: str
    returncode: int
    stdout: str
    stderr: str


class CommandTimeout(RunError):
    """A command did not finish within its timeout (e.g. a Slurm CLI while slurmctld is down)."""


class Transport(Protocol):
    """Where commands run and files live."""

    def run(self, command: str, timeout: float = 60.0) -> CommandResult: ...

    def write_text(self, path: str, text: str) -> None: ...

    def read_text(self, path: str) -> str | None: ...

    def close(self) -> None: ...


class LocalTransport:
    """Commands through ``/bin/sh -c`` on this machine; files on the local file system."""

    def run(self, command: str, timeout: float = 60.0) -> CommandResult:
        try:
            done = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True,
                                  timeout=timeout, stdin=subprocess.DEVNULL, start_new_session=True)
        except subprocess.TimeoutExpired as exc:
            raise CommandTimeout(f"command timed out after {timeout:g} s: {command}") from exc
        return CommandResult(command, done.returncode, done.stdout, done.stderr)

    def write_text(self, path: str, text: str) -> None:
        target = Path(path)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(text)
        tmp.replace(target)

    def read_text(self, path: str) -> str | None:
        try:
            return Path(path).read_text()
        except OSError:
            return None

    def close(self) -> None:
        return None
