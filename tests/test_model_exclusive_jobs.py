"""Jobs asking ``--exclusive`` on a partition that is not exclusive, worked by hand: they take whole
idle nodes, all of whose slots they hold (select/cons_tres with ``share_res`` 0: cons_common
job_test.c ``_get_job_node_req`` gives NODE_CR_RESERVED, which only idle nodes meet; job_mgr.c sets
``whole_node`` WHOLE_NODE_REQUIRED for ``--exclusive``). Textbook EASY with the invariant checker on,
two nodes of 4 cores."""

from __future__ import annotations

import dataclasses

import pytest

from djsb.model import TEXTBOOK, ClusterSpec, Simulation
from djsb.model.cluster_spec import NodeSpec, PartitionSpec
from djsb.model.cluster_state import ClusterState
from djsb.model.invariants import InvariantChecker
from djsb.workloads.job import TraceJob

KILL = dataclasses.replace(TEXTBOOK, extend_limit=False)


def job(job_id: int, submit: float, limit: float, cpus: int, exclusive: bool = False,
        nodes: int | None = None) -> TraceJob:
    return TraceJob(job_id, submit, limit, cpus, requested_time=limit, nodes=nodes, exclusive=exclusive)


def starts(jobs: list[TraceJob], planner: str) -> dict[int, tuple[float, str]]:
    cluster = ClusterSpec.homogeneous(2, 4)
    frame = Simulation(jobs, cluster, dataclasses.replace(KILL, bf_planner=planner),
                       checker=InvariantChecker(cluster)).run().jobs
    return {int(i): (float(s), str(n)) for i, s, n in zip(frame["job_id"], frame["start"], frame["nodes"],
                                                          strict=True)}


@pytest.mark.parametrize("planner", ["profile", "will_run"])
def test_an_exclusive_job_takes_a_whole_idle_node(planner: str) -> None:
    # job 1 (1 CPU) runs on n0 from 0. Job 2 (2 CPUs, --exclusive, at 1) may not go on n0, busy: it
    # takes n1 whole. Jobs 3 and 4 (1 CPU, at 2 and 3) share n0 (3 cores free), not n1. Job 5 (4
    # CPUs, at 4) finds n0 with 1 core free and n1 held whole: it waits for job 2's end, 1 + 100,
    # and takes n0's free core and 3 of n1 (first fit).
    jobs = [job(1, 0, 100, 1), job(2, 1, 100, 2, exclusive=True), job(3, 2, 100, 1), job(4, 3, 100, 1),
            job(5, 4, 100, 4)]
    assert starts(jobs, planner) == {1: (0.0, "n0"), 2: (1.0, "n1"), 3: (2.0, "n0"), 4: (3.0, "n0"),
                                     5: (101.0, "n[0-1]")}


@pytest.mark.parametrize("planner", ["profile", "will_run"])
def test_the_backfill_pass_keeps_the_whole_node_it_plans_for_an_exclusive_job(planner: str) -> None:
    # job 1 (3 CPUs on 1 node) holds n0 0..100, job 2 (4 CPUs on 1 node) n1 0..200. Job 3 (1 CPU, --exclusive, at 1)
    # needs an idle node: EASY plans n0 whole for it at 100. Job 4 (1 CPU, limit 200, at 2) would fit
    # n0's free core now but run past 100 into that plan: it waits, and starts at 200, when job 3
    # (100..200) and job 2 end, first fit on n0. Job 5 (1 CPU, limit 50, at 3) ends at 53, before
    # 100: backfilled on n0's free core at 3.
    jobs = [job(1, 0, 100, 3, nodes=1), job(2, 0, 200, 4, nodes=1), job(3, 1, 100, 1, exclusive=True),
            job(4, 2, 200, 1),
            job(5, 3, 50, 1)]
    assert starts(jobs, planner) == {1: (0.0, "n0"), 2: (0.0, "n1"), 3: (100.0, "n0"), 4: (200.0, "n0"),
                                     5: (3.0, "n0")}


@pytest.mark.parametrize("planner", ["profile", "will_run"])
@pytest.mark.parametrize("nodes", [None, 1])
def test_the_plan_of_an_exclusive_job_is_a_whole_node_not_free_cores(planner: str, nodes: int | None) -> None:
    # jobs 1 and 2 (3 CPUs on 1 node) hold n0 0..100 and n1 0..300: one core free on each. Job 3 (1
    # CPU, --exclusive, at 1; with or without a node count) needs an idle node: EASY plans n0 whole
    # for it from 100 (counting free cores would see 2 + 3 at 100, room for it and more). Job 4 (1
    # CPU, limit 200, at 2) would run past 100: not on n0, but on n1's free core it delays nothing:
    # backfilled there.
    jobs = [job(1, 0, 100, 3, nodes=1), job(2, 0, 300, 3, nodes=1), job(3, 1, 100, 1, exclusive=True, nodes=nodes),
            job(4, 2, 200, 1)]
    assert starts(jobs, planner) == {1: (0.0, "n0"), 2: (0.0, "n1"), 3: (100.0, "n0"), 4: (2.0, "n1")}


def test_an_exclusive_job_holds_its_own_memory_on_its_whole_nodes() -> None:
    # 1000 MB asked over one whole node of 4 cores: it holds 1000 MB there, not 4 slots x 1000 MB per CPU
    cluster = ClusterSpec.homogeneous(2, 4, memory_mb=2000.0)
    sim = Simulation([TraceJob(1, 0, 100, 1, requested_time=100, memory_mb=1000.0, exclusive=True)], cluster, KILL)
    sim.advance(1.0)
    assert sim.job(1).memory == [1000.0]


def test_an_exclusive_job_needs_the_slots_of_the_whole_nodes_it_takes() -> None:
    # one CPU on nodes of 4 cores: the 4 slots of one node, what the queue's counters and the
    # partition's free capacity must see before it can start (ClusterState.need)
    state = ClusterState(ClusterSpec.homogeneous(2, 4))
    part = state.partitions[0]
    assert (state.need(part, 1, None, exclusive=True), state.need(part, 5, None, exclusive=True),
            state.need(part, 1, 2, exclusive=True), state.need(part, 1, None)) == (4, 8, 8, 1)


@pytest.mark.parametrize("planner", ["profile", "will_run"])
def test_an_exclusive_job_gives_back_the_slots_of_the_node_it_took(planner: str) -> None:
    # n0 has 4 cores, n1 8. Job 1 (1 CPU) holds n0 0..1000; job 2 (1 CPU, --exclusive, at 1) takes n1,
    # all 8 slots, 1..101. Job 3 (12 CPUs, limit 100, at 2) needs both nodes: EASY plans it at 1000,
    # when job 1 ends and the 8 slots job 2 gives back at 101 are free too (not the 4 its need
    # counts on the smallest node). Job 4 (3 CPUs, limit 2000, at 4) fits n0 now but would delay job
    # 3: it starts after it, at 1100, first fit on n0.
    cluster = ClusterSpec((NodeSpec("n0", 4), NodeSpec("n1", 8)), (PartitionSpec("batch"),))
    jobs = [job(1, 0, 1000, 1), job(2, 1, 100, 1, exclusive=True), job(3, 2, 100, 12), job(4, 4, 2000, 3)]
    frame = Simulation(jobs, cluster, dataclasses.replace(KILL, bf_planner=planner),
                       checker=InvariantChecker(cluster)).run().jobs
    assert dict(zip(frame["job_id"], frame["start"], strict=True)) == {1: 0.0, 2: 1.0, 3: 1000.0, 4: 1100.0}
