"""Commands and files on a login node through the system OpenSSH client (issue 11).

``ssh`` reads ``~/.ssh/config`` itself (aliases, ProxyJump, certificates, GSSAPI, whatever the site
needs) and is run with ``BatchMode=yes`` so that it never prompts. Every command and file transfer
goes through one ControlMaster connection: the user's own (its ``ControlPath`` from their config,
so a site with multi-factor authentication asks once, when the user opens it), else one DJSB opens
for the run in a private directory and closes at the end. Files move as ``cat`` through that
connection (no scp/sftp round trip). Host keys: ``StrictHostKeyChecking=yes`` always.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from djsb.jobs.outage import Outage
from djsb.remote.errors import RemoteUnusable
from djsb.remote.reconnect import Reconnector
from djsb.transport import CommandResult, ConnectionLost, run_process

SSH_FAILED = 255
"""ssh's own exit status for a connection that failed (the remote command's status otherwise)."""
HOST_KEY = re.compile(r"Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED|"
                      r"No .*host key is known")
CANNOT_CONNECT = re.compile(r"Connection refused|Connection timed out|No route to host|"
                            r"Could not resolve hostname|Network is unreachable|"
                            r"kex_exchange_identification|Connection closed by .* port|"
                            r"UNKNOWN port 65535|Permission denied")
DROPPED = re.compile(r"closed by remote host|Shared connection to .* closed|"
                     r"Connection reset|Broken pipe|Timeout, server .* not responding|"
                     r"client_loop: send disconnect|mux_client_request_session")


def ssh_options(config_file: str | None, options: Sequence[tuple[str, str]]) -> list[str]:
    """``-F FILE`` and ``-o KEY=VALUE`` for each option, as separate argv items (never one string
    through a shell: a value with spaces or quotes stays one item)."""
    argv = ["-F", config_file] if config_file else []
    for key, value in options:
        argv += ["-o", f"{key}={value}"]
    return argv


def ssh_argv(destination: str, command: str, options: Sequence[str]) -> list[str]:
    """``ssh OPTIONS -- DESTINATION COMMAND``: ``command`` is run by the remote user's shell, so
    every value in it must already be shlex-quoted by whoever built it."""
    return ["ssh", *options, "--", destination, command]


def failure(returncode: int, stderr: str) -> str | None:
    """What kind of connection failure an ssh exit was: 'host-key', 'unreachable', 'dropped', or None
    (the remote command's own status, even a 255 that ssh did not explain)."""
    if returncode != SSH_FAILED:
        return None
    if HOST_KEY.search(stderr):
        return "host-key"
    if CANNOT_CONNECT.search(stderr):
        return "unreachable"
    if DROPPED.search(stderr):
        return "dropped"
    return None


def parse_effective_config(text: str) -> dict[str, str]:
    """The output of ``ssh -G HOST`` (``key value`` per line) as a dict of the last... first value
    of each key, as ssh applies the first one it reads."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        if key and key not in values:
            values[key] = value
    return values


class OpenSSHTransport:
    """The system ``ssh`` to ``destination`` (an alias or user@host), multiplexed over one master."""

    def __init__(self, destination: str, *, config_file: str | None, overrides: Sequence[tuple[str, str]],
                 connect_timeout: float, reconnector: Reconnector) -> None:
        self.destination = destination
        self.config_file = config_file
        self.connect_timeout = connect_timeout
        self.reconnector = reconnector
        self._private_dir: str | None = None
        self._stop_by: float | None = None
        self._lost_while_running = False
        self.control_path = ""
        self.base = [("BatchMode", "yes"), ("StrictHostKeyChecking", "yes"),
                     ("ConnectTimeout", f"{max(1, round(connect_timeout))}"),
                     ("ServerAliveInterval", "15"), ("ServerAliveCountMax", "3"), *overrides]

    def watch_outages(self, listener: Callable[[Outage], None]) -> None:
        """Tell ``listener`` of each dropped connection that was re-established."""
        self.reconnector.on_outage = listener

    def stop_by(self, deadline: float) -> None:
        """Give up on any command still running at ``deadline`` (time.monotonic), from now on."""
        self._stop_by = deadline

    def _options(self, *extra: tuple[str, str]) -> list[str]:
        return ssh_options(self.config_file, [*self.base, ("ControlPath", self.control_path), *extra])

    def open(self) -> None:
        """Find the ControlPath (the user's, else a private one) and make sure a master is up."""
        if not self.control_path:
            shown = subprocess.run(["ssh", *ssh_options(self.config_file, self.base), "-G", self.destination],
                                   capture_output=True, text=True, timeout=30)
            if shown.returncode != 0:
                raise RemoteUnusable(f"ssh -G {self.destination}: {shown.stderr.strip()}")
            path = parse_effective_config(shown.stdout).get("controlpath", "none")
            if path == "none":
                self._private_dir = tempfile.mkdtemp(prefix="djsb-ssh-")
                path = str(Path(self._private_dir) / "master")
            self.control_path = path
        if not self._master_alive():
            self._start_master()

    def _master_alive(self) -> bool:
        return Path(self.control_path).exists() and subprocess.run(
            ["ssh", *self._options(), "-O", "check", "--", self.destination],
            capture_output=True, timeout=30).returncode == 0

    def _start_master(self) -> None:
        """``ssh -M -N -f``: authenticates, then stays in the background holding the connection (its
        output goes to a file: a pipe it inherited would keep a reader waiting for ever)."""
        with tempfile.TemporaryFile("w+") as log:
            started = subprocess.run(
                ["ssh", *self._options(("ControlMaster", "yes"), ("ControlPersist", "yes")), "-N", "-f",
                 "--", self.destination], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                timeout=self.connect_timeout * 4 + 30)
            log.seek(0)
            said = log.read().strip()
        if started.returncode != 0:
            kind = failure(SSH_FAILED, said)
            raise RemoteUnusable(f"ssh {self.destination}: {said or 'could not connect'}",
                                 retry=kind in ("unreachable", "dropped"))

    def _ssh(self, command: str, timeout: float, stdin: str | None = None) -> CommandResult:
        """``command`` through the master, reconnected first if it is gone."""
        if not Path(self.control_path).exists():
            reported = not self._lost_while_running
            self._lost_while_running = False
            self.reconnector.reopen(self.open, lost_at=time.time(), command=command,
                                    why="the master connection ended", report=reported)
        argv = ssh_argv(self.destination, command, self._options(("ControlMaster", "no")))
        result = run_process(argv, command, timeout, self._stop_by, stdin)
        kind = failure(result.returncode, result.stderr)
        if kind is None:
            return result
        if kind == "host-key":
            raise RemoteUnusable(f"ssh {self.destination}: {result.stderr.strip()}")
        self._drop_master()
        self._lost_while_running = True
        raise ConnectionLost(f"ssh {self.destination}: connection lost ({result.stderr.strip()}) "
                             f"while running: {command}")

    def run(self, command: str, timeout: float = 60.0) -> CommandResult:
        return self._ssh(command, timeout)

    def write_text(self, path: str, text: str) -> None:
        tmp = shlex.quote(path + ".tmp")
        written = self._ssh(f"cat > {tmp} && mv -f {tmp} {shlex.quote(path)}", 120, stdin=text)
        if written.returncode != 0:
            raise OSError(f"cannot write {path} on {self.destination}: {written.stderr.strip()}")

    def read_text(self, path: str) -> str | None:
        read = self._ssh(f"cat {shlex.quote(path)}", 120)
        return read.stdout if read.returncode == 0 else None

    def _drop_master(self) -> None:
        """Ask the master to exit (it may be half dead) so the next use opens a new one."""
        subprocess.run(["ssh", *self._options(), "-O", "exit", "--", self.destination],
                       capture_output=True, timeout=30)
        if self._private_dir is not None:
            Path(self.control_path).unlink(missing_ok=True)

    def close(self) -> None:
        """Close the master DJSB opened (the user's own stays up for their next session)."""
        if self._private_dir is not None:
            self._drop_master()
            shutil.rmtree(self._private_dir, ignore_errors=True)
            self._private_dir, self.control_path = None, ""
