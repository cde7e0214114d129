"""A Slurm run over SSH from a config that names only a host alias: the login node
reached through a ProxyJump bastion, the apps staged and built there, and the server killing the
SSH session twice mid-run without ending the run or submitting any job twice."""

from __future__ import annotations

import csv
import shutil
import subprocess
import uuid
from collections import Counter
from pathlib import Path

import pytest
from slurm_plugin import SlurmCluster
from sshd_plugin import SshdPair
from test_slurm_run import CONFIG, Run, read_jobs

from djsb.harness.ledger import SUBMITTED, SUBMITTING
from djsb.jobs.scheduler_base import TOKEN_PREFIX

pytestmark = [pytest.mark.slurm, pytest.mark.ssh, pytest.mark.slow]

def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_slurm_run_over_ssh_survives_two_killed_sessions(slurm_cluster: SlurmCluster, sshd_pair: SshdPair,
                                                         tmp_path: Path) -> None:
    remote_dir = f"djsb-test-{uuid.uuid4().hex[:12]}"  # under root's home on the login node
    ssh_config = sshd_pair.alias_config(tmp_path, user="root")
    config = tmp_path / "slurm-ssh.yaml"
    config.write_text(CONFIG.replace(
        "  options: {partition: shared, tasks_per_node: 1, time_margin: 60}\n",
        "  options: {partition: shared, tasks_per_node: 1, time_margin: 60}\n"
        f"  ssh: {{host: cluster, ssh_config: {ssh_config}, remote_dir: {remote_dir}}}\n"))
    run_dir = tmp_path / "run"
    try:
        run = Run(str(config), "-o", str(run_dir))
        run.wait_for_line("execution stage: oversubscription", timeout=300)
        first = sshd_pair.target.kill_sessions()
        run.wait_for_line("execution stage: stopcont", timeout=300)
        second = sshd_pair.target.kill_sessions()
        code = run.finish(timeout=400)
        assert code == 0, "\n".join(run.lines)
        assert first >= 1 and second >= 1

        jobs = read_jobs(run_dir)
        # the same shape as the local Slurm run (tests/test_slurm_run.py): calibration, reference,
        # 3 scenarios x (simulation + analytics), all completed
        assert len(jobs) == 2 + 2 + 3 * 2 and {job["state"] for job in jobs} == {"COMPLETED"}
        # each killed session is one recorded outage (the transport's or the retried command's)
        assert len(rows(run_dir / "outages.csv")) >= 2
        # nothing submitted twice: one ledger submission per job, and Slurm holds exactly one job per token
        ledger = rows(run_dir / "ledger.csv")
        tokens = [row["token"] for row in ledger if row["event"] == SUBMITTING]
        assert len(tokens) == len(set(tokens)) == len(jobs)
        assert Counter(row["event"] for row in ledger)[SUBMITTED] == len(jobs)
        listed = subprocess.run(["squeue", "--noheader", "--states=all", "--format=%k"], capture_output=True,
                                text=True, timeout=60, check=True).stdout.split()
        per_token = Counter(comment.removeprefix(TOKEN_PREFIX) for comment in listed)
        assert [per_token[token] for token in tokens] == [1] * len(tokens)
        # the job files came back: each job's output is in the local run directory
        assert all((run_dir / "jobs" / f"{job['name']}.out").is_file() for job in jobs)
    finally:
        shutil.rmtree(Path.home() / remote_dir, ignore_errors=True)
