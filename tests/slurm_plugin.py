"""pytest fixtures for the real Slurm mini-cluster, natively and in Docker.

Load from tests/conftest.py with ``pytest_plugins = ["slurm_plugin"]`` (tests/ is on sys.path there).

- ``slurm_cluster``: the native mini-cluster (docker/slurm-cluster.sh through .ci/slurm.sh). A
  cluster already up (CI's .ci/run starts it) is used as is and left running; otherwise the
  fixture installs and starts it (root and apt needed: else the tests skip, saying why) and
  stops it after the session.
- ``slurm_container``: the same cluster in a container of the ``djsb/slurm`` image (docker/build.sh)
  on the user-defined network ``djsb-net``, through the ``docker`` package; removed afterwards.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import wait_until

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".ci" / "slurm.sh"
SLURM_CONF = Path(os.environ.get("SLURM_CONF", "/etc/slurm/slurm.conf"))
"""The slurm.conf of the cluster the tests use: the first mini-cluster's, or the one SLURM_CONF names
(the second one's, .ci/slurm-second.env)."""
IMAGE = "djsb/slurm"
NETWORK = "djsb-net"


@dataclass(frozen=True)
class SlurmCluster:
    """The running native mini-cluster: its node names and the script that drives it."""

    nodes: tuple[str, ...]
    script: Path = SCRIPT

    def control(self, action: str, timeout: float = 120) -> None:
        """Run ``.ci/slurm.sh ACTION`` (start, stop, restart-ctld, status); raises on failure."""
        done = subprocess.run(["bash", str(self.script), action], capture_output=True, text=True,
                              timeout=timeout, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{self.script.name} {action} failed ({done.returncode}): "
                               f"{done.stderr.strip() or done.stdout.strip()}")


def write_atomically(path: Path, text: str) -> None:
    """Replace the file ``path`` resolves to at once: a daemon re-reading it (every slurmd does on a
    reconfigure) never sees it empty or half written."""
    target = path.resolve()
    scratch = target.with_name(target.name + ".djsb-test")
    scratch.write_text(text)
    scratch.replace(target)


def with_settings(conf: str, settings: dict[str, str]) -> str:
    """slurm.conf's text with each ``Key=value`` of ``settings`` in place of the key's line, or
    appended where it has none."""
    lines = conf.splitlines()
    for key, value in settings.items():
        found = [i for i, line in enumerate(lines) if line.split("=", 1)[0].strip() == key]
        if found:
            lines[found[0]] = f"{key}={value}"
        else:
            lines.insert(next(i for i, line in enumerate(lines) if line.startswith("NodeName=")),
                         f"{key}={value}")
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def slurm_settings(cluster: SlurmCluster, settings: dict[str, str]) -> Iterator[None]:
    """slurm.conf with ``settings`` for the block, slurmctld restarted to read them (PriorityType
    is read only when slurmctld starts: priority_g_init), and restored, restarted, afterwards;
    returns once the nodes are idle again."""
    original = SLURM_CONF.read_text()
    write_atomically(SLURM_CONF, with_settings(original, settings))
    try:
        cluster.control("restart-ctld")
        wait_for_nodes()
        yield
    finally:
        write_atomically(SLURM_CONF, original)
        cluster.control("restart-ctld")
        wait_for_nodes()


def wait_for_nodes(timeout: float = 120) -> None:
    """Wait until slurmctld answers with its nodes idle (after a restart)."""
    wait_until(cluster_nodes, timeout, "slurmctld to answer with idle nodes after its restart", interval=0.5)


def has_accounting() -> bool:
    """Whether slurmdbd answers (the mini-cluster started with DJSB_SLURM_ACCOUNTING=1)."""
    return shutil.which("sacctmgr") is not None and subprocess.run(
        ["sacctmgr", "--noheader", "show", "cluster"], capture_output=True, timeout=60).returncode == 0


def sacctmgr(*args: str) -> None:
    """``sacctmgr --immediate ARGS``; one that finds nothing to do is no failure."""
    done = subprocess.run(["sacctmgr", "--immediate", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 or "Nothing" in done.stdout + done.stderr, done.stderr or done.stdout


@contextlib.contextmanager
def fair_share_accounts(accounts: dict[str, int], user: str) -> Iterator[None]:
    """``accounts`` (name -> RawShares) under root with ``user`` in each, removed afterwards."""
    for name, shares in accounts.items():
        sacctmgr("add", "account", name, f"fairshare={shares}")
        sacctmgr("add", "user", user, f"account={name}")
    try:
        yield
    finally:
        for name in accounts:
            sacctmgr("delete", "user", f"name={user}", f"account={name}")
            sacctmgr("delete", "account", f"name={name}")


class Run:
    """A `djsb run ARGS` process (this Python's djsb) whose stderr lines are collected as they come."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "djsb.cli", "run", *args], text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip())

    def wait_for_line(self, text: str, timeout: float = 120) -> None:
        def seen() -> bool:
            assert self.process.poll() is None, f"djsb exited before {text!r}:\n" + "\n".join(self.lines)
            return any(text in line for line in self.lines)
        wait_until(seen, timeout, f"{text!r} from djsb (it said:\n" + "\n".join(self.lines) + ")", interval=0.1)

    def finish(self, timeout: float = 300) -> int:
        # stderr belongs to the reader thread; stdout (the summary table) is small enough for the pipe
        self.process.wait(timeout=timeout)
        self.reader.join(timeout=5)
        assert self.process.stdout is not None
        self.process.stdout.read()
        self.process.stdout.close()
        return self.process.returncode

    def job_id(self, name: str) -> str:
        """The id of the job the run said it submitted as ``name``."""
        return next(m.group(1) for line in self.lines
                    for m in [re.search(rf"submitted {re.escape(name)} as job (\d+)$", line)] if m)

    def job_ids(self) -> set[str]:
        return {m.group(1) for line in self.lines for m in [re.search(r" as job (\d+)$", line)] if m}


def job_process_states(job_id: str) -> dict[int, str]:
    """PID -> state letter (/proc/PID/stat) of every process of the job on this host, where all the
    virtual nodes run: the descendants of its slurmstepd processes ('slurmstepd: [ID.batch]' ...).

    (scontrol listpids would do, but on a multiple-slurmd host it only looks at the first node.)
    """
    parent: dict[int, int] = {}
    state: dict[int, str] = {}
    roots: list[int] = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        pid = int(proc.name)
        parent[pid], state[pid] = int(fields[1]), fields[0]
        if cmdline.startswith(b"slurmstepd: [" + job_id.encode() + b"."):
            roots.append(pid)
    found: dict[int, str] = {}
    frontier = set(roots)
    while frontier:
        children = {pid for pid, ppid in parent.items() if ppid in frontier and pid not in found}
        found.update((pid, state[pid]) for pid in children)
        frontier = children
    return found


def cluster_nodes() -> tuple[str, ...] | None:
    """The mini-cluster's idle-capable nodes when slurmctld answers, else None."""
    if shutil.which("sinfo") is None:
        return None
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30)
        if "is UP" not in ping.stdout:
            return None
        info = subprocess.run(["sinfo", "--noheader", "--Node", "--format=%N %t", "--partition=shared"],
                              capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return None
    nodes = tuple(line.split()[0] for line in info.stdout.splitlines()
                  if line.split()[1] in ("idle", "mix", "alloc"))
    return nodes or None


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """The native Slurm mini-cluster, up; started (and stopped afterwards) if it was not."""
    nodes = cluster_nodes()
    if nodes is not None:
        yield SlurmCluster(nodes)
        return
    if os.geteuid() != 0:
        pytest.skip("the Slurm mini-cluster is not up and starting it needs root (bash .ci/slurm.sh start)")
    if shutil.which("slurmctld") is None:
        installed = subprocess.run(["bash", str(SCRIPT), "install"], capture_output=True, text=True, timeout=900)
        if installed.returncode != 0:
            pytest.skip(f"cannot install Slurm (apt unavailable?): {installed.stderr.strip()[-300:]}")
    started = subprocess.run(["bash", str(SCRIPT), "start"], capture_output=True, text=True, timeout=300)
    if started.returncode != 0:
        pytest.fail(f"bash .ci/slurm.sh start failed: {started.stderr.strip()[-500:]}")
    nodes = cluster_nodes()
    assert nodes, "the mini-cluster started but has no idle node"
    try:
        yield SlurmCluster(nodes)
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], capture_output=True, timeout=120)


def docker_client():  # noqa: ANN201 - docker.DockerClient, imported lazily
    """A client of a running Docker engine, or a skip saying why there is none."""
    docker = pytest.importorskip("docker")
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:  # the docker package raises several unrelated types here
        pytest.skip(f"no Docker engine (bash .ci/docker.sh start): {exc}")
    return client


@pytest.fixture(scope="session")
def slurm_container() -> Iterator[object]:
    """A running container of the djsb/slurm image with idle nodes; removed afterwards."""
    client = docker_client()
    import docker.errors

    try:
        client.images.get(IMAGE)
    except docker.errors.ImageNotFound:
        pytest.skip(f"no {IMAGE} image: build it with bash docker/build.sh")
    try:
        client.networks.get(NETWORK)
    except docker.errors.NotFound:
        client.networks.create(NETWORK, driver="bridge")
    container = client.containers.run(IMAGE, detach=True, network=NETWORK, hostname="djsb-slurm",
                                      name=f"djsb-slurm-test-{os.getpid()}", privileged=False)
    try:
        def all_idle() -> bool:
            code, out = container.exec_run(["sinfo", "--noheader", "--Node", "--format=%t", "--partition=shared"])
            states = out.decode().split()
            if code == 0 and states and all(state == "idle" for state in states):
                return True
            container.reload()
            if container.status != "running":
                pytest.fail(f"the Slurm container stopped: {container.logs().decode()[-800:]}")
            return False
        wait_until(all_idle, 120, "the Slurm container's nodes to be idle", interval=0.5)
        yield container
    finally:
        container.remove(force=True)
