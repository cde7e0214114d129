"""The paramiko SSH transport against a real sshd on 127.0.0.1 (tests/sshd_plugin.py)."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from sshd_plugin import write_remote_experiment

from djsb.cli import main
from djsb.config import SSHConfig
from djsb.errors import InputError
from djsb.remote.connect import open_remote
from djsb.transport import CommandTimeout

pytestmark = pytest.mark.ssh


def test_run_returns_output_and_status(sshd: SSHConfig) -> None:
    transport = open_remote(sshd, "test.yaml")
    try:
        result = transport.run("echo out; echo err >&2; exit 3")
        assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
        quoted = transport.run("printf '%s|' 'a b' \"c'd\"")
        assert quoted.stdout == "a b|c'd|"
    finally:
        transport.close()


def test_timeout(sshd: SSHConfig) -> None:
    transport = open_remote(sshd, "test.yaml")
    try:
        with pytest.raises(CommandTimeout):
            transport.run("sleep 5", timeout=0.5)
        assert transport.run("echo still-usable").stdout == "still-usable\n"
    finally:
        transport.close()


def test_files_through_sftp(sshd: SSHConfig, tmp_path: Path) -> None:
    transport = open_remote(sshd, "test.yaml")
    try:
        path = str(tmp_path / "control.threads")
        transport.write_text(path, "3\n")
        assert Path(path).read_text() == "3\n"
        assert transport.read_text(path) == "3\n"
        assert transport.read_text(str(tmp_path / "missing")) is None
    finally:
        transport.close()


def test_unknown_host_key_is_refused(sshd: SSHConfig, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(InputError, match="not found in known_hosts"):
        open_remote(replace(sshd, known_hosts=str(empty)), "test.yaml")


def test_changed_host_key_is_refused(sshd: SSHConfig, tmp_path: Path) -> None:
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[127.0.0.1]:{sshd.port} {' '.join(other.with_suffix('.pub').read_text().split()[:2])}\n")
    with pytest.raises(InputError, match="host key changed"):
        open_remote(replace(sshd, known_hosts=str(wrong)), "test.yaml")


def test_benchmark_over_ssh(sshd: SSHConfig, tmp_path: Path, apps_bin: Path) -> None:
    remote = tmp_path / "remote"
    config = write_remote_experiment(tmp_path / "ssh.yaml", (
        f"host: 127.0.0.1, port: {sshd.port}, user: root, key_file: {sshd.key_file}, "
        f"known_hosts: {sshd.known_hosts}, remote_dir: {remote}, apps_dir: {apps_bin}"))
    run_dir = tmp_path / "run"
    assert main(["run", str(config), "-o", str(run_dir)]) == 0
    jobs = pd.read_csv(run_dir / "jobs.csv")
    assert len(jobs) == 6 and (jobs["state"] == "COMPLETED").all()
    # job output and control files were written on the "remote" side and read back over SFTP
    assert (remote / "run" / "jobs" / "dynamic-na1-s0-sim0.out").is_file()
    assert (remote / "run" / "control" / "dynamic-na1-s0-sim0.threads").read_text() in ("1\n", "2\n")
    sim = jobs[(jobs["stage"] == "execution") & (jobs["app"] == "simulation")].iloc[0]
    assert sim["threads_min"] == 1 and sim["iterations"] > 0
