"""Shared fixtures: the real traces, the compiled apps, the Grid Engine cell, and a tiny experiment
config on the local job module."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT.parent / "shared" / "data" / "traces"
"""The Parallel Workloads Archive traces, read in place beside the repository (never copied into it)."""

# the Slurm mini-cluster, sshd and OpenLava fixtures (tests/slurm_plugin.py, tests/sshd_plugin.py, tests/lsf_plugin.py; tests/ is on sys.path as pytest's rootdir-relative
# test directory, so it is imported by its module name)
pytest_plugins = ["slurm_plugin", "sshd_plugin", "lsf_plugin"]

LIVE_FIXTURES = frozenset({"slurm_cluster", "slurm_container", "sshd", "sshd_pair", "sge_cell", "lsf_cluster"})
"""Fixtures of this machine's shared daemons: the Slurm mini-cluster, the Slurm container, sshd, the
Grid Engine cell and the OpenLava cluster."""
LIVE_MARKERS = ("slurm", "ssh", "docker")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of a shared daemon ``live`` (before ``-m`` selects), so that ``make test`` runs
    them one after another in one pytest (they share the cluster's nodes, its accounting and its
    slurm.conf, which some of them change) beside a second pytest running all the others."""
    for item in items:
        if LIVE_FIXTURES & set(getattr(item, "fixturenames", ())) or \
                any(item.get_closest_marker(name) for name in LIVE_MARKERS):
            item.add_marker(pytest.mark.live)


@pytest.fixture(scope="session")
def traces() -> Path:
    """The directory of the real traces; a test that needs it is skipped, with the reason, on a
    clone that has no ../shared/data/traces beside it."""
    if not TRACES.is_dir():
        pytest.skip(f"real traces: ../shared/data/traces not found beside the repository ({TRACES})")
    return TRACES


@pytest.fixture(scope="session")
def trace(request: pytest.FixtureRequest) -> Callable[[str], Path]:
    """``trace(name)``: the path of one real trace file, skipping the test when ``traces`` is absent
    or that file is missing. The check is made at the call, so a test that needs a trace only in some
    cases runs the others."""
    def named(name: str) -> Path:
        path = request.getfixturevalue("traces") / name
        if not path.is_file():
            pytest.skip(f"real traces: {name} not found in {path.parent}")
        return path
    return named


@pytest.fixture(scope="session")
def apps_bin() -> Path:
    """apps/bin with djsb-stream built by the project's Makefile (the real program, never a stand-in)."""
    if shutil.which("gcc") is None or shutil.which("make") is None:
        pytest.skip("gcc/make not installed: cannot build apps/djsb-stream")
    subprocess.run(["make", "-C", str(ROOT / "apps")], check=True, capture_output=True, timeout=300)
    return ROOT / "apps" / "bin"


@pytest.fixture(scope="session", autouse=True)
def built_apps() -> None:
    """Build apps/bin for every test when a compiler is here: reading a run config checks that its
    command's program exists, the bundled djsb-stream by default."""
    if shutil.which("gcc") is not None and shutil.which("make") is not None:
        subprocess.run(["make", "-C", str(ROOT / "apps")], check=True, capture_output=True, timeout=300)


SGE_ENV = {"SGE_ROOT": "/var/lib/gridengine", "SGE_CELL": "default"}


def _sge(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **SGE_ENV})


@pytest.fixture(scope="session")
def sge_cell() -> Iterator[None]:
    """The one-host Grid Engine cell, started by .ci/sge.sh when it is installed but down."""
    if shutil.which("qsub") is None:
        pytest.skip("Grid Engine is not installed (bash .ci/sge.sh install)")
    if _sge("bash", str(ROOT / ".ci" / "sge.sh"), "status").returncode != 0:
        started = _sge("bash", str(ROOT / ".ci" / "sge.sh"), "start", timeout=150)
        if started.returncode != 0:
            pytest.skip(f"the Grid Engine cell cannot be started: {started.stderr.strip()[-300:]}")
    os.environ.update(SGE_ENV)
    yield


# The analytics come 0.1-0.2 s after the simulation started, a small part of its exec_time: the
# calibration that fixed its work may have run under a load the execution stage no longer has, and the
# bundled app's OpenMP threads ran 3.9x slower beside 3 busy loops than alone (measured), so the
# simulation may do its work in a fraction of exec_time. A later analytics found it ended, in one CI run.
TINY_CONFIG = """\
general:
  num_of_samples: 1
  sleep_min_time: 0.1
  sleep_max_time: 0.2
  num_of_ref_analysis: 1
  num_of_dyn_analysis: [1]
  scenarios: [oversubscription, stopcont, dynamic]
  seed: 7
job_module: {name: local}
simulation: {total_tasks: 1, cpus_per_task: 2, total_memory: 96MiB, exec_time: 3}
analytics: {total_tasks: 1, cpus_per_task: 1, total_memory: 24MiB, exec_time: 1, same_nodes_as_sim: true}
"""


@pytest.fixture
def tiny_config(tmp_path: Path) -> Path:
    """A three-scenario experiment of about 20 s on the local module."""
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_CONFIG)
    return path


def pytest_runtest_setup(item: pytest.Item) -> None:  # LEAD'S LOCAL GUARD, NOT TO BE COMMITTED
    if item.get_closest_marker("live"):
        pytest.skip("the live daemons are busy with the lead's recording: live tests are skipped in this worktree")
