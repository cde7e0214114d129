"""The mini-cluster script's settings: a start without the variables keeps the shape and the
accounting of the slurm.conf it last wrote, so a test restarting a killed slurmd does not shrink a
16-node cluster or drop its slurmdbd. Runs the real script (its ``settings`` action) on a state
directory of the test's own; no daemon is started."""

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
    assert settings(tmp_path) == "nodes=4 cpus=2 memory=2048 accounting=0"


def test_a_start_keeps_what_the_last_conf_says(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "slurm.conf").write_text(WRITTEN)
    assert settings(tmp_path) == "nodes=16 cpus=2 memory=4096 accounting=1"
    # the variables still win
    assert settings(tmp_path, DJSB_SLURM_NODES="4", DJSB_SLURM_ACCOUNTING="0") == \
        "nodes=4 cpus=2 memory=4096 accounting=0"
    (tmp_path / "etc" / "slurm.conf").write_text(WRITTEN.replace("slurmdbd", "none"))
    assert settings(tmp_path).endswith("accounting=0")
