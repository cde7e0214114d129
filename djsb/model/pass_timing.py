"""When the scheduler's passes run, and whether a pass that could run must.

* The main pass runs on every job end and on submission, and every ``sched_interval`` seconds;
  the backfill pass every ``bf_interval`` (0: at every event). With ``pass_times`` (the passes a
  live slurmctld ran, replayed by ``djsb calibrate``) a pass runs at exactly the given instants
  instead, up to the last given instant of any kind (the end of the watch that saw them: within
  it, a kind without a given instant had no pass); after it every pass runs as configured again
  (Slurm went on passing after the watch ended, so a model that lags behind it still finds passes
  for its last jobs).
* Event passes run as Slurm 22.05 runs them. A batch job is never started inside its submission
  (``_slurm_rpc_submit_batch_job`` calls ``job_allocate`` with ``allocate`` 0: test only, defer or
  not); the submission calls ``queue_job_scheduler()``, which only counts a request, and so does a
  job's end under ``defer`` (``_slurm_rpc_epilog_complete``; without defer the end calls
  ``schedule()`` and the pass runs at once). slurmctld's background thread
  (``_slurmctld_background``, controller.c) wakes about once a second (ten 100 ms sleeps) and runs
  ``schedule(false)``, a pass over ``default_queue_depth`` jobs, when a request is counted and
  ``batch_sched_delay`` whole seconds passed since its last pass (``last_sched_time``, also set
  by the periodic ``sched_interval`` pass). The wake-ups are on the periodic main pass's grid of
  whole seconds (the same loop runs both); ``sched_min_interval`` (2 microseconds by default) is
  not modelled. With ``sched_interval`` 0 (the model's event-driven mode, as textbook EASY: no
  Slurm setting) every event runs its passes at once. Measured against this reading: the slurmctld
  logs of the committed mini-cluster histories (Slurm 22.05, no defer) show 92-96 % of the main
  scheduler's starts on the whole-second clock, as if the end's pass were queued too
  (docs/history.md, bench/history_counterfactuals.py).
* Periodic passes run only when something changed since the same pass last ran (a submission, an
  end, a start, or a priority recomputation that changed the queue order): an unchanged state
  gives the same answer. Ticks are therefore scheduled lazily, on multiples of the interval from
  a phase: 0, a seeded draw (``pass_jitter``) or ``bf_phase`` (Slurm's clock, for backfill).
* Priorities are set at submission and recomputed at the first pass on or after each
  ``calc_period`` boundary of the priority plugin (Slurm's PriorityCalcPeriod), at its
  ``calc_phase``. A recomputation
  alone (no other change) triggers a pass only if some queued job could fit the free capacity,
  and none happens with fewer than two queued jobs: a new order cannot start a job that fits
  nowhere, and one job has no order. Reported priorities are those of the last recomputation.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

from djsb.model.backfill import BackfillPolicy
from djsb.model.events import BF_TICK, MAIN_TICK, QUEUED_TICK
from djsb.model.invariants import InvariantChecker
from djsb.model.priority.base import PriorityPlugin
from djsb.model.queue import JobQueue
from djsb.model.scheduler import SchedulerConfig


class PassTiming:
    """The pass clocks of one replay over ``queue`` and the priority recomputations they trigger
    (counted in :attr:`recomputes`); ``jitter`` draws the phases under ``pass_jitter``. It owns
    whether each kind of pass must run: the core tells it what changed (:meth:`touch`,
    :meth:`must_run`) and asks (:meth:`prepare`)."""

    def __init__(self, config: SchedulerConfig, backfill: BackfillPolicy, priority: PriorityPlugin,
                 queue: JobQueue, jitter: random.Random, pass_times: Mapping[str, Sequence[float]],
                 checker: InvariantChecker | None, start: float = 0.0) -> None:
        self.priority = priority
        self.queue = queue
        self.checker = checker
        self.recomputes = 0
        """Priority recomputations made so far."""
        self.phase = {kind: jitter.uniform(0.0, interval) if config.pass_jitter else 0.0
                      for kind, interval in ((MAIN_TICK, config.sched_interval),
                                             (BF_TICK, config.bf_interval))}
        if config.bf_phase is not None:
            self.phase[BF_TICK] = config.bf_phase
        self.wake_phase = self.phase[MAIN_TICK] % 1.0
        """Phase of the background loop's once-a-second wake-ups (the queued passes): the periodic
        main pass is run by the same loop, so both fall on one grid."""
        self.batch_sched_delay = config.batch_sched_delay
        kinds = {"main": MAIN_TICK, "backfill": BF_TICK}
        self.given = {kinds[name] for name in pass_times}
        """The kinds of pass that run at given instants only, until the watch that saw them ended."""
        self.watch_end = max((instant for instants in pass_times.values() for instant in instants),
                             default=math.inf)
        """The last given instant of any kind: the watch ran at least until then."""
        self.given_ticks = [(instant, kinds[name]) for name, instants in pass_times.items()
                            for instant in instants]
        self.config = config
        self.backfill_enabled = backfill.enabled
        self.intervals: dict[int, float] = {}
        self.event_main = self.event_bf = self.queued_submit = self.queued_end = False
        self._schedule_passes()
        self.requested = False
        self.last_sched = -math.inf
        self.dirty = {MAIN_TICK: True, BF_TICK: True}
        self.pending: dict[int, float] = {}
        period, phase = priority.calc_period, priority.calc_phase
        self.last_calc = phase + math.floor((start - phase) / period) * period if period > 0 else -math.inf
        """The last recomputation: the decay thread's last run at or before the replay's start (the
        plugin's setup computed the priorities' inputs then)."""

    def _schedule_passes(self) -> None:
        """The periodic clocks and the event-triggered passes of the kinds not given."""
        config, given = self.config, self.given
        self.intervals = {} if MAIN_TICK in given else {MAIN_TICK: config.sched_interval}
        if self.backfill_enabled and BF_TICK not in given:
            self.intervals[BF_TICK] = config.bf_interval
        self.event_main = MAIN_TICK not in given
        """Whether job ends (and submissions, unless ``defer``) trigger a main pass."""
        self.event_bf = self.backfill_enabled and config.bf_interval == 0 and BF_TICK not in given
        """Whether job ends and submissions trigger a backfill pass."""
        self.queued_submit = self.event_main and config.sched_interval > 0
        """Whether a submission queues its pass for the background loop instead of running it."""
        self.queued_end = self.queued_submit and config.defer
        """Whether a job's end queues its pass for the background loop (``defer``)."""

    def touch(self) -> None:
        """Something changed: both passes must run at their next chance."""
        self.dirty[MAIN_TICK] = self.dirty[BF_TICK] = True

    def must_run(self, kind: int) -> None:
        """The next pass of ``kind`` must run: the other kind started jobs, or a main pass left
        jobs untested (its queue depth) that the periodic pass must see."""
        self.dirty[kind] = True

    def fired(self, kind: int, now: float) -> None:
        """A tick of ``kind`` arrived now: the next one may be scheduled; at the last given
        instant, every kind of pass runs as configured from then on."""
        if self.pending.get(kind) == now:
            del self.pending[kind]
        if self.given and now >= self.watch_end:
            self.given.clear()
            self._schedule_passes()

    def request_main(self) -> None:
        """An event queued a main pass for the background loop (``queue_job_scheduler``)."""
        self.requested = True

    def background_pass(self, kind: int, now: float) -> bool:
        """Whether the background loop runs a main pass now for the tick ``kind`` that arrived: a
        periodic one always, a queued one if ``batch_sched_delay`` whole seconds passed since the
        loop's last pass (else it waits for a later wake-up). Either way the loop's pass clock is
        reset and the request counter cleared, as ``_slurmctld_background`` does."""
        if (kind == QUEUED_TICK and math.isfinite(self.last_sched)
                and math.floor(now) - math.floor(self.last_sched) < self.batch_sched_delay):
            return False
        self.last_sched = now
        self.requested = False
        return True

    def _queued_tick(self, now: float) -> float:
        """The first background wake-up after ``now`` at which a queued pass may run."""
        phase = self.wake_phase
        wake = phase + math.floor(now - phase) + 1.0
        if math.isfinite(self.last_sched):
            earliest = math.floor(self.last_sched) + self.batch_sched_delay
            if math.floor(wake) < earliest:
                wake = phase + math.ceil(earliest - phase)
                if math.floor(wake) < earliest:
                    wake += 1.0
        return wake

    def next_ticks(self, now: float) -> list[tuple[float, int]]:
        """At the end of an instant: the periodic ticks (time, kind) to schedule, earlier than any
        pending one of their kind (a list: asked at every instant, mostly for none)."""
        queue = self.queue
        if not queue.jobs:
            return []
        ticks: list[tuple[float, int]] = []
        pending = self.pending
        if self.requested and QUEUED_TICK not in pending:
            tick = self._queued_tick(now)
            pending[QUEUED_TICK] = tick
            ticks.append((tick, QUEUED_TICK))
        period = self.priority.calc_period
        for kind, interval in self.intervals.items():
            if interval <= 0:
                continue
            if self.dirty[kind]:
                due = now
            elif period > 0 and len(queue.jobs) > 1 and queue.something_fits():
                due = max(now, self.last_calc + period)
            else:
                continue
            phase = self.phase[kind]
            tick = phase + ((math.floor((due - phase) / interval) + 1) * interval if due == now else
                            math.ceil((due - phase) / interval) * interval)
            waiting = pending.get(kind)
            if waiting is None or waiting > tick:
                pending[kind] = tick
                ticks.append((tick, kind))
        return ticks

    def prepare(self, kind: int, now: float) -> bool:
        """Recompute priorities if due, and say whether the pass must run.

        A pass runs when something changed since it last ran. Without a change, only a priority
        recomputation can matter, and only if some queued job could fit now (a new order cannot
        start a job that fits nowhere); otherwise the recomputation waits for the next pass that
        runs, which sees the priorities Slurm's decay thread would have set by then.
        """
        period = self.priority.calc_period
        due = period > 0 and now >= self.last_calc + period and len(self.queue.jobs) > 1
        if self.dirty[kind]:
            if due:
                self._recompute(now)
        elif due and self.queue.something_fits():
            self._recompute(now)
        was_dirty = self.dirty[kind]
        self.dirty[kind] = False
        return was_dirty and bool(self.queue.jobs)

    def _recompute(self, now: float) -> None:
        period, phase = self.priority.calc_period, self.priority.calc_phase
        self.last_calc = phase + math.floor((now - phase) / period) * period
        self.recomputes += 1
        self.priority.recompute(self.queue.jobs, now)
        if self.queue.reorder():
            self.touch()
            if self.checker is not None:
                self.checker.on_reorder(now)
