"""pytest fixture for the OpenLava cluster of .ci/openlava.sh (the LSF module's live tests).

Loaded from tests/conftest.py (``pytest_plugins``). The cluster is reused when it answers (CI's
.ci/run starts it); else it is started here when OpenLava is built (root needed); else every test
that needs it is skipped, saying why. The fixture puts OpenLava's commands on PATH and LSF_ENVDIR in
the environment of the tests and of the ``djsb run`` processes they start.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from job_modules.lsf.parsers import parse_long

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".ci" / "openlava.sh"
MASTER = "djsb-lava1"
"""The master host's network namespace, as .ci/openlava.sh names it."""


def openlava(action: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), action], capture_output=True, text=True, timeout=timeout)


@dataclass(frozen=True)
class LsfCluster:
    """The running OpenLava cluster."""

    master: str = MASTER

    def mbatchd_pid(self) -> int | None:
        """The PID of mbatchd, among the processes of the master host's namespace (None: not running)."""
        pids = subprocess.run(["ip", "netns", "pids", self.master], capture_output=True, text=True,
                              timeout=30).stdout.split()
        for pid in pids:
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() == "mbatchd":
                    return int(pid)
            except OSError:
                continue
        return None

    def kill_mbatchd(self) -> int:
        """Kill mbatchd (SIGKILL, by its PID); the master's sbatchd starts a new one. Its PID."""
        pid = self.mbatchd_pid()
        assert pid is not None, "mbatchd is not running"
        os.kill(pid, signal.SIGKILL)
        return pid


def bjobs_states(job_ids: set[str]) -> dict[str, str]:
    """STAT of each of ``job_ids`` that ``bjobs -a -w`` lists."""
    out = subprocess.run(["bjobs", "-a", "-w", "-noheader", *sorted(job_ids)], capture_output=True, text=True,
                         timeout=60).stdout
    return {fields[0]: fields[2] for fields in (line.split() for line in out.splitlines()) if len(fields) > 2}


def forgotten_by_bjobs(job_ids: set[str]) -> bool:
    """bjobs answers "Job <N> is not found" for each of ``job_ids`` (not merely nothing: a busy mbatchd)."""
    err = subprocess.run(["bjobs", "-a", *sorted(job_ids)], capture_output=True, text=True, timeout=60).stderr
    return all(f"Job <{job_id}> is not found" in err for job_id in job_ids)


def bhist_ends(job_ids: set[str]) -> dict[str, str]:
    """DONE or EXIT for each of ``job_ids`` that ended in ``bhist -l`` (mbatchd's events, which keep
    the jobs bjobs forgot after CLEAN_PERIOD)."""
    out = subprocess.run(["bhist", "-l", *sorted(job_ids)], capture_output=True, text=True, timeout=60).stdout
    return {job_id: record.stat for job_id, record in parse_long(out, time.time()).items()}


def final_states(job_ids: set[str]) -> dict[str, str]:
    """STAT of each of ``job_ids`` in bjobs, and for the ones bjobs no longer lists (the test cluster
    forgets a finished job after CLEAN_PERIOD, 30 s) how it ended in bhist."""
    states = bjobs_states(job_ids)
    forgotten = job_ids - set(states)
    return {**states, **bhist_ends(forgotten)} if forgotten else states


def clean_period() -> int:
    """CLEAN_PERIOD (seconds) of the running cluster, as ``bparams -l`` prints it."""
    out = subprocess.run(["bparams", "-l"], capture_output=True, text=True, timeout=60, check=True).stdout
    match = re.search(r"CLEAN_PERIOD = (\d+)", out)
    assert match is not None, f"bparams -l prints no CLEAN_PERIOD:\n{out}"
    return int(match.group(1))


@pytest.fixture(scope="session")
def lsf_cluster() -> LsfCluster:
    """The OpenLava cluster, up (started here when built but down), its commands on PATH."""
    if openlava("status", timeout=30).returncode != 0:
        if os.geteuid() != 0:
            pytest.skip("the OpenLava cluster is not up and starting it needs root (bash .ci/openlava.sh start)")
        started = openlava("start")
        if started.returncode != 0:
            pytest.skip(f"the OpenLava cluster cannot be started (bash .ci/openlava.sh install, then start): "
                        f"{(started.stderr or started.stdout).strip()[-300:]}")
    for assignment in shlex.split(openlava("env", timeout=30).stdout.removeprefix("export ")):
        name, _, value = assignment.partition("=")
        os.environ[name] = value.replace("$PATH", os.environ.get("PATH", ""))
    return LsfCluster()
