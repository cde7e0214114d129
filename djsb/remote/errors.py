"""Why a remote host cannot be used: reported as bad input (exit 2) before any job is submitted."""

from __future__ import annotations

from djsb.errors import InputError


class RemoteUnusable(InputError):
    """The login node refused or could not be reached (unknown or changed host key, jump host
    down, authentication refused), or the apps did not build there. ``retry``: worth trying again
    when a connection that worked dropped (a host that is down may come back; a changed key not)."""

    def __init__(self, message: str, *, retry: bool = False, key: str = "job_module.ssh.host") -> None:
        super().__init__(message, key=key)
        self.retry = retry
