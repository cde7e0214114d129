"""The transport to the login node of ``job_module.ssh``, connected.

``transport: paramiko`` (the default: nothing but Python needed) resolves the host alias from the
OpenSSH config itself; ``transport: openssh`` leaves that to the system ``ssh``, passing only the
values the experiment config sets explicitly.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from djsb.config import SSHConfig
from djsb.errors import InputError
from djsb.jobs.outage import Outage
from djsb.remote.openssh import OpenSSHTransport
from djsb.remote.reconnect import Reconnector
from djsb.remote.ssh_config_file import DEFAULT_SSH_CONFIG, read_ssh_config
from djsb.transport import CommandResult


class RemoteTransport(Protocol):
    """A transport to a login node: connectable, reconnecting, reporting its outages."""

    def open(self) -> None: ...

    def watch_outages(self, listener: Callable[[Outage], None]) -> None: ...

    def stop_by(self, deadline: float) -> None: ...

    def run(self, command: str, timeout: float = 60.0) -> CommandResult: ...

    def write_text(self, path: str, text: str) -> None: ...

    def read_text(self, path: str) -> str | None: ...

    def close(self) -> None: ...


def openssh_overrides(settings: SSHConfig) -> list[tuple[str, str]]:
    """The ``-o`` options for what the experiment config sets itself (the rest is ssh's config)."""
    options: list[tuple[str, str]] = []
    if settings.port is not None:
        options.append(("Port", str(settings.port)))
    if settings.user is not None:
        options.append(("User", settings.user))
    if settings.key_file is not None:
        options += [("IdentityFile", str(Path(settings.key_file).expanduser())), ("IdentitiesOnly", "yes")]
    if settings.known_hosts is not None:
        options.append(("UserKnownHostsFile", str(Path(settings.known_hosts).expanduser())))
    return options


def remote_transport(settings: SSHConfig) -> RemoteTransport:
    """The transport ``settings.transport`` names, not connected yet."""
    reconnector = Reconnector(f"ssh {settings.host}", settings.reconnect_for)
    if settings.transport == "openssh":
        read_ssh_config(settings.ssh_config)  # a config named but missing is refused here too
        user_config = str(Path(settings.ssh_config or DEFAULT_SSH_CONFIG).expanduser())
        return OpenSSHTransport(settings.host, user_config=user_config, overrides=openssh_overrides(settings),
                                connect_timeout=settings.connect_timeout, reconnector=reconnector)
    try:  # paramiko is the [ssh] extra: imported only when this transport is chosen
        from djsb.remote.hosts import resolve_host
        from djsb.remote.paramiko_transport import ParamikoTransport
    except ModuleNotFoundError as exc:
        if exc.name != "paramiko":
            raise
        raise InputError("the paramiko transport needs paramiko: pip install 'djsb[ssh]', or set "
                         "transport: openssh to use the system ssh", key="job_module.ssh.transport") from None
    host = resolve_host(settings, read_ssh_config(settings.ssh_config))
    return ParamikoTransport(host, connect_timeout=settings.connect_timeout, reconnector=reconnector)


def open_remote(settings: SSHConfig, source: str) -> RemoteTransport:
    """The connected transport; a refusal (host key, jump host, authentication, an unreadable
    OpenSSH config) is reported against ``source`` (the experiment config) as bad input."""
    try:
        transport = remote_transport(settings)
    except InputError as exc:
        exc.source = exc.source or source
        raise
    try:
        transport.open()
    except InputError as exc:
        transport.close()
        exc.source = exc.source or source
        raise
    return transport
