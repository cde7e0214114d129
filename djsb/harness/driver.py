"""The DJSB driver (paper 001 sec. 2 and 4.1): the reference stage, then the execution stage.

Calibration, once: each application alone for its ``exec_time``; the iterations it did become its
fixed amount of work in both stages, so that the reference and the shared runs do the same work
and a stopped or slowed job really takes longer. Reference stage, per sample: the simulation
alone, then ``num_of_ref_analysis`` analytics alone, one after another; T_ref_alone of each
application is the mean of its execution times (sec. 2.4, djsb.harness.reference). Execution
stage, per scenario, per n_a, per sample: one *cell* (djsb.harness.execution_cell).

The driver only orders the cells and decides what ends a run; its collaborators do the rest: the
jobs' files and requests (job_setup), submitting and following the jobs with one query per poll
(tracker), appending each job's record and each finished cell to the run directory as soon as they
exist (records), ending jobs for good (ending) and noticing a request to stop (stop). So an
interrupted run keeps what it measured and ``--resume`` redoes only the unfinished cells.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from pathlib import PurePath

from djsb import noise
from djsb.clock import Clock
from djsb.config import Config, GeneralConfig
from djsb.errors import RunError
from djsb.harness.commands import work_arguments
from djsb.harness.ending import JobEnder
from djsb.harness.execution_cell import ExecutionCell
from djsb.harness.job_setup import JobSetup
from djsb.harness.records import RunRecords
from djsb.harness.reference import APPS, Reference, calibrated_iterations, exec_times, reference_times
from djsb.harness.rundir import CellKey, RunDirectory, cell_key, describe_cell
from djsb.harness.stop import StopRequest
from djsb.harness.tracked import Tracked
from djsb.harness.tracker import CellFailed, JobTracker
from djsb.jobs import JobModule
from djsb.progress import say
from djsb.transport import Transport


def planned_cells(general: GeneralConfig) -> list[CellKey]:
    """Every cell of a run in the order it runs: calibration, reference samples, execution cells."""
    return [cell_key("calibration", "", 0, 0),
            *(cell_key("reference", "", 0, sample) for sample in range(general.num_of_samples)),
            *(cell_key("execution", scenario, n_a, sample) for scenario in general.scenarios
              for n_a in general.num_of_dyn_analysis for sample in range(general.num_of_samples))]


class Driver:
    """Runs one experiment against one job module.

    ``progress`` receives the log messages; ``cell_finished`` is told each cell that finished (e.g.
    to advance a progress bar). Job output and control files go to ``files_dir`` on the host that runs
    the jobs (the run directory itself by default).
    """

    def __init__(self, config: Config, module: JobModule, run: RunDirectory, clock: Clock,
                 transport: Transport, apps_dir: PurePath, files_dir: PurePath | None = None,
                 progress: Callable[[str], None] = say,
                 cell_finished: Callable[[CellKey], None] | None = None) -> None:
        files_dir = files_dir if files_dir is not None else run.path
        poll_interval = config.general.poll_interval
        self.config = config
        self.run_dir = run
        self.jobs_dir = files_dir / "jobs"
        self.progress = progress
        self.stop = StopRequest(module, clock)
        self.records = RunRecords(run, module, transport, clock, progress, cell_finished)
        self.tracker = JobTracker(module, transport, clock,
                                  JobSetup(config, module, transport, apps_dir, files_dir, progress),
                                  self.records, self.stop, poll_interval, progress)
        self.ender = JobEnder(module, clock, poll_interval, lambda: self.stop.requested, progress,
                              run.path / "uncancelled.txt")
        self.cell = ExecutionCell(config, self.tracker, clock, self.stop, progress)
        module.watch_outages(self.records.outage_ended)

    def request_stop(self, signal_name: str) -> None:
        """Ask the run to stop at the next wait (safe to call from a signal handler)."""
        self.stop.request(signal_name)

    def run(self) -> None:
        """Run every cell not yet finished; cancels all live jobs however it ends, and writes the ones
        it could not cancel to uncancelled.txt (``ender.uncancelled``). Once a stop was requested, any
        failure (a scheduler command cut short) ends the run as Interrupted."""
        try:
            self.records.record_load("reference", "start")
            reference = self.reference_stage()
            self.records.record_load("reference", "end")
            self.execution_stage(reference)
            self.records.record_load("execution", "end")
        except RunError:
            self.stop.check()
            raise
        finally:
            self.cancel_live()
            if self.ender.uncancelled:
                self.run_dir.add_uncancelled(self.ender.uncancelled)

    def cancel_live(self, also: Iterable[Tracked] = ()) -> None:
        """End every job not yet recorded (live, or ended without a final state: Slurm may still
        requeue it), and the jobs ``also`` (a failed cell's recorded ones), for good."""
        jobs = self.tracker.take_unrecorded()
        self.ender.end({job.job_id: job.request.name for job in [*jobs, *also]})
        for job in jobs:
            if job.job_id not in self.ender.uncancelled:
                self.progress(f"cancelled {job.describe()}")

    def reference_stage(self) -> Reference:
        general = self.config.general
        done = self.run_dir.finished_cells()
        calibration = cell_key("calibration", "", 0, 0)
        if calibration not in done:
            self.progress("calibration: each application alone for its exec_time, to fix its work")

            def calibrate() -> None:
                for app in APPS:
                    self.run_alone(app, 0, calibration, None)

            self.measure_cell(calibration, calibrate)
        iterations = calibrated_iterations(self.run_dir, self.jobs_dir)
        for sample in range(general.num_of_samples):
            key = cell_key("reference", "", 0, sample)
            if key in done:
                continue
            self.progress(f"reference stage, sample {sample + 1}/{general.num_of_samples}")

            def reference_sample(key: CellKey = key) -> None:
                self.run_alone("simulation", 0, key, iterations["simulation"])
                for index in range(general.num_of_ref_analysis):
                    self.run_alone("analytics", index, key, iterations["analytics"])

            self.measure_cell(key, reference_sample)
        t_alone = reference_times(self.run_dir, self.jobs_dir)
        self.progress("T_ref_alone: " + ", ".join(f"{app} {t:.2f} s" for app, t in t_alone.items()))
        for warning in noise.reference_notes(exec_times(self.run_dir, "calibration", self.jobs_dir),
                                             exec_times(self.run_dir, "reference", self.jobs_dir)):
            self.progress(f"warning: {warning}")
        return Reference(t_alone, iterations)

    def execution_stage(self, reference: Reference) -> None:
        done = self.run_dir.finished_cells()
        cells = [key for key in planned_cells(self.config.general) if key.stage == "execution"]
        for number, key in enumerate(cells, start=1):
            if key not in done:
                self.progress(f"execution cell {number}/{len(cells)}")
                self.measure_cell(key, functools.partial(self.cell.run, key, reference), reference)

    def measure_cell(self, key: CellKey, body: Callable[[], None],
                     reference: Reference | None = None) -> None:
        """Run one cell's ``body`` and record the cell: completed once every job of it has its final
        state, or failed with the reason of the first job that did not complete (its other jobs
        cancelled), so that no number of the summary comes from a job that did not run as asked."""
        self.records.start_cell()
        self.tracker.start_cell()
        try:
            body()
            self.tracker.settle(key, reference)
        except CellFailed as exc:
            self.cancel_live(also=self.tracker.cell_jobs)
            self.progress(f"warning: cell {describe_cell(key)} failed: {exc}")
            self.records.finish_cell(key, failure=str(exc))
            return
        self.records.finish_cell(key)

    def run_alone(self, app: str, index: int, key: CellKey, iterations: int | None) -> None:
        """One job of the calibration or the reference stage, alone, until its end is seen."""
        work = work_arguments(self.tracker.setup.app(app).exec_time, iterations)
        job = self.tracker.submit(app, index, key, work, iterations=iterations)
        self.tracker.wait_until(lambda: not self.tracker.is_live(job), key, None)
