"""What the calibration and the reference stage measured (paper 001 sec. 2.4), read from jobs.csv.

Calibration: the iterations each application did alone in its ``exec_time`` become its fixed work in
both stages. Reference stage: T_ref_alone of each application is the mean execution time of its
completed jobs. Jobs of failed cells do not count.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import PurePath

from djsb.errors import RunError
from djsb.harness.rundir import RunDirectory, row_cell
from djsb.jobs import JobState

APPS = ("simulation", "analytics")


@dataclass(frozen=True)
class Reference:
    """T_ref_alone and the work amount of each application, from the reference stage."""

    t_alone: dict[str, float]
    iterations: dict[str, int | None]


def completed_rows(run: RunDirectory, stage: str, app: str, jobs_dir: PurePath) -> list[dict[str, str]]:
    """The rows of ``app``'s completed jobs of ``stage``, from cells that did not fail; none is a
    RunError pointing at the jobs' output in ``jobs_dir`` and at cells.csv."""
    failed = run.failed_cells()
    rows = [r for r in run.job_rows() if r["stage"] == stage and r["app"] == app
            and r["state"] == JobState.COMPLETED.value and row_cell(r) not in failed]
    if not rows:
        raise RunError(f"the {stage} stage has no completed {app} job: see {jobs_dir} and "
                       f"{run.path / 'cells.csv'}")
    return rows


def exec_times(run: RunDirectory, stage: str, jobs_dir: PurePath) -> dict[str, list[float]]:
    """The execution times of each application's completed jobs of ``stage``."""
    return {app: [float(r["exec"]) for r in completed_rows(run, stage, app, jobs_dir)] for app in APPS}


def calibrated_iterations(run: RunDirectory, jobs_dir: PurePath) -> dict[str, int | None]:
    """The work of each application: the iterations it did in exec_time alone (None: no report)."""
    iterations: dict[str, int | None] = {}
    for app in APPS:
        rows = completed_rows(run, "calibration", app, jobs_dir)
        counts = [int(r["iterations"]) for r in rows if r["iterations"]]
        iterations[app] = max(1, round(statistics.fmean(counts))) if counts else None
    return iterations


def reference_times(run: RunDirectory, jobs_dir: PurePath) -> dict[str, float]:
    """T_ref_alone of each application: its mean execution time in the reference stage (sec. 2.4);
    one not above 0 is a RunError (its slowdown would be undefined)."""
    t_alone = {app: statistics.fmean(times) for app, times in exec_times(run, "reference", jobs_dir).items()}
    for app, t in t_alone.items():
        if t <= 0:
            raise RunError(f"the {app}'s reference execution time is {t:g} s, so its slowdown is "
                           "undefined: the scheduler reports whole seconds; give it an exec_time of a "
                           "few seconds")
    return t_alone
