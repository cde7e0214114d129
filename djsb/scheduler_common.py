"""What the command-line scheduler modules (LSF, Grid Engine; Slurm could too) share.

Reading a module's ``options`` with errors that name the config key, the time limit a job asks
for, running scheduler commands under a timeout with retries while the scheduler's daemon is
unreachable (a restarting master must not fail a benchmark run that lasts hours), and
:class:`SchedulerModule`, the harness operations on top of the paper's command methods.
"""

from __future__ import annotations

import math
import re
import shlex
import time
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from djsb.errors import ConfigError, JobModuleError
from djsb.transport import CommandResult, CommandTimeout, Transport
from job_modules.template import CommandJobModule, JobRequest, JobState, JobStatus

MIB = 1 << 20


def option_error(key: str, message: str) -> ConfigError:
    """A ConfigError pointing at ``job_module.options.<key>``."""
    return ConfigError(message, key=f"job_module.options.{key}")


def check_option_names(options: Mapping[str, Any], known: Mapping[str, str]) -> None:
    """Refuse options the module does not know (a typo must not be ignored silently)."""
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise option_error(unknown[0], f"unknown option(s) {', '.join(unknown)} (known: {', '.join(known)})")


def number_option(options: Mapping[str, Any], key: str, default: float) -> float:
    """A non-negative number option."""
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise option_error(key, f"expected a non-negative number, got {value!r}")
    return float(value)


def name_option(options: Mapping[str, Any], key: str) -> str | None:
    """An optional name (queue, project): a non-empty string without white space, or None."""
    value = options.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value or re.search(r"\s", value):
        raise option_error(key, f"expected a name, got {value!r}")
    return value


def string_list_option(options: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """Extra command-line arguments: a list, or one string split as the shell would."""
    value = options.get(key, [])
    if isinstance(value, str):
        return tuple(shlex.split(value))
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
        raise option_error(key, f"expected a list of arguments, got {value!r}")
    return tuple(str(v) for v in value)


def time_limit_seconds(exec_time: float, factor: float, margin: float) -> int:
    """The wall-clock limit a job asks for: its expected time stretched by ``factor`` (sharing CPUs
    slows it down) plus ``margin`` for start-up, in whole seconds."""
    return max(1, math.ceil(exec_time * factor + margin))


def tasks_per_node_for(option: Any, app: str) -> int | None:
    """The tasks_per_node option for ``app``: one number for every app, or a mapping app -> number."""
    value = option.get(app) if isinstance(option, dict) else option
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise option_error("tasks_per_node", f"expected a positive whole number, got {value!r}")
    return value


def placement_hosts(module: CommandJobModule, request: JobRequest,
                    last: Mapping[str, JobStatus]) -> tuple[str, ...]:
    """The hosts of the job ``request`` must share (colocate_with), from the last poll or a fresh
    one; without colocation, the configured node_host_names (possibly none)."""
    if request.colocate_with is None:
        return request.node_host_names
    sim = last.get(request.colocate_with)
    if sim is None or not sim.nodes:
        sim = module.poll([request.colocate_with]).get(request.colocate_with, JobStatus(JobState.UNKNOWN))
    if not sim.nodes:
        raise JobModuleError(f"{module.name}: cannot place {request.name} with job "
                             f"{request.colocate_with}: it has no hosts (state {sim.state.value})")
    return sim.nodes


class RetryingTransport:
    """A transport that retries a command while it hangs or fails with a transient error (the
    scheduler's daemon down or restarting), with exponential back-off, for ``retry_for`` seconds;
    then raises JobModuleError. Only the retrying is done here: the module decides what a
    non-zero exit of a command that did answer means."""

    def __init__(self, inner: Transport, *, scheduler: str, retry_for: float,
                 transient: Callable[[str], bool], sleep: Callable[[float], None] = time.sleep) -> None:
        self.inner = inner
        self.scheduler = scheduler
        self.retry_for = retry_for
        self.transient = transient
        self.sleep = sleep

    def run(self, command: str, timeout: float = 60.0) -> CommandResult:
        deadline = time.monotonic() + self.retry_for
        delay = 0.5
        while True:
            try:
                result = self.inner.run(command, timeout=timeout)
                error = result.stderr.strip() if result.returncode and self.transient(result.stderr) else ""
            except CommandTimeout:
                error = f"no answer within {timeout:g} s"
            if not error:
                return result
            if time.monotonic() + delay > deadline:
                raise JobModuleError(f"{self.scheduler}: scheduler unreachable for {self.retry_for:g} s "
                                     f"({error}): {command}")
            self.sleep(delay)
            delay = min(2 * delay, 15.0)

    def write_text(self, path: str, text: str) -> None:
        self.inner.write_text(path, text)

    def read_text(self, path: str) -> str | None:
        return self.inner.read_text(path)

    def close(self) -> None:
        self.inner.close()


def job_shell_words(argv: Sequence[str]) -> list[str]:
    """``argv`` as words for bsub/qsub: both join their command words with spaces into one line
    that the job's shell parses again, so each word is quoted for that second shell too."""
    return [shlex.quote(word) for word in argv]


class SchedulerModule(CommandJobModule):
    """A command-line scheduler module: options, retried commands, one batched status query,
    an accounting query for jobs the scheduler no longer lists, and colocation by host names.

    Subclasses give the commands (the paper's get_*_command methods), ``parse_status``,
    ``parse_job_id``, ``is_transient`` and optionally ``accounting``.
    """

    name = "scheduler"
    COMMON_OPTIONS: dict[str, str] = {
        "queue": "the queue to submit to",
        "oversubscribe_queue": "the queue for jobs that share the simulation's CPUs (default: queue)",
        "project": "the project to charge (-P)",
        "submit_options": "extra submit arguments, a list",
        "memory_margin": "MiB added to each task's memory for the program itself (default 64; sge: 512)",
        "time_factor": "the time limit is exec_time * time_factor + time_margin (default 3)",
        "time_margin": "seconds added to the time limit (default 120)",
        "command_timeout": "seconds before a scheduler command counts as hung (default 30)",
        "retry_for": "seconds to keep retrying while the scheduler is unreachable (default 180)",
    }
    OPTIONS: dict[str, str] = COMMON_OPTIONS
    MEMORY_MARGIN_MIB = 64.0

    def __init__(self, options: Mapping[str, Any], transport: Transport, *,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__(options, transport)
        check_option_names(self.options, self.OPTIONS)
        self.queue = name_option(self.options, "queue")
        self.oversubscribe_queue = name_option(self.options, "oversubscribe_queue")
        self.project = name_option(self.options, "project")
        self.submit_options = string_list_option(self.options, "submit_options")
        self.memory_margin = number_option(self.options, "memory_margin", self.MEMORY_MARGIN_MIB)
        self.time_factor = number_option(self.options, "time_factor", 3.0)
        self.time_margin = number_option(self.options, "time_margin", 120.0)
        self.command_timeout = number_option(self.options, "command_timeout", 30.0)
        self.retry_for = number_option(self.options, "retry_for", 180.0)
        self.transport = RetryingTransport(transport, scheduler=self.name, retry_for=self.retry_for,
                                           transient=self.is_transient, sleep=sleep)
        self._last: dict[str, JobStatus] = {}
        self._cancelled: set[str] = set()

    # -- what a scheduler module defines ---------------------------------------------------

    @abstractmethod
    def is_transient(self, stderr: str) -> bool:
        """The error text says the scheduler could not answer now (worth retrying)."""

    def status_failed(self, result: CommandResult) -> bool:
        """The status query failed (rather than answering that some jobs are unknown)."""
        return result.returncode != 0

    def accounting(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        """Final records of jobs the status query no longer lists; by default none."""
        return {}

    # -- the harness's operations ----------------------------------------------------------

    def submit(self, request: JobRequest) -> str:
        result = self.run(self.get_submit_command(request))
        try:
            return self.parse_job_id(result.stdout, result.stderr)
        except ValueError as exc:
            raise JobModuleError(f"{self.name}: {exc} (stderr: {result.stderr.strip()})") from None

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
                                 f"{result.stderr.strip()}")
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
                    statuses[job_id] = JobStatus(JobState.UNKNOWN, reason=f"not known to {self.name}")
        self._last.update(statuses)
        return statuses

    def cancel(self, job_id: str) -> None:
        self._cancelled.add(job_id)
        self.run(self.get_cancel_command(job_id), check=False)

    def queue_for(self, request: JobRequest) -> str | None:
        """The queue of ``request``: oversubscribe_queue for a job that shares the simulation's
        CPUs (a queue whose slots overlap the first's), else the queue option."""
        if request.oversubscribe and self.oversubscribe_queue:
            return self.oversubscribe_queue
        return self.queue

    def placement(self, request: JobRequest) -> tuple[str, ...]:
        """The hosts the job must run on: the simulation's (colocation), the configured
        node_host_names, or none (the scheduler decides)."""
        return placement_hosts(self, request, self._last)
