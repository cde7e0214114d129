"""Live: a calibration SIGKILLed while its reservation and its drained node are on Slurm leaves them
recorded in its run directory (djsb/calibrate/machine_left.py), and ``djsb calibrate --resume``
deletes the reservation and resumes the node before it goes on, saying so in its notes. Two jobs of
10 s on the two nodes the calibration leaves alone: about a minute."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from slurm_plugin import SlurmCluster

from djsb.calibrate.machine_left import LEFT_FILE, read_left
from djsb.cli import main

pytestmark = [pytest.mark.slurm, pytest.mark.slow, pytest.mark.alone]

RESERVATION = "djsb_killed_test"
REASON = "djsb killed test"
SWF = "1 0 -1 10 2 -1 -1 2 60 -1 1 1 1 -1 1 -1 -1 -1\n2 1 -1 10 2 -1 -1 2 60 -1 1 1 1 -1 1 -1 -1 -1\n"


def wait_until(done: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout:g} s")
        time.sleep(0.5)


def scontrol(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=60)


def drained(node: str) -> bool:
    shown = scontrol("show", "node", node).stdout
    return "DRAIN" in shown and REASON in shown


def test_resume_undoes_the_reservation_and_the_drain_a_killed_calibration_left(
        slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    if len(slurm_cluster.nodes) < 4:
        pytest.skip(f"needs 4 nodes (2 for the jobs, 1 drained, 1 reserved); the cluster has {slurm_cluster.nodes}")
    out_node, held_node = slurm_cluster.nodes[-2:]
    (tmp_path / "two.swf").write_text(SWF)
    config = tmp_path / "killed.yaml"
    config.write_text(
        f"workload: {{swf: {tmp_path / 'two.swf'}}}\n"
        "slurm: {partition: oversub, runs: 1, work_dir: /tmp/djsb-calibrate-killed, poll_interval: 1}\n"
        "machine:\n"
        f"  node_events: [{{at: 2, nodes: {out_node}, state: DRAIN, reason: {REASON}}}]\n"
        f"  reservations: [{{name: {RESERVATION}, nodes: {held_node}, start: 600, duration: 60, "
        "flags: IGNORE_JOBS}]\n")
    out = tmp_path / "out"
    client = subprocess.Popen([sys.executable, "-m", "djsb", "calibrate", str(config), "-o", str(out)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        try:
            wait_until(lambda: client.poll() is None and bool(read_left(out).nodes) and drained(out_node), 120,
                       "the node drained")
        finally:
            client.kill()
            client.wait(timeout=30)
        # SIGKILL: nothing undone, the record says what is left
        assert scontrol("show", "reservation", RESERVATION).returncode == 0
        assert drained(out_node)
        left = json.loads((out / LEFT_FILE).read_text())
        assert left == {"reservations": [RESERVATION], "nodes": [{"node": out_node, "reason": REASON}]}
        # the resume undoes it first, then does replay 1 again (making and undoing the changes itself)
        assert main(["calibrate", "--resume", str(out)]) == 0
        notes = json.loads((out / "comparison.json").read_text())["notes"]
        assert (f"a calibration killed outright had left its machine changes on Slurm: deleted reservation "
                f"{RESERVATION}; resumed {out_node}") in notes, notes
        assert scontrol("show", "reservation", RESERVATION).returncode != 0
        assert not drained(out_node)
        assert not (out / LEFT_FILE).exists()
    finally:  # whatever failed, the cluster as it was
        if scontrol("show", "reservation", RESERVATION).returncode == 0:
            scontrol("delete", f"reservationname={RESERVATION}")
        if drained(out_node):
            scontrol("update", f"nodename={out_node}", "state=RESUME")
