"""Remote clusters the way users reach them: host aliases from an OpenSSH config,
ProxyJump, the OpenSSH transport over one ControlMaster, reconnection after the server killed the
session, staged apps, and the refusals that end a run with exit 2 before any job is submitted.

The pure functions are checked against OpenSSH itself (``ssh -G`` resolves the same alias) or
against arithmetic worked here; the rest runs on the real sshds of tests/sshd_plugin.py.
"""

from __future__ import annotations

import hashlib
import pwd
import shlex
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pandas as pd
import pytest
from sshd_plugin import REMOTE_USER, SHELL_MODULE, SshdPair, write_remote_experiment
from support import wait_until

from djsb.apps import SOURCE_DIR, app_sources, source_hash
from djsb.cli import main
from djsb.config import SSHConfig, load_config
from djsb.errors import ConfigError, InputError, RunError
from djsb.jobs.outage import Outage
from djsb.remote.connect import open_remote, openssh_overrides
from djsb.remote.errors import RemoteUnusable
from djsb.remote.hosts import parse_hop, resolve_host
from djsb.remote.openssh import (
    FELL_BACK,
    FORCED,
    NO_FALLBACK,
    SSH_FAILED,
    OpenSSHTransport,
    failure,
    forced_config,
    parse_effective_config,
    ssh_argv,
    ssh_options,
)
from djsb.remote.reconnect import Reconnector, backoff_delays
from djsb.remote.staging import build_command, stage_apps
from djsb.transport import ConnectionLost

ROOT = Path(__file__).resolve().parent.parent

ALIASES = """\
Host cluster
  HostName login1.example.org
  Port 2200
  User alice
  IdentityFile ~/keys/cluster_ed25519
  ProxyJump bob@bastion:2022
Host bastion
  HostName gw.example.org
  Port 2201
  IdentityFile ~/keys/bastion
Host *
  UserKnownHostsFile ~/kh/one ~/kh/two
"""


# -- pure: aliases, argv, classification, back-off, hashes ------------------------------------------


@pytest.mark.parametrize(("spec", "expected"), [
    ("bastion", (None, "bastion", None)),
    ("bob@gw.example.org:2022", ("bob", "gw.example.org", 2022)),
    ("[::1]:2222", (None, "::1", 2222)),
])
def test_proxyjump_hops(spec: str, expected: tuple[str | None, str, int | None]) -> None:
    assert parse_hop(spec) == expected


def test_proxyjump_hop_refuses_garbage() -> None:
    with pytest.raises(ConfigError, match="ProxyJump hop"):
        parse_hop("a@b:c:d")


def test_alias_resolved_as_openssh_does(tmp_path: Path) -> None:
    """OpenSSH itself (``ssh -G``) is the oracle for host name, port, user and ProxyJump."""
    config = tmp_path / "config"
    config.write_text(ALIASES)
    shown = parse_effective_config(subprocess.run(["ssh", "-G", "-F", str(config), "cluster"],
                                                  capture_output=True, text=True, check=True).stdout)
    host = resolve_host(SSHConfig(host="cluster"), ALIASES)
    assert (host.hostname, str(host.port), host.user) == (shown["hostname"], shown["port"], shown["user"])
    assert shown["proxyjump"] == "bob@bastion:2022"
    home = str(Path.home())
    assert host.identity_files == (f"{home}/keys/cluster_ed25519",)
    assert host.known_hosts == (f"{home}/kh/one", f"{home}/kh/two")
    (jump,) = host.jumps
    # the hop's own entry gives host name and key; the hop spec's user and port win over it
    assert (jump.hostname, jump.port, jump.user) == ("gw.example.org", 2022, "bob")
    assert jump.identity_files == (f"{home}/keys/bastion",)


def test_experiment_config_values_win_over_the_alias() -> None:
    host = resolve_host(SSHConfig(host="cluster", port=2999, user="carol", key_file="/k",
                                  known_hosts="/kh"), ALIASES)
    assert (host.port, host.user, host.identity_files, host.known_hosts) == (2999, "carol", ("/k",), ("/kh",))
    assert host.jumps[0].known_hosts == ("/kh",)


def test_unknown_alias_is_the_host_name_itself() -> None:
    host = resolve_host(SSHConfig(host="login.example.org"), "")
    assert (host.hostname, host.port, host.user, host.jumps) == ("login.example.org", 22, None, ())


def test_forced_config_makes_every_hop_strict(tmp_path: Path) -> None:
    """OpenSSH (``ssh -G``) reads the run's config: strict host keys and batch mode for the jump host
    too, even where the user's config relaxes them (the first value read wins)."""
    users = tmp_path / "user config"
    users.write_text(ALIASES + "Host bastion\n  StrictHostKeyChecking no\n  BatchMode no\n")
    forced = tmp_path / "forced"
    forced.write_text(forced_config(str(users), connect_timeout=7))
    for host in ("bastion", "cluster"):
        shown = parse_effective_config(subprocess.run(["ssh", "-G", "-F", str(forced), host], capture_output=True,
                                                      text=True, check=True).stdout)
        assert (shown["stricthostkeychecking"], shown["batchmode"], shown["connecttimeout"]) == ("true", "yes", "7")
    # the user's settings still arrive through the Include
    assert parse_effective_config(subprocess.run(["ssh", "-G", "-F", str(forced), "cluster"], capture_output=True,
                                                 text=True, check=True).stdout)["proxyjump"] == "bob@bastion:2022"


def test_ssh_argv_keeps_each_value_one_item() -> None:
    options = ssh_options("/cfg dir/config", [("User", "a b"), ("BatchMode", "yes")])
    argv = ssh_argv("cluster", "printf '%s' 'x y'", options)
    assert argv == ["ssh", "-F", "/cfg dir/config", "-o", "User=a b", "-o", "BatchMode=yes", "--", "cluster",
                    "printf '%s' 'x y'"]


def test_openssh_overrides_only_what_the_config_sets() -> None:
    assert openssh_overrides(SSHConfig(host="cluster")) == []
    assert openssh_overrides(SSHConfig(host="h", port=2200, user="u", key_file="/k", known_hosts="/kh")) == [
        ("Port", "2200"), ("User", "u"), ("IdentityFile", "/k"), ("IdentitiesOnly", "yes"),
        ("UserKnownHostsFile", "/kh")]


@pytest.mark.parametrize(("code", "stderr", "kind"), [
    (255, "Host key verification failed.\r\nkex_exchange_identification: Connection closed by remote host\r\n",
     "host-key"),
    (255, "root@127.0.0.1: Permission denied (publickey).\r\n", "refused"),
    (255, "ssh: connect to host 127.0.0.1 port 1: Connection refused\r\n", "unreachable"),
    (255, "Connection to 127.0.0.1 closed by remote host.\r\n", "dropped"),
    (255, "", None),  # the remote command's own exit 255
    (1, "Connection refused", None),  # a remote command that printed this and failed
])
def test_ssh_failure_kinds(code: int, stderr: str, kind: str | None) -> None:
    assert failure(code, stderr) == kind


@pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the system ssh client")
def test_a_client_whose_master_is_gone_always_says_it_fell_back(tmp_path: Path) -> None:
    """A master killed leaves its socket file, where nobody answers. The mux client then falls back
    to a login of its own over ``false`` (NO_FALLBACK): it never sends the command, and what it
    prints must say so every time, including when ``false`` ends before the key exchange line is
    printed (1 in 50 to 1 in 300 here)."""
    path = tmp_path / "master"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))  # bound, never listening: the file stays, connect is refused
    argv = ssh_argv("127.0.0.1", "echo sent", ssh_options("/dev/null", [
        *FORCED, ("ControlPath", str(path)), ("ControlMaster", "no"), NO_FALLBACK]))
    for _ in range(400):
        result = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
        assert result.returncode == SSH_FAILED and "sent" not in result.stdout
        assert FELL_BACK.search(result.stderr), result.stderr


def test_backoff_doubles_to_its_cap() -> None:
    delays = backoff_delays()
    # 0.5 doubled: 1, 2, 4, 8; 16 is past the 15 s cap, so 15 from then on
    assert [next(delays) for _ in range(7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 15.0]


def test_reconnector_backs_off_and_reports_one_outage() -> None:
    waits: list[float] = []
    outages: list[Outage] = []
    tries = iter([RemoteUnusable("down", retry=True), RemoteUnusable("down", retry=True), None])

    def connect() -> None:
        error = next(tries)
        if error is not None:
            raise error

    reconnector = Reconnector("ssh cluster", give_up_after=60, sleep=waits.append)
    reconnector.on_outage = outages.append
    reconnector.reopen(connect, lost_at=1000.0, command="squeue", why="the session ended", report=True)
    assert waits == [0.5, 1.0]
    (outage,) = outages
    # the command that found the connection gone + 2 refused reconnections = 3 failed attempts
    assert (outage.start, outage.scheduler, outage.attempts, outage.command) == (1000.0, "ssh cluster", 3,
                                                                                   "squeue")


def test_reconnector_gives_up_on_a_changed_host_key_at_once() -> None:
    waits: list[float] = []

    def connect() -> None:
        raise RemoteUnusable("host key changed")

    with pytest.raises(RunError, match="cannot reconnect: host key changed"):
        Reconnector("ssh cluster", 60, sleep=waits.append).reopen(connect, lost_at=0, command="x", why="y",
                                                                  report=True)
    assert waits == []


def test_source_hash() -> None:
    # worked by hand: the bytes hashed are name NUL length NUL content
    assert source_hash({"a": "x"}) == hashlib.sha256(b"a\x001\x00x").hexdigest()[:16]
    assert source_hash({"a": "x", "b": "y"}) == source_hash({"b": "y", "a": "x"})
    assert source_hash({"a": "xy"}) != source_hash({"a": "x", "y": ""})
    assert source_hash({"a": "x"}) != source_hash({"a": "z"})


def test_build_command_quotes_every_value() -> None:
    command = build_command(PurePosixPath("runs/apps-1 2"), ["gcc/12", "odd; rm -rf ~"])
    assert command == ("cd 'runs/apps-1 2' && module load gcc/12 'odd; rm -rf ~' && "
                       "make -C apps > build.log 2>&1 && touch built")
    assert shlex.split(command)[1] == "runs/apps-1 2"


def test_config_keys(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"""\
job_module:
  name: {SHELL_MODULE}
  ssh: {{host: cluster, transport: openssh, modules: [gcc/12, openmpi], ssh_config: ~/x}}
simulation: {{total_tasks: 1, cpus_per_task: 2, total_memory: 64MiB, exec_time: 3}}
analytics: {{total_tasks: 1, cpus_per_task: 1, total_memory: 16MiB, exec_time: 1}}
""")
    ssh = load_config(config).job_module.ssh
    assert ssh is not None and (ssh.transport, ssh.modules, ssh.port, ssh.apps_dir) == (
        "openssh", ("gcc/12", "openmpi"), None, None)
    config.write_text(config.read_text().replace("transport: openssh", "transport: putty"))
    with pytest.raises(ConfigError) as refused:
        load_config(config)
    assert refused.value.one_line().startswith(f"{config}:3: job_module.ssh.transport: expected one of paramiko, openssh, got ")


# -- live: the login node through the jump host ----------------------------------------------------

def alias(config: Path, transport: str, **more: object) -> SSHConfig:
    return SSHConfig(host="cluster", ssh_config=str(config), transport=transport, **more)  # type: ignore[arg-type]


@pytest.mark.ssh
@pytest.mark.parametrize("transport", ["paramiko", "openssh"])
def test_alias_through_the_jump_host(sshd_pair: SshdPair, tmp_path: Path, transport: str) -> None:
    config = sshd_pair.alias_config(tmp_path)
    jump_logins, target_logins = sshd_pair.jump.accepted(), sshd_pair.target.accepted()
    remote = open_remote(alias(config, transport), "test.yaml")
    try:
        for _ in range(3):
            assert remote.run("id -un").stdout == f"{REMOTE_USER}\n"
        quoted = remote.run("printf '%s|' 'a b' \"c'd\"")
        assert quoted.stdout == "a b|c'd|"
        path = f"/tmp/djsb-ssh-test-{uuid.uuid4().hex}"
        remote.write_text(path, "3\n")
        assert remote.read_text(path) == "3\n"
        assert remote.read_text(path + ".missing") is None
        remote.run(f"rm -f {shlex.quote(path)}")
    finally:
        remote.close()
    # one login on each hop for all the commands and files: the jump host was used, and nothing
    # authenticated twice (for openssh: every command went through the one ControlMaster)
    assert (sshd_pair.jump.accepted() - jump_logins, sshd_pair.target.accepted() - target_logins) == (1, 1)


@pytest.mark.ssh
@pytest.mark.parametrize("transport", ["paramiko", "openssh"])
def test_unknown_jump_host_key_is_refused(sshd_pair: SshdPair, tmp_path: Path, transport: str) -> None:
    config = sshd_pair.alias_config(tmp_path, jump_known=False)
    with pytest.raises(InputError) as refused:
        open_remote(alias(config, transport), "test.yaml")
    message = refused.value.one_line()
    assert message.startswith("test.yaml: job_module.ssh.host: ")
    assert ("not found in known_hosts" in message) if transport == "paramiko" else \
        ("Host key verification failed" in message)


@pytest.mark.ssh
@pytest.mark.parametrize("transport", ["paramiko", "openssh"])
def test_unreachable_jump_host_is_refused(sshd_pair: SshdPair, tmp_path: Path, transport: str) -> None:
    config = sshd_pair.alias_config(tmp_path, jump_port=1)  # nothing listens on port 1
    with pytest.raises(RemoteUnusable, match="Connection refused|cannot connect"):
        open_remote(alias(config, transport), "test.yaml")


@pytest.mark.ssh
@pytest.mark.parametrize(("transport", "said"), [("paramiko", "ssh login node cluster (127.0.0.1:"),
                                                 ("openssh", "REMOTE HOST IDENTIFICATION HAS CHANGED")])
def test_changed_login_node_key_behind_the_jump_is_refused(sshd_pair: SshdPair, tmp_path: Path, transport: str,
                                                           said: str) -> None:
    config = sshd_pair.alias_config(tmp_path)
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    forged = f"[127.0.0.1]:{sshd_pair.target.port} {' '.join(other.with_suffix('.pub').read_text().split()[:2])}\n"
    (tmp_path / "known_hosts").write_text(forged + sshd_pair.jump.known_hosts.read_text())
    with pytest.raises(RemoteUnusable) as refused:
        open_remote(alias(config, transport), "test.yaml")
    assert said in refused.value.message and "host key" in refused.value.message.lower()


@pytest.mark.ssh
def test_openssh_reuses_the_users_control_master(sshd_pair: SshdPair, tmp_path: Path) -> None:
    """An MFA site asks once: the user's own master (their ControlPath) carries every command, no new
    login happens, and the master is still up for the user after the run's transport closed."""
    config = sshd_pair.alias_config(tmp_path)
    socket = tmp_path / "cm"
    config.write_text(f"Host cluster\n  ControlPath {socket}\n" + config.read_text())
    users_master = subprocess.Popen(["ssh", "-F", str(config), "-o", "BatchMode=yes", "-o", "ControlMaster=yes",
                                     "-N", "cluster"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
    try:
        def master_up() -> bool:
            assert users_master.poll() is None, "the user's master exited"
            return socket.exists()
        wait_until(master_up, 30, "the user's ssh master socket")
        logins = sshd_pair.target.accepted()
        remote = open_remote(alias(config, "openssh"), "test.yaml")
        try:
            assert [remote.run(f"echo {i}").stdout for i in range(3)] == ["0\n", "1\n", "2\n"]
        finally:
            remote.close()
        assert sshd_pair.target.accepted() == logins
        assert users_master.poll() is None and socket.exists()
    finally:
        users_master.terminate()
        users_master.wait(timeout=10)


@pytest.mark.ssh
@pytest.mark.parametrize("transport", ["paramiko", "openssh"])
def test_server_killing_the_session_twice(sshd_pair: SshdPair, tmp_path: Path, remote_dir: str,
                                          transport: str) -> None:
    """Between commands the transport reconnects and reports the gap; during one it raises
    ConnectionLost (the command may have run) and reconnects on the next use."""
    config = sshd_pair.alias_config(tmp_path)
    outages: list[Outage] = []
    remote = open_remote(alias(config, transport), "test.yaml")
    remote.watch_outages(outages.append)
    try:
        assert remote.run("echo 1").stdout == "1\n"
        assert sshd_pair.target.kill_sessions() >= 1
        assert remote.run("echo 2").stdout == "2\n"
        assert [(o.scheduler, o.attempts, o.command) for o in outages] == [("ssh cluster", 1, "echo 2")]
        # the second kill lands while the command runs: once its marker file exists, not after a
        # guessed delay; the command runs until the marker is removed (at most 120 s)
        marker = REMOTE_HOME / remote_dir / "running"
        killed: list[int] = []

        def kill_once_running() -> None:
            wait_until(marker.exists, 60, "the remote command to start")
            killed.append(sshd_pair.target.kill_sessions())

        killer = threading.Thread(target=kill_once_running)
        killer.start()
        with pytest.raises(ConnectionLost):
            remote.run(f"mkdir -p {remote_dir} && touch {remote_dir}/running && "
                       f"while [ -e {remote_dir}/running ] && [ $SECONDS -lt 120 ]; do sleep 0.1; done; echo late",
                       timeout=180)
        killer.join()
        marker.unlink(missing_ok=True)  # ends the command if the lost session left it running
        assert killed and killed[0] >= 1
        assert remote.run("echo 3").stdout == "3\n"
        assert len(outages) == 1  # the caller of a lost command records that outage itself
    finally:
        remote.close()


@pytest.mark.ssh
@pytest.mark.parametrize("transport", ["paramiko", "openssh"])
def test_a_remote_command_exiting_255_is_its_own_status(sshd_pair: SshdPair, tmp_path: Path,
                                                        transport: str) -> None:
    """ssh's own failure status is also a status a command may return: with the connection up,
    it is the command's answer, not a lost connection."""
    remote = open_remote(alias(sshd_pair.alias_config(tmp_path), transport), "test.yaml")
    try:
        assert remote.run("echo out; exit 255").returncode == 255
        assert remote.run("echo up").stdout == "up\n"
    finally:
        remote.close()


@pytest.mark.ssh
def test_a_command_sent_as_the_master_ends_is_not_run_outside_it(sshd_pair: SshdPair, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The master can end between the check that it is up and the command reaching it (the
    server dropped it a moment before). The system ssh would then log in by itself and run the
    command unreported; the transport instead reconnects its master, reports the gap and sends
    the command once."""
    remote = open_remote(alias(sshd_pair.alias_config(tmp_path), "openssh"), "test.yaml")
    assert isinstance(remote, OpenSSHTransport) and remote._master is not None
    outages: list[Outage] = []
    remote.watch_outages(outages.append)
    try:
        remote._master.kill()  # its socket file stays: nobody answers on it
        remote._master.wait()
        checks = iter([True])
        up = remote._master_up
        monkeypatch.setattr(remote, "_master_up", lambda: next(checks, None) or up())
        logins = sshd_pair.target.accepted()
        assert remote.run("echo sent").stdout == "sent\n"
        assert [(o.attempts, o.command) for o in outages] == [(1, "echo sent")]
        assert sshd_pair.target.accepted() == logins + 1  # the new master's, none of its own
        assert remote.run("echo again").stdout == "again\n" and len(outages) == 1
    finally:
        remote.close()


# -- live: `djsb run` from a config that names only the alias ---------------------------------------

REMOTE_HOME = Path("/home") / REMOTE_USER


def run_config(tmp_path: Path, ssh_config: Path, remote_dir: str, extra: str = "") -> Path:
    return write_remote_experiment(tmp_path / "remote.yaml",
                                   f"host: cluster, ssh_config: {ssh_config}, remote_dir: {remote_dir}{extra}")


@pytest.fixture
def remote_dir() -> Iterator[str]:
    """A fresh directory name under the throwaway user's home, removed afterwards."""
    name = f"djsb-test-{uuid.uuid4().hex[:12]}"
    yield name
    shutil.rmtree(REMOTE_HOME / name, ignore_errors=True)


@pytest.mark.ssh
@pytest.mark.slow
@pytest.mark.parametrize("transport", ["paramiko", "openssh"])
def test_run_by_alias_stages_builds_and_fetches(sshd_pair: SshdPair, tmp_path: Path, remote_dir: str,
                                                transport: str) -> None:
    ssh_config = sshd_pair.alias_config(tmp_path)
    run_dir = tmp_path / "run"
    config = run_config(tmp_path, ssh_config, remote_dir, f", transport: {transport}")
    assert main(["run", str(config), "-o", str(run_dir)]) == 0
    jobs = pd.read_csv(run_dir / "jobs.csv")
    assert len(jobs) == 6 and (jobs["state"] == "COMPLETED").all()
    # built remotely, as the remote user, from this checkout's sources, in the directory named by their hash
    stage = REMOTE_HOME / remote_dir / f"apps-{source_hash(app_sources(SOURCE_DIR))}"
    binary = stage / "apps" / "bin" / "djsb-stream"
    assert (stage / "built").is_file() and binary.stat().st_uid == pwd.getpwnam(REMOTE_USER).pw_uid
    # the job files came back into the local run directory, as the remote side wrote them
    remote_files = REMOTE_HOME / remote_dir / "run"
    for name in ("jobs/dynamic-na1-s0-sim0.out", "control/dynamic-na1-s0-sim0.threads"):
        assert (run_dir / name).read_text() == (remote_files / name).read_text()
    sim = jobs[(jobs["stage"] == "execution") & (jobs["app"] == "simulation")].iloc[0]
    assert sim["iterations"] > 0
    # a second staging of the same sources builds nothing
    built_at = (stage / "build.log").stat().st_mtime_ns
    remote = open_remote(alias(ssh_config, "paramiko"), "test.yaml")
    try:
        again = stage_apps(remote, remote_dir, SOURCE_DIR, ())
    finally:
        remote.close()
    assert again == PurePosixPath(remote_dir) / stage.name / "apps" / "bin"
    assert (stage / "build.log").stat().st_mtime_ns == built_at


@pytest.mark.ssh
@pytest.mark.parametrize(("transport", "problem", "said"), [
    ("paramiko", "jump down", "job_module.ssh.host: ssh jump host bastion (127.0.0.1:1): cannot connect"),
    ("openssh", "jump down", "job_module.ssh.host: ssh cluster: "),
    ("paramiko", "jump key unknown", "job_module.ssh.host: ssh jump host bastion"),
    ("openssh", "jump key unknown", "Host key verification failed"),
    ("paramiko", "build fails", "job_module.ssh.modules: building the apps in "),
    ("openssh", "build fails", "job_module.ssh.modules: building the apps in "),
])
def test_refusals_end_with_one_line_and_exit_2(sshd_pair: SshdPair, tmp_path: Path, remote_dir: str,
                                               capsys: pytest.CaptureFixture[str], transport: str, problem: str,
                                               said: str) -> None:
    ssh_config = sshd_pair.alias_config(tmp_path, jump_port=1 if problem == "jump down" else None,
                                        jump_known=problem != "jump key unknown")
    extra = f", transport: {transport}" + (", modules: [djsb-no-such-module]" if problem == "build fails" else "")
    config = run_config(tmp_path, ssh_config, remote_dir, extra)
    run_dir = tmp_path / "run"
    capsys.readouterr()
    assert main(["run", str(config), "-o", str(run_dir)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"djsb: error: {config}: ") and said in lines[0], lines
    assert not run_dir.exists()  # refused before the run directory, so before any job
    assert not (REMOTE_HOME / remote_dir / "run" / "jobs").exists() or \
        not any((REMOTE_HOME / remote_dir / "run" / "jobs").iterdir())


def test_reconnector_waits_no_longer_than_a_stopping_run() -> None:
    waits: list[float] = []

    def connect() -> None:
        raise RemoteUnusable("down", retry=True)

    reconnector = Reconnector("ssh cluster", give_up_after=300, sleep=waits.append)
    reconnector.stop_deadline = time.monotonic() + 1.5
    with pytest.raises(RunError, match="not re-established"):
        reconnector.reopen(connect, lost_at=0, command="x", why="y", report=True)
    # the waits are recorded, not slept, so each is measured against the same 1.5 s left: 0.5 and 1
    # fit, the next (2) does not, and the 300 s of give_up_after never come into it
    assert waits == [0.5, 1.0]
