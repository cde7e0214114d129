"""A preempting partition, live: ``djsb calibrate`` of the 32-job KTH-SP2 window dealt over the
8-CPU ``cal_low`` partition (PriorityTier 1) and ``cal_high`` on the same nodes (PriorityTier 10),
its jobs given to two users in turn (one user's jobs go to one partition)
under ``PreemptType=preempt/partition_prio`` in each of PreemptMode CANCEL, REQUEUE and SUSPEND,GANG:
a ``cal_high`` job that does not fit takes the cores of running ``cal_low`` jobs (which, submitted
``--no-requeue`` as every job of the Slurm job module, are killed under REQUEUE too, and under
SUSPEND,GANG are suspended until their preemptors end). Slurm runs twice;
the model, built from Slurm's own answers (PriorityTier from ``scontrol show partition``, the
preemption settings from ``scontrol show config``), replays run 1 and is held to the rule of the
other live calibrations (mean wait within 10 % of run 1 or of Slurm's own run-to-run difference),
and preempts as many jobs as Slurm did, within Slurm's own difference between its runs. Minutes
each (two Slurm replays), so they run only with ``DJSB_CALIBRATE_FULL=DIR``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from slurm_plugin import SlurmCluster, slurm_settings

from djsb.calibrate.run import run_calibration

WINDOW = Path(__file__).parent / "fixtures" / "calibrate" / "kth_sp2_window.swf"
OUT = os.environ.get("DJSB_CALIBRATE_FULL")
PARTITIONS = ("PartitionName=cal_low Nodes=ALL PriorityTier=1 MaxTime=INFINITE",
              "PartitionName=cal_high Nodes=ALL PriorityTier=10 MaxTime=INFINITE")
"""The preempted and the preempting partition (scontrol create), both OverSubscribe=NO: beside
``oversub`` (OverSubscribe=YES:4) a ``cal_high`` job preempts where a core is free, as a job of a
partition that does not share may not start on a node running jobs of another partition that does
(cons_common job_test.c ``_verify_node_state``, ``_is_node_busy``; djsb/model/partition_rows.py)."""
MODES = ("CANCEL", "REQUEUE", "SUSPEND,GANG")
"""PreemptMode of each case; under SUSPEND,GANG with ``DebugFlags=Gang``, so that slurmctld's log
says when the gang scheduler suspended and resumed each job (gang.c logs it at debug otherwise)."""


def preempt_calibration(slurm_cluster: SlurmCluster, out: Path, mode: str) -> Path:
    """The calibration under PreemptMode ``mode`` (made once per output directory): its directory."""
    if (out / "comparison.json").is_file():
        return out
    config = out.parent / f"{out.name}.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    swf = out.parent / "two_users.swf"
    swf.write_text(two_users(WINDOW.read_text()))
    config.write_text(f"""\
seed: 1
workload:
  swf: {swf}
slurm:
  partition: cal_low
  partitions: [cal_low, cal_high]
  runs: 2
  work_dir: /tmp/djsb-calibrate-preempt
  poll_interval: 2
""")
    settings = {"PreemptType": "preempt/partition_prio", "PreemptMode": mode,
                **({"DebugFlags": "Gang"} if "GANG" in mode else {})}
    with slurm_settings(slurm_cluster, settings), \
            preempt_partitions():
        print(run_calibration(config, out))
    return out


def two_users(swf: str) -> str:
    """The window's SWF with its jobs given to users 1 and 2 in turn (field 12: the window is one
    user's, and a calibration deals each user's jobs to one partition)."""
    lines = []
    for line in swf.splitlines():
        fields = line.split()
        if fields and not line.startswith(";"):
            fields[11] = str(1 + int(fields[0]) % 2)
            line = " ".join(fields)
        lines.append(line)
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def preempt_partitions() -> Iterator[None]:
    """:data:`PARTITIONS` made for the block and deleted afterwards, whatever happened."""
    try:
        for partition in PARTITIONS:
            subprocess.run(["scontrol", "create", *partition.split()], check=True, capture_output=True,
                           timeout=60)
        yield
    finally:
        for partition in PARTITIONS:
            subprocess.run(["scontrol", "delete", partition.split()[0]], check=False, capture_output=True,
                           timeout=60)


@pytest.mark.slurm
@pytest.mark.slow
@pytest.mark.alone
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("mode", MODES)
def test_a_preempting_partition_is_replayed_within_slurms_spread(slurm_cluster: SlurmCluster, mode: str) -> None:
    if OUT is None:
        pytest.skip("the preemption calibrations run only with DJSB_CALIBRATE_FULL=DIR (9 minutes each)")
    out = preempt_calibration(slurm_cluster, Path(OUT) / f"preempt-{mode.split(',')[0].lower()}", mode)
    comparison = json.loads((out / "comparison.json").read_text())
    figures, own = comparison["model vs slurm_1"], comparison["slurm_2 vs slurm_1"]
    slurm = [pd.read_csv(out / f"slurm_{run}.csv", index_col="job_id") for run in (1, 2)]
    model = pd.read_csv(out / "model.csv", index_col="job_id")
    stopped = [preempted(run) for run in slurm]
    model_stopped = preempted(model)
    if "GANG" in mode:
        assert all("ctld_suspended" in run for run in slurm), "slurmctld's log gave no suspensions"
        stopped = [set(run.index[run["ctld_suspended"] > 0]) for run in slurm]
        model_stopped = set(model.index[model["suspended_s"] > 0])
    print(f"{mode}: model vs slurm_1 {figures}; slurm_2 vs slurm_1 {own}; preempted: slurm_1 "
          f"{sorted(stopped[0])}, slurm_2 {sorted(stopped[1])}, model {sorted(model_stopped)}")
    assert stopped[0], "Slurm preempted no job: the case tests nothing"
    spread = abs(own["mean_wait_error"])
    assert abs(figures["mean_wait_error"]) <= max(0.10, spread), (figures, spread)
    assert abs(len(model_stopped) - len(stopped[0])) <= max(1, abs(len(stopped[1]) - len(stopped[0])))


def preempted(replay: pd.DataFrame) -> set[int]:
    """The jobs a replay preempted: those that ended PREEMPTED. The Slurm job module submits every
    job ``--no-requeue``, so under REQUEUE Slurm kills them as under CANCEL (job_mgr.c
    ``_job_requeue_op`` refuses them, preempt.c ``slurm_job_preempt`` kills them), and so does the
    model."""
    return set(replay.index[replay["state"] == "PREEMPTED"])
