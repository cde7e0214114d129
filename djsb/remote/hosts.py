"""A host alias resolved the way OpenSSH reads ``~/.ssh/config``.

The experiment config may name only an alias (``job_module.ssh.host: cluster``): the host name, port,
user, identity files, known_hosts files and ProxyJump hops then come from the OpenSSH client config,
parsed by ``paramiko.SSHConfig``. A value given in the experiment config wins, as a command-line
option wins over ``~/.ssh/config`` for ``ssh``. Each ProxyJump hop is itself looked up in the same
config (its own ProxyJump is not followed: list every hop in the target's ProxyJump instead).
Host keys are always checked strictly, whatever ``StrictHostKeyChecking`` says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import paramiko

from djsb.config import SSHConfig
from djsb.errors import ConfigError

DEFAULT_KNOWN_HOSTS = ("~/.ssh/known_hosts",)
HOP = re.compile(r"^(?:(?P<user>[^@]+)@)?(?P<host>\[[^\]]+\]|[^:]+)(?::(?P<port>\d+))?$")
"""One ProxyJump hop: ``[user@]host[:port]`` (an IPv6 address in brackets)."""


@dataclass(frozen=True)
class SSHHost:
    """Where to connect and how: one hop of the way to a login node."""

    alias: str
    hostname: str
    port: int = 22
    user: str | None = None
    identity_files: tuple[str, ...] = ()
    known_hosts: tuple[str, ...] = DEFAULT_KNOWN_HOSTS
    jumps: tuple[SSHHost, ...] = ()

    def describe(self) -> str:
        """``alias (host:port)`` for messages (no user, no key path)."""
        where = f"{self.hostname}:{self.port}"
        return where if self.alias == self.hostname else f"{self.alias} ({where})"


def parse_hop(spec: str) -> tuple[str | None, str, int | None]:
    """``user@host:port`` of a ProxyJump hop as (user, host, port); ssh:// URIs are not accepted."""
    match = HOP.match(spec.strip())
    if match is None:
        raise ConfigError(f"cannot read ProxyJump hop {spec!r} (expected [user@]host[:port])")
    port = match["port"]
    return match["user"], match["host"].strip("[]"), int(port) if port else None


def _expand(path: str) -> str:
    return str(Path(path).expanduser())


def _files(value: str | list[str] | None, default: tuple[str, ...]) -> tuple[str, ...]:
    """A list-valued option (IdentityFile, UserKnownHostsFile) as paths with ``~`` expanded."""
    if value is None:
        return tuple(_expand(p) for p in default)
    items = value if isinstance(value, list) else value.split()
    return tuple(_expand(p) for p in items if p.lower() != "none")


def lookup(config: paramiko.SSHConfig, alias: str, *, user: str | None = None, port: int | None = None,
           identity_file: str | None = None, known_hosts: str | None = None) -> SSHHost:
    """``alias`` as OpenSSH would connect to it (without ProxyJump); explicit values win."""
    found = config.lookup(alias)
    hostname = found.get("hostname", alias)
    return SSHHost(alias=alias, hostname=hostname,
                   port=port if port is not None else int(found.get("port", 22)),
                   user=user if user is not None else found.get("user"),
                   identity_files=(_expand(identity_file),) if identity_file else
                   _files(found.get("identityfile"), ()),
                   known_hosts=(_expand(known_hosts),) if known_hosts else
                   _files(found.get("userknownhostsfile"), DEFAULT_KNOWN_HOSTS))


def resolve_host(settings: SSHConfig, config_text: str) -> SSHHost:
    """The login node of ``job_module.ssh`` with its ProxyJump hops, from the OpenSSH config text."""
    config = paramiko.SSHConfig.from_text(config_text)
    target = lookup(config, settings.host, user=settings.user, port=settings.port,
                    identity_file=settings.key_file, known_hosts=settings.known_hosts)
    jump_value = config.lookup(settings.host).get("proxyjump", "none")
    hops = [] if jump_value.lower() == "none" else [h for h in jump_value.split(",") if h.strip()]
    jumps = []
    for spec in hops:
        user, host, port = parse_hop(spec)
        jumps.append(lookup(config, host, user=user, port=port, known_hosts=settings.known_hosts))
    return SSHHost(target.alias, target.hostname, target.port, target.user, target.identity_files,
                   target.known_hosts, tuple(jumps))
