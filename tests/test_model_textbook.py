"""The ``textbook`` preset is Mu'alem & Feitelson's EASY.

Slurm's defaults drop the queue head's reservation when its start lies beyond bf_window (1 day)
from now, so a long job lets later jobs jump it; textbook EASY keeps the reservation however far
away it is. Expected starts are worked by hand in the comments.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from pathlib import Path

from support import TraceFile

from djsb.model import TEXTBOOK, ClusterSpec, InvariantChecker, SchedulerConfig, Simulation
from djsb.model.priority import preset
from djsb.simulate import load_experiment
from djsb.workloads.job import TraceJob
from djsb.workloads.swf import read_swf
from job_modules.simulated import POLICIES

HOUR = 3600.0
# 4 cores. J1: 2 cores for 30 h, submitted at 0. J2: all 4 cores for 60 h at 1 s: it can start
# only when J1 ends, at 30 h = 108,000 s. J3: 2 cores for 40 h at 2 s: it fits the 2 idle cores now.
JOBS = [TraceJob(1, 0.0, 30 * HOUR, 2, 30 * HOUR), TraceJob(2, 1.0, 60 * HOUR, 4, 60 * HOUR),
        TraceJob(3, 2.0, 40 * HOUR, 2, 40 * HOUR)]
CLUSTER = ClusterSpec.homogeneous(1, 4)


def starts(config: SchedulerConfig) -> dict[int, float]:
    result = Simulation(JOBS, CLUSTER, config, checker=InvariantChecker(CLUSTER)).run()
    return dict(zip(result.jobs["job_id"], result.jobs["start"], strict=True))


def test_the_textbook_preset_is_fifo_with_unlimited_easy() -> None:
    priority, config = preset("textbook")
    assert priority.name == "fifo" and config.backfill == "easy"
    assert (config.sched_interval, config.bf_interval, config.bf_resolution) == (0, 0, 0)
    assert config.bf_window == config.bf_max_job_test == config.default_queue_depth == math.inf


def test_textbook_easy_keeps_a_reservation_beyond_one_day() -> None:
    # J2's reservation is at 108,000 s. J3 would hold 2 cores over [2, 144,002), overlapping J2's
    # 4 cores from 108,000: it may not backfill. J1 ends at 108,000 and J2 starts then; J3 starts
    # when J2 ends, 108,000 + 216,000 = 324,000.
    assert starts(preset("textbook")[1]) == {1: 0.0, 2: 108_000.0, 3: 324_000.0}


def test_slurms_one_day_window_loses_it() -> None:
    # The same passes but Slurm's bf_window of 86,400 s: at 1 s and 2 s J2's start (108,000) is
    # beyond now + 86,400, so it gets no reservation and J3 backfills at 2 s, ending at
    # 2 + 144,000 = 144,002. At 108,000 only J1's 2 cores come back: J2 waits for J3, 144,002.
    slurm_window = dataclasses.replace(preset("textbook")[1], bf_window=86_400.0)
    assert starts(slurm_window) == {1: 0.0, 2: 144_002.0, 3: 2.0}


# -- the whole KTH-SP2 trace against an independent textbook EASY replayer ----------------------------

KTH = "KTH-SP2-1996-2.1-cln.swf.gz"
PROCESSORS = 100  # KTH-SP2: 100 nodes of one processor (header MaxProcs)


def textbook_easy(jobs: list[TraceJob], processors: int) -> dict[int, float]:
    """Mu'alem & Feitelson's EASY, written without the model, on ``processors`` interchangeable CPUs.

    At each instant: ends free their CPUs, submissions join the FIFO queue; jobs start from the head
    while they fit; then the head gets its shadow time (the earliest time enough CPUs are free, by
    the running jobs' start + limit) and ``extra`` CPUs (free then, beyond its need), and each
    later job that fits now starts if it ends (by its limit) no later than the shadow time or uses
    no more than ``extra`` CPUs (which it then takes). Jobs are killed at their limit.
    """
    arrivals = deque(sorted(jobs, key=lambda j: (j.submit, j.job_id)))
    queue: list[TraceJob] = []
    running: list[tuple[float, float, int]] = []  # (real end, planned end = start + limit, cpus)
    free = processors
    starts: dict[int, float] = {}
    while arrivals or queue:
        now = min([e for e, _, _ in running] + ([arrivals[0].submit] if arrivals else []))
        free += sum(cpus for end, _, cpus in running if end == now)
        running = [r for r in running if r[0] != now]
        while arrivals and arrivals[0].submit == now:
            queue.append(arrivals.popleft())
        while queue and queue[0].cpus <= free:
            free = _start(queue.pop(0), now, free, running, starts)
        if queue:
            shadow, extra = shadow_and_extra(queue[0].cpus, free, [(p, c) for _, p, c in running])
            for job in queue[1:]:
                ends_in_time = now + _limit(job) <= shadow
                if job.cpus <= free and (ends_in_time or job.cpus <= extra):
                    extra -= 0 if ends_in_time else job.cpus
                    free = _start(job, now, free, running, starts)
            queue = [j for j in queue if j.job_id not in starts]
    return starts


def shadow_and_extra(need: int, free: int, planned: list[tuple[float, int]]) -> tuple[float, int]:
    """The head's shadow time and the CPUs spare then, from the running jobs' (planned end, cpus)."""
    available = free
    for shadow, cpus in sorted(planned):
        available += cpus
        if available >= need:
            return shadow, free + sum(c for end, c in planned if end <= shadow) - need
    raise AssertionError("the head job fits the machine")


def _start(job: TraceJob, now: float, free: int, running: list[tuple[float, float, int]],
           starts: dict[int, float]) -> int:
    """Start ``job`` now (killed at its limit); the CPUs left free."""
    running.append((now + min(job.run_time, _limit(job)), now + _limit(job), job.cpus))
    starts[job.job_id] = now
    return free - job.cpus


def _limit(job: TraceJob) -> float:
    return job.requested_time or math.inf


def test_the_replayer_on_the_hand_case() -> None:
    # The 60 h case above on 4 CPUs: textbook EASY keeps J2's reservation.
    assert textbook_easy(JOBS, 4) == {1: 0.0, 2: 108_000.0, 3: 324_000.0}


def test_textbook_easy_on_kth_equals_the_independent_replayer(trace: TraceFile) -> None:
    jobs = [dataclasses.replace(j, partition=None) for j in read_swf(trace(KTH)).jobs]
    result = Simulation(jobs, ClusterSpec.homogeneous(PROCESSORS, 1), preset("textbook")[1]).run()
    got = dict(zip(result.jobs["job_id"], result.jobs["start"], strict=True))
    expected = textbook_easy(jobs, PROCESSORS)
    assert len(got) == len(expected) > 28000
    mismatches = [(k, got.get(k), v) for k, v in expected.items() if got.get(k) != v]
    assert not mismatches[:5]


def test_the_kth_easy_config_is_the_replayed_textbook_easy(trace: TraceFile) -> None:
    # The shipped config runs exactly what the test above checks: FIFO, scheduler TEXTBOOK (with
    # at_time_limit: kill, i.e. extend_limit False), the trace's requested times as limits.
    kth = trace(KTH)  # the config's trace
    experiment = load_experiment(Path(__file__).resolve().parents[1] / "configs/simulate-kth-easy.yaml")
    assert experiment.priority.name == "fifo" and experiment.scheduler == TEXTBOOK
    assert experiment.jobs == [dataclasses.replace(j, partition=None) for j in read_swf(kth).jobs]


def test_the_simulated_modules_easy_and_conservative_are_textbook() -> None:
    # job_module.options.policy: easy / conservative (configs/simulated-busy-quick.yaml says easy)
    for name in ("easy", "conservative"):
        priority, config = POLICIES[name]()
        assert priority.name == "fifo" and config == dataclasses.replace(TEXTBOOK, backfill=name)
