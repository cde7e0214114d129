"""The mini-cluster script's settings: a start without the variables keeps the shape and the
accounting of the slurm.conf it last wrote, so a test restarting a killed slurmd does not shrink a
16-node cluster or drop its slurmdbd; and the munged the clusters share outlives every stop but the
last. Runs the real script (its ``settings`` and ``stop`` actions) on a state directory of the
test's own; no daemon is started."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "slurm.sh"

# the lines of a slurm.conf the script wrote for DJSB_SLURM_NODES=16 DJSB_SLURM_CPUS=2
# DJSB_SLURM_MEMORY=4096 DJSB_SLURM_ACCOUNTING=1 that the settings are read from
WRITTEN = """\
# Written by djsb slurm-cluster.sh: the DJSB mini-cluster (16 virtual nodes on vm).
AccountingStorageType=accounting_storage/slurmdbd
NodeName=DEFAULT CPUs=2 RealMemory=4096 State=UNKNOWN
NodeName=n1 NodeHostname=vm NodeAddr=127.0.0.1 Port=17001
NodeName=n16 NodeHostname=vm NodeAddr=127.0.0.1 Port=17016
"""


def settings(state: Path, **env: str) -> str:
    variables = {k: v for k, v in os.environ.items() if not k.startswith("DJSB_SLURM_")}
    done = subprocess.run(["bash", str(SCRIPT), "settings"], capture_output=True, text=True, check=True,
                          env={**variables, "DJSB_SLURM_DIR": str(state), **env})
    return done.stdout.strip()


def test_defaults_without_a_previous_conf(tmp_path: Path) -> None:
    assert settings(tmp_path) == "nodes=4 cpus=2 memory=2048 accounting=0 gpus=none"


def test_a_start_keeps_what_the_last_conf_says(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "slurm.conf").write_text(WRITTEN)
    assert settings(tmp_path) == "nodes=16 cpus=2 memory=4096 accounting=1 gpus=none"
    # the variables still win
    assert settings(tmp_path, DJSB_SLURM_NODES="4", DJSB_SLURM_ACCOUNTING="0") == \
        "nodes=4 cpus=2 memory=4096 accounting=0 gpus=none"
    (tmp_path / "etc" / "slurm.conf").write_text(WRITTEN.replace("slurmdbd", "none"))
    assert settings(tmp_path).endswith("accounting=0 gpus=none")


def test_gpus_are_remembered_and_can_be_turned_off(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "slurm.conf").write_text(
        WRITTEN.replace("RealMemory=4096 State", "RealMemory=4096 Gres=gpu:a100:2 State"))
    assert settings(tmp_path).endswith("accounting=1 gpus=a100:2")
    assert settings(tmp_path, DJSB_SLURM_GPUS="3").endswith("gpus=3")
    # set but empty: none, whatever the last slurm.conf said
    assert settings(tmp_path, DJSB_SLURM_GPUS="").endswith("gpus=none")
    (tmp_path / "etc" / "slurm.conf").write_text(WRITTEN.replace("RealMemory=4096 State", "RealMemory=4096 Gres=gpu:4 State"))
    assert settings(tmp_path).endswith("gpus=4")


def test_a_bad_gpus_value_is_one_line_naming_it(tmp_path: Path) -> None:
    variables = {k: v for k, v in os.environ.items() if not k.startswith("DJSB_SLURM_")}
    for bad in ("a100", "0", "a100:x", "gpu:a100:2"):
        done = subprocess.run(["bash", str(SCRIPT), "settings"], capture_output=True, text=True,
                              env={**variables, "DJSB_SLURM_DIR": str(tmp_path), "DJSB_SLURM_GPUS": bad})
        assert done.returncode == 2, bad
        assert done.stderr.strip().count("\n") == 0 and "DJSB_SLURM_GPUS" in done.stderr, done.stderr


def test_the_last_mini_cluster_to_stop_stops_the_munged_they_share(tmp_path: Path) -> None:
    # munged is shared by every mini-cluster of the host: a cluster's stop leaves it running while
    # another cluster is registered (it would lose its authentication mid-run), and the last one's
    # stop ends it when a mini-cluster started it. A sleep stands in for munged (its pid file).
    users, state = tmp_path / "users", tmp_path / "state"
    users.mkdir()
    (users / "started").touch()
    (users / str(state).replace("/", "%")).touch()
    (users / "%var%lib%another").touch()
    munged = subprocess.Popen(["sleep", "60"])
    (tmp_path / "munged.pid").write_text(f"{munged.pid}\n")
    variables = {k: v for k, v in os.environ.items() if not k.startswith("DJSB_SLURM_")}
    env = {**variables, "DJSB_SLURM_DIR": str(state), "DJSB_MUNGE_USERS": str(users),
           "DJSB_MUNGED_PID": str(tmp_path / "munged.pid")}
    try:
        subprocess.run(["bash", str(SCRIPT), "stop"], capture_output=True, check=True, env=env)
        assert munged.poll() is None
        assert sorted(path.name for path in users.iterdir()) == ["%var%lib%another", "started"]
        (users / "%var%lib%another").unlink()  # the other cluster stopped
        subprocess.run(["bash", str(SCRIPT), "stop"], capture_output=True, check=True, env=env)
        assert munged.wait(timeout=30) is not None
        assert list(users.iterdir()) == []
    finally:
        munged.kill()
        munged.wait()
