"""Compact placements: node runs, first fit by groups of nodes, hostlist output.

The grouped first fit is checked against an independent oracle: the per-node first fit the model used
before (Slurm cons_tres CR_Core, lowest usable nodes first), written out here node by node.
"""

from __future__ import annotations

import math
import random

from djsb.jobs.hostlist import compress_hostlist, expand_hostlist, split_host_list
from djsb.model import ClusterSpec, PartitionSpec, SchedulerConfig, Simulation
from djsb.model.cluster_spec import NodeSpec
from djsb.model.cluster_state import ClusterState, PartitionState
from djsb.model.placement import Placement
from djsb.model.timeline import UtilisationTimeline
from djsb.workloads.job import TraceJob


def test_placement_runs_stand_for_node_pairs() -> None:
    # Nodes 4, 5, 6 with 2 slots each are one run; node 7 with 1 slot and node 2 (going back) are not.
    placement = Placement.of([(4, 2), (5, 2), (6, 2), (7, 1), (2, 1)])
    assert placement.runs == ((4, 3, 2), (7, 1, 1), (2, 1, 1))
    assert placement == [(4, 2), (5, 2), (6, 2), (7, 1), (2, 1)]
    assert len(placement) == 5 and placement[3] == (7, 1)
    assert placement.slots == 3 * 2 + 1 + 1
    assert Placement.of([]) == [] and not Placement()


def test_a_job_on_1024_one_core_nodes_is_one_run() -> None:
    state = ClusterState(ClusterSpec.homogeneous(1024, 1))
    part = state.partitions[0]
    alloc = state.allocate(part, 1024, None, None)
    assert alloc is not None and alloc.runs == ((0, 1024, 1),)
    state.commit(alloc, 1024, None)
    assert part.free == 0 and state.node_free == [0] * 1024 and state.allocate(part, 1, None, None) is None


def test_first_fit_on_one_core_nodes_worked_by_hand() -> None:
    # 8 one-core nodes. A (3 CPUs) takes n0-n2, B (2) takes n3-n4; A ends: n0-n2 and n5-n7 are free.
    # C (4 CPUs) takes the lowest free nodes: n0, n1, n2 then n5, i.e. runs (0, 3, 1) and (5, 1, 1).
    state = ClusterState(ClusterSpec.homogeneous(8, 1))
    part = state.partitions[0]
    a = state.allocate(part, 3, None, None)
    assert a is not None
    state.commit(a, 3, None)
    b = state.allocate(part, 2, None, None)
    assert b is not None and b.runs == ((3, 2, 1),)
    state.commit(b, 2, None)
    assert part.free == 8 - 3 - 2
    state.commit(a, 3, None, sign=-1)
    c = state.allocate(part, 4, None, None)
    assert c is not None and c.runs == ((0, 3, 1), (5, 1, 1))
    state.commit(c, 4, None)
    assert part.free == 8 - 2 - 4 and state.busy_cores == 6
    assert state.node_free == [0, 0, 0, 0, 0, 0, 1, 1]


def _oracle_allocate(state: ClusterState, part: PartitionState, cpus: int, nodes: int | None,
                     memory_mb: float | None) -> list[tuple[int, int]] | None:
    """Per-node first fit: each node in partition order gives min(room, CPUs left)."""
    if part.free < state.need(part, cpus, nodes):
        return None
    free, cap = state.node_free, state.node_capacity
    if part.exclusive:
        want = state.need(part, cpus, nodes)
        chosen = [(i, cap[i]) for i in part.node_ids if free[i] == cap[i]][:want]
        return chosen if len(chosen) == want else None
    per_node = math.ceil(cpus / nodes) if nodes else None
    mem_per_cpu = memory_mb / cpus if memory_mb else None
    chosen = []
    remaining = cpus
    for i in part.node_ids:
        room = min(free[i] - (state.node_spare[i] if part.keeps_spare else 0), state.node_cores[i])
        mem = state.node_mem_free[i]
        fit = room if mem_per_cpu is None or mem is None else int(mem // mem_per_cpu)
        if per_node is None:
            take = min(room, fit, remaining)
        else:
            take = min(per_node, remaining) if room >= per_node and fit >= per_node else 0
        if take > 0:
            chosen.append((i, take))
            remaining -= take
            if remaining == 0:
                return chosen
    return None


def _check_counters(state: ClusterState) -> None:
    """Partition free counts and the has-free flags recounted from the per-node lists."""
    for p in state.partitions:
        if p.exclusive:
            assert p.free == sum(state.node_free[i] == state.node_capacity[i] for i in p.node_ids)
        else:
            assert p.free == sum(state.node_free[i] for i in p.node_ids)
    assert list(state.node_has_free) == [int(f > 0) for f in state.node_free]


def test_grouped_first_fit_matches_per_node_oracle() -> None:
    # Mixed machine: 4-core and 2-core nodes with 100 MB each; partition "a" lists its nodes out of
    # index order; "x" is exclusive on n8-n11; "f" (FORCE:2) and "y" (YES:2) share n12-n15.
    cores = [4, 4, 4, 4, 2, 2, 2, 2, 4, 4, 4, 4, 2, 2, 2, 2]
    nodes = tuple(NodeSpec(f"n{i}", c, 100.0) for i, c in enumerate(cores))
    order = tuple(f"n{i}" for i in (3, 2, 1, 0, *range(4, 12)))
    partitions = (PartitionSpec("a", nodes=order), PartitionSpec("x", nodes=tuple(f"n{i}" for i in range(8, 12)),
                                                                 oversubscribe="EXCLUSIVE"),
                  PartitionSpec("f", nodes=tuple(f"n{i}" for i in range(12, 16)), oversubscribe="FORCE:2"),
                  PartitionSpec("y", nodes=tuple(f"n{i}" for i in range(12, 16)), oversubscribe="YES:2"))
    state = ClusterState(ClusterSpec(nodes, partitions))
    rng = random.Random(9)
    held: list[tuple[Placement, int, list[float] | None]] = []
    allocations = 0
    for _ in range(600):
        if held and rng.random() < 0.45:
            alloc, cpus, memory = held.pop(rng.randrange(len(held)))
            state.commit(alloc, cpus, memory, sign=-1)
        else:
            part = state.partitions[rng.randrange(len(state.partitions))]
            cpus = rng.randint(1, 10)
            count = rng.choice([None, None, 1, 2, 3])
            memory_mb = rng.choice([None, None, 30.0 * cpus, 90.0 * cpus])
            expected = _oracle_allocate(state, part, cpus, count, memory_mb)
            placed = state.allocate(part, cpus, count, memory_mb)
            assert (None if placed is None else list(placed)) == expected
            if placed is not None:
                allocations += 1
                memory = [slots * memory_mb / cpus for _, slots in placed] if memory_mb else None
                state.commit(placed, cpus, memory)
                held.append((placed, cpus, memory))
        _check_counters(state)
    assert allocations > 150  # the walk really allocated, on every kind of partition


def test_compress_hostlist_round_trips() -> None:
    # as scontrol show hostlist writes them (tests/fixtures/slurm/scontrol_show_hostlist.txt)
    assert compress_hostlist(["n0", "n1", "n2", "n5"]) == "n[0-2,5]"
    assert compress_hostlist(["n08", "n09", "n10"]) == "n[08-10]"
    assert compress_hostlist(["n9", "n10", "login", "n11"]) == "n[9-10],login,n11"
    assert compress_hostlist(["n09", "n010"]) == "n[09,010]"  # different widths: no common range
    rng = random.Random(3)
    names = [f"r{rack}n{node:02d}" for rack in range(3) for node in range(12)]
    for _ in range(50):
        subset = sorted(rng.sample(range(len(names)), rng.randint(1, len(names))))
        chosen = [names[i] for i in subset]
        text = compress_hostlist(chosen)
        assert [n for item in split_host_list(text) for n in expand_hostlist(item)] == chosen


def test_jobs_table_lists_nodes_in_hostlist_notation() -> None:
    # 6 one-core nodes; the submissions at 0 are started by the background loop's first pass, at 1:
    # job 1 (4 CPUs) on n0-n3 from 1 to 11; job 2 (2 CPUs) on n4-n5 from 1 to 6. Job 3 (3 CPUs,
    # submitted at 1, before that pass) finds 0 free cores, then 2 at t=6 (n4, n5), then 6 at t=11:
    # it starts at 11 on the lowest nodes n0, n1, n2.
    jobs = [TraceJob(1, 0.0, 10.0, 4, 10.0), TraceJob(2, 0.0, 5.0, 2, 5.0), TraceJob(3, 1.0, 5.0, 3, 5.0)]
    result = Simulation(jobs, ClusterSpec.homogeneous(6, 1), SchedulerConfig(backfill="none")).run()
    assert list(result.jobs["start"]) == [1.0, 1.0, 11.0]
    assert list(result.jobs["nodes"]) == ["n[0-3]", "n[4-5]", "n[0-2]"]


def test_timeline_keeps_only_changes() -> None:
    timeline = UtilisationTimeline()
    for row in [(0.0, 4, 1, 2), (1.0, 4, 1, 2), (2.0, 0, 0, 0)]:
        timeline.record(*row)
    frame = timeline.frame()
    assert len(timeline) == 2 and list(frame["time"]) == [0.0, 2.0] and list(frame["busy_cores"]) == [4, 0]
    assert [str(t) for t in frame.dtypes] == ["float64", "int64", "int64", "int64"]
