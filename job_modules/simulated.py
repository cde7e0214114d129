"""The simulated job module: an in-process cluster on a virtual clock, so a DJSB run takes seconds.

The DJSB driver runs unchanged against it: the module's ``clock`` is a virtual clock, the driver
sleeps on it, and each call (and each sleep) advances a fluid model of the cluster to the clock's
time, processing every event in between in time order. Reported submit/start/end times are the
model's exact times (a job that finished while the driver slept reports when it finished, not
when it was polled), as Unix-like seconds from ``clock.epoch``.

The cluster (options, all optional; defaults are a MareNostrum 3 node of paper 001 sec. 4.4):

- ``nodes`` (64), ``cores_per_node`` (16), ``memory_per_node`` (32GB);
- ``memory_bandwidth_per_node`` (76.8 GB/s, sustainable STREAM bandwidth of the node) and
  ``core_bandwidth`` (10 GB/s, what one thread can stream alone): see djsb/appmodel.py;
- ``tasks_per_node``: an integer for every job, or ``{simulation: 4, analytics: 2}`` per
  application; by default a job fills nodes (cores_per_node // cpus_per_task tasks per node) and
  a colocated job spreads evenly over the simulation's nodes;
- ``start_latency`` (0 s): a job becomes eligible to start this long after its submission;
- ``resume_overhead`` (0 s): a resumed job makes no progress for this long (stop&continue cost:
  the scheduler signals every task, which then re-synchronise);
- ``timeslice_efficiency`` (1.0): the share of progress a job keeps while one of its nodes has more
  runnable threads than cores (djsb/appmodel.py, point 4).

Placement: a job takes ``tasks x cpus_per_task`` cores and ``tasks x memory_per_task`` memory on
each of its nodes; a colocated job (JobRequest.colocate_with) goes on the simulation's nodes.
Jobs start in FIFO order once eligible and placeable; without ``JobRequest.oversubscribe`` a job
needs free cores, with it only memory (as Slurm's OverSubscribe=FORCE, memory stays consumable).
A job that can never fit is refused at submission.

Work: a simulated job prints nothing, so the driver's calibration finds no iteration count and
always passes ``--time exec_time``; the module takes the work from ``JobRequest.exec_time``:
seconds of progress alone at the job's full thread count. The threads per task a malleable job
uses now come from its control file (JobRequest.control_file), re-read at every call and every
sleep of the clock, so a change the driver writes at virtual time t takes effect at t.
"""

from __future__ import annotations

import math
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from djsb import appmodel
from djsb.clock import VirtualClock
from djsb.config import parse_size
from djsb.errors import ConfigError, JobModuleError
from djsb.jobs.api import JobModule, JobRequest, JobState, JobStatus
from djsb.jobs.registry import register
from djsb.transport import Transport

_DONE_TOLERANCE = 1e-9
"""Relative remaining work below which a job counts as finished (float rounding of the fluid steps)."""


@dataclass(frozen=True)
class ClusterOptions:
    """The simulated cluster and model parameters (see the module docstring)."""

    nodes: int = 64
    cores_per_node: int = 16
    memory_per_node: int = 32 * 1000**3
    memory_bandwidth_per_node: float = 76.8
    core_bandwidth: float = 10.0
    tasks_per_node: Mapping[str, int] = field(default_factory=dict)
    start_latency: float = 0.0
    resume_overhead: float = 0.0
    timeslice_efficiency: float = 1.0


def _option_error(name: str, message: str) -> ConfigError:
    return ConfigError(message, key=f"job_module.options.{name}")


def _number(name: str, value: Any, *, minimum: float, strict: bool, integer: bool = False) -> float:
    """``value`` as a number >= (or > when ``strict``) ``minimum``, else a ConfigError naming the option."""
    kind = "an integer" if integer else "a number"
    wrong_type = isinstance(value, bool) or not isinstance(value, int if integer else (int, float))
    if wrong_type:
        raise _option_error(name, f"expected {kind}, got {value!r}")
    if value < minimum or (strict and value == minimum):
        raise _option_error(name, f"must be {'>' if strict else '>='} {minimum:g}, got {value!r}")
    return value


def _tasks_per_node(value: Any) -> dict[str, int]:
    """``tasks_per_node``: one integer for both applications, or a mapping per application."""
    name = "tasks_per_node"
    if isinstance(value, Mapping):
        unknown = set(value) - {"simulation", "analytics"}
        if unknown:
            raise _option_error(name, f"unknown application(s) {', '.join(sorted(map(str, unknown)))} "
                                "(known: simulation, analytics)")
        return {app: int(_number(f"{name}.{app}", n, minimum=1, strict=False, integer=True))
                for app, n in value.items()}
    count = int(_number(name, value, minimum=1, strict=False, integer=True))
    return {"simulation": count, "analytics": count}


def parse_options(options: Mapping[str, Any]) -> ClusterOptions:
    """Validate the ``job_module.options`` of a simulated run into ClusterOptions."""
    known = set(ClusterOptions.__dataclass_fields__)
    unknown = set(options) - known
    if unknown:
        first = sorted(map(str, unknown))[0]
        raise _option_error(first, f"unknown option (known: {', '.join(sorted(known))})")
    values: dict[str, Any] = {}
    for name, value in options.items():
        if name in ("nodes", "cores_per_node"):
            values[name] = int(_number(name, value, minimum=1, strict=False, integer=True))
        elif name == "memory_per_node":
            try:
                values[name] = parse_size(value)
            except ValueError as exc:
                raise _option_error(name, str(exc)) from None
        elif name in ("memory_bandwidth_per_node", "core_bandwidth"):
            values[name] = float(_number(name, value, minimum=0, strict=True))
        elif name in ("start_latency", "resume_overhead"):
            values[name] = float(_number(name, value, minimum=0, strict=False))
        elif name == "timeslice_efficiency":
            values[name] = float(_number(name, value, minimum=0, strict=True))
            if values[name] > 1:
                raise _option_error(name, f"must be <= 1 (a share of progress), got {value!r}")
        else:
            values[name] = _tasks_per_node(value)
    return ClusterOptions(**values)


def spread(total_tasks: int, per_node: int) -> list[int]:
    """Tasks on each node when ``per_node`` tasks fill a node and the last takes the remainder."""
    full, rest = divmod(total_tasks, per_node)
    return [per_node] * full + ([rest] if rest else [])


def first_fit(counts: Sequence[int], candidates: Sequence[int],
              fits: Callable[[int, int], bool]) -> dict[int, int] | None:
    """Each count of tasks on the first unused candidate where ``fits(node, tasks)``; None if one fails."""
    chosen: dict[int, int] = {}
    for tasks in counts:
        node = next((n for n in candidates if n not in chosen and fits(n, tasks)), None)
        if node is None:
            return None
        chosen[node] = tasks
    return chosen


def hostlist(prefix: str, width: int, indices: Sequence[int]) -> str:
    """Node names in Slurm's compressed form: node[001-004,007] (indices are 0-based)."""
    if not indices:
        return ""
    ordered = sorted(indices)
    ranges: list[tuple[int, int]] = []
    for index in ordered:
        if ranges and index == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], index)
        else:
            ranges.append((index, index))
    if len(ordered) == 1:
        return f"{prefix}{ordered[0] + 1:0{width}d}"
    parts = [f"{a + 1:0{width}d}" + (f"-{b + 1:0{width}d}" if b > a else "") for a, b in ranges]
    return f"{prefix}[{','.join(parts)}]"


@dataclass
class _Node:
    """What the jobs placed on a node hold of it (cores may exceed the node's under oversubscription)."""

    cores: int = 0
    memory: int = 0


@dataclass
class _Job:
    """One simulated job and its progress."""

    job_id: str
    request: JobRequest
    submit: float
    eligible: float
    state: JobState = JobState.PENDING
    placement: dict[int, int] = field(default_factory=dict)
    threads: int = 0
    alone: float = 0.0
    done: float = 0.0
    start: float | None = None
    end: float | None = None
    stall_until: float = 0.0
    nodes: tuple[str, ...] = ()
    control_stamp: tuple[int, int, int] | None = None

    @property
    def work(self) -> float:
        return self.request.exec_time


class _ModelClock(VirtualClock):
    """A virtual clock that lets the model catch up before time moves on.

    Whatever the driver did since the last call (a new thread count in a control file) happened
    at the current virtual time; syncing before each sleep applies it at that time exactly.
    """

    def __init__(self, before_sleep: Callable[[], None], epoch_offset: float) -> None:
        super().__init__(0.0, epoch_offset)
        self._before_sleep = before_sleep

    def sleep(self, seconds: float) -> None:
        self._before_sleep()
        super().sleep(seconds)


@register("simulated")
class SimulatedJobModule(JobModule):
    """A simulated cluster running STREAM-like jobs in virtual time (options: module docstring)."""

    name = "simulated"

    def __init__(self, options: Mapping[str, Any], transport: Transport | None = None) -> None:
        self.options = parse_options(options)
        self.clock = _ModelClock(self._sync, float(int(time.time())))
        self._t = 0.0
        self._nodes = [_Node() for _ in range(self.options.nodes)]
        self._width = max(3, len(str(self.options.nodes)))
        self._jobs: dict[str, _Job] = {}
        self._queue: deque[_Job] = deque()
        self._running: list[_Job] = []
        self._rates: dict[str, float] | None = None
        self._next_id = 1

    # -- the JobModule API ---------------------------------------------------------------------

    def submit(self, request: JobRequest) -> str:
        self._sync()
        self._check_fits(request)
        job = _Job(str(self._next_id), request, self._t, self._t + self.options.start_latency)
        self._next_id += 1
        self._jobs[job.job_id] = job
        self._queue.append(job)
        self._start_pending()
        return job.job_id

    def poll(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        self._sync()
        return {job_id: self._status(self._jobs[job_id]) for job_id in job_ids if job_id in self._jobs}

    def suspend(self, job_id: str) -> None:
        self._sync()
        job = self._job(job_id)
        if job.state is JobState.PENDING:
            raise JobModuleError(f"simulated: job {job_id} is pending, it cannot be suspended")
        if job.state is JobState.RUNNING:
            job.state = JobState.SUSPENDED
            self._rates = None

    def resume(self, job_id: str) -> None:
        self._sync()
        job = self._job(job_id)
        if job.state is JobState.SUSPENDED:
            job.state = JobState.RUNNING
            job.stall_until = self._t + self.options.resume_overhead
            self._rates = None

    def cancel(self, job_id: str) -> None:
        self._sync()
        job = self._jobs.get(job_id)
        if job is None or job.state.finished:
            return
        if job.state is JobState.PENDING:
            self._queue.remove(job)
        else:
            self._release(job)
        job.state, job.end = JobState.CANCELLED, self._t
        self._start_pending()

    # -- statuses ----------------------------------------------------------------------------------

    def _job(self, job_id: str) -> _Job:
        job = self._jobs.get(job_id)
        if job is None:
            raise JobModuleError(f"simulated: unknown job {job_id}")
        return job

    def _status(self, job: _Job) -> JobStatus:
        epoch = self.clock.epoch
        return JobStatus(
            job.state, epoch(job.submit), None if job.start is None else epoch(job.start),
            None if job.end is None else epoch(job.end),
            0 if job.state is JobState.COMPLETED else None, job.nodes,
            self._pending_reason(job))

    def _pending_reason(self, job: _Job) -> str:
        """Slurm's reason for a pending job: BeginTime before its start latency is over, else Resources."""
        if job.state is not JobState.PENDING:
            return ""
        return "BeginTime" if job.eligible > self._t else "Resources"

    # -- placement ---------------------------------------------------------------------------------

    def _layout(self, request: JobRequest) -> tuple[list[int], list[int]]:
        """(tasks on each node the job needs, the candidate nodes in order of preference)."""
        configured = self.options.tasks_per_node.get(request.app)
        if request.colocate_with is not None:
            sim = self._job(request.colocate_with)
            candidates = list(sim.placement)
            if not candidates:
                raise JobModuleError(f"simulated: job {request.colocate_with} has no nodes to colocate with")
            per_node = configured or math.ceil(request.total_tasks / len(candidates))
            return spread(request.total_tasks, per_node), candidates
        per_node = configured or max(1, self.options.cores_per_node // request.cpus_per_task)
        return spread(request.total_tasks, per_node), self._allowed_nodes(request)

    def _allowed_nodes(self, request: JobRequest) -> list[int]:
        if not request.node_host_names:
            return list(range(self.options.nodes))
        names = {hostlist("node", self._width, [i]): i for i in range(self.options.nodes)}
        unknown = [name for name in request.node_host_names if name not in names]
        if unknown:
            raise JobModuleError(f"simulated: unknown node(s) {', '.join(unknown)} for {request.name} "
                                 f"(nodes are {hostlist('node', self._width, list(names.values()))})")
        return [names[name] for name in request.node_host_names]

    def _check_fits(self, request: JobRequest) -> None:
        """Refuse a job no state of the cluster could ever run (as sbatch refuses it)."""
        counts, candidates = self._layout(request)
        most = max(counts)
        problem = ""
        if len(counts) > len(candidates):
            problem = f"{len(counts)} nodes ({most} tasks per node), only {len(candidates)} available"
        elif most * request.memory_per_task > self.options.memory_per_node:
            problem = (f"{most * request.memory_per_task} bytes per node, nodes have "
                       f"{self.options.memory_per_node}")
        elif not request.oversubscribe and most * request.cpus_per_task > self.options.cores_per_node:
            problem = (f"{most * request.cpus_per_task} cores per node, nodes have "
                       f"{self.options.cores_per_node}")
        if problem:
            raise JobModuleError(f"simulated: {request.name} needs {problem}")

    def _place(self, request: JobRequest) -> dict[int, int] | None:
        """The nodes (and tasks on each) the job gets now, or None while it must wait.

        First fit on free cores; failing that, a job that may oversubscribe takes the candidates
        holding the fewest cores (a colocated job keeps the simulation's node order).
        """
        counts, candidates = self._layout(request)
        cpus, memory = request.cpus_per_task, request.memory_per_task

        def fits(node: int, tasks: int, share_cores: bool) -> bool:
            held = self._nodes[node]
            cores_ok = share_cores or held.cores + tasks * cpus <= self.options.cores_per_node
            return cores_ok and held.memory + tasks * memory <= self.options.memory_per_node

        exclusive = first_fit(counts, candidates, lambda node, tasks: fits(node, tasks, False))
        if exclusive is not None or not request.oversubscribe:
            return exclusive
        if request.colocate_with is None:
            candidates = sorted(candidates, key=lambda node: self._nodes[node].cores)
        return first_fit(counts, candidates, lambda node, tasks: fits(node, tasks, True))

    def _start_pending(self) -> None:
        """Start queued jobs in FIFO order until the first that cannot start now."""
        while self._queue:
            job = self._queue[0]
            if job.eligible > self._t:
                return
            placement = self._place(job.request)
            if placement is None:
                return
            self._queue.popleft()
            request = job.request
            for node, tasks in placement.items():
                self._nodes[node].cores += tasks * request.cpus_per_task
                self._nodes[node].memory += tasks * request.memory_per_task
            job.placement, job.state, job.start = placement, JobState.RUNNING, self._t
            job.nodes = (hostlist("node", self._width, list(placement)),)
            job.threads = request.cpus_per_task
            job.alone = self._throughput(request.cpus_per_task, (tasks * request.cpus_per_task
                                                                 for tasks in placement.values()))
            self._read_control(job)
            self._running.append(job)
            self._rates = None

    def _release(self, job: _Job) -> None:
        for node, tasks in job.placement.items():
            self._nodes[node].cores -= tasks * job.request.cpus_per_task
            self._nodes[node].memory -= tasks * job.request.memory_per_task
        self._running.remove(job)
        self._rates = None

    # -- the fluid model ---------------------------------------------------------------------------

    def _throughput(self, threads: int, runnable_by_node: Iterable[int]) -> float:
        o = self.options
        return appmodel.job_throughput(threads, runnable_by_node, o.cores_per_node, o.core_bandwidth,
                                       o.memory_bandwidth_per_node)

    def _current_rates(self) -> dict[str, float]:
        """Each running job's progress rate now (cached until a job starts, ends or changes)."""
        if self._rates is not None:
            return self._rates
        runnable = [0] * self.options.nodes
        active = [job for job in self._running if job.state is JobState.RUNNING]
        for job in active:
            for node, tasks in job.placement.items():
                runnable[node] += tasks * job.threads
        rates = {job.job_id: 0.0 for job in self._running}
        for job in active:
            if self._t < job.stall_until:
                continue
            throughput = self._throughput(job.threads, (runnable[node] for node in job.placement))
            oversubscribed = any(runnable[node] > self.options.cores_per_node for node in job.placement)
            rates[job.job_id] = appmodel.progress_rate(
                throughput, job.alone, oversubscribed=oversubscribed,
                timeslice_efficiency=self.options.timeslice_efficiency)
        self._rates = rates
        return rates

    def _next_event(self, rates: Mapping[str, float]) -> float:
        """The time of the next completion, end of a stall or eligibility of a queued job."""
        times = [self._t + appmodel.time_to_finish(job.work - job.done, rates[job.job_id])
                 for job in self._running]
        times += [job.stall_until for job in self._running if job.stall_until > self._t]
        times += [job.eligible for job in self._queue if job.eligible > self._t]
        return min(times, default=math.inf)

    def _advance(self, target: float) -> None:
        """Run the model from its time to ``target``, event by event (rates change at each event)."""
        while self._t < target:
            rates = self._current_rates()
            t_next = self._next_event(rates)
            step_end = min(t_next, target)
            for job in self._running:
                job.done += rates[job.job_id] * (step_end - self._t)
            self._t = step_end
            if t_next > target:
                return
            for job in list(self._running):
                finish = appmodel.time_to_finish(job.work - job.done, rates[job.job_id])
                if finish <= _DONE_TOLERANCE * max(1.0, job.work):
                    job.done, job.state, job.end = job.work, JobState.COMPLETED, self._t
                    self._release(job)
            self._rates = None
            self._start_pending()

    def _read_control(self, job: _Job) -> None:
        """Take the threads per task from the job's control file if it changed (1..cpus_per_task)."""
        path = job.request.control_file
        if path is None:
            return
        try:
            stat = os.stat(path)
        except OSError:
            return
        stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if stamp == job.control_stamp:
            return
        job.control_stamp = stamp
        try:
            with open(path) as handle:
                threads = int(handle.read().strip())
        except (OSError, ValueError):
            return
        threads = min(max(1, threads), job.request.cpus_per_task)
        if threads != job.threads:
            job.threads = threads
            self._rates = None

    def _sync(self) -> None:
        """Advance the model to the clock's time, then apply control-file changes made now."""
        self._advance(self.clock.now())
        for job in self._running:
            self._read_control(job)


MODULE = SimulatedJobModule
