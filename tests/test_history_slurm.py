"""``djsb history`` end to end on the live mini-cluster: a fresh history is recorded (200 jobs of 1-2
CPUs sleeping 1-5 s in partition ``oversub``, 4 nodes x 2 CPUs, so they queue and Slurm backfills;
one in ten waits for another job's end, four are an array throttled to two at a time), dumped by
sacct with the documented format, and replayed offline with the cluster's own slurm.conf.

The recorded side is checked against scontrol's own record of each job (StartTime, SubmitTime in
Unix seconds: another command than the sacct dump the reader parses); the replay is checked by its
invariants (every job replayed, none started before its submission) and its figures are printed.
No accuracy bar is asserted here: how far a replay may fall from a record is Slurm's own run-to-run
spread on the same history, which tests/test_history_ground_truth.py measures on the committed
histories of bench/record_history.py.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from slurm_plugin import SLURM_CONF, SlurmCluster, has_accounting
from support import wait_until

from djsb.cli import main
from djsb.workloads.sacct_columns import SACCT_FORMAT

# `alone`: the record must hold this test's jobs only (the replay knows nothing else), so it runs
# where no other test submits jobs: on the calibrations' cluster in `make test`.
pytestmark = [pytest.mark.slurm, pytest.mark.slow, pytest.mark.alone]

JOBS = 200
"""Jobs recorded: 196 single jobs and an array of 4 tasks."""



def sbatch(*options: str) -> int:
    done = subprocess.run(["sbatch", "--parsable", "--partition=oversub", "--output=/dev/null", *options],
                          capture_output=True, text=True, timeout=60, check=True)
    return int(done.stdout.strip().split(";")[0].split("_")[0])


def scontrol_times(job_id: int) -> list[tuple[int, int, int]]:
    """(JobId, SubmitTime, StartTime) of a job (each task of an array), in Unix seconds."""
    done = subprocess.run(["scontrol", "-o", "show", "job", str(job_id)], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "SLURM_TIME_FORMAT": "%s"}, check=True)
    found = []
    for line in done.stdout.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        found.append((int(fields["JobId"]), int(fields["SubmitTime"]), int(fields["StartTime"])))
    return found


def test_a_fresh_history_replayed_offline(slurm_cluster: SlurmCluster, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    if not has_accounting():
        pytest.skip("slurmdbd is not up (start the mini-cluster with DJSB_SLURM_ACCOUNTING=1)")
    draw = random.Random(7)
    ids: list[int] = []
    for index in range(JOBS - 4):
        extra = [f"--dependency=afterany:{ids[index - 5]}"] if index % 10 == 9 else []
        ids.append(sbatch(f"--cpus-per-task={draw.choice((1, 1, 2))}", "--time=1", "--mem-per-cpu=100",
                          *extra, f"--wrap=sleep {draw.randint(1, 5)}"))
    ids.append(sbatch("--array=1-4%2", "--cpus-per-task=1", "--time=1", "--mem-per-cpu=100", "--wrap=sleep 3"))
    try:
        replay_fresh_history(ids, tmp_path, capsys)
    finally:  # a test that fails or is interrupted leaves no job of its own behind
        subprocess.run(["scancel", *map(str, ids)], capture_output=True, timeout=60)


def replay_fresh_history(ids: list[int], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Wait for the recorded jobs, dump them with sacct, replay them and check the replay."""
    wait_until(lambda: subprocess.run(["squeue", "--noheader", "--jobs", ",".join(map(str, ids))],
                                      capture_output=True, text=True, timeout=60).stdout.strip() == "",
               600, "the recorded jobs to end")
    # slurmdbd records a job's end a moment after squeue forgets it
    def dump() -> str:
        return subprocess.run(["sacct", "-a", "-X", "-P", f"--format={SACCT_FORMAT}", "--jobs",
                               ",".join(map(str, ids))], capture_output=True, text=True, timeout=60,
                              check=True).stdout
    text = wait_until(lambda: (lambda out: out if out.count("COMPLETED") == JOBS else None)(dump()), 120,
                      f"sacct to record the {JOBS} jobs' ends")
    (tmp_path / "dump.txt").write_text(text)
    out = tmp_path / "history"
    assert main(["history", str(tmp_path / "dump.txt"), "--slurm-conf", str(SLURM_CONF), "--window", "30",
                 "--step", "5", "-o", str(out)]) == 0
    print(capsys.readouterr().out)
    errors = pd.read_csv(out / "errors.csv").set_index("job_id")
    times = [t for job_id in ids for t in scontrol_times(job_id)]
    assert len(times) == JOBS and set(errors.index) == {job_id for job_id, _, _ in times}
    # the replay's clock counts from a multiple of bf_resolution before the first submission: the
    # recorded starts are scontrol's, counted from the replay's first submission as from scontrol's
    origin = min(submit for _, submit, _ in times)
    recorded = {job_id: float(start - origin) for job_id, _, start in times}
    assert (errors["recorded_start"] - errors["submit"].min()).to_dict() == recorded
    assert errors["recorded_pass"].isin(("main", "backfill")).all()
    assert (errors["simulated_start"] >= errors["submit"]).all()
    summary = pd.read_csv(out / "summary.csv").set_index(["group_by", "group"]).loc[("all", "all")]
    assert summary["not_started"] == 0
    print(summary.to_dict())
    # again given slurmctld's log: every job timed by it, its starts to the millisecond within the
    # second scontrol gives, counted from the first submission's whole second (the log stamps a
    # start a moment after slurmctld set it: 50 ms allowed past that second)
    log = re.search(r"^SlurmctldLogFile=(\S+)", SLURM_CONF.read_text(), re.MULTILINE)
    assert log is not None
    logged = tmp_path / "history-log"
    assert main(["history", str(tmp_path / "dump.txt"), "--slurm-conf", str(SLURM_CONF), "--slurmctld-log",
                 log.group(1), "--window", "30", "--step", "5", "-o", str(logged)]) == 0
    print(capsys.readouterr().out)
    # every start and end is logged; an array's later tasks have no submission line of their own
    assert (f"the starts and run times of {JOBS} of {JOBS} jobs to the millisecond ({JOBS - 3} of them with "
            "their submission)") in (logged / "notes.txt").read_text()
    timed = pd.read_csv(logged / "errors.csv").set_index("job_id")
    first = timed["submit"].min()
    for job_id, start in recorded.items():
        assert -0.05 <= timed.loc[job_id, "recorded_start"] - first - start + (first % 1) < 1.05, job_id
    assert (timed["simulated_start"] >= timed["submit"]).all()
