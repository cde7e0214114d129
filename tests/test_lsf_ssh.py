"""`djsb run` of the LSF module over SSH: the OpenLava cluster of .ci/openlava.sh driven from its
login node (the sshd of .ci/sshd.sh, reached through its ProxyJump bastion) as the unprivileged user
djsb-remote, whose shells find OpenLava's commands and LSF_ENVDIR through the cluster's profile.lsf,
sourced from its ~/.bashrc as a site's login node does (`bash .ci/openlava.sh login USER`). The
reference and execution stages run end to end, stop&continue through bstop/bresume, and no job is
left behind. Without the cluster or sshd the test is skipped, saying why."""

from __future__ import annotations

import csv
import json
import pwd
import re
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from lsf_plugin import SCRIPT, LsfCluster, final_states
from slurm_plugin import Run
from sshd_plugin import REMOTE_USER, SshdPair
from test_lsf_live import CONFIG

from job_modules.lsf.parsers import unwrapped

pytestmark = [pytest.mark.ssh, pytest.mark.slow]

OPTIONS = "  options: {queue: normal, oversubscribe_queue: shared, memory_margin: 512, time_margin: 60}\n"


def app_report(path: Path) -> dict[str, Any]:
    """The JSON report djsb-stream printed into a job's output (one task)."""
    reports = [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]
    assert len(reports) == 1, path.read_text()
    return reports[0]


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture
def lsf_login(lsf_cluster: LsfCluster, sshd_pair: SshdPair) -> Path:
    """The login user's home, its ~/.bashrc sourcing the cluster's profile.lsf first (what a site's
    login node does for LSF; ssh's remote commands run in a non-interactive bash, which reads
    ~/.bashrc and no profile)."""
    done = subprocess.run(["bash", str(SCRIPT), "login", REMOTE_USER], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        pytest.skip(f"cannot give {REMOTE_USER} OpenLava's environment (bash .ci/openlava.sh login "
                    f"{REMOTE_USER}): {(done.stderr or done.stdout).strip()[-300:]}")
    return Path(pwd.getpwnam(REMOTE_USER).pw_dir)


def test_lsf_run_over_ssh_as_the_login_user(lsf_login: Path, sshd_pair: SshdPair, tmp_path: Path) -> None:
    remote_dir = f"djsb-test-{uuid.uuid4().hex[:12]}"  # under the login user's home
    ssh_config = sshd_pair.alias_config(tmp_path)  # alias cluster: the login node as djsb-remote
    config = tmp_path / "lsf-ssh.yaml"
    assert OPTIONS in CONFIG
    config.write_text(CONFIG.replace(
        OPTIONS, OPTIONS + f"  ssh: {{host: cluster, ssh_config: {ssh_config}, remote_dir: {remote_dir}}}\n"))
    run_dir = tmp_path / "run"
    try:
        run = Run(str(config), "-o", str(run_dir))
        code = run.finish(timeout=600)
        assert code == 0, "\n".join(run.lines)

        cells = read_csv(run_dir / "cells.csv")
        assert sorted((c["stage"], c["scenario"], c["status"]) for c in cells) == [
            ("calibration", "", "completed"), ("execution", "oversubscription", "completed"),
            ("execution", "stopcont", "completed"), ("reference", "", "completed")]
        jobs = read_csv(run_dir / "jobs.csv")
        # calibration, reference, 2 scenarios x (simulation + analytics): every job completed on a host
        # of the cluster, with LSF's own times
        assert len(jobs) == 8 and {j["state"] for j in jobs} == {"COMPLETED"}, jobs
        assert all(j["nodes"].startswith("djsb-lava") and j["times_source"] == "scheduler" for j in jobs), jobs
        assert all((run_dir / "jobs" / f"{j['name']}.out").is_file() for j in jobs)  # output fetched back

        # stop&continue: bstop before the analytics was submitted, bresume once it had ended, so the
        # simulation was stopped for about the analytics' time (its wait and the polls around it)
        stopcont = {j["app"]: j for j in jobs if j["scenario"] == "stopcont"}
        sim, ana = stopcont["simulation"], stopcont["analytics"]
        assert ana["nodes"] == sim["nodes"], stopcont
        suspended = float(sim["suspended_s"])
        assert float(ana["exec"]) - 1 <= suspended <= float(ana["response"]) + 5, stopcont
        # and it did not progress while stopped: the program's own report (fetched back) shows one
        # iteration that lasted the stop, and the same work as its reference run. The stop's length is the
        # harness's clock from bstop to bresume; sbatchd delivers both signals well within a second (the
        # longest iteration matched it to 0.02 s in three runs here). The run's length is no evidence on
        # this shared machine: the same 295 iterations took 4.66 s alone and 3.94 s around the stop.
        reference = next(j for j in jobs if j["stage"] == "reference" and j["app"] == "simulation")
        report, reference_report = (app_report(run_dir / "jobs" / f"{job['name']}.out") for job in (sim, reference))
        assert report["max_iteration_s"] == pytest.approx(suspended, abs=1.0), (report, sim)
        assert report["iterations"] == reference_report["iterations"], (report, reference_report)

        # the jobs were the login user's (its commands ran on the login node, not here as root),
        # and LSF holds none of them unfinished
        job_ids = {j["job_id"] for j in jobs} | run.job_ids()
        shown = subprocess.run(["bhist", "-l", *sorted(job_ids)], capture_output=True, text=True, timeout=60).stdout
        owners = {line.split(">", 1)[0].removeprefix("Job Id <"): re.search(r"User <([^>]*)>", line)
                  for line in unwrapped(shown) if line.startswith("Job Id <")}
        assert {job_id: m and m.group(1) for job_id, m in owners.items()} == dict.fromkeys(job_ids, REMOTE_USER)
        assert set(final_states(job_ids).values()) == {"DONE"}, final_states(job_ids)
    finally:
        shutil.rmtree(lsf_login / remote_dir, ignore_errors=True)
