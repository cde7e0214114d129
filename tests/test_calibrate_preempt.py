"""A preempting partition, live: ``djsb calibrate`` of the 32-job KTH-SP2 window dealt over the
8-CPU ``cal_low`` partition (PriorityTier 1) and ``cal_high`` on the same nodes (PriorityTier 10),
its jobs given to two users in turn (one user's jobs go to one partition)
under ``PreemptType=preempt/partition_prio`` in each of PreemptMode CANCEL, REQUEUE and SUSPEND,GANG:
a ``cal_high`` job that does not fit takes the cores of running ``cal_low`` jobs (which, submitted
``--no-requeue`` as every job of the Slurm job module, are killed under REQUEUE too, and under
SUSPEND,GANG are suspended until their preemptors end), and under REQUEUE with the jobs submitted
``--requeue`` (``slurm.requeue``), so that the preempted jobs run again. Slurm runs twice;
the model, built from Slurm's own answers (PriorityTier from ``scontrol show partition``, the
preemption settings from ``scontrol show config``), replays run 1 and is held to the rule of the
other live calibrations (mean wait within Slurm's two runs', 10 % of run 1's either side:
compare.within_spread),
and preempts as many jobs as Slurm did, within Slurm's own difference between its runs. Minutes
each (two Slurm replays), so they run only with ``DJSB_CALIBRATE_FULL=DIR``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from slurm_plugin import SlurmCluster, slurm_settings
from support import assert_calibration_error

from djsb.calibrate.compare import within_spread
from djsb.calibrate.run import run_calibration
from djsb.calibrate.slurm_replay import replay_table, sleep_request
from djsb.calibrate.slurm_side import slurm_module
from djsb.calibrate.spec import load_calibration
from djsb.jobs.api import JobState, JobStatus
from djsb.transport import LocalTransport
from job_modules.slurm.module import SlurmJobModule

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


def preempt_calibration(slurm_cluster: SlurmCluster, out: Path, mode: str, requeue: bool = False) -> Path:
    """The calibration under PreemptMode ``mode``, its jobs submitted ``--requeue`` if ``requeue``
    (made once per output directory): its directory."""
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
  requeue: {str(requeue).lower()}
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


def requeue_file(tmp_path: Path, requeue: str | None) -> Path:
    path = tmp_path / "c.yaml"
    line = f"  requeue: {requeue}\n" if requeue is not None else ""
    path.write_text(f"seed: 1\nworkload:\n  swf: {WINDOW}\nslurm:\n  partition: oversub\n{line}")
    return path


@pytest.mark.parametrize(("requeue", "option"), [(None, "--no-requeue"), ("false", "--no-requeue"),
                                                 ("true", "--requeue")])
def test_slurm_requeue_submits_every_job_so_and_the_model_replays_it_so(tmp_path: Path, requeue: str | None,
                                                                        option: str) -> None:
    jobs = load_calibration(requeue_file(tmp_path, requeue)).jobs
    assert {job.requeue for job in jobs} == {option == "--requeue"}
    module = slurm_module("oversub", LocalTransport())
    assert isinstance(module, SlurmJobModule)
    words = shlex.split(module.get_submit_command(sleep_request(jobs[0], "/tmp/w"), requeue=bool(jobs[0].requeue)))
    assert [w for w in words if w.endswith("-requeue")] == [option]


def test_a_requeued_job_waits_from_its_first_submission() -> None:
    # job 1 was submitted at 1029.9 (sbatch returned then; Slurm's second 1029) and requeued, so Slurm
    # says Submit=1082 (batch_requeue_fini), then ran again from 1204 to 1348: its wait is 1204 - 1029.
    # Job 2, never requeued, keeps Slurm's second (1003, sbatch returned at 1003.4)
    statuses = {"101": JobStatus(JobState.COMPLETED, submit=1082, start=1204, end=1348),
                "102": JobStatus(JobState.COMPLETED, submit=1003, start=1004, end=1005)}
    table = replay_table({"101": 1, "102": 2}, statuses, 1000.0, {1: 29.9, 2: 3.4}, {1: "101", 2: "102"})
    assert table["submit"].tolist() == [29.0, 3.0]
    assert (table["start"] - table["submit"]).tolist() == [175.0, 1.0]


def test_a_requeue_that_is_no_boolean_is_one_line_naming_the_key(tmp_path: Path) -> None:
    assert_calibration_error(requeue_file(tmp_path, "sometimes"), "slurm.requeue")


@pytest.mark.slurm
@pytest.mark.slow
@pytest.mark.alone
@pytest.mark.timeout(1800)
@pytest.mark.parametrize(("mode", "requeue"), [*((mode, False) for mode in MODES),
                                               pytest.param("REQUEUE", True, id="REQUEUE-rerun")])
def test_a_preempting_partition_is_replayed_within_slurms_spread(slurm_cluster: SlurmCluster, mode: str,
                                                                  requeue: bool) -> None:
    if OUT is None:
        pytest.skip("the preemption calibrations run only with DJSB_CALIBRATE_FULL=DIR (9 minutes each)")
    name = f"preempt-{mode.split(',')[0].lower()}{'-rerun' if requeue else ''}"
    out = preempt_calibration(slurm_cluster, Path(OUT) / name, mode, requeue)
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
    if requeue:  # the preempted jobs ran again: started more than once
        stopped = [set(run.index[run["ctld_starts"] > 1]) for run in slurm]
        model_stopped = set(model.index[model["requeues"] > 0])
        assert all(set(run["state"]) == {"COMPLETED"} for run in slurm), "a job did not run to its end"
    print(f"{mode}: model vs slurm_1 {figures}; slurm_2 vs slurm_1 {own}; preempted: slurm_1 "
          f"{sorted(stopped[0])}, slurm_2 {sorted(stopped[1])}, model {sorted(model_stopped)}")
    assert stopped[0], "Slurm preempted no job: the case tests nothing"
    assert within_spread(figures["mean_wait_b"], (own["mean_wait_a"], own["mean_wait_b"])), (figures, own)
    assert abs(len(model_stopped) - len(stopped[0])) <= max(1, abs(len(stopped[1]) - len(stopped[0])))


def preempted(replay: pd.DataFrame) -> set[int]:
    """The jobs a replay preempted: those that ended PREEMPTED. The Slurm job module submits every
    job ``--no-requeue``, so under REQUEUE Slurm kills them as under CANCEL (job_mgr.c
    ``_job_requeue_op`` refuses them, preempt.c ``slurm_job_preempt`` kills them), and so does the
    model."""
    return set(replay.index[replay["state"] == "PREEMPTED"])
