"""Run a command and move files: on this machine, or on a remote login node over SSH.

Command-based job modules produce shell command strings (paper 001 sec. 2.2); a transport runs them
with a timeout and returns what they printed. Every value pasted into a command must already be
quoted with ``shlex.quote`` by whoever built it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from djsb.config import SSHConfig
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


STOP_CHECK_S = 0.2
"""How often a running command's deadlines are checked."""


def _kill_group(process: subprocess.Popen[str]) -> None:
    """SIGKILL the command and everything it started (its own session), then reap it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.communicate()


class Transport(Protocol):
    """Where commands run and files live."""

    def run(self, command: str, timeout: float = 60.0) -> CommandResult: ...

    def write_text(self, path: str, text: str) -> None: ...

    def read_text(self, path: str) -> str | None: ...

    def close(self) -> None: ...


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
        deadline = time.monotonic() + timeout
        with subprocess.Popen(["/bin/sh", "-c", command], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True, start_new_session=True) as process:
            while True:
                try:
                    stdout, stderr = process.communicate(timeout=STOP_CHECK_S)
                    break
                except subprocess.TimeoutExpired:
                    limit = deadline if self._stop_by is None else min(deadline, self._stop_by)
                    if time.monotonic() >= limit:
                        _kill_group(process)
                        why = f"timed out after {timeout:g} s" if limit == deadline else "cut short"
                        raise CommandTimeout(f"command {why}: {command}") from None
        return CommandResult(command, process.returncode, stdout, stderr)

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


class SSHTransport:
    """Commands and files on a remote host through paramiko (exec channel and SFTP).

    Host keys are always verified against ``known_hosts`` (default ~/.ssh/known_hosts): an unknown
    or changed key refuses the connection. Authentication is by key (``key_file``, or the agent and
    default keys); DJSB takes no password so that none ends up in a run directory or a log.

    The connection is opened lazily and reopened once if it dropped (a login node rebooting or an
    idle timeout), so a long run survives it.
    """

    def __init__(self, settings: SSHConfig) -> None:
        self.settings = settings
        self._client: Any = None
        self._sftp: Any = None
        self._stop_by: float | None = None

    def stop_by(self, deadline: float) -> None:
        """Give up on any command still running at ``deadline`` (time.monotonic), from now on."""
        self._stop_by = deadline

    def _connect(self) -> Any:
        import paramiko

        if self._client is not None and self._client.get_transport() is not None \
                and self._client.get_transport().is_active():
            return self._client
        s = self.settings
        client = paramiko.SSHClient()
        known_hosts = Path(s.known_hosts or Path.home() / ".ssh" / "known_hosts").expanduser()
        try:
            client.load_host_keys(str(known_hosts))
        except OSError as exc:
            raise RunError(f"ssh: cannot read known_hosts {known_hosts}: {exc.strerror}") from exc
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            key_file = str(Path(s.key_file).expanduser()) if s.key_file else None
            client.connect(s.host, port=s.port, username=s.user, key_filename=key_file,
                           timeout=s.connect_timeout, banner_timeout=s.connect_timeout,
                           auth_timeout=s.connect_timeout, allow_agent=s.key_file is None,
                           look_for_keys=s.key_file is None)
        except paramiko.SSHException as exc:
            raise RunError(f"ssh {s.host}:{s.port}: {exc}") from exc
        except OSError as exc:
            raise RunError(f"ssh {s.host}:{s.port}: cannot connect ({exc.strerror or exc})") from exc
        self._client, self._sftp = client, None
        return client

    def run(self, command: str, timeout: float = 60.0) -> CommandResult:
        try:
            return self._run_once(command, timeout)
        except (OSError, EOFError) as exc:
            self.close()
            try:
                return self._run_once(command, timeout)
            except (OSError, EOFError):
                raise RunError(f"ssh {self.settings.host}: connection lost running a command") from exc

    def _run_once(self, command: str, timeout: float) -> CommandResult:
        channel = self._connect().get_transport().open_session()
        channel.settimeout(timeout)
        channel.exec_command(command)
        out, err = bytearray(), bytearray()
        deadline = time.monotonic() + timeout
        while True:
            while channel.recv_ready():
                out += channel.recv(65536)
            while channel.recv_stderr_ready():
                err += channel.recv_stderr(65536)
            if channel.exit_status_ready() and not channel.recv_ready() and not channel.recv_stderr_ready():
                break
            if time.monotonic() > (deadline if self._stop_by is None else min(deadline, self._stop_by)):
                channel.close()
                raise CommandTimeout(f"command timed out after {timeout:g} s on {self.settings.host}: "
                                     f"{command}")
            time.sleep(0.005)
        code = channel.recv_exit_status()
        channel.close()
        return CommandResult(command, code, out.decode(errors="replace"), err.decode(errors="replace"))

    def _sftp_client(self) -> Any:
        client = self._connect()
        if self._sftp is None:
            self._sftp = client.open_sftp()
        return self._sftp

    def write_text(self, path: str, text: str) -> None:
        sftp = self._sftp_client()
        with sftp.open(path + ".tmp", "w") as handle:
            handle.write(text)
        sftp.posix_rename(path + ".tmp", path)

    def read_text(self, path: str) -> str | None:
        try:
            with self._sftp_client().open(path, "r") as handle:
                return handle.read().decode(errors="replace")
        except OSError:
            return None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        self._client, self._sftp = None, None
