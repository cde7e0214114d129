"""Commands and files on a login node through paramiko: exec channels and SFTP over one connection,
through ProxyJump hops.

Each ProxyJump hop is a paramiko connection of its own; the next hop's connection runs inside a
``direct-tcpip`` channel of the previous one, and every hop's host key is checked strictly against
its known_hosts files (an unknown or changed key refuses the connection). Authentication is by key
(the hop's identity files, else the agent and the default keys): DJSB takes no password, so none
ends up in a run directory or a log.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import paramiko

from djsb.jobs.outage import Outage
from djsb.remote.errors import RemoteUnusable
from djsb.remote.hosts import SSHHost
from djsb.remote.reconnect import Reconnector
from djsb.transport import CommandResult, CommandTimeout, ConnectionLost

POLL_S = 0.005
T = TypeVar("T")


def _client(hop: SSHHost, sock: paramiko.Channel | None, timeout: float, role: str) -> paramiko.SSHClient:
    """A connection to ``hop`` (through ``sock``, a channel of the previous hop, if any)."""
    client = paramiko.SSHClient()
    readable = [path for path in hop.known_hosts if Path(path).is_file()]
    if not readable:
        raise RemoteUnusable(f"ssh {role} {hop.describe()}: no known_hosts file "
                             f"({', '.join(hop.known_hosts)}): its host key cannot be checked")
    for path in readable:
        client.load_host_keys(path)
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    keys = list(hop.identity_files) or None
    try:
        client.connect(hop.hostname, port=hop.port, username=hop.user, key_filename=keys,  # type: ignore[arg-type]
                       sock=sock,
                       timeout=timeout, banner_timeout=timeout, auth_timeout=timeout,
                       allow_agent=keys is None, look_for_keys=keys is None)
    except paramiko.BadHostKeyException as exc:
        client.close()
        raise RemoteUnusable(f"ssh {role} {hop.describe()}: host key changed "
                             f"(got {exc.key.get_name()} {exc.key.get_base64()[:16]}..., not the one "
                             "in known_hosts): refusing to connect") from None
    except paramiko.AuthenticationException as exc:
        client.close()
        raise RemoteUnusable(f"ssh {role} {hop.describe()}: authentication refused ({exc})") from None
    except paramiko.SSHException as exc:
        client.close()
        unknown = "not found in known_hosts" in str(exc)
        raise RemoteUnusable(f"ssh {role} {hop.describe()}: {exc}", retry=not unknown) from None
    except OSError as exc:
        client.close()
        raise RemoteUnusable(f"ssh {role} {hop.describe()}: cannot connect ({exc.strerror or exc})",
                             retry=True) from None
    return client


def connect_chain(host: SSHHost, timeout: float) -> list[paramiko.SSHClient]:
    """Connections to each ProxyJump hop and then to ``host``, each inside the previous one."""
    clients: list[paramiko.SSHClient] = []
    hops = [*host.jumps, host]
    try:
        sock = None
        for index, hop in enumerate(hops):
            role = "login node" if hop is host else "jump host"
            clients.append(_client(hop, sock, timeout, role))
            if hop is not host:
                following = hops[index + 1]
                try:
                    sock = clients[-1].get_transport().open_channel(  # type: ignore[union-attr]
                        "direct-tcpip", (following.hostname, following.port), ("127.0.0.1", 0),
                        timeout=timeout)
                except (paramiko.SSHException, OSError) as exc:
                    raise RemoteUnusable(f"ssh jump host {hop.describe()}: cannot reach "
                                         f"{following.describe()} from it ({exc})", retry=True) from None
    except BaseException:
        for client in reversed(clients):
            client.close()
        raise
    return clients


class ParamikoTransport:
    """Commands (exec channels) and files (SFTP) on ``host``, over one connection.

    ``open`` connects (a refusal is a :class:`RemoteUnusable`); a connection found dropped before a
    command is reconnected by ``reconnector`` (with back-off, the gap reported as an outage); one
    that drops while a command runs raises :class:`ConnectionLost`.
    """

    def __init__(self, host: SSHHost, *, connect_timeout: float, reconnector: Reconnector) -> None:
        self.host = host
        self.connect_timeout = connect_timeout
        self.reconnector = reconnector
        self._clients: list[paramiko.SSHClient] = []
        self._sftp: paramiko.SFTPClient | None = None
        self._stop_by: float | None = None
        self._lost_while_running = False

    def watch_outages(self, listener: Callable[[Outage], None]) -> None:
        """Tell ``listener`` of each dropped connection that was re-established."""
        self.reconnector.on_outage = listener

    def stop_by(self, deadline: float) -> None:
        """Give up on any command still running, or reconnection, at ``deadline`` (time.monotonic)."""
        self._stop_by = deadline
        self.reconnector.stop_deadline = deadline

    def open(self) -> None:
        """Connect through every hop (the first use; refusals are reported as bad input)."""
        self.close()
        self._clients = connect_chain(self.host, self.connect_timeout)

    def _transport(self, command: str) -> paramiko.Transport:
        """The live connection to the login node, reconnected first if it dropped."""
        transport = self._clients[-1].get_transport() if self._clients else None
        if transport is not None and transport.is_active():
            return transport
        reported = not self._lost_while_running  # a ConnectionLost caller records its own outage
        self._lost_while_running = False
        self.reconnector.reopen(self.open, lost_at=time.time(), command=command,
                                why="the session ended", report=reported)
        return self._clients[-1].get_transport()  # type: ignore[return-value]

    def _lost(self, command: str) -> ConnectionLost:
        self.close()
        self._lost_while_running = True
        return ConnectionLost(f"ssh {self.host.describe()}: connection lost while running: {command}")

    def run(self, command: str, timeout: float = 60.0) -> CommandResult:
        transport = self._transport(command)
        try:
            channel = transport.open_session(timeout=self.connect_timeout)
        except (paramiko.SSHException, OSError, EOFError):  # not sent: reconnect and send it
            self.close()
            channel = self._transport(command).open_session(timeout=self.connect_timeout)
        try:
            channel.exec_command(command)
            return self._collect(channel, command, timeout)
        except (paramiko.SSHException, OSError, EOFError):
            raise self._lost(command) from None

    def _collect(self, channel: paramiko.Channel, command: str, timeout: float) -> CommandResult:
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
                raise CommandTimeout(f"command timed out after {timeout:g} s on {self.host.describe()}: "
                                     f"{command}")
            time.sleep(POLL_S)
        code = channel.recv_exit_status()
        if code == -1 and not channel.get_transport().is_active():  # closed by the connection's end
            raise self._lost(command)
        channel.close()
        return CommandResult(command, code, out.decode(errors="replace"), err.decode(errors="replace"))

    def _sftp_client(self) -> paramiko.SFTPClient:
        transport = self._transport("sftp")
        if self._sftp is None or self._sftp.get_channel().closed:  # type: ignore[union-attr]
            self._sftp = paramiko.SFTPClient.from_transport(transport)
        return self._sftp  # type: ignore[return-value]

    def _files(self, work: Callable[[paramiko.SFTPClient], T]) -> T:
        """``work(sftp)`` once more on a fresh connection if the first one dropped (file writes
        and reads are safe to repeat: a write goes to a temporary name renamed into place)."""
        try:
            return work(self._sftp_client())
        except (paramiko.SSHException, EOFError):
            self.close()
            self._lost_while_running = False
            return work(self._sftp_client())

    def write_text(self, path: str, text: str) -> None:
        def write(sftp: paramiko.SFTPClient) -> None:
            with sftp.open(path + ".tmp", "w") as handle:
                handle.write(text)
            sftp.posix_rename(path + ".tmp", path)
        self._files(write)

    def read_text(self, path: str) -> str | None:
        def read(sftp: paramiko.SFTPClient) -> str | None:
            try:
                with sftp.open(path, "r") as handle:
                    return handle.read().decode(errors="replace")
            except OSError:
                return None
        return self._files(read)

    def close(self) -> None:
        if self._sftp is not None:
            self._sftp.close()
        for client in reversed(self._clients):
            client.close()
        self._clients, self._sftp = [], None
