"""The DJSB driver (paper 001 sec. 2 and 4.1): the reference stage, then the execution stage.

Calibration, once: each application alone for its ``exec_time``; the iterations it did become its
fixed amount of work in both stages, so that the reference and the shared runs do the same work
and a stopped or slowed job really takes longer. Reference stage, per sample: the simulation
alone, then ``num_of_ref_analysis`` analytics alone, one after another; T_ref_alone of each
application is the mean of its execution times (sec. 2.4).

Execution stage, per scenario, per n_a, per sample (a *cell*): start the simulation; once it runs,
n_a times sleep U(sleep_min_time, sleep_max_time) and launch an analytics on its resources; wait
for everything. The scenarios differ only in what happens around each analytics, which each
scenario owns (djsb/scenarios/, one file each): oversubscription does nothing, stopcont
suspends the simulation and resumes it when no analytics runs any more, dynamic shrinks it through
its control file and grows it back.

The driver waits through a clock (wall or virtual), polls all its jobs in one query per poll, and
appends each job's record and each finished cell to the run directory as soon as they exist, so an
interrupted run keeps what it measured and ``--resume`` redoes only the unfinished cells. Job
output and control files live in ``files_dir`` on the host that runs the jobs (the run directory
itself, or a directory on a remote login node), and are read and written through the transport.
"""

from __future__ import annotations

import errno
import functools
import os
import random
import shlex
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import PurePath

from djsb import metrics, noise
from djsb.clock import Clock, VirtualClock
from djsb.config import AppConfig, Config, GeneralConfig
from djsb.errors import RunError, SubmitRejected, one_line
from djsb.harness.app_output import AppOutput, parse_app_output, reports_expected
from djsb.harness.commands import expand_command, work_arguments
from djsb.harness.ending import END_WAIT_S, end_for_good
from djsb.harness.ledger import SUBMITTED, SUBMITTING
from djsb.harness.rundir import CellKey, JobRecord, RunDirectory, cell_key, describe_cell, row_cell
from djsb.jobs import CommandJobModule, JobModule, JobRequest, JobState, JobStatus
from djsb.jobs.outage import Outage, spans_outage
from djsb.progress import NORMAL, say
from djsb.scenarios import CellState
from djsb.scenarios import scenario as get_scenario
from djsb.transport import Transport, free_bytes

APPS = ("simulation", "analytics")
# A job the scheduler no longer knows (purged, no accounting) for this many polls in a row is lost.
LOST_AFTER_POLLS = 30
# A job the scheduler shows ended but not yet how (Slurm's COMPLETING without accounting) is waited
# for this long, then recorded failed: a node that died holds its jobs COMPLETING for SlurmdTimeout
# (300 s by default) before Slurm decides their fate.
FINAL_STATE_WAIT_S = 900.0
# Once asked to stop, scheduler commands (the running one, then the cancellations) get this long, so
# that the run ends within 5 s of SIGINT/SIGTERM even while the scheduler does not answer.
STOP_GRACE_S = 2.5


class Interrupted(RunError):
    """The run was asked to stop (SIGINT/SIGTERM); its jobs were cancelled, its records kept."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(f"interrupted by {signal_name}")
        self.signal_name = signal_name


class CellFailed(RunError):
    """One execution cell cannot be measured (the scheduler refused one of its jobs): it is recorded
    as failed with this one-line reason and the run goes on with the next cell."""


@dataclass
class Tracked:
    """A job the driver submitted and follows until it ends."""

    request: JobRequest
    job_id: str
    app: str
    index: int
    submit: float
    status: JobStatus = field(default_factory=lambda: JobStatus(JobState.PENDING))
    seen_start: float | None = None
    seen_end: float | None = None
    suspended_since: float | None = None
    suspended_s: float = 0.0
    shared_with_sim: bool = False
    unknown_polls: int = 0
    iterations: int | None = None


@dataclass(frozen=True)
class Reference:
    """T_ref_alone and the work amount of each application, from the reference stage."""

    t_alone: dict[str, float]
    iterations: dict[str, int | None]


class CellSimulation:
    """The simulation job of a cell as its scenario acts on it (a scenarios.SimulationHandle)."""

    def __init__(self, driver: Driver, job: Tracked) -> None:
        self.driver = driver
        self.job = job

    @property
    def suspended(self) -> bool:
        return self.job.suspended_since is not None

    def suspend(self) -> None:
        self.driver.suspend(self.job)

    def resume(self) -> None:
        self.driver.resume(self.job)

    def set_threads(self, threads: int) -> None:
        self.driver.set_threads(self.job, threads)


def log(message: str, level: int = NORMAL) -> None:
    """Progress goes to stderr so stdout stays clean for scripts (none with -q, unless ``level`` is
    QUIET: what the user must act on)."""
    say(message, level)


def planned_cells(general: GeneralConfig) -> list[CellKey]:
    """Every cell of a run in the order it runs: calibration, reference samples, execution cells."""
    return [cell_key("calibration", "", 0, 0),
            *(cell_key("reference", "", 0, sample) for sample in range(general.num_of_samples)),
            *(cell_key("execution", scenario, n_a, sample) for scenario in general.scenarios
              for n_a in general.num_of_dyn_analysis for sample in range(general.num_of_samples))]


class Driver:
    """Runs one experiment against one job module.

    ``progress`` receives the log messages; ``cell_finished`` is told each cell that finished (e.g.
    to advance a progress bar).
    """

    def __init__(self, config: Config, module: JobModule, run: RunDirectory, clock: Clock,
                 transport: Transport, apps_dir: PurePath, files_dir: PurePath | None = None,
                 progress: Callable[[str], None] = log,
                 cell_finished: Callable[[CellKey], None] | None = None) -> None:
        self.config = config
        self.module = module
        self.run_dir = run
        self.clock = clock
        self.transport = transport
        self.apps_dir = apps_dir
        self.files_dir = files_dir if files_dir is not None else run.path
        self.jobs_dir = self.files_dir / "jobs"
        self.control_dir = self.files_dir / "control"
        self.progress = progress
        self.cell_finished = cell_finished
        self.stop_signal: str | None = None
        self.live: dict[str, Tracked] = {}
        self.ending: dict[str, Tracked] = {}
        self.uncancelled: dict[str, str] = {}
        self.outages: list[Outage] = run.outages()
        self.cell_start = 0.0
        self.cell_jobs: list[Tracked] = []
        module.watch_outages(self.outage_ended)

    # -- public ------------------------------------------------------------------------------

    def request_stop(self, signal_name: str) -> None:
        """Ask the run to stop at the next wait (safe to call from a signal handler)."""
        self.stop_signal = signal_name
        self.module.request_stop(STOP_GRACE_S)
        wake = getattr(self.clock, "wake", None)
        if wake is not None:
            wake()

    def run(self) -> None:
        """Run every cell not yet finished; cancels all live jobs however it ends, and writes the ones
        it could not cancel to uncancelled.txt (``uncancelled``). Once a stop was requested, any
        failure (a scheduler command cut short) ends the run as Interrupted."""
        try:
            self.record_load("reference", "start")
            reference = self.reference_stage()
            self.record_load("reference", "end")
            self.execution_stage(reference)
            self.record_load("execution", "end")
        except RunError:
            self.check_stop()
            raise
        finally:
            self.cancel_live()
            if self.uncancelled:
                self.run_dir.add_uncancelled(self.uncancelled)

    def cancel_live(self, also: Iterable[Tracked] = ()) -> None:
        """End every job not yet recorded (live, or ended without a final state: Slurm may still
        requeue it), and the jobs ``also`` (a failed cell's recorded ones), for good (:meth:`end_jobs`)."""
        jobs = [*self.live.values(), *self.ending.values()]
        self.live.clear()
        self.ending.clear()
        self.end_jobs({job.job_id: job for job in [*jobs, *also]}.values())
        for job in jobs:
            if job.job_id not in self.uncancelled:
                self.progress(f"cancelled {job.request.name} (job {job.job_id})")

    def end_jobs(self, jobs: Iterable[Tracked]) -> None:
        """Cancel ``jobs`` and wait until the scheduler holds none of them (djsb.harness.ending), so
        that none runs after its cell failed or the run ended; once the run is asked to stop, only
        cancelled, not waited for. The ones not confirmed gone go to ``uncancelled``."""
        names = {job.job_id: job.request.name for job in jobs}
        if not names:
            return
        left = end_for_good(self.module, names, self.clock, self.config.general.poll_interval,
                            stopping=lambda: self.stop_signal is not None, progress=self.progress)
        self.uncancelled.update(left)
        if left and self.stop_signal is None:
            self.progress("warning: still held by the scheduler after "
                          f"{END_WAIT_S:.0f} s of cancelling: " + ", ".join(
                              f"{name} (job {job_id})" for job_id, name in left.items())
                          + f"; listed in {self.run_dir.path / 'uncancelled.txt'}")

    def outage_ended(self, outage: Outage) -> None:
        """Record an interval the scheduler did not answer (outages.csv), to mark what overlapped it."""
        self.outages.append(outage)
        self.run_dir.add_outage(outage)
        self.progress(f"warning: {outage.scheduler} did not answer for {outage.duration:.1f} s "
                      f"({outage.attempts} failed attempt(s): {one_line(outage.error)}); what overlapped "
                      "this is marked in jobs.csv and cells.csv")

    # -- stages ------------------------------------------------------------------------------

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
        iterations = self.calibrated_iterations()
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
        reference = Reference(self.reference_times(), iterations)
        for warning in noise.reference_notes(self.exec_times("calibration"), self.exec_times("reference")):
            self.progress(f"warning: {warning}")
        return reference

    def exec_times(self, stage: str) -> dict[str, list[float]]:
        """The execution times of each application's completed jobs of ``stage``."""
        return {app: [float(r["exec"]) for r in self.completed_rows(stage, app)] for app in APPS}

    def record_load(self, stage: str, at: str) -> None:
        """Add this machine's load average to meta.json's ``load`` list, and warn when it is busy before
        the reference stage's jobs start (later samples include the run's own jobs). A virtual clock's
        times do not depend on the machine: nothing to record."""
        if isinstance(self.clock, VirtualClock):
            return
        load, cpus = noise.machine_load()
        sample = {"stage": stage, "at": at, "time": round(self.clock.epoch(self.clock.now()), 1),
                  "load_1min": load, "cpus": cpus}
        self.run_dir.update_meta(load=[*self.run_dir.meta().get("load", []), sample])
        warning = noise.load_warning(load, cpus)
        if warning and (stage, at) == noise.BEFORE_JOBS:
            self.progress(f"warning: {warning}")

    def completed_rows(self, stage: str, app: str) -> list[dict[str, str]]:
        """The rows of ``app``'s completed jobs of ``stage``, from cells that did not fail."""
        failed = self.run_dir.failed_cells()
        rows = [r for r in self.run_dir.job_rows() if r["stage"] == stage and r["app"] == app
                and r["state"] == JobState.COMPLETED.value and row_cell(r) not in failed]
        if not rows:
            raise RunError(f"the {stage} stage has no completed {app} job: see {self.jobs_dir} and "
                           f"{self.run_dir.path / 'cells.csv'}")
        return rows

    def calibrated_iterations(self) -> dict[str, int | None]:
        """The work of each application: the iterations it did in exec_time alone (None: no report)."""
        iterations: dict[str, int | None] = {}
        for app in APPS:
            rows = self.completed_rows("calibration", app)
            counts = [int(r["iterations"]) for r in rows if r["iterations"]]
            iterations[app] = max(1, round(statistics.fmean(counts))) if counts else None
        return iterations

    def reference_times(self) -> dict[str, float]:
        """T_ref_alone of each application: its mean execution time in the reference stage (sec. 2.4)."""
        t_alone = {app: statistics.fmean(float(r["exec"]) for r in self.completed_rows("reference", app))
                   for app in APPS}
        for app, t in t_alone.items():
            if t <= 0:
                raise RunError(f"the {app}'s reference execution time is {t:g} s, so its slowdown is "
                               "undefined: the scheduler reports whole seconds; give it an exec_time of a "
                               "few seconds")
        self.progress("T_ref_alone: " + ", ".join(f"{app} {t:.2f} s" for app, t in t_alone.items()))
        return t_alone

    def execution_stage(self, reference: Reference) -> None:
        general = self.config.general
        done = self.run_dir.finished_cells()
        cells = [key for key in planned_cells(general) if key.stage == "execution"]
        for number, key in enumerate(cells, start=1):
            if key not in done:
                self.progress(f"execution cell {number}/{len(cells)}")
                self.measure_cell(key, functools.partial(self.run_cell, key, reference), reference)

    def measure_cell(self, key: CellKey, body: Callable[[], None],
                     reference: Reference | None = None) -> None:
        """Run one cell's ``body`` and record the cell: completed once every job of it has its final
        state, or failed with the reason of the first job that did not complete (its other jobs
        cancelled), so that no number of the summary comes from a job that did not run as asked."""
        self.start_cell()
        try:
            body()
            self.settle(key, reference)
        except CellFailed as exc:
            self.cancel_live(also=self.cell_jobs)
            self.progress(f"warning: cell {describe_cell(key)} failed: {exc}")
            self.finish_cell(key, failure=str(exc))
            return
        self.finish_cell(key)

    def settle(self, key: CellKey, reference: Reference | None) -> None:
        """Wait until every job of the cell that ended has its final state recorded (its slowdown
        against ``reference`` in the execution stage)."""
        while self.ending:
            self.wait(self.config.general.poll_interval)
            self.poll_and_record(key, reference)

    # -- one reference job -------------------------------------------------------------------

    def run_alone(self, app: str, index: int, key: CellKey, iterations: int | None) -> None:
        job = self.submit(app, index, key, work_arguments(self.app(app).exec_time, iterations),
                          iterations=iterations)
        while job.job_id in self.live:
            self.wait(self.config.general.poll_interval)
            self.poll_and_record(key, None)

    # -- one execution cell ------------------------------------------------------------------

    def run_cell(self, key: CellKey, reference: Reference) -> None:
        _, name, n_a, sample = key
        general = self.config.general
        scenario = get_scenario(name)
        sim_app, ana_app = self.config.simulation, self.config.analytics
        rng = random.Random(f"{general.seed}/{name}/{n_a}/{sample}")
        gaps = [rng.uniform(general.sleep_min_time, general.sleep_max_time) for _ in range(n_a)]
        self.progress(f"execution stage: {name}, n_a={n_a}, sample {sample + 1}/{general.num_of_samples}")

        sim = self.submit("simulation", 0, key, work_arguments(sim_app.exec_time,
                                                                reference.iterations["simulation"]),
                          iterations=reference.iterations["simulation"])
        handle = CellSimulation(self, sim)
        while sim.seen_start is None and sim.job_id in self.live:
            self.wait(general.poll_interval)
            self.poll_and_record(key, reference)

        analytics: list[Tracked] = []
        next_submit = self.clock.now() + gaps[0]
        def unfinished() -> bool:
            return sim.job_id in self.live or any(a.job_id in self.live for a in analytics)

        def state() -> CellState:
            return CellState(sim_app, ana_app, sum(1 for a in analytics if a.job_id in self.live))

        while unfinished() or len(analytics) < n_a:
            ended = self.poll_and_record(key, reference)
            if any(job.app == "analytics" for job in ended) and sim.job_id in self.live:
                scenario.after_analytics(handle, state())
            if len(analytics) < n_a and self.clock.now() >= next_submit:
                # placed on the simulation only if the poll just made shows it has not ended
                sim_alive = sim.job_id in self.live
                if sim_alive:
                    scenario.before_analytics(handle, state())
                job = self.submit_analytics(len(analytics), key, reference, sim if sim_alive else None,
                                            scenario.analytics_oversubscribes)
                analytics.append(job)
                if len(analytics) < n_a:
                    next_submit = self.clock.now() + gaps[len(analytics)]
            pause = general.poll_interval
            if len(analytics) < n_a:
                pause = min(pause, max(0.0, next_submit - self.clock.now()))
            self.wait(pause)
        if any(not a.shared_with_sim for a in analytics):
            self.progress("warning: the simulation ended before every analytics started; give it a longer "
                          "exec_time or shorten sleep_max_time")

    def submit_analytics(self, index: int, key: CellKey, reference: Reference, sim: Tracked | None,
                         oversubscribe: bool) -> Tracked:
        """Submit an analytics of the cell, on the simulation's nodes when ``sim`` runs. A refused
        submission is retried once after a fresh poll (placed anew, or anywhere if the simulation
        ended meanwhile); refused again, the cell fails."""
        work = work_arguments(self.config.analytics.exec_time, reference.iterations["analytics"])
        for attempt in (1, 2):
            try:
                job = self.submit("analytics", index, key, work, colocate_with=sim.job_id if sim else None,
                                  oversubscribe=oversubscribe, iterations=reference.iterations["analytics"])
                break
            except SubmitRejected as exc:
                if attempt == 2:
                    raise CellFailed(one_line(str(exc))) from None
                self.progress(f"warning: {one_line(str(exc))}; trying again after a fresh poll")
                self.poll_and_record(key, reference)
                if sim is not None and sim.job_id not in self.live:
                    sim = None
        job.shared_with_sim = sim is not None
        return job

    def start_cell(self) -> None:
        self.cell_start = self.clock.epoch(self.clock.now())
        self.cell_jobs = []

    def finish_cell(self, key: CellKey, *, failure: str = "") -> None:
        """Record the cell (marked when it overlapped an outage since ``start_cell``)."""
        outage = spans_outage(self.cell_start, self.clock.epoch(self.clock.now()), self.outages)
        self.run_dir.finish_cell(key, outage=outage, failure=failure)
        if self.cell_finished is not None:
            self.cell_finished(key)

    # -- job operations ----------------------------------------------------------------------

    def app(self, name: str) -> AppConfig:
        return self.config.simulation if name == "simulation" else self.config.analytics

    def submit(self, app: str, index: int, key: CellKey, work: list[str], *,
               colocate_with: str | None = None, oversubscribe: bool = False,
               iterations: int | None = None) -> Tracked:
        """Submit one job of ``app`` doing ``work`` (``iterations`` of it, when counted) and follow it."""
        stage, scenario, n_a, sample = key
        tag = stage[:3] if stage != "execution" else f"{scenario}-na{n_a}"
        name = f"{tag}-s{sample}-{app[:3]}{index}"
        app_config = self.app(app)
        stdout, stderr = self.jobs_dir / f"{name}.out", self.jobs_dir / f"{name}.err"
        if self.module.runs_commands:  # an earlier attempt's (a resumed cell's) output is not this job's
            remove = shlex.join(["rm", "-f", "--", str(stdout), str(stderr)])
            if isinstance(self.module, CommandJobModule):  # retried if a dropped connection cuts it short
                self.module.run(remove, check=False)
            else:
                self.transport.run(remove)
        control = self.control_dir / f"{name}.threads"
        self.transport.write_text(str(control), f"{app_config.cpus_per_task}\n")
        values = {"apps": str(self.apps_dir), "cpus_per_task": str(app_config.cpus_per_task),
                  "total_tasks": str(app_config.total_tasks),
                  "memory_per_task": str(app_config.total_memory // app_config.total_tasks),
                  "exec_time": f"{app_config.exec_time:g}", "control_file": str(control), "name": name}
        argv = expand_command(app_config.command, values, work)
        request = JobRequest(
            name=name, app=app, total_tasks=app_config.total_tasks, cpus_per_task=app_config.cpus_per_task,
            total_memory=app_config.total_memory, exec_time=app_config.exec_time, argv=argv,
            stdout_path=str(stdout), stderr_path=str(stderr),
            node_host_names=app_config.node_host_names,
            colocate_with=colocate_with if app_config.same_nodes_as_sim else None,
            oversubscribe=oversubscribe, control_file=str(control))
        self.check_stop()
        submit_time = self.clock.epoch(self.clock.now())
        job_id = self.submit_with_ledger(request, submit_time)
        job = Tracked(request, job_id, app, index, submit_time, iterations=iterations)
        self.live[job_id] = job
        self.cell_jobs.append(job)
        self.progress(f"submitted {name} as job {job_id}")
        return job

    def submit_with_ledger(self, request: JobRequest, submit_time: float) -> str:
        """``module.submit`` between two durable ledger rows: the token and name before it, so a job
        whose id never comes back (the harness killed meanwhile) can still be found; the id after."""
        self.run_dir.write_ledger(SUBMITTING, request.token, time=submit_time, name=request.name)
        job_id = self.module.submit(request)
        self.run_dir.write_ledger(SUBMITTED, request.token, time=self.clock.epoch(self.clock.now()),
                                  job_id=job_id)
        return job_id

    def set_threads(self, sim: Tracked, threads: int) -> None:
        control = self.control_dir / f"{sim.request.name}.threads"
        self.transport.write_text(str(control), f"{threads}\n")
        self.progress(f"{sim.request.name}: {threads} thread(s) per task")

    def suspend(self, job: Tracked) -> None:
        self.module.suspend(job.job_id)
        job.suspended_since = self.clock.now()
        self.progress(f"suspended {job.request.name}")

    def resume(self, job: Tracked) -> None:
        self.module.resume(job.job_id)
        if job.suspended_since is not None:
            job.suspended_s += self.clock.now() - job.suspended_since
        job.suspended_since = None
        self.progress(f"resumed {job.request.name}")

    def check_stop(self) -> None:
        if self.stop_signal is not None:
            raise Interrupted(self.stop_signal)

    def wait(self, seconds: float) -> None:
        self.check_stop()
        self.clock.sleep(seconds)
        self.check_stop()

    def poll_and_record(self, key: CellKey, reference: Reference | None) -> list[Tracked]:
        """One query for every job not yet recorded; returns the live jobs whose end it saw.

        A job is recorded (jobs.csv) once its final state is known: one the scheduler shows ended but
        not yet how (Slurm's COMPLETING) counts as ended for the cell, and waits in ``ending``.
        Raises CellFailed, with the job's reason, when a job did not complete as asked: ended in
        another state, left no report, or was started again by the scheduler (requeued)."""
        if not self.live and not self.ending:
            return []
        statuses = self.module.poll([*self.live, *self.ending])
        now = self.clock.epoch(self.clock.now())
        ended: list[Tracked] = []
        for job_id, job in [*self.live.items(), *self.ending.items()]:
            status = statuses.get(job_id)
            if status is None:
                continue
            job.unknown_polls = job.unknown_polls + 1 if status.state is JobState.UNKNOWN else 0
            job.status = status
            requeued = requeue_reason(job, status)
            if requeued:
                self.fail_job(job, key, reference, requeued)
            if status.state in (JobState.RUNNING, JobState.SUSPENDED) and job.seen_start is None:
                job.seen_start = now
            lost = job.unknown_polls >= LOST_AFTER_POLLS
            if not (status.state.finished or lost):
                continue
            if job_id in self.live:
                job.seen_end = now
                del self.live[job_id]
                ended.append(job)
            waited = now - (job.seen_end or now)
            if not (status.final or lost or waited >= FINAL_STATE_WAIT_S):
                self.ending[job_id] = job
                continue
            self.ending.pop(job_id, None)
            failure = self.job_failure(job, status, lost, waited)
            if failure:
                self.fail_job(job, key, reference, failure)
            self.run_dir.add_job(self.record(job, key, reference))
        return ended

    def job_failure(self, job: Tracked, status: JobStatus, lost: bool, waited: float) -> str:
        """Why ``job``, ended with ``status``, is not a measurement of what was asked ('' if it is)."""
        what = f"{job.request.name} (job {job.job_id})"
        if lost:
            return f"{what} is unknown to the scheduler for {LOST_AFTER_POLLS} polls: lost"
        if not status.final:
            return f"{what}: no final state from the scheduler within {waited:.0f} s of its end"
        if status.state is not JobState.COMPLETED:
            return f"{what} ended {status.state.value}" + (f" ({status.reason})" if status.reason else "")
        if not (self.module.runs_commands and reports_expected(job.request.argv)):
            return ""
        failure = report_failure(what, self.read_output(job.request.stdout_path), job.request.total_tasks,
                                 job.iterations)
        if failure:
            self.check_disk(job.request.stdout_path)
        return failure

    def check_disk(self, path: str) -> None:
        """Raise "No space left on device" naming ``path`` when the file system holding it is full: a
        job whose report could not be written there failed for the disk, not for the benchmark, and
        every later job would fail alike; the run stops with one line saying so."""
        if free_bytes(self.transport, str(PurePath(path).parent)) == 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    def fail_job(self, job: Tracked, key: CellKey, reference: Reference | None, reason: str) -> None:
        """Record ``job`` as failed with ``reason``, end it if it still runs, and fail its cell."""
        self.live.pop(job.job_id, None)
        self.ending.pop(job.job_id, None)
        if not job.status.state.finished or not job.status.final:
            self.module.cancel(job.job_id)
        if job.status.state is JobState.COMPLETED or not job.status.state.finished:
            job.status = replace(job.status, state=JobState.FAILED)
        job.status = replace(job.status, reason=reason)
        if job.seen_end is None:
            job.seen_end = self.clock.epoch(self.clock.now())
        self.run_dir.add_job(self.record(job, key, reference))
        raise CellFailed(reason)

    def record(self, job: Tracked, key: CellKey, reference: Reference | None) -> JobRecord:
        """The jobs.csv row of ``job``; one that never ran has no start, wait, execution, response
        or slowdown (:meth:`ran`)."""
        status = job.status
        from_scheduler = status.start is not None and status.end is not None
        submit = status.submit if status.submit is not None else job.submit
        text = self.transport.read_text(job.request.stdout_path) if self.module.runs_commands else None
        output = parse_app_output(text or "")
        times: dict[str, float | None] = dict.fromkeys(("start", "wait", "exec", "response", "slowdown"))
        if self.ran(job, text):
            start = status.start if status.start is not None else (job.seen_start or job.submit)
            end = status.end if status.end is not None else (job.seen_end or start)
            response = metrics.response_time(submit, end)
            slowdown = metrics.slowdown(response, reference.t_alone[job.app]) if reference else None
            times.update(start=start, wait=metrics.wait_time(submit, start),
                         exec=metrics.execution_time(start, end), response=response, slowdown=slowdown)
        else:
            end = status.end if status.end is not None else (job.seen_end or submit)
        stage, scenario, n_a, sample = key
        return JobRecord(
            stage=stage, scenario=scenario, n_a=n_a, sample=sample, app=job.app, index=job.index,
            name=job.request.name, job_id=job.job_id, state=status.state.value, submit=submit,
            start=times["start"], end=end, wait=times["wait"], exec=times["exec"], response=times["response"],
            slowdown=times["slowdown"], tasks=job.request.total_tasks,
            cpus_per_task=job.request.cpus_per_task, cpus=job.request.total_cpus,
            nodes=",".join(status.nodes), iterations=output.iterations, threads_min=output.threads_min,
            triad_MBps=output.triad_MBps, validated=output.validated, suspended_s=round(job.suspended_s, 3),
            shared_with_sim=job.shared_with_sim, times_source="scheduler" if from_scheduler else "harness",
            outage=spans_outage(submit, max(end, job.seen_end or end), self.outages), reason=status.reason)

    def ran(self, job: Tracked, output: str | None) -> bool:
        """Whether ``job`` ever ran: the scheduler gave it a start, or a poll saw it run, and, where
        the module runs commands, its output file (``output``: its text, None when there is none)
        exists. The scheduler creates that file when the job's script starts, and the harness
        removed any earlier one at submission; a job whose launch failed on a dead node has none,
        though Slurm gives it a start and an end."""
        started = job.status.start is not None or job.seen_start is not None
        return started and (output is not None or not self.module.runs_commands)

    def read_output(self, path: str) -> AppOutput:
        return parse_app_output(self.transport.read_text(path) or "")


def requeue_reason(job: Tracked, status: JobStatus) -> str:
    """Why ``job`` counts as started again ('' if it does not): the scheduler says it restarted it,
    or it is pending again after it was seen running (a requeue, e.g. after its node failed)."""
    if status.restarts:
        return (f"{job.request.name} (job {job.job_id}) was requeued by the scheduler ({status.restarts} "
                f"restart(s){', ' + status.reason if status.reason else ''}): a job that runs twice is "
                "another measurement")
    if job.seen_start is not None and status.state is JobState.PENDING:
        return (f"{job.request.name} (job {job.job_id}) is pending again after it ran (requeued"
                f"{', ' + status.reason if status.reason else ''}): a job that runs twice is another "
                "measurement")
    return ""


def report_failure(what: str, output: AppOutput, tasks: int, iterations: int | None) -> str:
    """Why a completed job of the bundled application did not do what was asked ('' if it did): each
    task reports its iterations and validation (djsb/apps/djsb_stream.c), ``iterations`` when counted."""
    if output.tasks_reported < tasks:
        return f"{what} completed but {tasks - output.tasks_reported} of its {tasks} task(s) left no report"
    if output.iterations is None:
        return f"{what} completed but reported no iterations"
    if iterations is not None and output.iterations < iterations:
        return f"{what} completed but did {output.iterations} of its {iterations} iterations"
    if output.validated is not True:
        return f"{what} completed but its results were not validated"
    return ""
