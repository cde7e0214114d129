"""What a run writes down as it measures: each job's jobs.csv row, each cell's cells.csv row, the
intervals the scheduler did not answer (outages.csv) and the machine's load (meta.json).

Each is appended as soon as it exists, so an interrupted run keeps what it measured. A job's times come
from the scheduler where it gives them, else from what the polls saw (``times_source``); a job or a
cell that overlapped an outage is marked, so the summary can leave it out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from djsb import benchmark_metrics, noise
from djsb.clock import Clock, VirtualClock
from djsb.errors import one_line
from djsb.harness.app_output import parse_app_output
from djsb.harness.reference import Reference
from djsb.harness.rundir import CellKey, JobRecord, RunDirectory
from djsb.harness.tracked import Tracked
from djsb.jobs import JobModule
from djsb.jobs.outage import Outage, spans_outage
from djsb.transport import Transport


def ran(job: Tracked, output: str | None, runs_commands: bool) -> bool:
    """Whether ``job`` ever ran: the scheduler gave it a start, or a poll saw it run, and, where
    the module ``runs_commands``, its output file (``output``: its text, None when there is none)
    exists. The scheduler creates that file when the job's script starts, and the harness
    removed any earlier one at submission; a job whose launch failed on a dead node has none,
    though Slurm gives it a start and an end."""
    started = job.status.start is not None or job.seen_start is not None
    return started and (output is not None or not runs_commands)


@dataclass(eq=False)
class RunRecords:
    """Appends a run's measurements to its run directory.

    ``cell_finished`` is told each cell recorded (e.g. to advance a progress bar)."""

    run: RunDirectory
    module: JobModule
    transport: Transport
    clock: Clock
    progress: Callable[[str], None]
    cell_finished: Callable[[CellKey], None] | None = None
    outages: list[Outage] = field(init=False)
    cell_start: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        self.outages = self.run.outages()

    def outage_ended(self, outage: Outage) -> None:
        """Record an interval the scheduler did not answer (outages.csv), to mark what overlapped it."""
        self.outages.append(outage)
        self.run.add_outage(outage)
        self.progress(f"warning: {outage.scheduler} did not answer for {outage.duration:.1f} s "
                      f"({outage.attempts} failed attempt(s): {one_line(outage.error)}); what overlapped "
                      "this is marked in jobs.csv and cells.csv")

    def start_cell(self) -> None:
        """A cell starts now: an outage from now until :meth:`finish_cell` marks it."""
        self.cell_start = self.clock.epoch(self.clock.now())

    def finish_cell(self, key: CellKey, *, failure: str = "") -> None:
        """Record the cell (marked when it overlapped an outage since :meth:`start_cell`)."""
        outage = spans_outage(self.cell_start, self.clock.epoch(self.clock.now()), self.outages)
        self.run.finish_cell(key, outage=outage, failure=failure)
        if self.cell_finished is not None:
            self.cell_finished(key)

    def add_job(self, job: Tracked, key: CellKey, reference: Reference | None) -> None:
        """Append ``job``'s row to jobs.csv (:meth:`job_record`)."""
        self.run.add_job(self.job_record(job, key, reference))

    def job_record(self, job: Tracked, key: CellKey, reference: Reference | None) -> JobRecord:
        """The jobs.csv row of ``job`` (its slowdown against ``reference`` when given); one that never
        ran has no start, wait, execution, response or slowdown (:func:`ran`)."""
        status = job.status
        from_scheduler = status.start is not None and status.end is not None
        submit = status.submit if status.submit is not None else job.submit
        text = self.transport.read_text(job.request.stdout_path) if self.module.runs_commands else None
        output = parse_app_output(text or "")
        times: dict[str, float | None] = dict.fromkeys(("start", "wait", "exec", "response", "slowdown"))
        if ran(job, text, self.module.runs_commands):
            start = status.start if status.start is not None else (job.seen_start or job.submit)
            end = status.end if status.end is not None else (job.seen_end or start)
            response = benchmark_metrics.response_time(submit, end)
            slowdown = benchmark_metrics.slowdown(response, reference.t_alone[job.app]) if reference else None
            times.update(start=start, wait=benchmark_metrics.wait_time(submit, start),
                         exec=benchmark_metrics.execution_time(start, end), response=response,
                         slowdown=slowdown)
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

    def record_load(self, stage: str, at: str) -> None:
        """Add this machine's load average to meta.json's ``load`` list, and warn when it is busy before
        the reference stage's jobs start (later samples include the run's own jobs). A virtual clock's
        times do not depend on the machine: nothing to record."""
        if isinstance(self.clock, VirtualClock):
            return
        load, cpus = noise.machine_load()
        sample = {"stage": stage, "at": at, "time": round(self.clock.epoch(self.clock.now()), 1),
                  "load_1min": load, "cpus": cpus}
        self.run.update_meta(load=[*self.run.meta().get("load", []), sample])
        warning = noise.load_warning(load, cpus)
        if warning and (stage, at) == noise.BEFORE_JOBS:
            self.progress(f"warning: {warning}")
