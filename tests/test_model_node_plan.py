"""The backfill plan respects node memory, and EASY keeps one reservation per
partition; the invariant checker catches a reserved job started after its reserved start.

Every expected start is worked out in the comment next to the case, from the rules of
tests/test_model_backfill.py (passes on every event, no time rounding, EASY) plus: a job's memory
is per node, memory_mb / cpus per CPU (first fit takes on a node at most free MB // that many CPUs).
"""

from __future__ import annotations

import pytest

from djsb.model import ClusterSpec, NodeSpec, PartitionSpec, SchedulerConfig, Simulation
from djsb.model.cluster_state import ClusterState
from djsb.model.invariants import InvariantChecker, InvariantViolation, Reservation
from djsb.model.job import SimJob
from djsb.model.placement import Placement
from djsb.model.profile import Profile
from djsb.model.queue import JobQueue
from djsb.workloads.job import TraceJob

EVERY_EVENT = SchedulerConfig(backfill="easy", sched_interval=0, bf_interval=0, bf_resolution=0)


def job(job_id: int, submit: float, cpus: int, run: float, memory_mb: float | None = None,
        partition: str | None = None) -> TraceJob:
    return TraceJob(job_id, submit, run, cpus, requested_time=run, memory_mb=memory_mb, partition=partition)


def starts(jobs: list[TraceJob], cluster: ClusterSpec, checker: InvariantChecker | None = None) -> dict[int, float]:
    result = Simulation(jobs, cluster, EVERY_EVENT, checker=checker).run()
    return dict(zip(result.jobs["job_id"], result.jobs["start"], strict=True))


# Node memory. 2 nodes x 4 cores x 1000 MB.
# J1 (4 cores, runs 100) takes all of n0; J2 (3 cores, no memory, runs 10) takes 3 cores of n1.
# H (t=1, 2 cores, 800 MB = 400 MB per CPU, runs 50) cannot start: 1 core is free. It is the head
# of the queue: its reservation starts at 10, when J2 ends and n1 has 4 cores and 1000 MB
# (n0 has no core before 100), on n1: 2 cores, 800 MB over [10, 60).
# B (t=2, 1 core, 800 MB, runs 100) fits the unit count: 1 core free in [2, 10), then
# 4 - 2 (H) = 2 in [10, 60). But its only possible node now is n1, and 800 MB there would leave
# 1000 - 800 = 200 MB < H's 800 MB at 10.
# Counting units only (a plan blind to nodes): B starts at 2 on n1; at 10 n1 has 3 cores but
# 200 MB, so H waits for n0 (J1 ends at 100): H starts at 100, 90 s after its reserved start.
# Node-level plan: B does not fit (n1's least memory over [2, 102) is 200 MB, n0 has no core);
# H starts at 10 on n1 and ends at 60; B, then reserved on n1 at 60 (4 cores and 1000 MB free),
# starts at 60.
MEMORY_JOBS = [job(1, 0, 4, 100), job(2, 0, 3, 10), job(3, 1, 2, 50, memory_mb=800),
               job(4, 2, 1, 100, memory_mb=800)]
MEMORY_CLUSTER = ClusterSpec.homogeneous(2, 4, memory_mb=1000)


def test_backfilled_job_does_not_take_memory_the_reserved_job_needs() -> None:
    checker = InvariantChecker(MEMORY_CLUSTER)
    assert starts(MEMORY_JOBS, MEMORY_CLUSTER, checker) == {1: 0, 2: 0, 3: 10, 4: 60}
    # H and B each got a reservation and each started at it
    assert checker.promises_kept == 2


def test_checker_catches_the_unit_count_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    # A plan by units only, blind to nodes: the delayed start above.
    monkeypatch.setattr(JobQueue, "plans_nodes", lambda self, job: False)
    assert starts(MEMORY_JOBS, MEMORY_CLUSTER) == {1: 0, 2: 0, 3: 100, 4: 2}
    # At 10 J2 ends, H still cannot start and the backfill pass of t=10 finds it waiting past its
    # reserved start (10).
    with pytest.raises(InvariantViolation, match="job 3 reserved to start at t=10.0 still waits at t=10"):
        starts(MEMORY_JOBS, MEMORY_CLUSTER, InvariantChecker(MEMORY_CLUSTER))


def sim_job(state: ClusterState, job_id: int, submit: float, cpus: int, run: float,
            alloc: list[tuple[int, int]]) -> SimJob:
    sim = SimJob(TraceJob(job_id, submit, run, cpus, run), state.partitions[0], state.spec.qos[0], run, cpus,
                 submit, plan=run)
    sim.update_sort_key()
    sim.alloc = Placement.of(alloc)
    return sim


def test_checker_flags_a_start_after_the_reserved_one() -> None:
    # The checker alone, told what the unit-count model did in the case above: H reserved at 10
    # (pass at t=1), B started by backfill at 2, and the pass at t=10 (J2 ended at its planned
    # end) finds H still waiting. Then a second checker sees H moved from 10 to 100 by the pass at
    # t=5 (an early pass after B's start): a later reserved start is caught before it is due.
    state = ClusterState(MEMORY_CLUSTER)
    for moment, message in ((10.0, "still waits at t=10"), (5.0, "was moved to t=100")):
        checker = InvariantChecker(MEMORY_CLUSTER)
        j1, j2 = sim_job(state, 1, 0, 4, 100, [(0, 4)]), sim_job(state, 2, 0, 3, 10, [(1, 3)])
        head, late = sim_job(state, 3, 1, 2, 50, []), sim_job(state, 4, 2, 1, 100, [(1, 1)])
        for running in (j1, j2):
            checker.on_submit(running, 0.0)
            running.start = 0.0
            checker.on_start(running, 0.0, running.plan)
        checker.on_submit(head, 1.0)
        checker.check_reservations(1.0, [Reservation(3, 0, 10.0, 50.0, 2, (1,))])
        checker.on_submit(late, 2.0)
        late.start, late.backfilled = 2.0, True
        checker.on_start(late, 2.0, 102.0)
        if moment == 10.0:
            j2.start = 0.0
            checker.on_end(j2, 10.0)
        with pytest.raises(InvariantViolation, match=message):
            checker.check_reservations(moment, [Reservation(3, 0, 100.0, 50.0, 2, (0,))])


def test_a_higher_priority_submission_may_move_a_reserved_start() -> None:
    # One node of 4 cores. J1 (4 cores, runs 10); J2 (t=1, 4 cores, runs 10) is reserved at 10.
    # J3 (t=2, 4 cores, runs 10) sorts ahead of J2 (tier 2 partition on the same node): at 10 it
    # starts first and J2 starts at 20, later than reserved, which the checker accepts.
    cluster = ClusterSpec((NodeSpec("n0", 4),), (PartitionSpec("low"), PartitionSpec("high", priority_tier=2)))
    checker = InvariantChecker(cluster)
    jobs = [job(1, 0, 4, 10, partition="low"), job(2, 1, 4, 10, partition="low"),
            job(3, 2, 4, 10, partition="high")]
    assert starts(jobs, cluster, checker) == {1: 0, 2: 20, 3: 10}
    assert checker.promises_voided >= 1


def test_one_reservation_per_partition() -> None:
    # One reservation per partition. Partition a = n0, partition b = n1, 4 cores each; EASY.
    # a: J1 (4 cores, runs 100) fills n0; J3 (t=1, 4 cores, runs 10) waits, reserved at 100.
    # b: J2 (2 cores, runs 10) on n1; J4 (t=1, 4 cores, runs 10) waits: b's own reservation at 10
    # (J2's end). J5 (t=2, b, 2 cores, runs 50) fits now but would hold 2 cores over [10, 20)
    # where J4 needs all 4: it waits. J4 runs [10, 20), J5 starts at 20.
    # With one reservation for the whole machine J3 would take it, J5 would start
    # at 2 and J4 would wait for J5's end at 52.
    cluster = ClusterSpec((NodeSpec("n0", 4), NodeSpec("n1", 4)),
                          (PartitionSpec("a", nodes=("n0",)), PartitionSpec("b", nodes=("n1",))))
    jobs = [job(1, 0, 4, 100, partition="a"), job(2, 0, 2, 10, partition="b"), job(3, 1, 4, 10, partition="a"),
            job(4, 1, 4, 10, partition="b"), job(5, 2, 2, 50, partition="b")]
    checker = InvariantChecker(cluster)
    assert starts(jobs, cluster, checker) == {1: 0, 2: 0, 3: 100, 4: 10, 5: 20}
    assert checker.promises_kept == 3  # J3 at 100, J4 at 10, J5 (reserved at 20 from t=10) at 20


def test_node_count_request_enters_the_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    # 2 nodes x 3 cores. J1 (2 cores, runs 12) on n0. H (t=1, 5 CPUs on 2 nodes, runs 10) waits
    # (6 - 2 = 4 cores free). ClusterState.allocate puts ceil(5 / 2) = 3 CPUs on each node with 3
    # free (the node taking the remaining 2 must have room for 3 too): H is reserved at 12 on
    # n0 (3) and n1 (2), keeping 3 cores free on both over [12, 22).
    # B (t=2, 1 core, runs 20) fits the unit count (4 free in [2, 12), 6 - 5 = 1 in [12, 22)) but
    # on either node it would leave 2 < 3 cores at 12: it waits. J1 ends at 12, H starts on
    # n0 + n1 and B on n1's third core, both at 12.
    # By units only: B starts at 2 on n0 (first fit); at 12 n0 has 2 free, so H waits for B's end
    # at 22.
    cluster = ClusterSpec.homogeneous(2, 3)
    jobs = [job(1, 0, 2, 12), TraceJob(2, 1, 10, 5, requested_time=10, nodes=2), job(3, 2, 1, 20)]
    assert starts(jobs, cluster, InvariantChecker(cluster)) == {1: 0, 2: 12, 3: 12}
    monkeypatch.setattr(JobQueue, "plans_nodes", lambda self, job: False)
    assert starts(jobs, cluster) == {1: 0, 2: 22, 3: 2}


def test_profile_lowest_over_a_window() -> None:
    # 2 free from 0, +3 at 10 (5 free), +1 at 20 (6 free); taking 4 over [5, 15) leaves
    # 2 - 4 = -2 in [5, 10) and 5 - 4 = 1 in [10, 15).
    profile = Profile(0.0, 2, [(10.0, 3), (20.0, 1)])
    profile.take(5.0, 10.0, 4)
    assert profile.lowest(0.0, 30.0) == -2
    assert profile.lowest(0.0, 5.0) == 2  # [0, 5) ends where the take begins
    assert profile.lowest(10.0, 5.0) == 1
    assert profile.lowest(15.0, 100.0) == 5
    assert profile.lowest(20.0, 0.0) == 6  # an empty window: the capacity at its instant
