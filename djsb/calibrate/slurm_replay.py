"""Replay a workload on a real Slurm through DJSB's Slurm job module, and read its own times back.

Each job becomes a sleep job of its CPUs (``--ntasks`` = CPUs, one CPU per task) sleeping its run
time, with its time limit as ``--time`` (the module's ``time_factor`` 1 and ``time_margin`` 0:
the limit is the record's, in whole minutes), submitted ``submit`` seconds after the replay
starts. Submit, start and end are Slurm's (squeue, or sacct once slurmctld forgot the job, through
the module's parsers), in seconds from the replay's origin. Every submission is written to a
:class:`SubmissionLog` before sbatch runs and after it answers (djsb.calibrate.run_dir: what a
resume cancels), and a job of an account with a module of its own (``--account``) is submitted
through that one.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, cast

import pandas as pd

from djsb.calibrate.job_links import array_indices, sbatch_dependency, submission_units, unit_id
from djsb.errors import RunError, Signalled
from djsb.jobs.api import JobModule, JobRequest, JobStatus
from djsb.jobs.scheduler_base import MIB
from djsb.model.dependency import Dependency
from djsb.progress import Progress
from djsb.sweep.local import stop_signals
from djsb.workloads.job import TraceJob

MINUTE = 60.0
SLEEP_SLACK = 2.0
"""Seconds a sleep job stays under its limit: srun and the batch script need a moment around it."""
OVERRUN = 2 * MINUTE
"""Seconds a job to be killed sleeps past its limit: longer than Slurm takes to kill it (its
time-limit check runs every 30 s, slurmctld.h PERIODIC_TIMEOUT, then KillWait)."""
KILLED = "TIMEOUT"
"""The replay table's state of a job Slurm killed at its limit."""
STOP_CHECK_S = 0.1
"""How often the replay looks for a SIGINT/SIGTERM (and calls its ``watch``) while it waits."""


def slurm_ready(jobs: Sequence[TraceJob], kill: bool = False) -> list[TraceJob]:
    """The jobs as Slurm can run them: limits in whole minutes (Slurm's unit, at least one; a job
    without one gets its run time's), run times at least 1 s and ``SLEEP_SLACK`` under the limit
    (a sleep reaching its limit would be killed) or, with ``kill``, for a job whose record runs
    past its requested time, ``OVERRUN`` past the limit (Slurm kills it there); memory
    per CPU in whole MB (Slurm's unit, rounded up), user, account and GPU request kept, the rest of
    the record (nodes, partition) left to Slurm's defaults."""
    ready = []
    for job in jobs:
        asked = job.requested_time if job.requested_time and job.requested_time > 0 else job.run_time
        limit = max(1, math.ceil(asked / MINUTE)) * MINUTE
        run = min(float(max(1, round(job.run_time))), limit - SLEEP_SLACK)
        if kill and job.requested_time is not None and 0 < job.requested_time < job.run_time:
            run = limit + OVERRUN
        memory = None if job.memory_mb is None else math.ceil(job.memory_mb / job.cpus) * job.cpus
        ready.append(TraceJob(job.job_id, job.submit, run, job.cpus, requested_time=limit, memory_mb=memory,
                              user=job.user, account=job.account, gpus=job.gpus))
    return ready


class LinkedSubmitter(Protocol):
    """What submitting job arrays and dependencies asks of the Slurm job module (job_modules/slurm)."""

    def batch_script(self, request: JobRequest) -> str: ...

    def submit_own_script(self, request: JobRequest, script: str, *, array: str | None = None,
                          dependency: str | None = None, requeue: bool = False) -> str: ...

    def array_task_ids(self, array_ids: Sequence[str]) -> dict[str, str]: ...


class SubmissionLog(Protocol):
    """Where a replay records its submissions (djsb.calibrate.run_dir.CalibrationDir)."""

    def submitting(self, token: str, name: str) -> None: ...

    def submitted(self, token: str, name: str, job_id: str) -> None: ...


def sleep_request(job: TraceJob, work_dir: str) -> JobRequest:
    """A sleep job of ``job``'s CPUs, memory (none: the module's margin alone) and run time
    (:func:`sleep_argv`); its output files in ``work_dir``."""
    stem = f"{work_dir.rstrip('/')}/cal{job.job_id}"
    assert job.requested_time is not None  # slurm_ready gave every job one
    return JobRequest(name=f"cal{job.job_id}", app="sleep", total_tasks=job.cpus, cpus_per_task=1,
                      total_memory=round((job.memory_mb or 0) * MIB), exec_time=job.requested_time,
                      argv=sleep_argv(job.run_time),
                      stdout_path=f"{stem}.out", stderr_path=f"{stem}.err")


def sleep_argv(seconds: float) -> tuple[str, ...]:
    """A task that sleeps ``seconds`` of its own running time: one ``sleep 1`` after another, then the
    fraction left. A single ``sleep N`` would not do where Slurm suspends jobs (SUSPEND,GANG, gang
    scheduling): SIGSTOP does not move nanosleep's deadline (a stopped sleep, resumed after it, ends at
    once), so it would end N seconds after it began however long it was stopped, where a program's
    work, and the model's jobs, wait while suspended. Stopped within a ``sleep 1``, the task loses at
    most that second."""
    whole = int(seconds)
    script = f"n={whole}; while [ $n -gt 0 ]; do sleep 1; n=$((n - 1)); done"
    rest = seconds - whole
    return ("/bin/sh", "-c", script + (f"; sleep {rest:.3f}" if rest >= 0.001 else ""))


def replay_on_slurm(jobs: Sequence[TraceJob], module: JobModule, work_dir: str, *,
                    poll_interval: float = 2.0, timeout: float = 1800.0,
                    clock: Callable[[], float] = time.time,
                    sleep: Callable[[float], None] = time.sleep,
                    watch: Callable[[], None] | None = None, log: SubmissionLog | None = None,
                    name: Callable[[TraceJob], str] = lambda job: f"cal{job.job_id}",
                    module_of: Callable[[TraceJob], JobModule] | None = None,
                    started: Callable[[float], None] | None = None,
                    dependencies: Mapping[int, Dependency] | None = None) -> pd.DataFrame:
    """Submit every job at its offset, wait until all ended, and return Slurm's times (index
    job_id; columns slurm_id, submit, start, end, state, nodes, origin, sent), from the instant of the
    first submission's offset 0. ``watch`` is called at every step of the waits (every
    ``STOP_CHECK_S``): :class:`~djsb.calibrate.pass_watch.PassWatch` looks at sdiag. ``log``
    records each submission under ``name(job)``; ``module_of``: the module that submits each job
    (default ``module``, which polls and cancels them all); ``started`` is called with the origin
    before the first submission. A job array (tasks with ``array_task``) is submitted once, with its
    first task, its tasks known by their own ids once they started; ``dependencies`` (job id: what it
    waits for) become sbatch --dependency (:mod:`~djsb.calibrate.job_links`). The jobs that
    ended show as progress on stderr (a line every 10 s off a terminal)."""
    origin = clock()
    if started is not None:
        started(origin)
    ids: dict[str, int] = {}  # Slurm's own job id -> job id
    tasks: dict[str, int] = {}  # an array task not started yet, as ARRAY_INDEX -> job id
    slurm_ids: dict[int, str] = {}  # a job's, or an array's (by its id), id as sbatch gave it
    submitted_as: dict[int, str] = {}  # job id -> the id sbatch gave it (an array task: its array's)
    sent: dict[int, float] = {}
    bar = Progress("Slurm jobs ended", len(jobs), line_every=10.0)
    with stop_signals() as received, contextlib.closing(bar):
        def wait(seconds: float) -> None:
            """Sleep ``seconds`` in short steps; a SIGINT/SIGTERM meanwhile stops the replay."""
            end = clock() + seconds
            while not received and clock() < end:
                if watch is not None:
                    watch()
                sleep(max(0.0, min(STOP_CHECK_S, end - clock())))
            if received:
                raise Signalled(received[0], done="the calibration's Slurm jobs cancelled")

        try:
            for unit in submission_units(jobs):
                job = unit[0]
                wait(origin + job.submit - clock())
                request = sleep_request(job, work_dir)
                if log is not None:
                    log.submitting(request.token, name(job))
                submitter = module_of(job) if module_of is not None else module
                array = array_indices(unit)
                dependency = sbatch_dependency((dependencies or {}).get(job.job_id), slurm_ids)
                if array is None and dependency is None and not job.requeue:
                    slurm_id = submitter.submit(request)
                else:
                    linked = _linked(submitter)
                    slurm_id = linked.submit_own_script(request, linked.batch_script(request), array=array,
                                                        dependency=dependency, requeue=bool(job.requeue))
                if log is not None:
                    log.submitted(request.token, name(job), slurm_id)
                slurm_ids[unit_id(job)] = slurm_id
                if array is None:
                    ids[slurm_id] = job.job_id
                else:
                    tasks.update((f"{slurm_id}_{task.array_task[1]}", task.job_id) for task in unit
                                 if task.array_task is not None)
                sent.update((task.job_id, clock() - origin) for task in unit)
                submitted_as.update((task.job_id, slurm_id) for task in unit)
            deadline = origin + max(j.submit for j in jobs) + timeout
            while True:
                if tasks:
                    arrays = sorted({task.partition("_")[0] for task in tasks})
                    started_tasks = _linked(module).array_task_ids(arrays)
                    ids.update((started_tasks[t], tasks.pop(t)) for t in list(tasks) if t in started_tasks)
                statuses = module.poll(list(ids))
                bar.update(sum(1 for s in statuses.values() if s.state.finished))
                if not tasks and all(s.state.finished for s in statuses.values()):
                    break
                if clock() > deadline:
                    raise RunError(f"calibration jobs still unfinished {timeout:g} s after the last "
                                   "submission")
                wait(poll_interval)
        except BaseException:
            for slurm_id in {*ids, *slurm_ids.values()}:  # whatever ended the replay, none of its jobs
                module.cancel(slurm_id)                    # outlives it (an array's id: all its tasks)
            raise
    return replay_table(ids, statuses, origin, sent, submitted_as)


def _linked(module: JobModule) -> LinkedSubmitter:
    """``module`` as the Slurm job module that submits arrays and dependencies (a calibration's
    modules are all Slurm's)."""
    return cast(LinkedSubmitter, module)


def replay_table(ids: dict[str, int], statuses: dict[str, JobStatus], origin: float,
                 sent: dict[int, float], submitted_as: Mapping[int, str]) -> pd.DataFrame:
    """Slurm's times of the replay's jobs, in seconds from ``origin`` (Unix seconds, kept in column
    ``origin``: Slurm rounds reservations and batches its will-run test on its clock's multiples
    of 60 and 30 s, so a model replaying the run needs the phase of that clock), and ``sent``, when
    sbatch returned: Slurm records times to the whole second, so its ``submit`` is up to a second
    before the submission, and a model replaying ``submit`` would start jobs before they existed;
    ``submitted_id``, the id sbatch gave the job (a job array task's: its array's, ``submitted_as``).
    A requeued job's ``submit`` is its first submission's second, the one sbatch returned in: Slurm
    moves a requeued job's submit time to its requeue (job_mgr.c ``batch_requeue_fini``), while its
    start is its last run's, and the wait that counts is the whole one, as the model's."""
    rows = []
    for slurm_id, job_id in ids.items():
        status = statuses[slurm_id]
        if status.start is None or status.submit is None or status.end is None:
            raise RunError(f"Slurm job {slurm_id} ended {status.state.value} without start/end times")
        submitted = min(status.submit, math.floor(origin + sent[job_id]))
        rows.append({"job_id": job_id, "slurm_id": slurm_id, "submit": submitted - origin,
                     "start": status.start - origin, "end": status.end - origin, "state": status.state.value,
                     "nodes": ",".join(status.nodes), "origin": origin, "sent": sent[job_id],
                     "submitted_id": submitted_as[job_id]})
    return pd.DataFrame(rows).set_index("job_id").sort_index()
