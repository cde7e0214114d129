"""Throttled job arrays and dependency chains, live: ``djsb calibrate`` of the 32-job KTH-SP2 window
on the 8-CPU ``oversub`` partition with a quarter of its jobs made job arrays of 2 or 4 copies run at
most 1 or 2 at once (``sbatch --array=0-N%K``) and 30 % of them waiting for the job submitted just
before them (``--dependency=after|afterok|afterany:ID``; an array's id for a whole array), drawn
from the file's seed (djsb/calibrate/job_links.py). Slurm runs twice; the model, given the same
arrays and dependencies, replays run 1 and is held to the rule of the other live calibrations (mean
wait within Slurm's two runs', 10 % of run 1's either side: compare.within_spread). Both sides must keep what the
links mean, checked on their own times: no throttled array ever runs more tasks at once than its
throttle, and no job starts before its parent (after), or before it ended (afterok, afterany: every
task of an array). Minutes (two Slurm replays), so it runs only with ``DJSB_CALIBRATE_FULL=DIR``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from slurm_plugin import SlurmCluster

from djsb.calibrate.compare import within_spread
from djsb.calibrate.job_links import unit_id
from djsb.calibrate.run import run_calibration
from djsb.calibrate.spec import Calibration, load_calibration

WINDOW = Path(__file__).parent / "fixtures" / "calibrate" / "kth_sp2_window.swf"
OUT = os.environ.get("DJSB_CALIBRATE_FULL")
SLACK = 1.0
"""Slurm records times to the second: a start may read up to a second before an end it followed."""


def links_calibration(out: Path) -> Path:
    """The calibration file of the case, in ``out``'s parent (made once)."""
    config = out.parent / f"{out.name}.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"""\
seed: 1
workload:
  swf: {WINDOW}
  arrays: {{share: 0.25, tasks: [2, 4], throttle: [1, 2]}}
  dependencies: {{share: 0.3, kinds: [after, afterok, afterany]}}
slurm:
  partition: oversub
  runs: 2
  work_dir: /tmp/djsb-calibrate-links
  poll_interval: 2
""")
    return config


def times(replay: pd.DataFrame, column: str) -> dict[int, float]:
    return {int(str(job)): float(value) for job, value in replay[column].items()}


def units(calibration: Calibration) -> dict[int, list[int]]:
    """The job ids of each submission of the calibration, by the id a dependency names it by."""
    members: dict[int, list[int]] = {}
    for job in calibration.jobs:
        members.setdefault(unit_id(job), []).append(job.job_id)
    return members


def parent_bound(kind: str, parents: list[int], start: dict[int, float], end: dict[int, float]) -> float:
    """When a dependent waiting ``kind`` for ``parents`` (a job, or every task of an array) may start:
    once they all started (after), or all ended (afterok, afterany)."""
    return max(start[p] for p in parents) if kind == "after" else max(end[p] for p in parents)


def broken_links(calibration: Calibration, replay: pd.DataFrame) -> list[str]:
    """What in ``replay`` (index job_id; submit, start, end) breaks the calibration's arrays and
    dependencies: more tasks of a throttled array running at once than its throttle, a job started
    before its parents (all tasks of an array parent) started (after) or ended (afterok, afterany)."""
    start, end = times(replay, "start"), times(replay, "end")
    members, broken = units(calibration), []
    for job in calibration.jobs:
        if job.array is not None and job.array_task is not None and job.array_task[1] == 0:
            tasks = members[unit_id(job)]
            for t in tasks:
                running = sum(start[u] <= start[t] < end[u] - SLACK for u in tasks)
                if running > job.array[1]:
                    broken.append(f"array {unit_id(job)}: {running} tasks running at {start[t]:g} s, "
                                  f"throttle {job.array[1]}")
    for child, dependency in calibration.dependencies.items():
        for parent, kind in dependency.edges():
            bound = parent_bound(kind, members[parent], start, end)
            if start[child] < bound - SLACK:
                broken.append(f"job {child} started at {start[child]:g} s, before its {kind} parent {parent} "
                              f"at {bound:g} s")
    return broken


def held_by_links(calibration: Calibration, replay: pd.DataFrame) -> tuple[int, int]:
    """How many jobs of ``replay`` a link held: dependents submitted before their parents' bound,
    tasks of throttled arrays that started once a sibling ended (so that the case tests something)."""
    start, end, submit = times(replay, "start"), times(replay, "end"), times(replay, "submit")
    members = units(calibration)
    held = sum(submit[child] < parent_bound(kind, members[parent], start, end)
               for child, dependency in calibration.dependencies.items() for parent, kind in dependency.edges())
    throttled = sum(any(end[u] <= start[job.job_id] + SLACK for u in members[unit_id(job)] if u != job.job_id)
                    for job in calibration.jobs
                    if job.array is not None and job.array_task is not None and job.array_task[1] > 0)
    return held, throttled


@pytest.mark.slurm
@pytest.mark.slow
@pytest.mark.alone
@pytest.mark.timeout(1800)
def test_throttled_arrays_and_dependency_chains_are_replayed_within_slurms_spread(
        slurm_cluster: SlurmCluster) -> None:
    if OUT is None:
        pytest.skip("the links calibration runs only with DJSB_CALIBRATE_FULL=DIR (minutes)")
    out = Path(OUT) / "links"
    config = links_calibration(out)
    if not (out / "comparison.json").is_file():
        print(run_calibration(config, out))
    calibration = load_calibration(config)
    comparison = json.loads((out / "comparison.json").read_text())
    figures, own = comparison["model vs slurm_1"], comparison["slurm_2 vs slurm_1"]
    replays = {name: pd.read_csv(out / f"{name}.csv", index_col="job_id") for name in ("slurm_1", "slurm_2", "model")}
    print(f"model vs slurm_1 {figures}; slurm_2 vs slurm_1 {own}; held (dependencies, array tasks): "
          + ", ".join(f"{name} {held_by_links(calibration, replay)}" for name, replay in replays.items()))
    for name, replay in replays.items():
        assert len(replay) == len(calibration.jobs), name
        assert not broken_links(calibration, replay), (name, broken_links(calibration, replay))
    held, throttled = held_by_links(calibration, replays["slurm_1"])
    assert held and throttled, "no job waited for a link on Slurm: the case tests nothing"
    assert within_spread(figures["mean_wait_b"], (own["mean_wait_a"], own["mean_wait_b"])), (figures, own)
