"""The discrete-event core: a heap of events, starts and ends, a Slurm-like main pass, and the backfill
pass handed to its planner.

Its collaborators, each in its own module: the queue (:mod:`djsb.model.queue`), admission (jobs that can
never run are rejected at submission with a reason: :mod:`djsb.model.admission`), QoS limits (jobs
refused, held or pending forever: :mod:`djsb.model.limits`), job placement (first fit or
select/cons_tres: :mod:`djsb.model.allocation`), dependencies (:mod:`djsb.model.dependency`), the main
pass (:mod:`djsb.model.main_pass`), the backfill planners (djsb/model/backfill/), when passes and
priority recomputations run (:mod:`djsb.model.pass_timing`), progress rates
(:mod:`djsb.model.rate_model`; without one a running job goes at rate 1), the start of a replay
(:mod:`djsb.model.start_state`) and the result (:mod:`djsb.model.result`).

Modelling choices (paper 004 sec. 2.2.1, figure 2.2; slurm.conf / sched_config documentation):

* Events are ``(time, kind, key, seq)`` tuples (:mod:`djsb.model.events`: the order they are handled
  in at one instant) in a heap, but for the trace's own submissions, known and sorted up front: they
  wait in a list in the heap's order (time, job id, seq), merged with the heap as time advances, so
  the heap holds only what the replay makes (ends, ticks, wake-ups, later submissions), a few
  hundred entries instead of the whole trace, and costs pushes and pops in proportion. The core
  draws no random numbers; ``Simulation.rng`` (``random.Random(seed)``) is the only source of
  randomness offered to plugins, never the global one.
* The main pass runs on every job end and on submission (a submission's, and under ``defer`` an
  end's, queued for slurmctld's background loop, which runs it within a second, ``batch_sched_delay``
  after its previous pass), testing at most ``default_queue_depth`` jobs, and every
  ``sched_interval`` seconds over the whole queue (sched_config.html: event-triggered passes
  consider default_queue_depth jobs, the periodic loop all of them).
* The backfill pass runs every ``bf_interval`` (or at every event with 0) if the backfill policy
  enables it (djsb/model/backfill/: how many reservations a partition gets); the planner named by
  ``SchedulerConfig.planner`` makes it (``profile``, the model's own, or ``will_run``,
  sched/backfill's), and says how long it plans each job for and when it expects a running job to end.
* A job ends at start + run time, or is killed at start + time limit when it would run longer
  (Slurm's behaviour; traces hold such jobs), unless ``extend_limit`` (``djsb simulate``'s
  ``at_time_limit: run``, its default: a trace replayed as recorded).

Incremental use: the operations of :mod:`djsb.model.operations` (submit, cancel, suspend, resume,
resize at the current time) with :meth:`~Simulation.advance` to a time (every event up to and
including it, in the order above). ``run()`` is ``advance`` to infinity.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections.abc import Callable, Mapping, Sequence

from djsb.errors import InputError
from djsb.model.admission import Admission
from djsb.model.allocation import allocate, held_units, job_memory, shares_cores
from djsb.model.backfill import BACKFILL_PLANNERS, BACKFILL_POLICIES, BackfillPreemption, BackfillView
from djsb.model.cluster_spec import ClusterSpec, QosSpec
from djsb.model.cluster_state import ClusterState, PartitionState
from djsb.model.dependency import Dependency, DependencyTracker
from djsb.model.events import (
    BF_TICK,
    END,
    MAIN_TICK,
    NODE,
    QUEUED_TICK,
    REQUEUE,
    SUBMIT,
    USAGE_TICK,
    WAKE,
)
from djsb.model.gang import time_slicer
from djsb.model.invariants import InvariantChecker
from djsb.model.job import SimJob
from djsb.model.job_memory import PartitionMemory
from djsb.model.limits import RunningLimits
from djsb.model.machine_operations import MachineOperations
from djsb.model.main_pass import main_pass
from djsb.model.node_service import NodeService
from djsb.model.operations import ModelError
from djsb.model.pass_timing import PassTiming
from djsb.model.placement import Placement
from djsb.model.preemption import (
    NODE_FAIL,
    PREEMPTED,
    preempt_mode,
    preempt_ranks,
)
from djsb.model.priority.base import PriorityContext, PriorityPlugin
from djsb.model.priority.fifo import FifoPriority
from djsb.model.priority.multifactor import MultifactorPriority
from djsb.model.queue import JobQueue
from djsb.model.rate_model import RateModel
from djsb.model.reservations import ReservationPlan
from djsb.model.reserved_jobs import needed
from djsb.model.result import SimulationResult, build_result
from djsb.model.scheduler import SchedulerConfig
from djsb.model.shape import JobShape
from djsb.model.start_state import EMPTY, RunningAtStart, StartState
from djsb.model.suspension import SUSPEND, Gang
from djsb.model.timeline import UtilisationTimeline
from djsb.model.usage_reset import usage_reset
from djsb.workloads.job import TraceJob

PROGRESS_EVERY = 20000  # events between two calls of the optional on_progress callback


class Simulation(MachineOperations):
    """Replay ``jobs`` on ``cluster`` under ``scheduler`` options and a ``priority`` plugin."""

    def __init__(self, jobs: Sequence[TraceJob], cluster: ClusterSpec,
                 scheduler: SchedulerConfig | None = None, priority: PriorityPlugin | None = None,
                 *, seed: int = 0, checker: InvariantChecker | None = None,
                 rates: RateModel | None = None, start: StartState = EMPTY,
                 associations: Sequence[tuple[str, str]] = (),
                 on_progress: Callable[[int, int], None] | None = None,
                 dependencies: Mapping[int, Dependency] | None = None) -> None:
        """``jobs`` are submitted at their submit times; ``start`` is where the run starts (an empty
        machine at time 0 by default; a recorded history's instant, :mod:`djsb.model.start_state`);
        ``associations`` lists (user, account) pairs of jobs submitted later with :meth:`submit`,
        for priority plugins that need to know the users up front; ``rates`` is the job progress
        model (None: every running job at rate 1); ``on_progress`` is told (jobs finished or
        rejected, jobs in the trace) every PROGRESS_EVERY events; ``dependencies`` maps a job id of
        ``jobs`` to the parents it waits for (:mod:`djsb.model.dependency`)."""
        self.trace = list(jobs)
        self.spec = cluster
        self.config = scheduler or SchedulerConfig()
        self.backfill = BACKFILL_POLICIES.get(self.config.backfill)
        self.planner = BACKFILL_PLANNERS.get(self.config.planner)(self.config)
        self.node_memory = any(n.memory_mb is not None for n in cluster.nodes)
        self.priority = priority or FifoPriority()
        self.rng = random.Random(seed)
        self.jitter = random.Random(seed)  # its own stream: plugins draw the same numbers with or without it
        self.checker = checker
        self.on_progress = on_progress
        self.eligible_since = dict(start.eligible_since)
        self.state = ClusterState(cluster)
        self.state.cons_tres_select = self.config.node_select == "cons_tres"
        self.admitter = Admission(cluster, self.state)
        self.partition_memory = PartitionMemory(cluster.partitions, self.config)
        self.queue = JobQueue(self.state, self.node_memory)
        self.running: dict[int, SimJob] = {}
        self.amounts: dict[int, list[tuple[int, int]]] = {}
        self.finished: list[SimJob] = []
        self.rejected: list[tuple[int, str]] = []
        plugin = self.priority
        decay = (plugin.decay_half_life, plugin.calc_period, plugin.calc_phase) \
            if isinstance(plugin, MultifactorPriority) else None  # priority/basic: no decay thread
        reset = usage_reset(plugin.usage_reset, start.epoch, start.time) \
            if isinstance(plugin, MultifactorPriority) else None
        self.limits = RunningLimits(cluster.qos, self.trace, cluster.partitions, cluster.associations,
                                    decay, self.config.enforce_safe, start.time, reset)
        self.usage_tick = math.inf
        """The decay thread's next run pushed to wake the passes for jobs a TRES-minutes usage holds."""
        self.heap: list[tuple[float, int, int, int]] = []
        self.arrivals: list[tuple[float, int, int]] = []
        """The trace's submissions (time, job id, seq), sorted: SUBMIT events kept out of the heap."""
        self.arrived = 0
        """How many of :attr:`arrivals` were handled."""
        self.seq = itertools.count()
        self.util = UtilisationTimeline()
        self.stats = {"main_passes": 0, "backfill_passes": 0, "recomputes": 0, "events": 0}
        self.passes = PassTiming(self.config, self.backfill, self.priority, self.queue, self.jitter,
                                 start.pass_times, checker, start.time)
        self.rates = rates
        self.now = start.time
        self.rates_dirty = False
        self.jobs: dict[int, SimJob] = {}
        self.shapes: dict[int, JobShape] = {}
        self.by_id: dict[int, TraceJob] = {}
        users: dict[tuple[str, str], None] = {}
        for job in self.trace:
            if job.job_id in self.by_id:
                raise InputError(f"duplicate job id {job.job_id}", key="workload")
            self.by_id[job.job_id] = job
            users[(job.user, job.account)] = None
        users.update(dict.fromkeys(associations))
        self.priority.setup(PriorityContext(cluster, tuple(users), start.time, start.epoch))
        self.deps = DependencyTracker(dependencies, self.by_id, self.rejected) if dependencies else None
        self.array_tasks = any(job.array_task is not None for job in self.trace)
        """Whether backfill passes count reservations per job array (bf_max_job_array_resv)."""
        for job in self.trace:
            if self.deps is None or job.job_id not in self.deps.on_parent_end:
                self.arrivals.append((job.submit, job.job_id, next(self.seq)))
        self.arrivals.sort()
        for instant, kind in self.passes.given_ticks:
            self._push(instant, kind, 0)
        self.service = NodeService(self.state, cluster.events) if cluster.events else None
        self.reserved = ReservationPlan(cluster.reservations, self.state.node_names) \
            if cluster.reservations else None
        self.preempts = self.config.preempt_type in ("partition_prio", "qos") \
            and self.config.preempt_mode in ("cancel", "requeue", SUSPEND)
        self.gang = Gang() if self.preempts and self.config.preempt_mode == SUSPEND else None
        """Who suspended whom under SUSPEND,GANG (:mod:`djsb.model.suspension`)."""
        self.slicer = time_slicer(self.state, self.config, self.running, self._stopped_by_shadow)
        """GANG's time-slicing, where a partition shares cores (:mod:`djsb.model.gang`)."""
        self.by_qos = self.config.preempt_type == "qos"
        self.ranks = preempt_ranks(cluster.qos) if self.preempts and self.by_qos else {}
        self.armed: set[int] = set()
        """The reservations whose next window end is in the heap."""
        asking = [*self.trace, *(running.trace for running in start.running)]
        self.inside = self._reserved_jobs() if needed(cluster.reservations, asking) else None
        for number, (at, _, _) in enumerate(self.service.events if self.service else ()):
            self._push(max(at, self.now), NODE, number)
        self.rejected += [(running.trace.job_id, f"running at the replay's start: {reason}")
                          for running in start.running if (reason := self._place(running))]

    # ----------------------------------------------------------------- event loop
    def _push(self, time: float, kind: int, key: int) -> int:
        seq = next(self.seq)
        heapq.heappush(self.heap, (time, kind, key, seq))
        return seq

    def run(self) -> SimulationResult:
        """Process every event and return the result (a Simulation runs once)."""
        self.advance(math.inf)
        self.rejected += self.limits.unstarted(self.queue.jobs)
        if self.deps is not None:
            self.rejected += self.deps.unsatisfied()
        self.stats["recomputes"] = self.passes.recomputes
        if self.service is not None:
            self.service.close(self.now)
        return build_result(self.finished, self.rejected, self.state.node_names, self.util.frame(),
                            self.spec.total_cores, self.stats, self.spec.total_gpus, self.service,
                            self.preempts, self.gang is not None or self.slicer is not None)

    def advance(self, until: float) -> None:
        """Process every event up to and including time ``until``; the model is then at ``until``."""
        heap = self.heap
        running = self.running
        passes = self.passes
        stats = self.stats
        next_progress = stats["events"] + PROGRESS_EVERY
        heappop = heapq.heappop
        arrivals, arrived, count = self.arrivals, self.arrived, len(self.arrivals)
        minutes = self.limits.minutes
        while True:
            now = heap[0][0] if heap else math.inf
            if arrived < count and arrivals[arrived][0] < now:
                now = arrivals[arrived][0]
            if not now <= until or now == math.inf:
                break
            self.now = now
            if minutes is not None:
                minutes.catch_up(now)  # the decay thread's runs up to now, before what happens now
            ends: list[int] = []
            submits: list[int] = []
            later: list[tuple[int, int]] = []  # (job id, seq) of submissions the replay made
            ticks: set[int] = set()
            changes: list[tuple[int, int]] = []  # node events and requeued jobs, in the heap's order
            events = 0
            while heap and heap[0][0] == now:
                _, kind, key, seq = heappop(heap)
                events += 1
                if kind == END:
                    job = running.get(key)
                    if job is not None and job.end_seq == seq:
                        ends.append(key)
                elif kind == SUBMIT:
                    later.append((key, seq))
                elif kind == WAKE:
                    self.rates_dirty = True
                elif kind >= NODE:
                    changes.append((kind, key))
                else:
                    ticks.add(kind)
                    passes.fired(kind, now)
            first = arrived
            while arrived < count and arrivals[arrived][0] == now:
                arrived += 1
            self.arrived = arrived
            events += arrived - first
            if later:  # both in the heap's order: by job id, then seq
                submits = [key for key, _ in sorted([*later, *(a[1:] for a in arrivals[first:arrived])])]
            else:
                submits = [a[1] for a in arrivals[first:arrived]]
            stats["events"] += events
            event_bf, event_main = passes.event_bf, passes.event_main
            queued_submit, queued_end = passes.queued_submit, passes.queued_end
            for key in ends:
                job = running[key]
                self._end(job, now, PREEMPTED if now >= job.preempt_at else "")
            freed = bool(ends)
            if changes:  # what changed runs the passes a job end runs
                freed = self._machine_changed(changes, now) or freed
            periodic = MAIN_TICK in ticks
            if freed and queued_end:
                self.passes.request_main()
            if ((freed and event_main and not queued_end) or periodic
                    or (QUEUED_TICK in ticks and self.passes.background_pass(QUEUED_TICK, now))):
                if periodic:
                    self.passes.background_pass(MAIN_TICK, now)
                self._main_pass(now, periodic=periodic)
            if BF_TICK in ticks or (freed and event_bf):
                self._backfill_pass(now)
            if submits:
                for key in submits:
                    self._submit(self.by_id[key], now)
                if queued_submit:
                    self.passes.request_main()
                elif event_main:
                    self._main_pass(now, periodic=False)
                    if event_bf:
                        self._backfill_pass(now)
            if self.rates_dirty:
                self._update_rates(now)
            self._schedule_ticks(now)
            self.util.record(now, self.state.busy_cores, len(self.queue.jobs), self.queue.cores)
            if self.on_progress is not None and stats["events"] >= next_progress:
                next_progress = stats["events"] + PROGRESS_EVERY
                self.on_progress(len(self.finished) + len(self.rejected), len(self.trace))
        if math.isfinite(until):
            self.now = max(self.now, until)
            if minutes is not None:
                minutes.catch_up(self.now)

    def _settle(self, now: float) -> None:
        """End of an instant: new rates where something changed, tick scheduling, the record."""
        if self.rates_dirty:
            self._update_rates(now)
        self._schedule_ticks(now)
        self.util.record(now, self.state.busy_cores, len(self.queue.jobs), self.queue.cores)

    # ----------------------------------------------------------------- dependencies
    def _parent_ended(self, parent: SimJob, now: float, started: bool = False) -> None:
        """A job with dependents left (or ``started``, for its ``after`` ones): submit or queue those
        it was the last parent of."""
        assert self.deps is not None
        submit, eligible = (self.deps.parent_started if started else self.deps.parent_ended)(parent, now)
        for child in submit:
            self._push(now, SUBMIT, child)
        for job in eligible:
            self._queue(job, now)

    # ----------------------------------------------------------------- progress
    def _update_rates(self, now: float) -> None:
        """Give every running job its rate now and move the END of those whose rate changed."""
        self.rates_dirty = False
        active = [j for j in self.running.values() if j.suspended_since is None]
        rates = [1.0] * len(active) if self.rates is None else self.rates.rates(active, self.state, now)
        for job, rate in zip(active, rates, strict=True):
            if now < job.stall_until:
                rate = 0.0
            if rate != job.rate or job.end_seq < 0:
                job.work_until(now)
                job.rate = rate
                assert job.start is not None
                self._schedule_end(job, now, job.start)

    def _schedule_end(self, job: SimJob, now: float, start: float) -> None:
        """Push the END of a job started at ``start``: when its work is done at its rate, or at its
        time limit (suspended time does not count)."""
        finish = now + job.left / job.rate if job.rate > 0 else math.inf
        deadline = math.inf if self.config.extend_limit else start + job.suspended_total + job.limit
        deadline = min(deadline, job.preempt_at, job.resv_end)
        if deadline < finish:
            job.killed, end = True, deadline
        else:
            job.killed, end = False, finish
        job.end = end
        job.end_seq = self._push(end, END, job.job_id) if end < math.inf else -1

    def _schedule_ticks(self, now: float) -> None:
        for tick, kind in self.passes.next_ticks(now):
            self._push(tick, kind, 0)
        minutes = self.limits.minutes
        if minutes is not None and (minutes.waiting or minutes.wake < math.inf):
            tick = minutes.next_run(now) if minutes.waiting else minutes.wake
            minutes.waiting, minutes.wake = False, math.inf
            if tick < self.usage_tick:
                self.usage_tick = tick
                self._push(tick, USAGE_TICK, 0)

    # ----------------------------------------------------------------- job life cycle
    def admission(self, trace: TraceJob, shape: JobShape | None = None) -> str:
        """Why the model would refuse ``trace`` laid out as ``shape`` if submitted now ("" if not)."""
        return self.admitter.admit(self._given(trace), shape)[0]

    def _given(self, trace: TraceJob) -> TraceJob:
        """``trace`` with the memory and CPUs its partition gives it (:mod:`.job_memory`)."""
        return self.partition_memory.give(trace) if self.partition_memory.any else trace

    def _submit(self, trace: TraceJob, now: float) -> None:
        trace = self._given(trace)
        reason, part, qos = self.admitter.admit(trace, self.shapes.get(trace.job_id) if self.shapes else None)
        if trace.reservation is not None and not reason:
            self.inside = self.inside or self._reserved_jobs()
            reason = self.inside.refusal(trace)
        if reason:
            self.rejected.append((trace.job_id, reason))
            if self.deps is not None:
                self.deps.drop_dependents(trace.job_id, f"parent {trace.job_id} rejected")
            return
        if self.deps is not None and trace.job_id in self.deps.dropped:
            self.rejected.append((trace.job_id, self.deps.dropped[trace.job_id]))
            return
        eligible = min(now, self.eligible_since.get(trace.job_id, now)) if self.eligible_since else now
        shape = self.shapes.get(trace.job_id)
        job = self.jobs[trace.job_id] = self._new_job(trace, part, qos, eligible, shape)
        if refused := self.limits.submit(job):  # sbatch refuses it under its QoS
            del self.jobs[trace.job_id]
            self.rejected.append((trace.job_id, refused))
        elif self.deps is None or not self.deps.hold(job):
            self._queue(job, now)

    def _new_job(self, trace: TraceJob, part: PartitionState, qos: QosSpec, eligible: float,
                 shape: JobShape | None) -> SimJob:
        """The model's job for ``trace``, admitted into ``part`` under ``qos``, eligible from ``eligible``."""
        limit = self.admitter.time_limit(trace, part, qos)
        job = SimJob(trace, part, qos, limit, self.state.need(part, trace.cpus, trace.nodes, trace.exclusive),
                     eligible=eligible, shape=shape)
        job.plan = self.planner.plan_duration(limit)
        if self.ranks:
            job.preempt_rank = self.ranks.get(qos.name, 0)
        return job

    def _queue(self, job: SimJob, now: float) -> None:
        """An eligible job joins the queue (its priority, the counters, the next passes) unless parked."""
        if self.limits.parks(job):
            return
        self.priority.on_submit(job, now)
        self.queue.add(job)
        if self.inside is not None and job.trace.reservation is not None:
            self._openings(self.inside.opening(job, now))
        if self.reserved is not None and len(self.armed) < len(self.spec.reservations):
            for number in set(range(len(self.spec.reservations))) - self.armed:
                self._reservation_ends(number, now)
        self.passes.touch()
        if self.checker is not None:
            self.checker.on_submit(job, now)

    def start_job(self, job: SimJob, alloc: Placement, now: float, backfilled: bool) -> None:
        """Start a queued job now on ``alloc``: a pass's decision. The pass takes the jobs it
        started out of the queue's list when it ends (:meth:`JobQueue.remove_started`)."""
        job.backfilled = backfilled
        job.priority_at_start = job.priority
        job.factors_at_start = job.factors
        self.queue.started(job)
        latency = self.config.start_latency
        self._occupy(job, alloc, now, now, now + self.jitter.uniform(0.0, latency) if latency > 0 else None)

    def _place(self, running: RunningAtStart) -> str:
        """Start a job running at the start where ``running`` says (start_state.RunningAtStart);
        why it cannot be placed, "" when it is."""
        trace, node_list = running.trace, running.node_list
        if trace.job_id in self.by_id:
            raise ModelError(f"duplicate job id {trace.job_id}")
        trace = self._given(trace)
        shape = JobShape(trace.cpus, 1, memory_per_task=trace.memory_mb / trace.cpus
                         if trace.memory_mb is not None else None, node_list=node_list) if node_list else None
        reason, part, qos = self.admitter.admit(trace, shape)
        if reason:
            return reason
        job = self._new_job(trace, part, qos, running.began, shape)
        alloc = allocate(job, self.state)
        if alloc is None:
            where = f"nodes {','.join(node_list)}" if node_list else f"partition {part.spec.name}"
            return f"no room on {where} for it at the replay's start"
        self.by_id[trace.job_id] = trace
        self.jobs[trace.job_id] = job
        self._occupy(job, alloc, running.began, self.now)
        self._settle(self.now)
        return ""

    def _occupy(self, job: SimJob, alloc: Placement, began: float, now: float,
                delayed_to: float | None = None) -> None:
        """A job begun at ``began`` runs from now on ``alloc`` (or holds it now and begins at
        ``delayed_to``): it holds its nodes, counts against its QoS limits and fair share, and ends
        when its work left is done or at its limit."""
        trace = job.trace
        if self.inside is not None and (job.reservation or trace.reservation):  # ended at its window's close
            job.reservation = job.reservation or trace.reservation
            job.resv_end = self.inside.deadline(job, now)
            job.plan = min(job.plan, job.resv_end - began)
        if self.node_memory:  # without node memory sizes, memory never constrains: hold none
            job.memory = job_memory(job, alloc)
        self.state.commit(alloc, trace.cpus, job.memory, part=job.part, shares=shares_cores(job))
        self.state.commit_gpus(alloc)
        job.cpus = trace.cpus
        job.alloc = alloc
        job.start = began
        job.left = max(0.0, trace.run_time - (now - began))
        job.since = now
        if delayed_to is not None:
            self._delay_start(job, delayed_to)
        self._schedule_end(job, now, job.start)
        self.running[trace.job_id] = job
        part = job.part
        amounts = held_units(self.state, job, None if trace.exclusive else job.need) \
            if part.overlaps or trace.exclusive else [(part.index, job.need)]
        self.amounts[trace.job_id] = amounts
        self.limits.started(job)
        if self.deps is not None and self.deps.watches(trace.job_id):
            self._parent_ended(job, now, started=True)
        self.priority.on_start(job, now)
        if self.checker is not None:
            self.checker.on_start(job, now, self.planner.planned_end(job, now))
        if self.rates is not None:
            self.rates_dirty = True
        if self.slicer is not None:
            self._slice_started(job, now)

    def _delay_start(self, job: SimJob, begin: float) -> None:
        """A job decided now begins at ``begin``: it holds its nodes from now and makes no progress
        until then (a stall, ended by a WAKE event as after a resume)."""
        job.start = job.stall_until = begin
        job.rate = 0.0
        self._push(begin, WAKE, job.job_id)
        self.rates_dirty = True

    def _may_requeue(self, trace: TraceJob) -> bool:
        """Whether Slurm may requeue the job: its own ``--requeue`` / ``--no-requeue``, else the
        cluster's JobRequeue (job_mgr.c ``_job_requeue_op`` refuses a job whose details->requeue is
        0, and a preemption then kills it: preempt.c ``slurm_job_preempt``)."""
        return self.config.job_requeue if trace.requeue is None else trace.requeue

    def _end(self, job: SimJob, now: float, cause: str = "") -> None:
        """A job ends now: it gives its nodes back, to the nodes still in service. One whose node
        went DOWN (``cause`` NODE_FAIL) is requeued, one preempted (PREEMPTED) under PreemptMode
        REQUEUE too, if it may be (:meth:`_may_requeue`), else it ends NODE_FAIL or PREEMPTED."""
        trace = job.trace
        if self.slicer is not None:
            self._slice_ended(job, now)
        del self.running[trace.job_id]
        if job.suspended_since is None:
            del self.amounts[trace.job_id]
            self.state.commit(job.alloc, job.cpus, job.memory, sign=-1, part=job.part,
                              shares=shares_cores(job))
        elif job.memory is not None:
            self.state.commit_memory(job.alloc, job.memory, sign=-1)
        self.state.commit_gpus(job.alloc, sign=-1)
        if self.service is not None:
            self.service.absorb(job.alloc)
        if self.gang is not None:
            self._gang_ended(job, now)
        requeue = (cause == NODE_FAIL or (cause == PREEMPTED and preempt_mode(
            job, self.config.preempt_mode, self.by_qos) == "requeue")) and self._may_requeue(trace)
        if cause:
            job.end, job.killed = now, False
        job.end_seq = -1
        job.finished = not job.cancelled and not requeue
        job.ended_by = "" if requeue else cause
        self.limits.ended(job, now)
        self.priority.on_end(job, now)
        if self.checker is not None:
            self.checker.on_end(job, now)
        self.passes.touch()
        if self.rates is not None:
            self.rates_dirty = True
        if requeue:
            job.requeue(now + self.config.requeue_delay)
            self.limits.requeued(job)
            self._push(job.eligible, REQUEUE, trace.job_id)
            return
        self.finished.append(job)
        if self.deps is not None:
            self._parent_ended(job, now)

    # ----------------------------------------------------------------- passes
    def _main_pass(self, now: float, periodic: bool) -> None:
        if not self.passes.prepare(MAIN_TICK, now):
            return
        self.stats["main_passes"] += 1
        depth = math.inf if periodic else self.config.default_queue_depth
        plan, service = self.reserved, self.service
        started, cut_short = main_pass(self.queue, self.state, self.limits, self.admitter, depth,
                                       lambda job, alloc: self.start_job(job, alloc, now, backfilled=False),
                                       (lambda job: plan.blocked(now, now + job.limit)) if plan else None,
                                       self._preempt if self.preempts else None,
                                       frozenset(service.out) if service is not None else frozenset(),
                                       self.inside, now)
        if cut_short:
            self.passes.must_run(MAIN_TICK)
        if started:
            self.queue.remove_started(started)
            self.passes.must_run(BF_TICK)

    def _backfill_pass(self, now: float) -> None:
        if not self.passes.prepare(BF_TICK, now):
            return
        if self.checker is None and not self.preempts and not self.queue.something_fits():
            return  # it could only plan reservations, which this pass would drop unused
        self.stats["backfill_passes"] += 1
        started: set[int] = set()

        def start(job: SimJob, alloc: Placement) -> None:
            self.start_job(job, alloc, now, backfilled=True)
            started.add(job.job_id)

        preemption = BackfillPreemption(self._preemptees, self._preempt) if self.preempts else None
        self.planner.run(BackfillView(now, self.queue, self.running, self.amounts, self.state, self.limits,
                                      self.backfill.max_reservations, self.node_memory, self.checker, start,
                                      self.service.in_service if self.service and self.service.out else None,
                                      self.reserved, self.inside is not None, self.array_tasks, preemption))
        if started:
            self.queue.remove_started(started)
            self.passes.must_run(MAIN_TICK)
