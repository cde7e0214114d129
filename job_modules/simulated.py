"""The simulated job module: DJSB's jobs on the scheduler model, on a virtual clock, in seconds.

The DJSB driver runs unchanged against it: the module's ``clock`` is a virtual clock, the driver
sleeps on it, and each call (and each sleep) advances the scheduler model (djsb/model/) to the
clock's time, processing every event in between in time order. Reported submit/start/end times are the
model's exact times (a job that finished while the driver slept reports when it finished, not
when it was polled), as Unix-like seconds from ``clock.epoch``.

The options (the cluster, its scheduler, the rate and noise models) are declared once, in
:class:`ClusterOptions`; docs/reference/simulated.md is generated from that declaration.

Scheduling: the jobs run on the built-in scheduler model (djsb/model/), the same model
``djsb simulate`` replays traces on: one partition over all nodes, the ``policy``'s priority plugin,
main pass and backfill, with ``scheduler`` overrides. A ``background`` load shares the cluster and
starts ``warmup`` seconds before the benchmark, so the cluster is busy when it starts; analytics
then wait in the queue, and their wait enters the slowdowns (paper 001: response time = wait +
execution).

Placement: a job of ``tasks x cpus_per_task`` CPUs is laid out ``tasks_per_node`` per node (the
model's JobShape); a colocated job (JobRequest.colocate_with) gets the simulation's nodes as its
node list (sbatch --nodelist) and is placed on idle cores first, on used ones only if it may
share. Memory is consumable: ``tasks x memory_per_task`` on each node. A job no state of the
cluster could run is refused at submission.

Progress: the model's rate model for DJSB (djsb/model/stream_rates.py on djsb/appmodel.py). A
simulated job prints nothing, so the driver's calibration finds no iteration count and always
passes ``--time exec_time``; the work is ``JobRequest.exec_time`` (times the job's noise factor):
seconds of progress alone at the job's full thread count. A job's footprint on a node is its
tasks there times ``JobRequest.memory_per_task``. Stop&continue is the model's suspend/resume
(the suspended job frees its CPUs, keeps its memory). The threads per task a malleable job uses
come from its control file (JobRequest.control_file), re-read at every call and every sleep of the
clock; a new count resizes the job in the model (a shrunk simulation frees CPUs the analytics then
takes without oversubscription, the cooperative scenario), so a change the driver writes at virtual
time t takes effect at t.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from djsb.clock import VirtualClock
from djsb.errors import ConfigError, InputError, JobModuleError
from djsb.footprint import FootprintParameters, read_footprint
from djsb.jobs.api import CpuCapacity, JobModule, JobRequest, JobState, JobStatus
from djsb.jobs.hostlist import compress_hostlist
from djsb.jobs.loader import register
from djsb.jobs.options import OPTIONS_KEY, OptionValues, declared_options, located, one_of, option_error
from djsb.machine import JOB_BYTES, NODE_BYTES
from djsb.model import (
    ClusterSpec,
    InvariantChecker,
    NodeSpec,
    PartitionSpec,
    SchedulerConfig,
    Simulation,
    StartState,
)
from djsb.model.cluster_spec import oversubscribe
from djsb.model.job import SimJob
from djsb.model.priority import FifoPriority, PriorityPlugin, preset
from djsb.model.scheduler import SCHEDULER_READERS
from djsb.model.sections import scheduler_overrides
from djsb.model.shape import JobShape
from djsb.model.simulation import ModelError
from djsb.model.stream_rates import StreamRates
from djsb.noise import WorkNoise
from djsb.setting import setting, table
from djsb.transport import Transport
from djsb.workloads.job import TraceJob
from djsb.workloads.source import generated, read_trace
from djsb.workloads.window import background_window
from djsb.yamlnodes import (
    Located,
    as_bool,
    as_count,
    as_duration,
    as_int,
    as_number,
    as_size,
    as_str,
    as_time_limit,
    read_fields,
)

MIB = 2**20
"""The model's memory unit: Slurm's "MB" (--mem) are MiB."""

DJSB_USER = ("djsb", "djsb")
"""(user, account) of the benchmark's jobs in the model."""



def _event_driven(backfill: str) -> Callable[[], tuple[PriorityPlugin, SchedulerConfig]]:
    """FIFO priority with ``backfill`` as the textbook has it (preset ``textbook``: every pass at
    each event over the whole queue, no window, no rounding)."""
    return lambda: (FifoPriority(), dataclasses.replace(preset("textbook")[1], backfill=backfill))


POLICIES: dict[str, Callable[[], tuple[PriorityPlugin, SchedulerConfig]]] = {
    "fifo": _event_driven("none"),
    "easy": _event_driven("easy"),
    "conservative": _event_driven("conservative"),
    "marenostrum4": lambda: preset("marenostrum4"),
}
"""Named policies: a fresh (priority plugin, scheduler options) pair each."""



def _positive(node: Located) -> float:
    return as_number(node, 0.0, strict=True)


def _duration(node: Located) -> float:
    """A time >= 0: a bare number in seconds, or one of Slurm's time forms."""
    return as_duration(node, unit="s")


def _count(node: Located) -> int:
    return as_int(node, 1)


def _nodes(node: Located) -> int:
    """The number of nodes of the simulated cluster, as many as this machine can model."""
    return as_count(node, 1, each_bytes=NODE_BYTES, what="nodes")


def _share(node: Located) -> float:
    """A share of progress: a number in (0, 1]."""
    value = _positive(node)
    if value > 1:
        raise node.error(f"must be <= 1 (a share of progress), got {node.value}")
    return value


def _footprint(node: Located) -> FootprintParameters:
    """A footprint file (relative paths: to the working directory), read and checked now."""
    try:
        return read_footprint(Path(as_str(node)))
    except InputError as exc:
        raise node.error(exc.one_line()) from None


def _cv(node: Located) -> float:
    return as_number(node, 0.0)


def _tasks_per_node(node: Located) -> dict[str, int]:
    """One whole number for both applications, or ``{simulation: N, analytics: M}``."""
    if node.is_mapping():
        return read_fields(node, {"simulation": _count, "analytics": _count})
    count = _count(node)
    return {"simulation": count, "analytics": count}


def _scheduler(node: Located) -> dict[str, Any]:
    """Overrides of SchedulerConfig fields, each read by its reader (times as Slurm writes them),
    checked against a default SchedulerConfig."""
    return scheduler_overrides(node, SCHEDULER_READERS)


def _synthetic(node: Located) -> dict[str, Any]:
    return read_fields(node, {"n_jobs": lambda n: as_count(n, 1, each_bytes=JOB_BYTES, what="jobs"),
                              "arrival_rate": _positive, "service_rate": _positive,
                              "cpus": _count, "seed": as_int},
                       required=("n_jobs", "arrival_rate", "service_rate"))


BACKGROUND: dict[str, Callable[[Located], Any]] = {
    "trace": as_str, "synthetic": _synthetic, "start": _duration, "jobs": as_int,
    "warmup": _duration, "cpu_scale": _positive, "time_scale": _positive}
"""The keys of ``background``: its source (``trace`` or ``synthetic``) and its window."""


def _background(node: Located) -> Located:
    """Exactly one of ``trace`` (an SWF path) and ``synthetic``, and valid window numbers; the
    section itself is kept, so its jobs, made when the run starts, are blamed on their own keys."""
    node.check_keys(frozenset(BACKGROUND))
    if (node.get("trace") is None) == (node.get("synthetic") is None):
        raise node.error("give exactly one of trace and synthetic")
    read_fields(node, BACKGROUND)
    return node


@dataclass(frozen=True)
class ClusterOptions:
    """The simulated cluster, its scheduler and model parameters: the module's options, each declared
    once here (:func:`djsb.setting.setting`), so the reader that checks it, its default and its line
    of docs/reference/simulated.md (:func:`reference`) cannot disagree. Defaults: a MareNostrum 3
    node of paper 001 sec. 4.4."""

    nodes: int = setting(64, _nodes, "", "", "number of nodes", OPTIONS_KEY)
    cores_per_node: int = setting(16, _count, "cores", "CPUs", "cores of each node", OPTIONS_KEY)
    memory_per_node: int = setting(32 * 1000**3, as_size, "bytes", "RealMemory",
                                   "memory of each node (a size: 32GB, 64GiB)", OPTIONS_KEY)
    memory_bandwidth_per_node: float = setting(
        76.8, _positive, "GB/s", "", "sustainable STREAM bandwidth of a node (djsb/appmodel.py)", OPTIONS_KEY)
    core_bandwidth: float = setting(10.0, _positive, "GB/s", "", "bandwidth one thread streams alone",
                                    OPTIONS_KEY)
    tasks_per_node: Mapping[str, int] | None = setting(
        None, _tasks_per_node, "tasks", "sbatch --ntasks-per-node",
        "a number, or {simulation: N, analytics: M}; none: a job fills nodes (cores_per_node // "
        "cpus_per_task tasks each), a colocated one spreads evenly over the simulation's nodes", OPTIONS_KEY)
    eligibility_delay: float = setting(
        0.0, _duration, "s", "sbatch --begin",
        "a job is handed to the scheduler this long after its submission (pending, reason BeginTime); "
        "not `scheduler.start_latency`, the launch delay after a start decision", OPTIONS_KEY)
    resume_overhead: float = setting(
        0.0, _duration, "s", "", "a resumed job makes no progress for this long (stop&continue: every "
        "task is signalled, then re-synchronises)", OPTIONS_KEY)
    timeslice_efficiency: float | None = setting(
        None, _share, "share", "", "progress kept while a node has more runnable threads than cores, "
        "(0, 1] (djsb/appmodel.py point 4); none: the footprint's measured value, else 1", OPTIONS_KEY)
    footprint: FootprintParameters | None = setting(
        None, _footprint, "path", "", "a footprint file of bench/bench_footprint.py (relative: to the "
        "working directory): the node's working-set bandwidth curve, the time-slicing efficiency and "
        "the run-to-run spread", OPTIONS_KEY)
    llc_per_node: int = setting(
        40 * MIB, as_size, "bytes", "", "last-level cache the working set of a node's jobs is compared "
        "with, with `footprint` (two 20 MiB L3 of a MareNostrum 3 node)", OPTIONS_KEY)
    work_cv: float | None = setting(
        None, _cv, "", "", "coefficient of variation of a job's work (djsb/noise.py); none: the "
        "footprint's measured spread, else 0", OPTIONS_KEY)
    seed: int = setting(0, as_int, "", "", "seed of the work noise: the same seed, the same samples",
                        OPTIONS_KEY)
    oversubscribe: str = setting(
        "YES:4", oversubscribe, "", "OverSubscribe", "the partition's: with YES:N a job that asks "
        "(sbatch --oversubscribe) shares used cores, up to N jobs a core; FORCE:N shares every job",
        OPTIONS_KEY)
    policy: str = setting(
        "fifo", one_of(*POLICIES), "name", "", "fifo (submission order, no backfill), easy or "
        "conservative (FIFO with that textbook backfilling, every pass at each event), or marenostrum4 "
        "(multifactor priority and MareNostrum 4's options, paper 004 Tables 3.2-3.3)", OPTIONS_KEY)
    time_limit: float | None = setting(
        None, lambda n: as_time_limit(n, unit="s", strict=True), "s", "sbatch --time",
        "time limit of DJSB's jobs (none or UNLIMITED: unlimited); the backfill planner needs it to "
        "backfill an analytics", OPTIONS_KEY)
    check_invariants: bool = setting(
        False, as_bool, "", "", "run the model's InvariantChecker (djsb/model/invariants.py) along: the "
        "run stops at the first broken scheduling invariant", OPTIONS_KEY)
    scheduler: Mapping[str, Any] | None = setting(
        None, _scheduler, "", "", "overrides of the policy's SchedulerConfig fields "
        "(docs/reference/scheduler.md), e.g. {bf_interval: 30, bf_window: \"1-00:00:00\"}", OPTIONS_KEY)
    background: Located | None = setting(
        None, _background, "", "", "other users' jobs on the cluster (djsb/workloads/window.py): an SWF "
        "window {trace: PATH, start, jobs, warmup, cpu_scale, time_scale} or an M/M/c generator "
        "{synthetic: {n_jobs, arrival_rate, service_rate, cpus, seed}, warmup}, starting `warmup` s "
        "before the benchmark", OPTIONS_KEY)

    def policy_pair(self) -> tuple[PriorityPlugin, SchedulerConfig]:
        """The priority plugin and scheduler options: the named policy with ``scheduler`` overrides."""
        priority, scheduler = POLICIES[self.policy]()
        try:
            return priority, dataclasses.replace(scheduler, **(self.scheduler or {}))
        except ConfigError as exc:
            raise option_error("scheduler", exc.message) from None

    def stream_rates(self) -> StreamRates:
        """The rate model: the bandwidths, and the footprint file's measured parameters unless given."""
        measured = self.footprint
        efficiency = self.timeslice_efficiency
        if efficiency is None:
            efficiency = measured.timeslice_efficiency if measured is not None else 1.0
        return StreamRates(self.core_bandwidth, self.memory_bandwidth_per_node, efficiency,
                           float(self.llc_per_node) if measured is not None else 0.0,
                           measured.cache_curve if measured is not None else ())

    def noise(self) -> WorkNoise:
        """The seeded work noise: ``work_cv``, else the footprint file's spread, else none."""
        cv = self.work_cv
        if cv is None:
            cv = self.footprint.work_cv if self.footprint is not None else 0.0
        return WorkNoise(cv, self.seed)

    def background_jobs(self, first_id: int) -> list[TraceJob]:
        """The background load (see the module docstring), its ids from ``first_id``."""
        if self.background is None:
            return []
        node = self.background
        options = read_fields(node, BACKGROUND)
        trace = node.get("trace")
        if trace is not None:
            jobs = read_trace(trace, Path()).replayable_jobs()  # relative to the working directory
        else:
            jobs = generated("poisson_exponential", node.get("synthetic"), 0, node)
        return background_window(jobs, start=options.get("start", 0.0), count=options.get("jobs"),
                                 warmup=options.get("warmup", 0.0), cpu_scale=options.get("cpu_scale", 1.0),
                                 time_scale=options.get("time_scale", 1.0), first_id=first_id)


OPTIONS = declared_options(ClusterOptions)
"""The options as the job-module API takes them (djsb.jobs.options), derived from ClusterOptions."""

RENAMED = {"start_latency": "eligibility_delay"}
"""Options given a new name, old -> new: a config still using the old one is refused with the new
one named (``start_latency`` was a submission's delay, not ``scheduler.start_latency``'s launch delay)."""


def reference() -> str:
    """The Markdown reference of the module's options (docs/reference/simulated.md is this text)."""
    return "\n".join([
        "# `job_module.options` of `name: simulated`: DJSB's jobs on the scheduler model", "",
        "Generated from job_modules/simulated.py (`make reference`); a test fails when this file and "
        "the declarations differ. Every option is optional. A time is a number of seconds or a Slurm "
        "time (`1-00:00:00`); a size is a number of bytes or a Slurm size (`32GB`, `40MiB`).", "",
        *table(ClusterOptions)]) + "\n"


def parse_options(options: Mapping[str, Any] | Located) -> ClusterOptions:
    """Validate the ``job_module.options`` of a simulated run into ClusterOptions."""
    return ClusterOptions(**SimulatedJobModule.read_options(options).values)


def hostlist(prefix: str, width: int, indices: Sequence[int]) -> str:
    """Node names in Slurm's compressed form: node[001-004,007] (indices are 0-based)."""
    return compress_hostlist([f"{prefix}{index + 1:0{width}d}" for index in sorted(indices)])


@dataclass
class _Job:
    """The module's record of one DJSB job: its request, model id and control-file state."""

    job_id: str
    model_id: int
    request: JobRequest
    shape: JobShape
    submit: float
    eligible: float
    work: float
    cancelled_at: float | None = None
    control_stamp: tuple[int, int, int] | None = None
    nodes: tuple[str, ...] = ()


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


_STATES = {"PENDING": JobState.PENDING, "RUNNING": JobState.RUNNING, "SUSPENDED": JobState.SUSPENDED,
           "COMPLETED": JobState.COMPLETED, "TIMEOUT": JobState.TIMEOUT, "CANCELLED": JobState.CANCELLED}


@register("simulated")
class SimulatedJobModule(JobModule):
    """DJSB's jobs on the scheduler model in virtual time (options: module docstring)."""

    name = "simulated"
    OPTIONS = OPTIONS
    runs_commands = False

    @classmethod
    def read_options(cls, options: Mapping[str, Any] | Located) -> OptionValues:
        """The options, and the scheduler overrides checked against the chosen policy's defaults."""
        node = located(options)
        for old, new in RENAMED.items():
            child = node.get(old) if node.is_mapping() else None
            if child is not None:
                raise child.error(f"renamed: write {new!r} (see docs/reference/simulated.md)")
        values = super().read_options(node)
        try:
            ClusterOptions(**values.values).policy_pair()
        except ConfigError as exc:
            raise values.error("scheduler", exc.message) from None
        return values

    @classmethod
    def cpu_capacity(cls, options: OptionValues) -> CpuCapacity:
        """A task runs on one node: it cannot have more cores than a node."""
        cores = options["cores_per_node"]
        return CpuCapacity(cores, None, f"a node of the simulated cluster has {cores} (cores_per_node)")

    def __init__(self, options: Mapping[str, Any], transport: Transport | None = None) -> None:
        self.options = o = parse_options(options)
        self.clock = self._clock = _ModelClock(self._sync, float(int(time.time())))
        self._width = max(3, len(str(o.nodes)))
        self._names = [hostlist("node", self._width, [i]) for i in range(o.nodes)]
        nodes = tuple(NodeSpec(name, o.cores_per_node, o.memory_per_node / MIB) for name in self._names)
        cluster = ClusterSpec(nodes, (PartitionSpec("batch", oversubscribe=o.oversubscribe),))
        background = o.background_jobs(first_id=1)
        priority, scheduler = o.policy_pair()
        self.model = Simulation(
            background, cluster, scheduler, priority,
            start=StartState(min([0.0, *(j.submit for j in background)])),
            checker=InvariantChecker(cluster) if o.check_invariants else None,
            rates=o.stream_rates(),
            associations=[DJSB_USER])
        self.model.advance(0.0)
        self._noise = o.noise()
        self._model_ids = itertools.count(len(background) + 1)
        self._jobs: dict[str, _Job] = {}
        self._waiting: list[_Job] = []  # submitted, within eligibility_delay: not in the model yet
        self._live: dict[str, _Job] = {}  # in the model and not finished: their control files are read
        self._next_id = 1

    # -- the JobModule API ---------------------------------------------------------------------

    def submit(self, request: JobRequest) -> str:
        self._sync()
        now = self._clock.now()
        job = _Job(str(self._next_id), next(self._model_ids), request, self._shape(request), now,
                   now + self.options.eligibility_delay, request.exec_time * self._noise.factor())
        reason = self.model.admission(self._trace(job), job.shape)
        if reason:
            raise JobModuleError(f"simulated: {request.name} refused: {reason}")
        self._next_id += 1
        self._jobs[job.job_id] = job
        self._waiting.append(job)
        self._submit_eligible(now)
        return job.job_id

    def poll(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        self._sync()
        return {job_id: self._status(self._jobs[job_id]) for job_id in job_ids if job_id in self._jobs}

    def suspend(self, job_id: str) -> None:
        self._sync()
        model_job = self._model_job(self._job(job_id))
        if model_job is None or model_job.start is None:
            raise JobModuleError(f"simulated: job {job_id} is pending, it cannot be suspended")
        if model_job.state == "RUNNING":
            self.model.suspend(model_job.job_id)

    def resume(self, job_id: str) -> None:
        self._sync()
        model_job = self._model_job(self._job(job_id))
        if model_job is not None and model_job.state == "SUSPENDED":
            self.model.resume(model_job.job_id, stall=self.options.resume_overhead)

    def cancel(self, job_id: str) -> None:
        self._sync()
        job = self._jobs.get(job_id)
        if job is None:
            return
        if job in self._waiting:
            self._waiting.remove(job)
            job.cancelled_at = self._clock.now()
        elif job.cancelled_at is None:
            self.model.cancel(job.model_id)

    # -- statuses ----------------------------------------------------------------------------------

    def _job(self, job_id: str) -> _Job:
        job = self._jobs.get(job_id)
        if job is None:
            raise JobModuleError(f"simulated: unknown job {job_id}")
        return job

    def _model_job(self, job: _Job) -> SimJob | None:
        """The model's view of the job; None within its eligibility delay (or cancelled then)."""
        return self.model.jobs.get(job.model_id)

    def _status(self, job: _Job) -> JobStatus:
        epoch = self._clock.epoch
        model_job = self._model_job(job)
        if model_job is None:
            state = JobState.CANCELLED if job.cancelled_at is not None else JobState.PENDING
            end = None if job.cancelled_at is None else epoch(job.cancelled_at)
            return JobStatus(state, epoch(job.submit), None, end, None, (),
                             "BeginTime" if state is JobState.PENDING else "")
        state = _STATES[model_job.state]
        finished = state.finished
        if model_job.alloc and not job.nodes:  # a job keeps its nodes from its start on
            job.nodes = (hostlist("node", self._width, [i for i, _ in model_job.alloc]),)
        return JobStatus(
            state, epoch(job.submit), None if model_job.start is None else epoch(model_job.start),
            epoch(model_job.end) if finished and model_job.end is not None else None,
            0 if state is JobState.COMPLETED else None, job.nodes,
            "Resources" if state is JobState.PENDING else "")

    # -- placement ---------------------------------------------------------------------------------

    def _shape(self, request: JobRequest) -> JobShape:
        """The request in the model's terms: layout, node list (colocation) and oversubscription."""
        node_list: tuple[str, ...] | None = None
        if request.colocate_with is not None:
            sim = self._model_job(self._job(request.colocate_with))
            if sim is None or not sim.alloc:
                raise JobModuleError(f"simulated: job {request.colocate_with} has no nodes to colocate with")
            node_list = tuple(self.model.node_names(sim))
        elif request.node_host_names:
            unknown = [name for name in request.node_host_names if name not in self._names]
            if unknown:
                raise JobModuleError(
                    f"simulated: unknown node(s) {', '.join(unknown)} for {request.name} "
                    f"(nodes are {hostlist('node', self._width, list(range(self.options.nodes)))})")
            node_list = tuple(request.node_host_names)
        return JobShape(request.total_tasks, request.cpus_per_task,
                        (self.options.tasks_per_node or {}).get(request.app), request.memory_per_task / MIB,
                        node_list, request.oversubscribe)

    def _trace(self, job: _Job) -> TraceJob:
        """The model's record of ``job``, submitted when its eligibility delay is over."""
        return TraceJob(job.model_id, job.eligible, job.work, job.request.total_cpus,
                        requested_time=self.options.time_limit, user=DJSB_USER[0], account=DJSB_USER[1])

    def _submit_eligible(self, until: float) -> None:
        """Hand the model every waiting job whose eligibility delay is over by ``until``, at its time."""
        while self._waiting:
            job = min(self._waiting, key=lambda j: (j.eligible, j.model_id))
            if job.eligible > until:
                return
            self._waiting.remove(job)
            self.model.advance(job.eligible)
            try:
                self.model.submit(self._trace(job), job.shape)
            except ModelError as exc:
                raise JobModuleError(f"simulated: {job.request.name}: {exc}") from None
            self._live[job.job_id] = job

    def _read_control(self, job: _Job, model_job: SimJob) -> None:
        """Resize the job to the threads per task of its control file if it changed (1..cpus_per_task)."""
        path = job.request.control_file
        if path is None or model_job.tasks is None:
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
        cpus = [tasks * threads for tasks in model_job.tasks]
        if cpus != [slots for _, slots in model_job.alloc]:
            self.model.resize(model_job.job_id, cpus)

    def _sync(self) -> None:
        """Advance the model to the clock's time, then apply control-file changes made now."""
        now = self._clock.now()
        self._submit_eligible(now)
        self.model.advance(now)
        for job_id, job in list(self._live.items()):
            model_job = self.model.job(job.model_id)
            if model_job.finished or model_job.cancelled:
                del self._live[job_id]
            elif model_job.start is not None:
                self._read_control(job, model_job)


MODULE = SimulatedJobModule
