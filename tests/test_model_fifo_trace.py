"""FIFO on the whole KTH-SP2 trace equals, job by job, an independent strict-FIFO replay.

The oracle is the textbook definition, written here without the model: a job starts at the first
instant t >= max(its submit time, the previous job's start) when enough processors are free,
and ends at t + min(run time, requested time) (killed at its limit, as the model does).
The model runs with the builtin scheduler (no backfill), a main pass on every event
(sched_interval 0, no defer) and an unbounded queue depth, which is strict FIFO.
"""

from __future__ import annotations

import dataclasses
import heapq
import math

from support import TraceFile

from djsb.model import ClusterSpec, SchedulerConfig, Simulation
from djsb.workloads.job import TraceJob
from djsb.workloads.swf import read_swf

KTH = "KTH-SP2-1996-2.1-cln.swf.gz"
PROCESSORS = 100  # KTH-SP2: 100 nodes of one processor (header MaxProcs)


def strict_fifo(jobs: list[TraceJob], processors: int) -> dict[int, float]:
    free = processors
    running: list[tuple[float, int]] = []
    previous_start = -math.inf
    starts = {}
    for job in sorted(jobs, key=lambda j: (j.submit, j.job_id)):
        if job.cpus > processors:
            continue
        t = max(job.submit, previous_start)
        while running and running[0][0] <= t:
            free += heapq.heappop(running)[1]
        while free < job.cpus:
            end, cpus = heapq.heappop(running)
            free += cpus
            t = max(t, end)
        limit = job.requested_time if job.requested_time else math.inf
        heapq.heappush(running, (t + min(job.run_time, limit), job.cpus))
        free -= job.cpus
        starts[job.job_id] = t
        previous_start = t
    return starts


def test_oracle_on_a_hand_case() -> None:
    # 4 processors: J1 (3) [0, 10); J2 (2) must wait for 10; J3 (1) fits at 2 but strict FIFO
    # makes it wait for J2's start (10).
    jobs = [TraceJob(1, 0, 10, 3, 10), TraceJob(2, 1, 5, 2, 5), TraceJob(3, 2, 5, 1, 5)]
    assert strict_fifo(jobs, 4) == {1: 0, 2: 10, 3: 10}


def test_fifo_on_kth_equals_strict_fifo_replay(trace: TraceFile) -> None:
    jobs = [dataclasses.replace(j, partition=None) for j in read_swf(trace(KTH)).jobs]
    cluster = ClusterSpec.homogeneous(PROCESSORS, 1)
    config = SchedulerConfig(backfill="none", sched_interval=0, default_queue_depth=10**9)
    result = Simulation(jobs, cluster, config).run()
    expected = strict_fifo(jobs, PROCESSORS)
    got = dict(zip(result.jobs["job_id"], result.jobs["start"], strict=True))
    assert len(got) == len(expected) > 28000
    mismatches = [(k, got.get(k), v) for k, v in expected.items() if got.get(k) != v]
    assert not mismatches[:5]
