"""The OpenSSH client config file (``~/.ssh/config`` unless ``job_module.ssh.ssh_config`` names one):
where it is and its text. Both transports read it; this module needs no SSH library, so the
``openssh`` transport works without paramiko.
"""

from __future__ import annotations

from pathlib import Path

from djsb.errors import ConfigError

DEFAULT_SSH_CONFIG = "~/.ssh/config"


def read_ssh_config(path: str | None) -> str:
    """The OpenSSH client config's text: ``path``, else ~/.ssh/config ('' when there is none)."""
    file = Path(path or DEFAULT_SSH_CONFIG).expanduser()
    try:
        return file.read_text()
    except FileNotFoundError:
        if path is None:
            return ""
        raise ConfigError(f"no OpenSSH config file {file}", key="job_module.ssh.ssh_config") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {file}: {exc.strerror}", key="job_module.ssh.ssh_config") from None
