"""The local job module: an interactive session on this machine, no scheduler (paper 001 sec. 2.2).

Each job is a set of real processes (one per task) in a process group of its own, pinned to CPUs:

- the simulation takes the first CPUs of the pool (option ``cpus``, default this process's affinity
  mask), ``cpus_per_task`` consecutive CPUs per task;
- a job colocated with the simulation (the analytics in the execution stage) takes the *last*
  CPUs of each simulation task's slice: the CPUs it shares under oversubscription, that stand
  idle under stop&continue, and that the malleable simulation gives up in the dynamic scenario
  (djsb-stream re-pins its remaining threads to the first CPUs of its mask when it shrinks).

Suspend is SIGSTOP to the group, resume SIGCONT, cancel SIGTERM then SIGKILL after a grace period.
Start and end times come from a monotonic clock read by a reaper thread per task, so they are
sub-second accurate whatever the polling interval.

Each task carries its submission token in its environment (DJSB_JOB_TOKEN), so a later harness
finds the jobs of one that was killed (``find_by_token``, by reading /proc/PID/environ) and
cancels them: their processes outlive the harness (but a stopped one: the kernel hangs up an
orphaned process group that has a stopped member).
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from djsb.clock import WallClock
from djsb.errors import JobModuleError
from djsb.jobs.api import CpuCapacity, JobModule, JobRequest, JobState, JobStatus
from djsb.jobs.loader import register
from djsb.jobs.options import Option, OptionValues
from djsb.transport import Transport
from djsb.yamlnodes import Located, as_duration


def cpu_ranges(text: str | int | Sequence[int]) -> list[tuple[int, int]]:
    """The (first, last) CPU ranges of '0-3,6', 5 or [0, 1]: Linux cpulist syntax or a list of
    numbers, unexpanded (a range's size is checked before any list of its CPUs is made)."""
    if isinstance(text, int):
        return [(text, text)]
    if not isinstance(text, str):
        return [(int(cpu), int(cpu)) for cpu in text]
    ranges = []
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        ranges.append((int(low), int(high or low)))
    return ranges


def parse_cpu_list(text: str | int | Sequence[int]) -> tuple[int, ...]:
    """CPUs from '0-3,6', 5 or [0, 1]: Linux cpulist syntax or a list of numbers."""
    return tuple(cpu for low, high in cpu_ranges(text) for cpu in range(low, high + 1))


def cpu_list_text(cpus: Sequence[int]) -> str:
    """``cpus`` as a Linux cpulist: runs of consecutive numbers as ranges (0 1 2 5 -> '0-2,5')."""
    runs: list[list[int]] = []
    for cpu in cpus:
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(low) if low == high else f"{low}-{high}" for low, high in runs)


def as_cpu_list(node: Located) -> tuple[int, ...]:
    """The ``cpus`` option: a Linux cpulist ('0-3,6'), one CPU number or a list of numbers, every
    one a CPU this process may run on (its affinity mask: a job pinned to another could not start)."""
    value = node.plain()
    expected = f"expected a CPU list such as '0-3' or [0, 1], got {value!r}"
    try:
        if isinstance(value, bool) or (isinstance(value, list) and any(isinstance(v, bool) for v in value)):
            raise TypeError
        ranges = cpu_ranges(value)
    except (TypeError, ValueError):
        raise node.error(expected) from None
    if not ranges or min(low for low, _ in ranges) < 0 or any(high < low for low, high in ranges):
        raise node.error(expected)
    available = os.sched_getaffinity(0)
    beyond = max(high for _, high in ranges) > max(available)  # so '0-99999999' is never expanded
    cpus = () if beyond else parse_cpu_list(value)
    if beyond or not available.issuperset(cpus):
        raise node.error(f"{value!r} names CPUs this process may not run on: it may use CPUs "
                         f"{cpu_list_text(sorted(available))} (its affinity mask)")
    return cpus


TOKEN_ENV = "DJSB_JOB_TOKEN"
KILL_WAIT = 5.0
"""Seconds a job found by token may take to vanish after SIGKILL before cancel gives up."""
STOP_WAIT = 5.0
"""Seconds suspend waits for every task of a job to be stopped: SIGSTOP takes effect only when the
kernel next schedules the task, which on a loaded node is after kill() has returned."""


def stat_state_and_group(stat: str) -> tuple[str, int]:
    """The state letter and process group of a /proc/PID/stat line (the command name, in
    parentheses, may itself hold spaces and parentheses, so fields are counted from its end)."""
    fields = stat[stat.rindex(")") + 2:].split()
    return fields[0], int(fields[2])


def group_running(pgid: int) -> bool:
    """Whether a live task of process group ``pgid`` is neither stopped (T) nor ended (Z, X)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            tasks = list((proc / "task").iterdir())
            states = [stat_state_and_group((task / "stat").read_text()) for task in tasks]
        except OSError:
            continue
        if any(group == pgid and state not in "TtZX" for state, group in states):
            return True
    return False


def processes_with_token(tokens: Collection[str]) -> dict[int, str]:
    """PID -> token of every live process (of this user: others' environments are unreadable) whose
    environment sets DJSB_JOB_TOKEN to one of ``tokens``; an ended (zombie) process has none."""
    wanted = {f"{TOKEN_ENV}={token}".encode(): token for token in tokens}
    found: dict[int, str] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            variables = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        token = next((wanted[v] for v in variables if v in wanted), None)
        if token is not None:
            found[int(proc.name)] = token
    return found


def lent_slices(sim_slices: Sequence[Sequence[int]], n_cpus: int) -> tuple[int, ...]:
    """The ``n_cpus`` CPUs a colocated job gets: the last ceil(n/tasks) CPUs of each simulation task."""
    per_task = math.ceil(n_cpus / len(sim_slices))
    tail = [cpu for cpus in sim_slices for cpu in cpus[len(cpus) - per_task:]]
    return tuple(tail[:n_cpus])


@dataclass
class _Job:
    request: JobRequest
    pgid: int
    processes: list[subprocess.Popen[bytes]]
    slices: list[tuple[int, ...]]
    submit: float
    ends: dict[int, float] = field(default_factory=dict)
    suspended: bool = False
    cancelled: bool = False


def cpu_pool(options: OptionValues) -> tuple[int, ...]:
    """The CPUs jobs may use: the ``cpus`` option, else this process's affinity mask."""
    return options["cpus"] or tuple(sorted(os.sched_getaffinity(0)))


@register("local")
class LocalJobModule(JobModule):
    """Runs jobs as pinned process groups on this machine (options: see ``OPTIONS``)."""

    name = "local"
    OPTIONS = {
        "cpus": Option(as_cpu_list, None, "the CPUs jobs may use (default: this process's affinity mask)"),
        "kill_grace": Option(lambda n: as_duration(n, unit="s"), 3.0,
                             "seconds between SIGTERM and SIGKILL on cancel"),
    }

    def __init__(self, options: Mapping[str, Any] | Located, transport: Transport | None = None) -> None:
        values = self.read_options(options)
        self.pool = cpu_pool(values)
        self.kill_grace: float = values["kill_grace"]
        self.wall = WallClock()
        self.clock = self.wall
        self._jobs: dict[str, _Job] = {}
        self._found: dict[str, str] = {}
        self._lock = threading.Lock()

    @classmethod
    def cpu_capacity(cls, options: OptionValues) -> CpuCapacity:
        """A job's tasks share the CPU pool: no task, and no job, can have more CPUs than it holds."""
        pool = cpu_pool(options)
        return CpuCapacity(len(pool), len(pool), f"this machine has {len(pool)} for jobs "
                                                 f"(CPUs {cpu_list_text(pool)})")

    def _slices(self, request: JobRequest) -> list[tuple[int, ...]]:
        if request.cpu_list is not None:
            cpus = request.cpu_list
        elif request.colocate_with is not None:
            sim = self._jobs.get(request.colocate_with)
            if sim is None:
                raise JobModuleError(f"local: no job {request.colocate_with} to colocate with")
            cpus = lent_slices(sim.slices, request.total_cpus)
        else:
            cpus = self.pool[:request.total_cpus]
        if len(cpus) < request.total_cpus:
            raise JobModuleError(f"local: {request.name} needs {request.total_cpus} CPUs, only {len(cpus)} "
                                 f"available here ({self.pool})")
        step = request.cpus_per_task
        return [tuple(cpus[i * step:(i + 1) * step]) for i in range(request.total_tasks)]

    def submit(self, request: JobRequest) -> str:
        slices = self._slices(request)
        submit = self.wall.epoch(self.wall.now())
        processes: list[subprocess.Popen[bytes]] = []
        pgid = 0
        with open(request.stdout_path, "ab") as out, open(request.stderr_path, "ab") as err:
            for task, cpus in enumerate(slices):
                env = {**os.environ, **request.env, "OMP_NUM_THREADS": str(request.cpus_per_task),
                       "DJSB_TASK_ID": str(task), "DJSB_NUM_TASKS": str(request.total_tasks),
                       TOKEN_ENV: request.token}

                def setup(cpus: tuple[int, ...] = cpus, group: int = pgid) -> None:
                    os.setpgid(0, group)
                    os.sched_setaffinity(0, cpus)

                try:
                    proc = subprocess.Popen(list(request.argv), stdout=out, stderr=err, env=env,
                                            stdin=subprocess.DEVNULL, preexec_fn=setup)
                except (OSError, subprocess.SubprocessError) as exc:
                    if processes:
                        os.killpg(pgid, signal.SIGKILL)
                        for started in processes:
                            started.wait()
                    why = exc.strerror if isinstance(exc, OSError) else (
                        f"its process group or its pinning to CPUs {cpu_list_text(cpus)} failed")
                    raise JobModuleError(f"local: cannot start {request.argv[0]}: {why}") from exc
                if task == 0:
                    pgid = proc.pid
                processes.append(proc)
        job = _Job(request, pgid, processes, slices, submit)
        job_id = str(pgid)
        self._jobs[job_id] = job
        for index, proc in enumerate(processes):
            threading.Thread(target=self._reap, args=(job, index, proc), daemon=True).start()
        return job_id

    def _reap(self, job: _Job, index: int, proc: subprocess.Popen[bytes]) -> None:
        proc.wait()
        with self._lock:
            job.ends[index] = self.wall.epoch(self.wall.now())

    def _status(self, job: _Job) -> JobStatus:
        with self._lock:
            done = len(job.ends) == len(job.processes)
            end = max(job.ends.values()) if done else None
        nodes = (os.uname().nodename,)
        if not done:
            state = JobState.SUSPENDED if job.suspended else JobState.RUNNING
            return JobStatus(state, job.submit, job.submit, None, None, nodes)
        codes = [proc.returncode for proc in job.processes]
        worst = next((code for code in codes if code != 0), 0)
        if job.cancelled:
            state = JobState.CANCELLED
        else:
            state = JobState.COMPLETED if worst == 0 else JobState.FAILED
        return JobStatus(state, job.submit, job.submit, end, worst, nodes)

    def poll(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        return {job_id: self._status(self._jobs[job_id]) for job_id in job_ids if job_id in self._jobs}

    def _signal(self, job_id: str, signum: int) -> None:
        job = self._jobs.get(job_id)
        if job is None:
            raise JobModuleError(f"local: unknown job {job_id}")
        self._signal_group(job.pgid, signum)

    @staticmethod
    def _signal_group(pgid: int, signum: int) -> None:
        try:
            os.killpg(pgid, signum)
        except ProcessLookupError:
            pass

    def suspend(self, job_id: str) -> None:
        """Stop every task of the job and return once they are stopped (or after STOP_WAIT s), so
        the time a harness counts as suspended is time the job really does not run."""
        self._signal(job_id, signal.SIGSTOP)
        self._jobs[job_id].suspended = True
        deadline = time.monotonic() + STOP_WAIT
        while group_running(self._jobs[job_id].pgid) and time.monotonic() < deadline:
            time.sleep(0.01)

    def resume(self, job_id: str) -> None:
        self._signal(job_id, signal.SIGCONT)
        self._jobs[job_id].suspended = False

    def find_by_token(self, tokens: Collection[str]) -> dict[str, str]:
        """Process groups (jobs of an earlier harness) whose tasks carry one of ``tokens``, by token."""
        found: dict[str, str] = {}
        for pid, token in processes_with_token(tokens).items():
            try:
                found[token] = str(os.getpgid(pid))
            except ProcessLookupError:
                continue
        self._found.update((job_id, token) for token, job_id in found.items())
        return found

    def _cancel_found(self, job_id: str, token: str) -> None:
        """End a job :meth:`find_by_token` found (not a child of this process: it cannot be waited
        for): SIGTERM (and SIGCONT, should it be stopped) to its group, SIGKILL if a task carrying
        its token is left after the grace period."""
        deadline = time.monotonic() + self.kill_grace
        for signum in (signal.SIGTERM, signal.SIGCONT):
            self._signal_group(int(job_id), signum)
        while processes_with_token([token]):
            if time.monotonic() > deadline:
                self._signal_group(int(job_id), signal.SIGKILL)
            if time.monotonic() > deadline + KILL_WAIT:
                raise JobModuleError(f"local: job {job_id} still runs {KILL_WAIT:g} s after SIGKILL")
            time.sleep(0.05)
        del self._found[job_id]

    def cancel(self, job_id: str) -> None:
        if job_id in self._found:
            self._cancel_found(job_id, self._found[job_id])
            return
        job = self._jobs.get(job_id)
        if job is None or self._status(job).state.finished:
            return
        job.cancelled = True
        self._signal(job_id, signal.SIGTERM)
        self._signal(job_id, signal.SIGCONT)
        deadline = time.monotonic() + self.kill_grace
        for proc in job.processes:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self._signal(job_id, signal.SIGKILL)
                proc.wait()

    def close(self) -> None:
        for job_id in list(self._jobs):
            self.cancel(job_id)


MODULE = LocalJobModule
