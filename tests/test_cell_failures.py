"""A job that did not run as asked fails its cell, which the summary leaves out with its reason and
``--resume`` does again (``--skip-failed`` keeps it failed), on the local module's real processes.

Two faults a cluster produces: a scheduler that starts a job again (a requeue after a node failure,
tests/fixtures/requeuing_module.py) and a job that completes without the bundled application's
report (its output lost). Neither may give a number in summary.csv.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from djsb.cli import main
from djsb.harness.app_output import AppOutput
from djsb.harness.job_failures import report_failure

REQUEUING = Path(__file__).parent / "fixtures" / "requeuing_module.py"
STREAM = ["{apps}/djsb-stream", "--memory", "{memory_per_task}", "--threads", "{cpus_per_task}", "{work}"]


def write_config(path: Path, module: str, analytics_command: list[str] | None = None) -> Path:
    command = f", command: {analytics_command}" if analytics_command else ""
    path.write_text(f"""\
general: {{num_of_samples: 1, sleep_min_time: 0.3, sleep_max_time: 0.5, num_of_ref_analysis: 1,
          num_of_dyn_analysis: [1], scenarios: [oversubscription, stopcont], poll_interval: 0.1, seed: 3}}
job_module: {module}
simulation: {{total_tasks: 1, cpus_per_task: 1, total_memory: 32MiB, exec_time: 2}}
analytics: {{total_tasks: 1, cpus_per_task: 1, total_memory: 16MiB, exec_time: 0.5, same_nodes_as_sim: true{command}}}
output: {{plots: false}}
""")
    return path


def cells(run_dir: Path) -> pd.DataFrame:
    return pd.read_csv(run_dir / "cells.csv", keep_default_na=False)


def test_a_requeued_job_fails_its_cell_and_resume_redoes_it(tmp_path: Path, apps_bin: Path) -> None:
    marker = tmp_path / "requeued"
    config = write_config(tmp_path / "c.yaml", f"{{name: {REQUEUING}, options: {{marker: {marker}}}}}")
    run_dir = tmp_path / "run"
    assert main(["run", str(config), "-o", str(run_dir)]) == 0
    requeued_id = marker.read_text()
    table = cells(run_dir)
    failed = table[table["status"] == "failed"]
    # the first execution cell (oversubscription) failed, naming the job and why; the next one ran
    assert list(zip(failed["stage"], failed["scenario"], strict=True)) == [("execution", "oversubscription")]
    reason = failed["reason"].iloc[0]
    assert f"(job {requeued_id}) was requeued by the scheduler (1 restart(s), BeginTime)" in reason
    assert list(table[table["stage"] == "execution"]["status"]) == ["failed", "completed"]
    jobs = pd.read_csv(run_dir / "jobs.csv", dtype={"job_id": str}, keep_default_na=False)
    row = jobs[jobs["job_id"] == requeued_id].iloc[0]
    assert row["state"] == "FAILED" and "requeued" in row["reason"]
    # no number from the failed cell: its (scenario, n_a) row has no sample, and says why
    summary = pd.read_csv(run_dir / "summary.csv", keep_default_na=False).set_index("scenario")
    assert summary.loc["oversubscription", "samples"] == 0
    assert summary.loc["oversubscription", "slowdown_a"] == ""
    assert "sample 0 failed and is left out" in summary.loc["oversubscription", "warnings"]
    assert "requeued by the scheduler" in summary.loc["oversubscription", "warnings"]
    assert summary.loc["stopcont", "samples"] == 1
    assert "requeued by the scheduler" in (run_dir / "report.html").read_text()

    # --skip-failed keeps it failed; a plain --resume does it again, exactly once
    assert main(["run", "--resume", str(run_dir), "--skip-failed"]) == 0
    assert list(cells(run_dir)["status"]) == ["completed", "completed", "failed", "completed"]
    assert main(["run", "--resume", str(run_dir)]) == 0
    table = cells(run_dir)
    assert list(zip(table["scenario"], table["status"], strict=True)) == [
        ("", "completed"), ("", "completed"), ("stopcont", "completed"), ("oversubscription", "completed")]
    assert list(pd.read_csv(run_dir / "discarded_cells.csv")["status"]) == ["failed"]
    jobs = pd.read_csv(run_dir / "jobs.csv", dtype={"job_id": str}, keep_default_na=False)
    execution = jobs[jobs["stage"] == "execution"]
    assert sorted(zip(execution["scenario"], execution["app"], strict=True)) == [
        ("oversubscription", "analytics"), ("oversubscription", "simulation"),
        ("stopcont", "analytics"), ("stopcont", "simulation")]
    assert (execution["state"] == "COMPLETED").all()
    assert requeued_id in set(pd.read_csv(run_dir / "discarded.csv", dtype={"job_id": str})["job_id"])
    summary = pd.read_csv(run_dir / "summary.csv", keep_default_na=False).set_index("scenario")
    assert summary.loc["oversubscription", "samples"] == 1
    # the redone sample is measured (a real slowdown of real processes: its value depends on what else
    # this shared machine runs, so only that there is one)
    slowdown = float(summary.loc["oversubscription", "slowdown_a"])
    assert math.isfinite(slowdown) and slowdown > 0


def test_a_job_that_completed_without_its_report_fails_its_cell(tmp_path: Path, apps_bin: Path) -> None:
    # the bundled application run through a shell that loses its output: the job completes (exit 0)
    lost = ["sh", "-c", 'exec "$@" > /dev/null', "sh", *STREAM]
    config = write_config(tmp_path / "c.yaml", "{name: local}", lost)
    run_dir = tmp_path / "run"
    assert main(["run", str(config), "-o", str(run_dir)]) == 1
    # the calibration's analytics already left no report: the run cannot fix the work of an analytics
    table = cells(run_dir)
    assert list(table["status"]) == ["failed"]
    assert "cal-s0-ana0" in table["reason"].iloc[0]
    assert "completed but 1 of its 1 task(s) left no report" in table["reason"].iloc[0]


@pytest.mark.parametrize(("output", "iterations", "expected"), [
    (AppOutput(2, 40, 2, 10.0, True), 40, ""),
    (AppOutput(1, 40, 2, 10.0, True), 40, "job completed but 1 of its 2 task(s) left no report"),
    (AppOutput(2, None, 2, None, True), None, "job completed but reported no iterations"),
    (AppOutput(2, 39, 2, 10.0, True), 40, "job completed but did 39 of its 40 iterations"),
    (AppOutput(2, 40, 2, 10.0, False), 40, "job completed but its results were not validated"),
    (AppOutput(2, 40, 2, 10.0, None), None, "job completed but its results were not validated"),
])
def test_report_failure(output: AppOutput, iterations: int | None, expected: str) -> None:
    assert report_failure("job", output, 2, iterations) == expected


def test_jobs_shown_ending_are_recorded_once_final_with_their_slowdown(tmp_path: Path, apps_bin: Path) -> None:
    # every job is first reported ended but not final (as Slurm's COMPLETING), then final: every
    # cell completes, and the execution jobs recorded once final keep their slowdown
    module = Path(__file__).parent / "fixtures" / "completing_module.py"
    config = write_config(tmp_path / "c.yaml", f"{{name: {module}}}")
    run_dir = tmp_path / "run"
    assert main(["run", str(config), "-o", str(run_dir)]) == 0
    table = cells(run_dir)
    # a loaded machine can calibrate the simulation's work short enough for it to end before its
    # analytics start: such a cell fails for that reason alone (tests/test_run_local.py), and its
    # analytics, never submitted, is not among the jobs
    for reason in table.loc[table["status"] != "completed", "reason"]:
        assert "the simulation ended before analytics 1 started" in reason
    completed = set(table.loc[(table["status"] == "completed") & (table["stage"] == "execution"), "scenario"])
    jobs = pd.read_csv(run_dir / "jobs.csv", keep_default_na=False)
    # once each (calibration 2, reference 2, two execution cells of 2, or 1 where the cell failed so),
    # every one final: COMPLETED
    assert len(jobs) == 2 + 2 + 2 * len(completed) + (2 - len(completed))
    assert jobs["job_id"].is_unique and (jobs["state"] == "COMPLETED").all()
    # each execution job's slowdown (of a completed cell) is its response over its application's
    # T_ref_alone (sec. 2.4); how close to 1 it is depends on the machine's speed:
    # bench/bench_local_slowdown.py
    execution = jobs[(jobs["stage"] == "execution") & jobs["scenario"].isin(completed)]
    t_alone = {app: jobs[(jobs["stage"] == "reference") & (jobs["app"] == app)]["exec"].astype(float).mean()
               for app in ("simulation", "analytics")}
    for _, job in execution.iterrows():
        assert float(job["slowdown"]) == pytest.approx(float(job["response"]) / t_alone[job["app"]], rel=1e-3)


def test_analytics_that_start_after_the_simulation_ended_fail_their_cell(tmp_path: Path) -> None:
    # on the virtual clock: a 1 s simulation, its analytics 5-6 s later; no scenario happened, and eq.
    # (3)-(8) would charge the simulation CPU-time it never held (stop&continue: w_s = 1 x (1 - 5) < 0)
    config = tmp_path / "late.yaml"
    config.write_text("""\
general: {num_of_samples: 1, sleep_min_time: 5, sleep_max_time: 6, num_of_ref_analysis: 1,
          num_of_dyn_analysis: [1], scenarios: [oversubscription, stopcont], seed: 3}
job_module: {name: simulated}
simulation: {total_tasks: 1, cpus_per_task: 1, total_memory: 32MiB, exec_time: 1}
analytics: {total_tasks: 1, cpus_per_task: 1, total_memory: 16MiB, exec_time: 5, same_nodes_as_sim: true}
output: {plots: false}
""")
    run_dir = tmp_path / "run"
    assert main(["run", str(config), "-o", str(run_dir)]) == 0
    table = cells(run_dir)
    execution = table[table["stage"] == "execution"]
    assert list(execution["status"]) == ["failed", "failed"]
    assert all("the simulation ended before analytics 1 started" in reason for reason in execution["reason"])
    summary = pd.read_csv(run_dir / "summary.csv", keep_default_na=False).set_index("scenario")
    assert list(summary["samples"]) == [0, 0]
    assert all("did not share its resources" in warning for warning in summary["warnings"])
