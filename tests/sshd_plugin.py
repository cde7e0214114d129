"""pytest fixtures for the throwaway sshds of .ci/sshd.sh: a login node and a jump host on 127.0.0.1.

Loaded from tests/conftest.py (``pytest_plugins``). Both are reused when running (CI's .ci/run
starts them), else started here (root needed: else the tests skip, saying why) and stopped after
the session. DJSB_SSHD_DIR/DJSB_SSHD_PORT and DJSB_SSHD_JUMP_DIR/DJSB_SSHD_JUMP_PORT pick other
instances, as for the script.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import wait_until

from djsb.config import SSHConfig

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".ci" / "sshd.sh"
REMOTE_USER = "djsb-remote"
"""The throwaway user .ci/sshd.sh authorizes on both sshds."""
SHELL_MODULE = Path(__file__).parent / "fixtures" / "shell_module.py"


def write_remote_experiment(path: Path, ssh: str) -> Path:
    """A one-scenario experiment of a few seconds on the shell fixture module, its commands run over
    SSH as ``ssh`` (the inside of the job_module.ssh mapping, YAML flow style) says."""
    path.write_text(f"""\
general: {{num_of_samples: 1, sleep_min_time: 0.1, sleep_max_time: 0.2, num_of_ref_analysis: 1,
          num_of_dyn_analysis: 1, scenarios: [dynamic], poll_interval: 0.1}}
job_module:
  name: {SHELL_MODULE}
  ssh: {{{ssh}}}
simulation: {{total_tasks: 1, cpus_per_task: 2, total_memory: 64MiB, exec_time: 3}}
analytics: {{total_tasks: 1, cpus_per_task: 1, total_memory: 16MiB, exec_time: 0.5}}
""")
    return path


@dataclass(frozen=True)
class Sshd:
    """One running sshd: where its keys are and its port."""

    dir: Path
    port: int

    @property
    def key_file(self) -> Path:
        return self.dir / "client_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.dir / "known_hosts"

    def pid(self) -> int | None:
        try:
            pid = int((self.dir / "sshd.pid").read_text().strip())
            os.kill(pid, 0)
        except (OSError, ValueError):
            return None
        return pid

    def accepted(self) -> int:
        """How many logins it has accepted so far (its log's 'Accepted publickey' lines)."""
        log = self.dir / "sshd.log"
        return log.read_text().count("Accepted publickey") if log.is_file() else 0

    def sessions(self) -> list[int]:
        """The per-connection sshd processes (the listener's children)."""
        found = subprocess.run(["pgrep", "-P", str(self.pid())], capture_output=True, text=True)
        return [int(pid) for pid in found.stdout.split()]

    def kill_sessions(self) -> int:
        """End every connection from the server side (SIGTERM to each session's sshd); how many."""
        pids = self.sessions()
        for pid in pids:
            os.kill(pid, signal.SIGTERM)
        wait_until(lambda: not any(Path(f"/proc/{pid}").exists() for pid in pids), 10,
                   "the killed sshd sessions to exit")
        return len(pids)


@dataclass(frozen=True)
class SshdPair:
    """The login node and the jump host."""

    target: Sshd
    jump: Sshd

    def alias_config(self, directory: Path, user: str = REMOTE_USER, jump_port: int | None = None,
                     jump_known: bool = True) -> Path:
        """An OpenSSH client config in ``directory``: alias ``cluster`` (the login node, reached
        through ProxyJump ``bastion``, the jump host, on ``jump_port`` if given) with a known_hosts
        file that holds the login node's key and the jump host's when ``jump_known``."""
        known = directory / "known_hosts"
        known.write_text(self.target.known_hosts.read_text()
                         + (self.jump.known_hosts.read_text() if jump_known else ""))
        config = directory / "ssh_config"
        config.write_text(f"""\
Host cluster
  HostName 127.0.0.1
  Port {self.target.port}
  User {user}
  IdentityFile {self.target.key_file}
  ProxyJump bastion
Host bastion
  HostName 127.0.0.1
  Port {jump_port or self.jump.port}
  User {user}
  IdentityFile {self.jump.key_file}
Host *
  UserKnownHostsFile {known}
""")
        return config


def _instance(dir_var: str, default_dir: str, port_var: str, default_port: int) -> Sshd:
    return Sshd(Path(os.environ.get(dir_var, default_dir)), int(os.environ.get(port_var, default_port)))


@pytest.fixture(scope="session")
def sshd_pair() -> Iterator[SshdPair]:
    """Both sshds, started by .ci/sshd.sh when either is down."""
    pair = SshdPair(_instance("DJSB_SSHD_DIR", "/var/lib/djsb-sshd", "DJSB_SSHD_PORT", 2222),
                    _instance("DJSB_SSHD_JUMP_DIR", "/var/lib/djsb-sshd-jump", "DJSB_SSHD_JUMP_PORT", 2223))
    started = False
    if pair.target.pid() is None or pair.jump.pid() is None:
        if os.geteuid() != 0:
            pytest.skip("sshd is not running and starting it needs root (bash .ci/sshd.sh start)")
        done = subprocess.run(["bash", str(SCRIPT), "start"], capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            pytest.skip(f"cannot start sshd: {done.stderr.strip()[-300:]}")
        started = True
    yield pair
    if started:
        subprocess.run(["bash", str(SCRIPT), "stop"], timeout=60)


@pytest.fixture(scope="session")
def sshd(sshd_pair: SshdPair) -> SSHConfig:
    """The login node as root, named by host, port and key (no OpenSSH config)."""
    target = sshd_pair.target
    return SSHConfig(host="127.0.0.1", port=target.port, user="root", key_file=str(target.key_file),
                     known_hosts=str(target.known_hosts))
