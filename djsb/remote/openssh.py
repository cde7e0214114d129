"""Commands and files on a login node through the system OpenSSH client.

``ssh`` reads ``~/.ssh/config`` itself (aliases, ProxyJump, certificates, GSSAPI, whatever the site
needs), through a config file DJSB writes for the run that sets ``BatchMode yes`` (it never prompts)
and ``StrictHostKeyChecking yes`` for every host and then includes the user's: OpenSSH keeps the
first value it reads, and ``-o`` options would not reach the ssh a ProxyJump hop runs (``-F`` does).
Every command and file transfer goes through one ControlMaster connection: the user's own (its
``ControlPath`` from their config, so a site with multi-factor authentication asks once, when the
user opens it), else one DJSB opens for the run in a private directory and closes at the end.
Files move as ``cat`` through that connection (no scp/sftp round trip).
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

from djsb.errors import one_line
from djsb.jobs.outage import Outage
from djsb.remote.errors import RemoteUnusable
from djsb.remote.reconnect import Reconnector
from djsb.transport import CommandResult, ConnectionLost, run_process

SSH_FAILED = 255
"""ssh's own exit status for a connection that failed (the remote command's status otherwise)."""
NO_FALLBACK = ("ProxyCommand", "false")
"""For a command sent through the master: if the master ended just before, the client would
otherwise log in on its own and run the command outside the master, the drop unreported."""
FELL_BACK = re.compile(r"Control socket connect\(|kex_exchange_identification")
"""What such a client says: it could not reach its master's socket, or began a key exchange of its
own over ``false``; either way it never sent the command (a client that reached its master
exchanges no keys). ssh does not always print the second line: ``false`` can end before it asks."""
SEND_ATTEMPTS = 3
MASTER_EXIT_GRACE = 2.0
"""Seconds a dropped master may take to exit after its mux client has."""
HOST_KEY = re.compile(r"Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED|"
                      r"No .*host key is known")
CANNOT_CONNECT = re.compile(r"Connection refused|Connection timed out|No route to host|"
                            r"Could not resolve hostname|Network is unreachable|"
                            r"kex_exchange_identification|Connection closed by .* port|"
                            r"UNKNOWN port 65535")
REFUSED = re.compile(r"Permission denied|Too many authentication failures")
DROPPED = re.compile(r"closed by remote host|Shared connection to .* closed|"
                     r"Connection reset|Broken pipe|Timeout, server .* not responding|"
                     r"client_loop: send disconnect|mux_client_request_session")


FORCED = (("BatchMode", "yes"), ("StrictHostKeyChecking", "yes"), ("LogLevel", "ERROR"),
          ("ServerAliveInterval", "15"), ("ServerAliveCountMax", "3"))
"""Set for every host, jump hosts included: never prompt, never accept an unknown or changed host
key, say why a hop failed (a ProxyJump hop's ssh is otherwise quiet), and notice within 45 s a
connection that went silent (a network blip)."""


def forced_config(user_config: str, connect_timeout: float) -> str:
    """The run's OpenSSH config: ``FORCED`` and a connect timeout for every host, then the user's
    config (``Include``, quoted; a file that does not exist includes nothing)."""
    lines = ["Host *", *(f"  {key} {value}" for key, value in FORCED),
             f"  ConnectTimeout {max(1, round(connect_timeout))}", "Match all",
             'Include "{}"'.format(user_config.replace('"', '\\"'))]
    return "\n".join(lines) + "\n"


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
    """What kind of connection failure an ssh exit was: 'host-key', 'refused' (authentication),
    'unreachable', 'dropped', or None (the remote command's own status, even a 255 that ssh did not
    explain). A hop's own reason comes before the generic one its failure causes further along."""
    if returncode != SSH_FAILED:
        return None
    if HOST_KEY.search(stderr):
        return "host-key"
    if REFUSED.search(stderr):
        return "refused"
    if CANNOT_CONNECT.search(stderr):
        return "unreachable"
    if DROPPED.search(stderr):
        return "dropped"
    return None


def parse_effective_config(text: str) -> dict[str, str]:
    """The output of ``ssh -G HOST`` (``key value`` per line) as a dict, the first value of a key
    that appears more than once (identityfile) kept."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        if key and key not in values:
            values[key] = value
    return values


class OpenSSHTransport:
    """The system ``ssh`` to ``destination`` (an alias or user@host), multiplexed over one master.

    The master is the user's when one is up at their ``ControlPath``; else DJSB runs ``ssh -M -N``
    as a child process for the run (no ControlPersist: a persisting master would swallow a jump
    host's error messages) and ends it at ``close``. A master that ended (the server killed its
    session) is started again before the next command, with back-off, the gap reported as an outage.
    """

    def __init__(self, destination: str, *, user_config: str, overrides: Sequence[tuple[str, str]],
                 connect_timeout: float, reconnector: Reconnector) -> None:
        self.destination = destination
        self.user_config = user_config
        self.overrides = list(overrides)
        self.connect_timeout = connect_timeout
        self.reconnector = reconnector
        self._private_dir = ""
        self._master: subprocess.Popen[bytes] | None = None
        self._stop_by: float | None = None
        self._lost_while_running = False
        self.control_path = ""

    def watch_outages(self, listener: Callable[[Outage], None]) -> None:
        """Tell ``listener`` of each dropped connection that was re-established."""
        self.reconnector.on_outage = listener

    def stop_by(self, deadline: float) -> None:
        """Give up on any command still running, or reconnection, at ``deadline`` (time.monotonic)."""
        self._stop_by = deadline
        self.reconnector.stop_deadline = deadline

    def _options(self, *extra: tuple[str, str]) -> list[str]:
        config = str(Path(self._private_dir) / "ssh_config")
        return ssh_options(config, [*self.overrides, ("ControlPath", self.control_path), *extra])

    def open(self) -> None:
        """Write the run's config, find the ControlPath (the user's, else a private one) and make
        sure a master is up."""
        if not self.control_path:
            self._private_dir = tempfile.mkdtemp(prefix="djsb-ssh-")
            config = Path(self._private_dir) / "ssh_config"
            config.write_text(forced_config(self.user_config, self.connect_timeout))
            shown = subprocess.run(["ssh", *ssh_options(str(config), self.overrides), "-G", self.destination],
                                   capture_output=True, text=True, timeout=30)
            if shown.returncode != 0:
                raise RemoteUnusable(f"ssh -G {self.destination}: {one_line(shown.stderr)}")
            path = parse_effective_config(shown.stdout).get("controlpath", "none")
            self.control_path = str(Path(self._private_dir) / "master") if path == "none" else path
        if not self._master_up():
            self._start_master()

    def _master_up(self) -> bool:
        """A master answers at the ControlPath (ours still running, or the user's)."""
        if self._master is not None:
            return self._master.poll() is None and Path(self.control_path).exists()
        return Path(self.control_path).exists() and subprocess.run(
            ["ssh", *self._options(), "-O", "check", "--", self.destination],
            capture_output=True, timeout=30).returncode == 0

    def _master_ends_within(self, grace: float) -> bool:
        """The master is gone, or goes within ``grace`` seconds. A server-side drop ends the mux
        client and the master at about the same moment, but the master may still be unlinking its
        socket when the client's 255 arrives; a remote command that exits 255 leaves it up."""
        deadline = time.monotonic() + grace
        while self._master_up():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def _start_master(self) -> None:
        """``ssh -M -N`` in the background, up once its socket appears (after authentication)."""
        self._stop_master()
        log_path = Path(self._private_dir) / "master.log"
        with log_path.open("wb") as log:
            master = subprocess.Popen(["ssh", *self._options(("ControlMaster", "yes")), "-N", "--",
                                       self.destination], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                      start_new_session=True)
        deadline = time.monotonic() + 4 * self.connect_timeout
        while not Path(self.control_path).exists():
            if master.poll() is not None or time.monotonic() > deadline:
                master.kill()
                master.wait()
                said = one_line(log_path.read_text(errors="replace")) or "no connection"
                raise RemoteUnusable(f"ssh {self.destination}: {said}",
                                     retry=failure(SSH_FAILED, said) in ("unreachable", "dropped", None))
            time.sleep(0.05)
        self._master = master

    def _stop_master(self) -> None:
        """End the master DJSB started, if any (the user's own is left alone)."""
        if self._master is not None:
            self._master.terminate()
            try:
                self._master.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._master.kill()
                self._master.wait()
            self._master = None
            Path(self.control_path).unlink(missing_ok=True)

    def _reconnect_if_down(self, command: str) -> None:
        """Reconnect if the master is gone, reporting the gap unless the command that found it
        gone while running raised ConnectionLost (its caller records that outage itself)."""
        if not self._master_up():
            reported = not self._lost_while_running
            self._lost_while_running = False
            self.reconnector.reopen(self.open, lost_at=time.time(), command=command,
                                    why="the master connection ended", report=reported)

    def _ssh(self, command: str, timeout: float, stdin: str | None = None) -> CommandResult:
        """``command`` through the master, reconnected first if it is gone."""
        argv = ssh_argv(self.destination, command, self._options(("ControlMaster", "no"), NO_FALLBACK))
        for _ in range(SEND_ATTEMPTS):
            self._reconnect_if_down(command)
            result = run_process(argv, command, timeout, lambda: self._stop_by, stdin)
            if not (result.returncode == SSH_FAILED and FELL_BACK.search(result.stderr)):
                break
            self._stop_master()  # it ended just before the command reached it: the command was not sent
        kind = failure(result.returncode, result.stderr)
        if kind is None and result.returncode == SSH_FAILED and self._master_ends_within(MASTER_EXIT_GRACE):
            kind = "dropped"  # the mux client says nothing at LogLevel ERROR when its master ended
        if kind is None:
            return result
        if kind in ("host-key", "refused"):
            raise RemoteUnusable(f"ssh {self.destination}: {one_line(result.stderr)}")
        self._stop_master()
        self._lost_while_running = True
        why = one_line(result.stderr) or "its master connection ended"
        raise ConnectionLost(f"ssh {self.destination}: connection lost ({why}) while running: {command}")

    def run(self, command: str, timeout: float = 60.0) -> CommandResult:
        return self._ssh(command, timeout)

    def write_text(self, path: str, text: str) -> None:
        tmp = shlex.quote(path + ".tmp")
        written = self._ssh(f"cat > {tmp} && mv -f {tmp} {shlex.quote(path)}", 120, stdin=text)
        if written.returncode != 0:
            raise OSError(f"cannot write {path} on {self.destination}: {one_line(written.stderr)}")

    def read_text(self, path: str) -> str | None:
        read = self._ssh(f"cat {shlex.quote(path)}", 120)
        return read.stdout if read.returncode == 0 else None

    def close(self) -> None:
        """End the master DJSB started (the user's own stays up for their next session)."""
        self._stop_master()
        if self._private_dir:
            shutil.rmtree(self._private_dir, ignore_errors=True)
        self._private_dir, self.control_path = "", ""
