"""What the command-line scheduler modules (Slurm, Grid Engine, LSF) share.

The options every scheduler takes (limits, margins, timeouts), the time and memory limits a job
asks for, placement by host names (colocation), running scheduler commands under a timeout with
retries while the scheduler's daemon is unreachable (a restarting controller must not fail a
benchmark run that lasts hours), an idempotent submit (a hook finds the job a submit whose reply
was lost did create, so a retry never submits twice), the batch script kept for review, and
:class:`SchedulerModule`, the harness operations on top of the paper's command methods.
"""

from __future__ import annotations

import math
import time
from abc import abstractmethod
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from djsb.clock import Wakeable
from djsb.errors import JobModuleError, SchedulerStopped, SubmitRejected, one_line
from djsb.jobs.api import CommandJobModule, JobRequest, JobState, JobStatus
from djsb.jobs.batch import render_batch_script, script_path
from djsb.jobs.options import Option, Reader, as_arguments
from djsb.jobs.outage import Outage
from djsb.transport import CommandResult, CommandTimeout, ConnectionLost, Transport
from djsb.yamlnodes import Located, as_duration, as_number

MIB = 1 << 20

Recover = Callable[[], CommandResult | None]

# A scheduler command that answers only after this long was waiting for its daemon: Slurm's CLI,
# for one, keeps trying to reach slurmctld for MessageTimeout (10 s) before it fails, so a short
# slurmctld outage shows only as a slow answer. The interval counts as an outage.
SLOW_ANSWER_S = 5.0

TOKEN_PREFIX = "djsb-"
"""A job DJSB submitted carries this prefix and its submission token (JobRequest.token) in a field
its scheduler keeps: Slurm's --comment, the end of a Grid Engine or LSF job name (:func:`tagged_name`)."""


STOPPING = "the run is stopping"
"""Why a command did not run at all: the stop deadline had passed. No answer was asked of the
scheduler, so nothing says it was down: no outage."""


class Unanswered(Exception):
    """A one-off scheduler query (:meth:`RetryingTransport.run_once`) got no answer."""


def tagged_name(name: str, token: str) -> str:
    """The job name ``name`` with the submission ``token`` at its end, for schedulers whose free
    text about a job outlives it only in its name (Grid Engine's accounting keeps the name, not the
    job context; LSF's bjobs -J and job_name match it)."""
    return f"{name}.{TOKEN_PREFIX}{token}"


def name_token(name: str) -> str | None:
    """The submission token at the end of a :func:`tagged_name`; None for any other name."""
    _, dot, token = name.rpartition("." + TOKEN_PREFIX)
    return token if dot and token else None


TaggedJob = tuple[str, JobState, str]
"""A job a scheduler lists with a submission token: (job id, state, token)."""


def job_with_token(tagged: Iterable[TaggedJob], token: str) -> str | None:
    """The id of the job with ``token`` among ``tagged``, in any state (find_submitted's answer)."""
    return next((job_id for job_id, _, tagged_token in tagged if tagged_token == token), None)


def live_jobs_by_token(tagged: Iterable[TaggedJob], tokens: Collection[str]) -> dict[str, str]:
    """The id of each job among ``tagged`` not yet ended whose token is one of ``tokens``, by token
    (find_by_token's answer)."""
    wanted = set(tokens)
    return {token: job_id for job_id, state, token in tagged if token in wanted and not state.finished}


def _non_negative(node: Located) -> float:
    return as_number(node, 0.0)


def _seconds(node: Located) -> float:
    """A time >= 0: a bare number in seconds, or one of Slurm's time forms."""
    return as_duration(node, unit="s")


COMMON_OPTIONS: dict[str, Option] = {
    "memory_margin": Option(_non_negative, None, "MiB added to each task's memory for the program itself "
                                                 "(default 64; sge: 512)"),
    "time_factor": Option(_non_negative, 3.0, "the time limit is exec_time * time_factor + time_margin"),
    "time_margin": Option(_seconds, 120.0, "seconds added to the time limit"),
    "command_timeout": Option(_seconds, 30.0, "seconds before a scheduler command counts as hung"),
    "retry_for": Option(_seconds, 180.0, "seconds to keep retrying while the scheduler is unreachable"),
}
"""Options of every scheduler module (memory_margin's default is the module's MEMORY_MARGIN_MIB)."""

def queue_options(read_queue: Reader, read_project: Reader) -> dict[str, Option]:
    """Options of the queue-based schedulers (Grid Engine, LSF), their names read by the scheduler's
    own rules (djsb.jobs.names)."""
    return {
        "queue": Option(read_queue, None, "the queue to submit to"),
        "oversubscribe_queue": Option(read_queue, None, "the queue for jobs that share the simulation's "
                                                        "CPUs (default: queue)"),
        "project": Option(read_project, None, "the project to charge (-P)"),
        "submit_options": Option(as_arguments, (), "extra submit arguments, a list"),
    }


def time_limit_seconds(exec_time: float, factor: float, margin: float) -> int:
    """The wall-clock limit a job asks for: its expected time stretched by ``factor`` (sharing CPUs
    slows it down) plus ``margin`` for start-up, in whole seconds."""
    return max(1, math.ceil(exec_time * factor + margin))


def time_limit_minutes(exec_time: float, factor: float, margin: float) -> int:
    """The same limit in whole minutes (Slurm's --time, LSF's -W), rounded up."""
    return max(1, math.ceil((exec_time * factor + margin) / 60))


def task_memory_mib(request: JobRequest, margin_mib: float) -> float:
    """One task's memory limit in MiB: its share of total_memory (the application's data) plus a
    margin for the program itself, which the scheduler counts too (and kills the task beyond it)."""
    return request.memory_per_task / MIB + margin_mib


def placement_hosts(module: CommandJobModule, request: JobRequest,
                    last: Mapping[str, JobStatus]) -> tuple[str, ...]:
    """The hosts of the job ``request`` must share (colocate_with), from the last poll or a fresh
    one; without colocation, the configured node_host_names (possibly none)."""
    if request.colocate_with is None:
        return request.node_host_names
    sim = last.get(request.colocate_with)
    if sim is None or not sim.nodes:
        sim = module.poll([request.colocate_with]).get(request.colocate_with, JobStatus(JobState.UNKNOWN))
    if sim.state.finished:  # e.g. COMPLETING: what is left of it is being torn down
        raise SubmitRejected(f"{module.name}: cannot place {request.name} with job {request.colocate_with}: "
                             f"it has ended ({sim.state.value})")
    if not sim.nodes:
        raise JobModuleError(f"{module.name}: cannot place {request.name} with job "
                             f"{request.colocate_with}: it has no hosts (state {sim.state.value})")
    return sim.nodes


class RetryingTransport:
    """A transport that retries a command while it hangs or fails with a transient error (the
    scheduler's daemon down or restarting), with exponential back-off, for ``retry_for`` seconds;
    then raises JobModuleError. Only the retrying is done here: the module decides what a
    non-zero exit of a command that did answer means.

    Each interval without an answer (failed attempts, or one answer slower than ``slow_answer``)
    is reported once it ends to ``on_outage``: the measurements across it are suspect.
    After ``request_stop`` (a signal handler may call it) nothing waits or retries any more: every
    command, the running one included, gets until the stop deadline, and one that cannot answer by
    then raises :class:`SchedulerStopped`.
    """

    def __init__(self, inner: Transport, *, scheduler: str, retry_for: float,
                 transient: Callable[[str], bool], sleep: Callable[[float], None] | None = None,
                 on_outage: Callable[[Outage], None] | None = None) -> None:
        self.inner = inner
        self.scheduler = scheduler
        self.retry_for = retry_for
        self.transient = transient
        self._retry_pause = Wakeable()
        self.sleep = sleep if sleep is not None else self._wait
        self.on_outage = on_outage
        self.slow_answer = SLOW_ANSWER_S
        self.stop_deadline: float | None = None

    def _wait(self, seconds: float) -> None:
        """Sleep between retries, cut short by ``request_stop`` (and none at all after it)."""
        if self.stop_deadline is None:
            self._retry_pause.sleep(seconds)

    def request_stop(self, grace: float) -> None:
        """Give every scheduler command, from now on and the running one, ``grace`` more seconds."""
        self.stop_deadline = time.monotonic() + grace
        stop_by = getattr(self.inner, "stop_by", None)  # a transport that can cut a command short
        if stop_by is not None:
            stop_by(self.stop_deadline)
        self._retry_pause.wake()

    def _attempt(self, command: str, timeout: float) -> tuple[CommandResult | None, str]:
        """One run of ``command``: its result, or the transient error that kept it from answering
        (a timeout says how long the command really went unanswered, as measured here)."""
        if self.stop_deadline is not None:
            timeout = min(timeout, self.stop_deadline - time.monotonic())
            if timeout <= 0:
                return None, STOPPING
        started = time.monotonic()
        try:
            result = self.inner.run(command, timeout=timeout)
        except ConnectionLost as exc:
            return None, str(exc)
        except CommandTimeout:
            return None, f"no answer after {time.monotonic() - started:.1f} s (time-out {timeout:g} s)"
        if result.returncode and self.transient(result.stderr):
            return None, result.stderr.strip()
        return result, ""

    def _outage(self, start: float, attempts: int, command: str, error: str) -> None:
        if self.on_outage is not None:
            self.on_outage(Outage(start, time.time(), self.scheduler, attempts, command, error))

    def run_once(self, command: str, timeout: float) -> CommandResult:
        """One attempt of ``command``, not retried: raises :class:`Unanswered` when it hangs, the
        connection drops or it fails with a transient error (the lookup of a lost submission: while
        it cannot answer, the submit must not be repeated)."""
        result, error = self._attempt(command, timeout)
        if result is None:
            raise Unanswered(error)
        return result

    def _recover(self, recover: Recover) -> tuple[CommandResult | None, str]:
        """``recover``'s answer, or why it had none: an unanswered lookup counts as a failed attempt."""
        try:
            return recover(), ""
        except Unanswered as exc:
            return None, f"lost submission not looked up: {exc}"

    def run(self, command: str, timeout: float = 60.0, *, recover: Recover | None = None) -> CommandResult:
        """Run ``command`` until it answers; before each retry ``recover`` may answer in its place
        (the job a submit whose reply was lost did create); while ``recover`` itself cannot answer,
        the command is not run again."""
        deadline = time.monotonic() + self.retry_for
        delay = 0.5
        failed = 0
        first_error = ""
        outage_start = 0.0
        while True:
            started = time.time()
            result, error = None, ""
            if failed and recover is not None and self.stop_deadline is None:
                result, error = self._recover(recover)
            if result is None and not error:
                result, error = self._attempt(command, timeout)
            if result is not None:
                if failed:
                    self._outage(outage_start, failed, command, first_error)
                elif time.time() - started > self.slow_answer:
                    self._outage(started, 0, command, f"answered after {time.time() - started:.1f} s")
                return result
            if error == STOPPING:
                if failed:  # the scheduler had not answered until then: that much was an outage
                    self._outage(outage_start, failed, command, first_error)
                raise SchedulerStopped(f"{self.scheduler}: not run, {STOPPING}: {command}")
            if not failed:
                outage_start, first_error = started, error
            failed += 1
            if self.stop_deadline is not None:
                self._outage(outage_start, failed, command, first_error)
                raise SchedulerStopped(f"{self.scheduler}: not answered before the run stopped "
                                       f"({one_line(error)}): {command}")
            if time.monotonic() + delay > deadline:
                self._outage(outage_start, failed, command, first_error)
                raise JobModuleError(f"{self.scheduler}: scheduler unreachable for {self.retry_for:g} s "
                                     f"({one_line(error)}): {command}")
            self.sleep(delay)
            delay = min(2 * delay, 15.0)

    def write_text(self, path: str, text: str) -> None:
        self.inner.write_text(path, text)

    def read_text(self, path: str) -> str | None:
        return self.inner.read_text(path)

    def close(self) -> None:
        self.inner.close()


class SchedulerModule(CommandJobModule):
    """A command-line scheduler module: options, retried commands, an idempotent submit of a batch
    script kept for review, one batched status query, an accounting query for jobs the scheduler no
    longer lists, and colocation by host names.

    Subclasses give the commands (the paper's get_*_command methods), ``parse_status``,
    ``parse_job_id``, ``is_transient``, ``BATCH_TEMPLATE`` with ``batch_values``, and optionally
    ``accounting``, ``status_failed`` and ``find_submitted``.
    """

    name = "scheduler"
    OPTIONS: ClassVar[Mapping[str, Option] | None] = COMMON_OPTIONS
    MEMORY_MARGIN_MIB: ClassVar[float] = 64.0
    BATCH_TEMPLATE: ClassVar[Path]

    def __init__(self, options: Mapping[str, Any] | Located, transport: Transport, *,
                 sleep: Callable[[float], None] | None = None) -> None:
        super().__init__(options, transport)
        margin = self.options["memory_margin"]
        self.memory_margin: float = self.MEMORY_MARGIN_MIB if margin is None else margin
        self.time_factor: float = self.options["time_factor"]
        self.time_margin: float = self.options["time_margin"]
        self.command_timeout = self.options["command_timeout"]
        self.retry_for: float = self.options["retry_for"]
        self.transport: RetryingTransport = RetryingTransport(
            transport, scheduler=self.name, retry_for=self.retry_for, transient=self.is_transient,
            sleep=sleep, on_outage=self._outage_ended)
        self._outage_listener: Callable[[Outage], None] | None = None
        self._last: dict[str, JobStatus] = {}
        self._cancelled: set[str] = set()
        self._submitted_at: dict[str, float] = {}

    # -- what a scheduler module defines ---------------------------------------------------

    @abstractmethod
    def is_transient(self, stderr: str) -> bool:
        """The error text says the scheduler could not answer now (worth retrying)."""

    @abstractmethod
    def batch_values(self, request: JobRequest) -> dict[str, Any]:
        """The values ``BATCH_TEMPLATE`` renders the job's script with."""

    def status_failed(self, result: CommandResult) -> bool:
        """The status query failed (rather than answering that some jobs are unknown)."""
        return result.returncode != 0

    def accounting(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        """Final records of jobs the status query no longer lists; by default none."""
        return {}

    def find_submitted(self, token: str) -> str | None:
        """The id of the job, in any state, a submit with submission ``token`` created although its
        reply was lost (None: it created none, submit again). Called between two attempts of the
        submit; its queries go through ``transport.run_once``, whose :class:`Unanswered` makes the
        submit wait rather than risk a second job. By default the scheduler cannot tell: None."""
        return None

    # -- the batch script ------------------------------------------------------------------

    def batch_script(self, request: JobRequest) -> str:
        """The job's script: ``BATCH_TEMPLATE`` rendered with every value shell-quoted."""
        return render_batch_script(self.BATCH_TEMPLATE, **self.batch_values(request))

    # -- the harness's operations ----------------------------------------------------------

    def watch_outages(self, listener: Callable[[Outage], None]) -> None:
        self._outage_listener = listener

    def _outage_ended(self, outage: Outage) -> None:
        if self._outage_listener is not None:
            self._outage_listener(outage)

    def request_stop(self, grace: float) -> None:
        self.transport.request_stop(grace)

    def submit(self, request: JobRequest) -> str:
        """Write the batch script beside the job's output, then submit it; a retry after a lost
        reply first asks ``find_submitted``, so a job is never submitted twice."""
        return self.submit_script(request, self.batch_script(request), self.get_submit_command(request))

    def submit_script(self, request: JobRequest, script: str, command: str) -> str:
        """Write ``script`` beside the request's output, then run ``command``, which submits it, as
        :meth:`submit` does (a module's own kinds of job, e.g. Slurm's job arrays, come this way)."""
        self.transport.write_text(script_path(request.stdout_path), script)
        submitted_at = time.time()

        found: list[str] = []  # the job a lost attempt created, in place of the submit's own answer

        def recover() -> CommandResult | None:
            job_id = self.find_submitted(request.token)
            if job_id is None:
                return None
            found.append(job_id)
            return CommandResult(command, 0, "", "")

        result = self.run(command, check=False, recover=recover)
        if found:
            job_id = found[0]
        elif result.returncode != 0:
            refusal = one_line(result.stderr or result.stdout)
            raise SubmitRejected(f"{self.name}: submission refused: {refusal}")
        else:
            try:
                job_id = self.parse_job_id(result.stdout, result.stderr)
            except ValueError as exc:
                raise JobModuleError(f"{self.name}: {exc} (stderr: {result.stderr.strip()})") from None
        self._submitted_at[job_id] = submitted_at
        return job_id

    def run_once(self, command: str) -> CommandResult:
        """One attempt of ``command`` under ``command_timeout``, for ``find_submitted``'s lookups."""
        return self.transport.run_once(command, self.command_timeout)

    def run(self, command: str, *, check: bool = True, recover: Recover | None = None) -> CommandResult:
        """Run one command with retries; a non-zero exit of a command that answered raises when ``check``."""
        result = self.transport.run(command, timeout=self.command_timeout, recover=recover)
        if check and result.returncode != 0:
            raise JobModuleError(f"{self.name}: command failed ({result.returncode}): {command}: "
                                 f"{one_line(result.stderr or result.stdout)}")
        return result

    def poll(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        """One status query for all jobs; the accounting for the ones it no longer lists; a job
        this module cancelled and nobody lists counts as CANCELLED; else its last known state."""
        if not job_ids:
            return {}
        command = self.get_status_command(job_ids)
        assert command is not None, "a scheduler module has a batched status command"
        result = self.run(command, check=False)
        if self.status_failed(result):
            raise JobModuleError(f"{self.name}: status query failed ({result.returncode}): {command}: "
                                 f"{one_line(result.stderr)}")
        statuses = {k: v for k, v in self.parse_status(result.stdout).items() if k in job_ids}
        missing = [job_id for job_id in job_ids if job_id not in statuses]
        if missing:
            statuses.update((k, v) for k, v in self.accounting(missing).items() if k in missing)
        for job_id in job_ids:
            if job_id not in statuses:
                last = self._last.get(job_id)
                if last is not None and last.state.finished:
                    statuses[job_id] = last
                elif job_id in self._cancelled:
                    statuses[job_id] = JobStatus(JobState.CANCELLED, reason="cancelled by djsb")
                else:
                    statuses[job_id] = JobStatus(JobState.UNKNOWN, reason=f"not known to {self.name}, "
                                                 "and no accounting record")
        self._last.update(statuses)
        return statuses

    def cancel(self, job_id: str) -> None:
        self._cancelled.add(job_id)
        self.run(self.get_cancel_command(job_id), check=False)

    def first_seen(self, job_id: str) -> float:
        """The earliest time the job may have been submitted (for an accounting query's start)."""
        last = self._last.get(job_id)
        if last is not None and last.submit is not None:
            return last.submit
        return self._submitted_at.get(job_id, time.time() - 7 * 86400)

    def queue_for(self, request: JobRequest) -> str | None:
        """The queue of ``request``: oversubscribe_queue for a job that shares the simulation's
        CPUs (a queue whose slots overlap the first's), else the queue option."""
        queue: str | None = self.options.get("queue")
        if request.oversubscribe and self.options.get("oversubscribe_queue"):
            return str(self.options["oversubscribe_queue"])
        return queue

    def placement(self, request: JobRequest) -> tuple[str, ...]:
        """The hosts the job must run on: the simulation's (colocation), the configured
        node_host_names, or none (the scheduler decides)."""
        return placement_hosts(self, request, self._last)
