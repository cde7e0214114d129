"""The pool's discrete-event simulation: tasks matched to free computers, evicted, retried or
abandoned by the policy.

Why not :mod:`djsb.model.simulation`: that core is a Slurm scheduler (priority passes, backfill
reservations, partitions, time limits), with no notion of a resource that an owner takes back at
will; a cycle-stealing pool has none of its passes and needs evictions by cause. This loop is a
plain heap of ``(time, kind, seq)`` events; all events at one instant are handled (run ends, then
computers taken, then computers given back, then submissions and removals), then free computers
are matched to queued tasks first come first served, as Condor's negotiator does.

A run ends at the first of: the task's completion (good tasks, ``runtime`` seconds after the
start), the next interruption of its computer (a user, a reboot, a failure: precomputed in
:mod:`djsb.pool.interactive`), the policy's run limit, the submitter removing the task, or the
end of the horizon. So each run has exactly one end event and none is ever cancelled.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from bisect import insort
from collections import deque
from dataclasses import dataclass, field

from djsb.pool.abandon import AbandonPolicy, Evidence, Verdict
from djsb.pool.computers import Computer
from djsb.pool.interactive import Interruptions
from djsb.pool.placement import Chooser, PlacementContext, cluster_ranks, idle_share
from djsb.pool.power import ComputerType
from djsb.pool.tasks import EndCause, Run, Task, accrued_time, deallocations

RUN_END, TAKEN, GIVEN_BACK, SUBMIT, REMOVE = range(5)


@dataclass
class TaskRecord:
    """What happened to one task: its runs and how it ended (completed, abandoned, removed,
    unfinished at the horizon); ``end`` is when it ended (inf if unfinished)."""

    task: Task
    runs: list[Run] = field(default_factory=list)
    outcome: str = "unfinished"
    end: float = math.inf
    dedicated: bool = False


@dataclass
class PoolResult:
    """The records of every task and the busy intervals of every computer, for the metrics."""

    records: list[TaskRecord]
    computers: list[Computer]
    interruptions: list[Interruptions]
    dedicated_kind: ComputerType
    dedicated_runs: list[list[Run]]
    horizon: float
    sleep_after: float


@dataclass
class _Running:
    """A run in progress: its task, when it started and why it will end."""

    task: int
    start: float
    cause: EndCause


class PoolSimulation:
    """One run of a pool: computers with their interruptions, tasks, an abandon and a placement policy.

    ``history`` is each computer's interactive log of an earlier period of ``horizon`` seconds,
    on which C2 and C3 rank the computers (djsb/pool/placement.py); ``interruptions`` are those
    of the period simulated."""

    def __init__(self, computers: list[Computer], interruptions: list[Interruptions], tasks: list[Task],
                 abandon: AbandonPolicy, choose: Chooser, *, history: list[Interruptions], horizon: float,
                 sleep_after: float, dedicated_kind: ComputerType, seed: int) -> None:
        self.computers = computers
        self.interruptions = interruptions
        self.tasks = tasks
        self.abandon = abandon
        self.choose = choose
        self.horizon = horizon
        self.sleep_after = sleep_after
        self.dedicated_kind = dedicated_kind
        rng = random.Random(seed)
        self.evidence = Evidence(rng)
        shares = [idle_share(i, horizon) for i in history]
        ranks = cluster_ranks([c.cluster for c in computers], shares)
        asleep = [-math.inf] * len(computers)  # every computer starts asleep
        self.context = PlacementContext(computers, shares, ranks, rng, asleep, sleep_after)
        dedicated = abandon.dedicated()
        self.dedicated_limit = dedicated.max_seconds if dedicated else math.inf
        self.dedicated_runs: list[list[Run]] = [[] for _ in range(dedicated.computers if dedicated else 0)]
        self.records = [TaskRecord(task) for task in tasks]
        self.events: list[tuple[float, int, int, int]] = []
        self.seq = itertools.count()
        self.free: set[int] = set()
        self.free_dedicated: set[int] = set(range(len(self.dedicated_runs)))
        self.running: dict[int, _Running] = {}            # computer -> its run
        self.running_dedicated: dict[int, _Running] = {}
        self.queue: deque[int] = deque()
        self.dedicated_queue: deque[int] = deque()
        self.queued: set[int] = set()

    # ------------------------------------------------------------------ setup
    def _push(self, time: float, kind: int, item: int) -> None:
        heapq.heappush(self.events, (time, kind, next(self.seq), item))

    def _schedule_inputs(self) -> None:
        for index, spans in enumerate(self.interruptions):
            for start, end in zip(spans.starts, spans.ends, strict=True):
                self._push(start, TAKEN, index)
                self._push(end, GIVEN_BACK, index)
            if spans.covering(0.0) is None:
                self.free.add(index)
        for task in self.tasks:
            self._push(task.submit, SUBMIT, task.task_id)
            if math.isfinite(task.removal_after):
                self._push(task.submit + task.removal_after, REMOVE, task.task_id)

    # ------------------------------------------------------------------ the loop
    def run(self) -> PoolResult:
        """Simulate up to the horizon and return every task's record."""
        self._schedule_inputs()
        while self.events and self.events[0][0] < self.horizon:
            now = self.events[0][0]
            while self.events and self.events[0][0] == now:
                _, kind, _, item = heapq.heappop(self.events)
                self._handle(kind, item, now)
            self._match(now)
        self._cut_at_horizon()
        return PoolResult(self.records, self.computers, self.interruptions, self.dedicated_kind,
                          self.dedicated_runs, self.horizon, self.sleep_after)

    def _handle(self, kind: int, item: int, now: float) -> None:
        if kind == RUN_END:
            self._end_run(item, now)
        elif kind == TAKEN:
            self.free.discard(item)
        elif kind == GIVEN_BACK:
            self.context.last_busy_end[item] = now
            if item not in self.running and self.interruptions[item].covering(now) is None:
                self.free.add(item)
        elif kind == SUBMIT:
            self._enqueue(item)
        elif kind == REMOVE and item in self.queued:
            self.queued.discard(item)
            self._finish(item, "removed", now)

    def _enqueue(self, task_id: int, dedicated: bool = False) -> None:
        self.queued.add(task_id)
        (self.dedicated_queue if dedicated else self.queue).append(task_id)

    def _next_queued(self, queue: deque[int]) -> int | None:
        while queue:
            task_id = queue.popleft()
            if task_id in self.queued:
                self.queued.discard(task_id)
                return task_id
        return None

    def _match(self, now: float) -> None:
        while self.free and self.queue:
            task_id = self._next_queued(self.queue)
            if task_id is None:
                break
            computer = self.choose(self.free, now, self.context)
            self.free.discard(computer)
            self._start(task_id, computer, now, self._run_end(task_id, computer, now))
        while self.free_dedicated and self.dedicated_queue:
            task_id = self._next_queued(self.dedicated_queue)
            if task_id is None:
                break
            computer = min(self.free_dedicated)
            self.free_dedicated.discard(computer)
            end, cause = self._task_end(task_id, now, self.dedicated_limit)
            self._start(task_id, -1 - computer, now, (end, cause))

    def _task_end(self, task_id: int, now: float, limit: float) -> tuple[float, EndCause]:
        """When and why a run started now would end if its computer were never taken back."""
        task = self.tasks[task_id]
        ends = [(now + limit, EndCause.LIMIT)]
        if task.runtime is not None:
            ends.append((now + task.runtime, EndCause.COMPLETED))
        ends.append((task.submit + task.removal_after, EndCause.REMOVED))
        return min(ends, key=lambda e: (e[0], _END_ORDER[e[1]]))

    def _run_end(self, task_id: int, computer: int, now: float) -> tuple[float, EndCause]:
        end, cause = self._task_end(task_id, now, self.abandon.run_limit())
        spans = self.interruptions[computer]
        nxt = spans.next_start(now)
        if nxt is not None and (spans.starts[nxt], _END_ORDER[spans.causes[nxt]]) < (end, _END_ORDER[cause]):
            return spans.starts[nxt], spans.causes[nxt]
        return end, cause

    def _start(self, task_id: int, item: int, now: float, end: tuple[float, EndCause]) -> None:
        """Start a run on computer ``item`` (``-1 - i`` for dedicated computer i) until ``end``."""
        running = self.running_dedicated if item < 0 else self.running
        running[_computer(item)] = _Running(task_id, now, end[1])
        self._push(end[0], RUN_END, item)

    # ------------------------------------------------------------------ ends of runs
    def _end_run(self, item: int, now: float) -> None:
        dedicated, computer = item < 0, _computer(item)
        running = self.running_dedicated if dedicated else self.running
        run = running.pop(computer)
        record = self.records[run.task]
        record.runs.append(Run(run.start, now, run.cause, item))
        if dedicated:
            self.dedicated_runs[computer].append(record.runs[-1])
            self.free_dedicated.add(computer)
        else:
            self.context.last_busy_end[computer] = now
            if self.interruptions[computer].covering(now) is None:
                self.free.add(computer)
        if run.cause is EndCause.COMPLETED:
            self._finish(run.task, "completed", now)
            insort(self.evidence.completed_deallocations, deallocations(record.runs))
            insort(self.evidence.completed_accrued, accrued_time(record.runs))
        elif run.cause is EndCause.REMOVED:
            self._finish(run.task, "removed", now)
        elif dedicated:
            self._finish(run.task, "abandoned", now)  # D(m, d): the dedicated run was the last chance
        else:
            self._after_deallocation(run.task, now)

    def _after_deallocation(self, task_id: int, now: float) -> None:
        record = self.records[task_id]
        verdict = self.abandon.verdict(record.runs, self.evidence)
        if verdict is Verdict.ABANDON:
            self._finish(task_id, "abandoned", now)
        elif verdict is Verdict.DEDICATE:
            record.dedicated = True
            self._enqueue(task_id, dedicated=True)
        else:
            self._enqueue(task_id)

    def _finish(self, task_id: int, outcome: str, now: float) -> None:
        record = self.records[task_id]
        record.outcome, record.end = outcome, now

    def _cut_at_horizon(self) -> None:
        """Runs still going at the horizon are recorded up to it (their energy counts)."""
        for running, dedicated in ((self.running, False), (self.running_dedicated, True)):
            for computer, run in sorted(running.items()):
                cut = Run(run.start, self.horizon, EndCause.HORIZON, -1 - computer if dedicated else computer)
                self.records[run.task].runs.append(cut)
                if dedicated:
                    self.dedicated_runs[computer].append(cut)
            running.clear()


def _computer(item: int) -> int:
    """The index of the computer an event item names (dedicated computers are ``-1 - index``)."""
    return -1 - item if item < 0 else item


_END_ORDER = {EndCause.COMPLETED: 0, EndCause.REMOVED: 1, EndCause.USER: 2, EndCause.REBOOT: 2,
              EndCause.OTHER: 2, EndCause.LIMIT: 3}
"""On a tie, a task that completes completes; one removed is not abandoned; a run its computer's
interruption ends at the instant of the run limit lasted the limit, not more, so I1(t) of 002
("abandon if individual time > t") retries it rather than the watchdog stopping it."""
