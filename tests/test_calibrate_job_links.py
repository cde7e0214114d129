"""Job arrays and dependencies in a calibration (djsb/calibrate/job_links.py): ``workload.arrays`` and
``workload.dependencies`` of a calibration file, drawn with its seed and checked key by key; the
sbatch options each array and dependency is submitted with (one quoted word each in the Slurm job
module's submit command); and the parser that finds each array task's own job id, on squeue's and
sacct's output captured from the mini-cluster (tests/fixtures/slurm/capture.sh). The live case is
tests/test_calibrate_links.py."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from support import assert_calibration_error

from bench.readme_numbers import LINKS_RUN, against_slurm
from djsb.calibrate import ctld_log
from djsb.calibrate.compare import Comparison, within_spread
from djsb.calibrate.job_links import array_indices, sbatch_dependency, submission_units, unit_id
from djsb.calibrate.slurm_replay import sleep_argv, sleep_request
from djsb.calibrate.slurm_side import slurm_module
from djsb.calibrate.spec import load_calibration
from djsb.model.dependency import Dependency
from djsb.transport import LocalTransport
from djsb.workloads.job import TraceJob
from job_modules.slurm.module import SlurmJobModule
from job_modules.slurm.parsers import parse_array_task_ids

WINDOW = Path(__file__).parent / "fixtures" / "calibrate" / "kth_sp2_window.swf"
SLURM = Path(__file__).parent / "fixtures" / "slurm"


def calibration_file(tmp_path: Path, workload: str, seed: int = 1) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(f"seed: {seed}\nworkload:\n  swf: {WINDOW}\n{workload}slurm: {{partition: oversub}}\n")
    return path


def test_arrays_are_copies_of_the_picked_jobs_numbered_after_the_window(tmp_path: Path) -> None:
    # 32 jobs, share 0.25: round(8.0) = 8 of them made arrays of 2 or 4 tasks
    calibration = load_calibration(calibration_file(
        tmp_path, "  arrays: {share: 0.25, tasks: [2, 4], throttle: [1, 2]}\n"))
    jobs = calibration.jobs
    units = submission_units(jobs)
    arrays = [unit for unit in units if unit[0].array_task is not None]
    assert len(units) == 32 and len(arrays) == 8
    assert {len(unit) for unit in arrays} <= {2, 4} and len(jobs) == 32 + sum(len(u) - 1 for u in arrays)
    for unit in arrays:
        first = unit[0]
        # task 0 is the picked job itself, its id the array's; the copies are the same job
        assert first.array_task == (first.job_id, 0) and unit_id(first) == first.job_id
        assert [t.array_task for t in unit] == [(first.job_id, i) for i in range(len(unit))]
        assert {(t.submit, t.cpus, t.run_time, t.requested_time, t.array) for t in unit} == \
            {(first.submit, first.cpus, first.run_time, first.requested_time, first.array)}
        assert first.array is not None and first.array[0] == first.job_id and first.array[1] in (1, 2)
        assert array_indices(unit) == f"0-{len(unit) - 1}%{first.array[1]}"
    # the copies take the ids after the window's last (32), one each, none twice
    copies = sorted(t.job_id for u in arrays for t in u[1:])
    assert copies == list(range(33, 33 + len(copies)))
    assert [j.job_id for j in jobs if j.array_task is None or j.array_task[1] == 0] == list(range(1, 33))
    # the same file, the same arrays; no throttle, no % and no limit for the model
    assert load_calibration(calibration_file(
        tmp_path, "  arrays: {share: 0.25, tasks: [2, 4], throttle: [1, 2]}\n")).jobs == jobs
    free = load_calibration(calibration_file(tmp_path, "  arrays: {share: 0.25, tasks: [3]}\n")).jobs
    assert {array_indices(u) for u in submission_units(free) if u[0].array_task} == {"0-2"}
    assert all(job.array is None for job in free)


def test_each_dependent_waits_for_the_unit_submitted_before_it(tmp_path: Path) -> None:
    calibration = load_calibration(calibration_file(
        tmp_path, "  arrays: {share: 0.25, tasks: [2]}\n  dependencies: {share: 0.5, kinds: [after, afterany]}\n"))
    units = submission_units(calibration.jobs)
    dependents = [k for k, unit in enumerate(units) if unit[0].job_id in calibration.dependencies]
    assert len(dependents) == 16  # round(0.5 x 32 units)
    assert 0 not in dependents  # the first job has nothing before it
    for k in dependents:
        parent = unit_id(units[k - 1][0])  # an array parent by its array's id: the whole array
        kinds = {calibration.dependencies[job.job_id] for job in units[k]}  # every task of an array alike
        assert len(kinds) == 1
        (dependency,) = kinds
        assert dependency.parents == (parent,) and dependency.kinds[0] in ("after", "afterany")
    assert set(calibration.dependencies) == {job.job_id for k in dependents for job in units[k]}
    # without kinds: afterok
    plain = load_calibration(calibration_file(tmp_path, "  dependencies: {share: 0.1}\n")).dependencies
    assert len(plain) == 3 and {d.kinds for d in plain.values()} == {("afterok",)}


def test_a_dependency_names_its_parents_by_their_slurm_ids() -> None:
    assert sbatch_dependency(None, {}) is None
    assert sbatch_dependency(Dependency((5,), kinds=("afterok",)), {5: "8918"}) == "afterok:8918"
    assert sbatch_dependency(Dependency((5, 7), kinds=("after", "afterany")), {5: "10", 7: "12"}) == \
        "after:10,afterany:12"


@pytest.mark.parametrize(("workload", "message"), [
    ("  arrays: {share: 1.5, tasks: [2]}\n", "at most 1"),
    ("  arrays: {share: 0.5}\n", "tasks"),
    ("  arrays: {share: 0.5, tasks: [2, 101]}\n", "task counts above 100"),
    ("  arrays: {share: 0.5, tasks: []}\n", "non-empty list of task counts"),
    ("  arrays: {share: 0.5, tasks: [2], throttle: [0]}\n", "throttle"),
    ("  dependencies: {share: 0.2, kinds: [afternotok]}\n", "kinds"),
    ("  dependencies: {share: 0.2, bogus: 1}\n", "bogus"),
    ("  at_time_limit: kill\n  dependencies: {share: 0.2}\n", "afterok with at_time_limit: kill"),
])
def test_a_bad_links_key_is_one_line_naming_it(tmp_path: Path, workload: str, message: str) -> None:
    assert_calibration_error(calibration_file(tmp_path, workload), message)


def test_the_submit_command_carries_the_array_and_the_dependency_as_one_word_each() -> None:
    calibration_job = load_calibration(Path(__file__).parent / "fixtures" / "calibrate" / "calibrate.yaml").jobs[0]
    module = slurm_module("oversub", LocalTransport())
    assert isinstance(module, SlurmJobModule)
    request = sleep_request(calibration_job, "/tmp/w")
    words = shlex.split(module.get_submit_command(request, array="0-3%2", dependency="afterok:8918"))
    assert words.count("--array=0-3%2") == 1 and words.count("--dependency=afterok:8918") == 1
    # each task writes its own output; without them, neither option
    assert any(w.startswith("--output=") and w.endswith(".%a") for w in words)
    plain = shlex.split(module.get_submit_command(request))
    assert not any(w.startswith(("--array", "--dependency")) for w in plain)


def test_array_tasks_are_known_by_their_own_ids_once_started() -> None:
    # squeue --array caught array 8918 (5 tasks, 2 at once) with tasks 0-1 completed, 2-3 running and
    # 4 pending (its id still the array's), beside plain job 8919
    squeue = parse_array_task_ids((SLURM / "squeue_array_tasks.txt").read_text())
    assert squeue == {"8918_0": "8920", "8918_1": "8921", "8918_2": "8922", "8918_3": "8923"}
    # once all ended, sacct: the last task kept the array's id
    sacct = parse_array_task_ids((SLURM / "sacct_array_tasks.txt").read_text())
    assert sacct == {**squeue, "8918_4": "8918"}


def saved_links_run(run: Path = LINKS_RUN) -> tuple[Comparison, Comparison, pd.DataFrame, pd.DataFrame]:
    """The model against the live run 1 of tests/test_calibrate_links.py (tests/fixtures/calibrate/links:
    the run with slurmctld's instants, its located passes, Slurm's answers), Slurm's run 2 against it,
    and both replays."""
    return against_slurm(run, LINKS_RUN / "calibrate.yaml")


def task_orders(calibration_jobs: list[TraceJob], replay: pd.DataFrame) -> dict[int, list[int]]:
    """Each job array's task indices in the order the replay started them (ties by index)."""
    start = replay["start"].astype(float).to_dict()
    tasks: dict[int, list[tuple[float, int]]] = {}
    for job in calibration_jobs:
        if job.array_task is not None:
            tasks.setdefault(job.array_task[0], []).append((start[job.job_id], job.array_task[1]))
    return {array: [index for _, index in sorted(started)] for array, started in tasks.items()}


def test_the_live_links_run_is_replayed_within_slurms_spread() -> None:
    # the calibration's rule (compare.within_spread: the mean wait within Slurm's two runs', 10 % of
    # run 1's either side); and Slurm started every array's tasks in index order (slurm_1.csv), as the model does
    measured, own, slurm, model = saved_links_run()
    jobs = load_calibration(LINKS_RUN / "calibrate.yaml").jobs
    assert within_spread(measured.mean_wait_b, (own.mean_wait_a, own.mean_wait_b)), (measured, own)
    assert measured.tau > 0.95 and measured.start_error_max < 5.0, measured
    in_order = {array: sorted(order) for array, order in task_orders(jobs, slurm).items()}
    assert task_orders(jobs, slurm) == in_order and task_orders(jobs, model) == in_order


def test_an_arrays_tasks_queued_at_its_one_submission_start_in_index_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the cause removed: slurmctld logs an array's submission once, under the id sbatch answered,
    # which the array's last task keeps (tests/fixtures/calibrate/links/slurmctld.log); taken as that
    # task's alone, the model has it queued before its siblings (they fall back to when sbatch
    # returned) and starts it first
    monkeypatch.setattr(ctld_log, "submitted_ids", lambda replay: replay["slurm_id"].astype(int))
    saved = pd.read_csv(LINKS_RUN / "slurm_1.csv", index_col="job_id")
    instants = ctld_log.log_instants(ctld_log.parse_ctld_log((LINKS_RUN / "slurmctld.log").read_text()), saved)
    assert instants is not None
    saved["ctld_submit"] = instants["ctld_submit"]
    for name in ("show_config.txt", "show_partition.txt", "show_node.txt", "passes_1.csv", "slurm_2.csv"):
        shutil.copy(LINKS_RUN / name, tmp_path / name)
    saved.to_csv(tmp_path / "slurm_1.csv")
    measured, _, slurm, model = saved_links_run(tmp_path)
    jobs = load_calibration(LINKS_RUN / "calibrate.yaml").jobs
    # every array whose tasks Slurm started one after another (not all at once)
    start = slurm["start"].astype(float).to_dict()
    staggered = {job.array_task[0] for job in jobs if job.array_task is not None and job.array_task[1] > 0
                 and start[job.job_id] != start[job.array_task[0]]}
    last_first = {array for array, order in task_orders(jobs, model).items() if order[0] == max(order)}
    assert staggered and last_first == staggered, task_orders(jobs, model)
    assert measured.start_error_max > 5.0, measured


def stopped_run(argv: tuple[str, ...], stop_at: float, stopped_for: float) -> float:
    """Seconds ``argv`` took, stopped (SIGSTOP to its process group, as slurmstepd stops a job's
    tasks) from ``stop_at`` seconds after its start for ``stopped_for`` seconds."""
    started = time.monotonic()
    process = subprocess.Popen(argv, start_new_session=True)
    try:
        time.sleep(stop_at)
        os.killpg(process.pid, signal.SIGSTOP)
        time.sleep(stopped_for)
        os.killpg(process.pid, signal.SIGCONT)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    return time.monotonic() - started


def test_a_calibration_job_sleeps_its_own_running_time() -> None:
    # 3 s of sleep stopped from 0.5 s for 2 s: a calibration's task waits while stopped (about 5 s in
    # all, at most the second it was stopped in lost), where a single sleep keeps its deadline and
    # ends at 3 s however long it was stopped
    assert stopped_run(sleep_argv(3), 0.5, 2.0) >= 4.0
    assert stopped_run(("sleep", "3"), 0.5, 2.0) < 4.0
    assert sleep_argv(2.5)[-1].endswith("; sleep 0.500") and "n=2;" in sleep_argv(2.5)[-1]
