"""What the model does when the machine changes under the schedule: node events applied (the jobs
on a node gone DOWN end), requeued jobs queued again, reservations' windows opened and closed
(:mod:`djsb.model.reservations`, :mod:`djsb.model.reserved_jobs`), jobs preempted for a job that
does not fit (:mod:`djsb.model.preemption`), or suspended for it and resumed when it ends
(:mod:`djsb.model.suspension`), and the jobs sharing cores suspended and resumed in turn by gang
scheduling's time-slicing and its shadows (:mod:`djsb.model.gang`).
:class:`~djsb.model.simulation.Simulation` has these steps; its core supplies the state they act on.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence

from djsb.model.allocation import allocate, held_units, shares_cores
from djsb.model.backfill.planner import Accept
from djsb.model.cluster_spec import ClusterSpec
from djsb.model.events import GANG_TICK, REQUEUE, RESV_BEGIN, RESV_END, USAGE_TICK
from djsb.model.gang import Changes, TimeSlicer
from djsb.model.job import SimJob
from djsb.model.node_service import NodeService
from djsb.model.operations import JobOperations, ModelError
from djsb.model.placement import Placement
from djsb.model.preemption import NODE_FAIL, STOPS, choose_preemptees, grace_time, preempt_mode, preemptable
from djsb.model.reservations import ReservationPlan
from djsb.model.reserved_jobs import ReservedJobs
from djsb.model.scheduler import SchedulerConfig
from djsb.model.suspension import Gang, suspendable, taken_slots


class MachineOperations(JobOperations):
    """The steps of a model whose machine changes; the core supplies its state and its steps."""

    spec: ClusterSpec
    config: SchedulerConfig
    running: dict[int, SimJob]
    service: NodeService | None
    reserved: ReservationPlan | None
    inside: ReservedJobs | None
    armed: set[int]
    arrivals: list[tuple[float, int, int]]
    arrived: int
    by_qos: bool
    preempts: bool
    gang: Gang | None
    slicer: TimeSlicer | None
    usage_tick: float

    @abstractmethod
    def _queue(self, job: SimJob, now: float) -> None:
        """An eligible job joins the queue."""

    @abstractmethod
    def _schedule_end(self, job: SimJob, now: float, start: float) -> None:
        """Push the END of a running job."""

    def _reservation_ends(self, number: int, after: float) -> None:
        """Push the end of reservation ``number``'s next window after ``after``, when its nodes return
        and the passes run, while jobs wait or run (a repeating reservation would go on forever):
        a job queued later arms it again (:meth:`_queue`)."""
        assert self.reserved is not None
        end = self.reserved.next_end(number, after)
        if end is not None and (self.queue.jobs or self.running or self.arrived < len(self.arrivals)):
            self._push(end, RESV_END, number)
            self.armed.add(number)
        else:
            self.armed.discard(number)

    def _reserved_jobs(self) -> ReservedJobs:
        """The rules of the jobs asking for a reservation (:mod:`djsb.model.reserved_jobs`)."""
        return ReservedJobs(self.spec.reservations, self.reserved, self.config.resv_over_run)

    def _openings(self, times: list[float]) -> None:
        """Push the openings of the windows queued jobs wait for, when the passes run for them."""
        for opens in times:
            self._push(opens, RESV_BEGIN, 0)

    def _machine_changed(self, changes: list[tuple[int, int]], now: float) -> bool:
        """Apply node events (the jobs on a node gone DOWN end), queue requeued jobs eligible again
        and give reserved nodes back at a window's end; a running job's units on nodes out of service
        are no longer planned to come back. Whether the passes a job's end runs must run now: not
        for a run of the decay thread alone (its usages were brought up to now already), whose
        change the next periodic passes see (at once without a periodic main pass); nor for a wake of
        the timeslicer (jobs suspended and resumed on the CPUs they hold), whose moved ends the next
        periodic passes see (a job it preempts ends now, with its passes), and which changes nothing
        when it suspends, resumes and preempts no job."""
        freed = touched = False
        for kind, key in changes:
            if kind == GANG_TICK:
                assert self.slicer is not None
                self.slicer.wake = math.inf
                rotated = self.slicer.cycle()
                self._sliced(rotated, now)
                touched = touched or bool(rotated.suspend or rotated.resume or rotated.preempt)
                continue
            touched = True
            if kind == USAGE_TICK:
                self.usage_tick = math.inf
                freed = freed or self.config.sched_interval <= 0
                continue
            freed = True
            if kind == REQUEUE:
                self._queue(self.jobs[key], now)
                continue
            if kind == RESV_END:
                self._reservation_ends(key, now)
                continue
            if kind == RESV_BEGIN and self.inside is not None:  # the passes run for the jobs waiting
                self._openings(self.inside.reopen(self.queue.jobs, now))
                continue
            assert self.service is not None
            changed, down = self.service.apply(key, now)
            on = set(changed)
            for job in [job for job in self.running.values() if any(node in down for node, _ in job.alloc)]:
                self._end(job, now, NODE_FAIL)
            for job in self.running.values():
                if (job.suspended_since is None or job.sliced) and any(node in on for node, _ in job.alloc):
                    alloc = self.service.in_service(job.alloc, job.memory)[0]
                    self.amounts[job.job_id] = held_units(self.state, job, alloc=alloc)
            if self.checker is not None:
                self.checker.on_machine_change(now)
        if touched:
            self.passes.touch()
        return freed

    def resume(self, job_id: int, stall: float = 0.0) -> None:
        """``scontrol resume``, but not of a job a preemption suspended: the gang scheduler resumes
        that one when its preemptors end (its CPUs are theirs until then); nor of one time-slicing
        suspended (:meth:`_not_sliced`)."""
        if self.gang is not None and job_id in self.gang.shadows:
            raise ModelError(f"job {job_id} is suspended by a preemption: it resumes when its preemptors end")
        self._not_sliced(job_id)
        super().resume(job_id, stall)

    def suspend(self, job_id: int) -> None:
        """``scontrol suspend``, but not of a job time-slicing suspended (:meth:`_not_sliced`)."""
        self._not_sliced(job_id)
        super().suspend(job_id)

    def resize(self, job_id: int, cpus_per_node: Sequence[int]) -> None:
        """Resize a job, but not one of a partition the gang scheduler slices (the model has no rule
        for the cores it would hold)."""
        if self.slicer is not None and self.slicer.tracks(self.job(job_id)):
            raise ModelError(f"job {job_id} is in a partition whose jobs gang scheduling time-slices: it "
                             "cannot be resized")
        super().resize(job_id, cpus_per_node)

    def _held_by_hand(self, job: SimJob, now: float) -> None:
        """``scontrol suspend``: the job leaves the gang scheduler's list, keeping its cores, and the
        jobs that now fit its partition's active row resume (job_mgr.c ``_job_suspend_op``:
        ``gs_job_fini`` for a suspension by hand, which gives its cores back to the select plugin)."""
        if self.slicer is not None and self.slicer.tracks(job):
            self._sliced(self.slicer.end(job, parked=True), now)

    def _released_by_hand(self, job: SimJob, now: float) -> None:
        """``scontrol resume`` of a job suspended by hand: it joins the end of the gang scheduler's
        list on the cores it had, suspended at once if they are in the active row's
        (``_job_suspend_op``: ``gs_job_start``)."""
        if self.slicer is not None:
            self._slice_started(job, now)

    def _not_sliced(self, job_id: int) -> None:
        """Refuse an operation on a job gang scheduling's time-slicing holds suspended (it keeps its
        CPUs, which the operations take and give back): the model has no rule for it."""
        if self.slicer is not None and self.job(job_id).sliced:
            raise ModelError(f"job {job_id} is suspended by gang scheduling's time-slicing: it resumes "
                             "at its turn")

    def _slice_started(self, job: SimJob, now: float) -> None:
        """``job`` started: the gang scheduler lists it, suspended at once if its cores are in the
        active row's (gang.c ``gs_job_start``; :mod:`djsb.model.gang`)."""
        assert self.slicer is not None
        if self.slicer.tracks(job):
            self._sliced(self.slicer.start(job), now)

    def _slice_ended(self, job: SimJob, now: float) -> None:
        """``job`` ends (before its CPUs are given back): if time-slicing held it suspended, that time
        counts as suspended; the jobs that now fit its partition's active row resume (gang.c
        ``gs_job_fini``)."""
        slicer = self.slicer
        assert slicer is not None
        if not slicer.tracks(job):
            return
        if job.sliced:
            assert job.suspended_since is not None
            job.suspended_total += now - job.suspended_since
            job.suspended_since, job.sliced = None, False
        self._sliced(slicer.end(job), now)

    def _stopped_by_shadow(self, job: SimJob) -> bool:
        """Whether the gang scheduler preempts ``job`` rather than suspend it when a shadow is cast on
        its partition: its PreemptMode (its partition's or QoS's, else the cluster's) is CANCEL or
        REQUEUE (gang.c ``_update_active_row``, ``_cycle_job_list``: ``slurm_job_preempt_mode``; OFF
        under preempt/none)."""
        return self.preempts and preempt_mode(job, self.config.preempt_mode, self.by_qos) in STOPS

    def _sliced(self, changes: Changes, now: float) -> None:
        """Apply what the gang scheduler did: a suspended job keeps its CPUs and stops progressing
        (``_suspend_job``), a resumed one goes on with its end moved by the time it was suspended
        (``_resume_job``), a preempted one ends now, cancelled or requeued, without GraceTime
        (``_preempt_job_dequeue``: SIGKILL or ``job_requeue`` at once); then the timeslicer's next
        wake while a partition cycles."""
        for job in changes.preempt:
            job.preempt_at = now
            job.work_until(now)
            assert job.start is not None
            self._schedule_end(job, now, job.start)
            if self.checker is not None:  # as for any preemption: the promises made may move
                self.checker.on_machine_change(now)
        for job in changes.suspend:
            job.work_until(now)
            job.suspended_since, job.sliced, job.end_seq = now, True, -1
            self.rates_dirty = True
            if self.checker is not None:
                self.checker.on_suspend(job, now)
        for job in changes.resume:
            assert job.suspended_since is not None
            job.suspended_total += now - job.suspended_since
            job.suspended_since, job.sliced = None, False
            job.since, job.rate = now, 0.0  # the next rate update schedules its END (_update_rates)
            self.rates_dirty = True
            if self.checker is not None:
                self.checker.on_resume(job, now, self.planner.planned_end(job, now))
        slicer = self.slicer
        assert slicer is not None
        if slicer.wake == math.inf and slicer.pending():
            slicer.wake = slicer.next_wake(now)
            self._push(slicer.wake, GANG_TICK, 0)

    def _preempt(self, job: SimJob, excluded: frozenset[int],
                 accept: Accept | None = None) -> Placement | None:
        """``job`` does not fit: suspend the lower-tier jobs that make room for it now and return
        where it starts (:meth:`_suspend_for`), else preempt those that make room once they end, if
        any (:mod:`djsb.model.preemption`). Each of those ends after its partition's GraceTime (an
        END now, handled before the next pass at this instant); ``job`` waits for them (None).
        ``accept`` (a backfill pass's, :class:`~djsb.model.backfill.planner.BackfillPreemption`):
        nothing is suspended or preempted for a placement it refuses."""
        now = self.now
        avoid = excluded | (frozenset(self.service.out) if self.service is not None else frozenset())
        if self.gang is not None and (alloc := self._suspend_for(job, avoid, accept)) is not None:
            return alloc
        draining = [other for other in self.running.values() if other.preempt_at < math.inf]
        by_qos, config = self.by_qos, self.config
        candidates = [other for other in self.running.values() if other.preempt_at == math.inf
                      and preemptable(job, other, now, config.preempt_exempt_time, by_qos,
                                      config.preempt_mode, config.preempt_within)]
        found = choose_preemptees(self.state, candidates, draining,
                                  lambda state: allocate(job, state.without(avoid) if avoid else state),
                                  by_qos)
        if found is not None and found[1] and accept is not None \
                and not accept(found[0], [(victim, victim.alloc) for victim in found[1]], False):
            return None
        for victim in found[1] if found is not None else ():
            victim.preempted_by = job.job_id
            victim.preempt_at = now + grace_time(victim, by_qos)
            victim.work_until(now)
            assert victim.start is not None
            self._schedule_end(victim, now, victim.start)
            if self.checker is not None:
                self.checker.on_machine_change(now)
        return None

    def _preemptees(self, job: SimJob) -> list[tuple[SimJob, bool]]:
        """The running jobs a backfill pass counts as gone when it plans ``job``
        (:class:`~djsb.model.backfill.planner.BackfillPreemption`): those it may preempt now and those it may
        suspend, the latter with True (they give back their CPUs alone); jobs already being
        preempted are not among them (they end at their grace time's end)."""
        now, config, gang = self.now, self.config, self.gang
        gone: list[tuple[SimJob, bool]] = []
        for other in self.running.values():
            if other.preempt_at < math.inf:
                continue
            if preemptable(job, other, now, config.preempt_exempt_time, self.by_qos, config.preempt_mode,
                           config.preempt_within):
                gone.append((other, False))
            elif gang is not None and other.job_id not in gang.taken \
                    and suspendable(job, other, config.preempt_mode, self.by_qos):
                gone.append((other, True))
        return gone

    def _suspend_for(self, job: SimJob, avoid: frozenset[int],
                     accept: Accept | None = None) -> Placement | None:
        """Where ``job`` starts now once the jobs it may suspend (:func:`suspendable`; not one that
        suspended others) give it their CPUs, in the preemption order, and those it takes slots from
        suspended; None (nobody suspended) if that makes no room, its QoS's TRES limits keep it
        from those nodes, or ``accept`` refuses them."""
        gang = self.gang
        assert gang is not None
        candidates = [other for other in self.running.values() if other.job_id not in gang.taken
                      and suspendable(job, other, self.config.preempt_mode, self.by_qos)]
        if not candidates:
            return None
        found = choose_preemptees(self.state, candidates, (),
                                  lambda state: allocate(job, state.without(avoid) if avoid else state),
                                  self.by_qos, cpus_only=True)
        if found is None or (self.limits.post and self.limits.blocks(job, found[0])):
            return None
        alloc, overlapped = found
        taken = taken_slots(self.state.node_free, alloc, overlapped)
        if accept is not None and not accept(alloc, taken, True):
            return None
        now = self.now
        for victim, slots in taken:
            victim.work_until(now)
            victim.suspended_since = victim.suspended_at = now
            victim.end_seq = -1
            victim.preempted_by = job.job_id
            self.state.commit(slots, slots.slots, None, sign=-1, part=victim.part,
                              shares=shares_cores(victim))
            del self.amounts[victim.job_id]
            gang.suspend(job.job_id, victim, slots)
            if self.checker is not None:
                self.checker.on_suspend(victim, now)
        self.rates_dirty = True
        return alloc

    def _gang_ended(self, job: SimJob, now: float) -> None:
        """``job`` ended (its CPUs given back): a suspended one gives back the slots it held; the
        jobs it suspended get their slots back, and those it was the last preemptor of resume now
        (gang.c ``gs_job_fini``), their end moved by the time they spent suspended."""
        gang = self.gang
        assert gang is not None
        held = gang.victim_ended(job)
        if held is not None:
            self.state.commit(held, held.slots, None, sign=-1, part=job.part, shares=shares_cores(job))
        for victim, slots, resumes in gang.preemptor_ended(job.job_id):
            self.state.commit(slots, slots.slots, None, part=victim.part, shares=shares_cores(victim))
            if resumes:
                assert victim.suspended_since is not None
                victim.suspended_total += now - victim.suspended_since
                victim.suspended_since = None
                victim.since = now
                victim.rate = 0.0  # the next rate update schedules its END (_update_rates)
                self.amounts[victim.job_id] = held_units(self.state, victim)
                self.rates_dirty = True
                if self.checker is not None:
                    self.checker.on_resume(victim, now, self.planner.planned_end(victim, now))
