"""The job module API (paper 001 sec. 2.2): what the harness asks of any system that runs jobs.

A job module turns one application instance (a :class:`JobRequest`) into a job on some system and
answers for it. The harness talks to every module through :class:`JobModule`'s high-level
operations (submit, poll, suspend, resume, cancel). Command-based schedulers subclass
:class:`CommandJobModule`, which implements those operations with the paper's command-returning
methods (listed in job_modules/template.py) run through a transport (local shell or SSH), so they
work on a remote login node for free.

A module declares its options in ``OPTIONS`` (djsb.jobs.options), so a bad option is reported as
``file:line: job_module.options.X: message`` by ``djsb validate``. job_modules/template.py is the
example a user copies to support a new scheduler. Build every command with ``shlex.quote`` on each
value; never paste a config value raw into a shell.
"""

from __future__ import annotations

import enum
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from djsb.clock import Clock
from djsb.errors import JobModuleError
from djsb.jobs.options import Option, OptionValues, read_options
from djsb.jobs.outage import Outage
from djsb.transport import CommandResult, Transport
from djsb.yamlnodes import Located


@dataclass(frozen=True)
class JobRequest:
    """One application instance to run (paper 001 sec. 2.3), after the harness resolved placement.

    ``argv`` is the command of one task; the module starts ``total_tasks`` of them (each with
    ``cpus_per_task`` CPUs and OMP_NUM_THREADS set accordingly). ``colocate_with`` is the job id of
    the simulation when the analytics must share its nodes (same_nodes_as_sim), ``oversubscribe``
    asks the scheduler to let it share the simulation's CPUs, and ``cpu_list`` pins the job to
    explicit CPUs where the module can (the local module). ``control_file`` holds the number of
    threads per task the malleable application should use now (the dynamic scenario); the harness
    writes it, the application (or a simulated module) reads it. ``token`` is unique to this
    submission: the harness writes it to its ledger before submitting, and a module that can tag a
    job with it finds the job by it later (:meth:`JobModule.find_by_token`), even if the submit's
    reply, and so the job's id, never came back.
    """

    name: str
    app: str
    total_tasks: int
    cpus_per_task: int
    total_memory: int
    exec_time: float
    argv: tuple[str, ...]
    stdout_path: str
    stderr_path: str
    node_host_names: tuple[str, ...] = ()
    colocate_with: str | None = None
    oversubscribe: bool = False
    cpu_list: tuple[int, ...] | None = None
    control_file: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    token: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def total_cpus(self) -> int:
        return self.total_tasks * self.cpus_per_task

    @property
    def memory_per_task(self) -> int:
        return self.total_memory // self.total_tasks


class JobState(enum.Enum):
    """Job states the harness distinguishes; SUSPENDED is its own state (stop&continue)."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    TIMEOUT = "TIMEOUT"
    PREEMPTED = "PREEMPTED"
    NODE_FAIL = "NODE_FAIL"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    UNKNOWN = "UNKNOWN"

    @property
    def finished(self) -> bool:
        return self not in (JobState.PENDING, JobState.RUNNING, JobState.SUSPENDED, JobState.UNKNOWN)


@dataclass(frozen=True)
class JobStatus:
    """A job's state and, where the system reports them, its Unix submit/start/end times.

    ``final`` is False while the system shows the job ended but not yet how (Slurm's COMPLETING:
    its processes are gone or going, its exit status not yet recorded): ``state`` is then only the
    best guess, and the harness records the job once a final answer comes (the scheduler's
    accounting, or a later poll). ``restarts`` counts how often the scheduler started the job
    again (a requeue after a node failure): a benchmark job that ran more than once measured
    something else, so the harness fails its cell.
    """

    state: JobState
    submit: float | None = None
    start: float | None = None
    end: float | None = None
    exit_code: int | None = None
    nodes: tuple[str, ...] = ()
    reason: str = ""
    final: bool = True
    restarts: int = 0


def held(statuses: Mapping[str, JobStatus]) -> dict[str, JobStatus]:
    """The statuses of jobs not over for good: not ended, or ended without a final state."""
    return {job_id: status for job_id, status in statuses.items()
            if status.state is not JobState.UNKNOWN and not (status.state.finished and status.final)}


@dataclass(frozen=True)
class CpuCapacity:
    """The most CPUs a module can give, known before anything runs: ``per_task`` (the CPUs of one
    node or machine), ``per_job`` (all of them, None: no limit beyond a node's), and ``where``
    names what holds them, for the message that refuses a config asking for more."""

    per_task: int
    per_job: int | None
    where: str


class JobModule(ABC):
    """The operations the harness needs from any system that runs jobs.

    A module that runs on a virtual time line (the simulated cluster) sets ``clock`` to its clock;
    the harness then waits on that clock instead of the wall clock. ``OPTIONS`` declares the
    module's options (None: the module checks them itself; ``declared_options`` of djsb.jobs.options
    derives it from a dataclass whose fields are declared with djsb.setting, as the simulated module's
    are, so its reference page can be generated); a module is built as
    ``Module(options, transport)`` with the options as a plain dict or as the config's Located tree.
    """

    name: str = "abstract"
    clock: Clock | None = None
    OPTIONS: ClassVar[Mapping[str, Option] | None] = None
    runs_commands: ClassVar[bool] = True
    """The module runs each request's argv (every real system): a job of the bundled app must then
    leave its report. The simulated cluster models the application instead and runs nothing."""

    @classmethod
    def read_options(cls, options: Mapping[str, Any] | Located) -> OptionValues:
        """``options`` checked against ``OPTIONS`` (raises ConfigError naming the option)."""
        return read_options(cls.OPTIONS, options)

    @classmethod
    def cpu_capacity(cls, options: OptionValues) -> CpuCapacity | None:
        """The CPUs the module can give a job with these options, so a config asking for more is
        refused before a run starts; None when only the scheduler knows (asked at run time)."""
        return None

    def node_capacity(self) -> CpuCapacity | None:
        """The CPUs the scheduler says the jobs' nodes have, asked with one cheap query through the
        transport before a run creates anything, so a config asking for more is refused then and not
        by every submission of the run; None when the module cannot ask (its :meth:`cpu_capacity`
        checked what is known without asking) or the scheduler did not answer."""
        return None

    @abstractmethod
    def submit(self, request: JobRequest) -> str:
        """Start or queue the job and return its id."""

    @abstractmethod
    def poll(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        """The state of each job, ideally in one query; a job missing from the answer is UNKNOWN."""

    @abstractmethod
    def suspend(self, job_id: str) -> None:
        """Stop the job's processes without freeing its memory (stop&continue)."""

    @abstractmethod
    def resume(self, job_id: str) -> None:
        """Continue a suspended job."""

    @abstractmethod
    def cancel(self, job_id: str) -> None:
        """End the job now, whatever its state; never raises for a job already gone."""

    def still_held(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        """The jobs of ``job_ids`` the system still holds, with their states: queued, running,
        suspended, or shown ending but not yet how (a job ending may still be started again: Slurm
        requeues a job whose launch failed on a dead node, --no-requeue or not). A job the system
        no longer knows is not held. By default, from :meth:`poll`; a module whose ``poll`` settles
        some ends itself (Slurm: a job it cancelled is CANCELLED at once) asks the system instead."""
        return held(self.poll(job_ids))

    def find_by_token(self, tokens: Collection[str]) -> dict[str, str]:
        """The id of each job not yet ended that was submitted with one of ``tokens``
        (JobRequest.token), by token, so that :meth:`cancel` ends it: how ``--resume`` finds the
        jobs of a killed harness whose ids it never recorded. By default the module cannot tag
        jobs: none found."""
        return {}

    def close(self) -> None:
        """Release what the module holds (connections, files)."""
        return None

    def watch_outages(self, listener: Callable[[Outage], None]) -> None:
        """Tell ``listener`` each interval the system did not answer, once it ended (a module that
        cannot be unreachable, like the local or simulated one, has none to tell)."""
        return None

    def request_stop(self, grace: float) -> None:
        """The run is stopping: give every command (the running one too) at most ``grace`` more
        seconds and retry none. Safe to call from a signal handler."""
        return None


class CommandJobModule(JobModule):
    """A job module defined by the paper's command-returning methods, run through a transport."""

    name = "command"
    command_timeout: float = 60.0

    def __init__(self, options: Mapping[str, Any] | Located, transport: Transport) -> None:
        self.options = self.read_options(options)
        self.transport = transport
        self._submit_output: dict[str, tuple[str, str]] = {}

    @abstractmethod
    def get_submit_command(self, request: JobRequest) -> str:
        """The shell command that submits ``request`` (paper 001: get_submit_command)."""

    @abstractmethod
    def get_poll_completion_command(self, submit_stdout: str, submit_stderr: str) -> str:
        """A command exiting 0 once the job has completed (paper 001: get_poll_completion_command)."""

    @abstractmethod
    def get_suspend_command(self, job_id: str) -> str:
        """The command that suspends the job (paper 001: get_suspend_command)."""

    @abstractmethod
    def get_resume_command(self, job_id: str) -> str:
        """The command that resumes the job (paper 001: get_resume_command)."""

    @abstractmethod
    def get_cancel_command(self, job_id: str) -> str:
        """The command that cancels the job."""

    def parse_job_id(self, submit_stdout: str, submit_stderr: str) -> str:
        """The job id in the submit command's output; by default its last non-empty line."""
        lines = [line.strip() for line in submit_stdout.splitlines() if line.strip()]
        if not lines:
            raise JobModuleError(f"{self.name}: submit printed no job id (stderr: {submit_stderr.strip()})")
        return lines[-1]

    def get_status_command(self, job_ids: Sequence[str]) -> str | None:
        """One command that reports every job in ``job_ids``; None: poll each job's completion."""
        return None

    def parse_status(self, stdout: str) -> dict[str, JobStatus]:
        """Records of ``get_status_command``'s output, keyed by job id."""
        raise NotImplementedError

    def run(self, command: str, *, check: bool = True) -> CommandResult:
        """Run one command through the transport; a non-zero exit raises when ``check``."""
        result = self.transport.run(command, timeout=self.command_timeout)
        if check and result.returncode != 0:
            raise JobModuleError(f"{self.name}: command failed ({result.returncode}): {command}: "
                                 f"{result.stderr.strip() or result.stdout.strip()}")
        return result

    def submit(self, request: JobRequest) -> str:
        result = self.run(self.get_submit_command(request))
        job_id = self.parse_job_id(result.stdout, result.stderr)
        self._submit_output[job_id] = (result.stdout, result.stderr)
        return job_id

    def poll(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        if not job_ids:
            return {}
        command = self.get_status_command(job_ids)
        if command is not None:
            return self.parse_status(self.run(command).stdout)
        states: dict[str, JobStatus] = {}
        for job_id in job_ids:
            stdout, stderr = self._submit_output.get(job_id, (job_id, ""))
            done = self.run(self.get_poll_completion_command(stdout, stderr), check=False).returncode == 0
            states[job_id] = JobStatus(JobState.COMPLETED if done else JobState.RUNNING)
        return states

    def suspend(self, job_id: str) -> None:
        self.run(self.get_suspend_command(job_id))

    def resume(self, job_id: str) -> None:
        self.run(self.get_resume_command(job_id))

    def cancel(self, job_id: str) -> None:
        self.run(self.get_cancel_command(job_id), check=False)
