"""Submission-time rejection of jobs that fit no node of their partition.

Slurm refuses such a job at submission; sbatch prints "Requested node configuration is not
available". Before the fix, the model admitted the cases below and, under FIFO, the job blocked
the whole queue until the end of the run. Every case runs under strict FIFO (no backfill, a pass
on every event): the job submitted after the impossible one must start at once, which it cannot
if the impossible job heads the queue.
"""

from __future__ import annotations

import pytest

from djsb.model import ClusterSpec, InvariantChecker, NodeSpec, PartitionSpec, SchedulerConfig, Simulation
from djsb.model.admission import NODE_CONFIG_UNAVAILABLE
from djsb.model.shape import JobShape
from djsb.model.simulation import ModelError
from djsb.workloads.job import TraceJob

FIFO = SchedulerConfig(backfill="none", sched_interval=0, bf_interval=0)
FOUR_NODES = ClusterSpec.homogeneous(4, 4, memory_mb=1000)  # 4 nodes x 4 cores x 1,000 MB


def replay(first: TraceJob, cluster: ClusterSpec = FOUR_NODES) -> tuple[dict[int, float], list[list[object]]]:
    """Starts and rejections of ``first`` (at t=0) followed by a 1-CPU job at t=1."""
    jobs = [first, TraceJob(2, 1.0, 10.0, 1, 10.0)]
    result = Simulation(jobs, cluster, FIFO, checker=InvariantChecker(cluster)).run()
    return dict(zip(result.jobs["job_id"], result.jobs["start"], strict=True)), result.rejected.values.tolist()


@pytest.mark.parametrize("first", [
    # 1 CPU with 5,000 MB: every node has 1,000 MB.
    TraceJob(1, 0.0, 10.0, 1, 10.0, memory_mb=5000),
    # 8 CPUs on 1 node: ceil(8 / 1) = 8 CPUs per node, nodes have 4 cores.
    TraceJob(1, 0.0, 10.0, 8, 10.0, nodes=1),
    # 8 CPUs on 8 nodes: 1 CPU on each of 8 nodes, the partition has 4 nodes (16 cores, so the
    # partition-size check passes).
    TraceJob(1, 0.0, 10.0, 8, 10.0, nodes=8),
    # 4 CPUs on 2 nodes with 3,000 MB: 2 CPUs per node x 750 MB per CPU = 1,500 MB per node > 1,000
    # (in total 3,000 MB <= 4 x 1,000 MB, so only the per-node view catches it).
    TraceJob(1, 0.0, 10.0, 4, 10.0, nodes=2, memory_mb=3000),
])
def test_a_trace_job_that_fits_no_node_is_rejected_and_the_queue_moves_on(first: TraceJob) -> None:
    started, rejected = replay(first)
    assert rejected == [[1, NODE_CONFIG_UNAVAILABLE]]
    assert started == {2: 1.0}  # submitted at 1 on an idle cluster: starts at 1, not at the end


def test_a_job_that_fits_one_big_node_is_admitted() -> None:
    # Nodes of 1,000, 1,000 and 8,000 MB: 1 CPU with 5,000 MB fits only the third node. It starts
    # at 0 there; job 2 (1 CPU, no memory) goes first fit on the first node at 1.
    cluster = ClusterSpec((NodeSpec("a", 4, 1000), NodeSpec("b", 4, 1000), NodeSpec("big", 4, 8000)),
                          (PartitionSpec("batch"),))
    jobs = [TraceJob(1, 0.0, 10.0, 1, 10.0, memory_mb=5000), TraceJob(2, 1.0, 10.0, 1, 10.0)]
    result = Simulation(jobs, cluster, FIFO, checker=InvariantChecker(cluster)).run()
    assert result.rejected.empty
    assert result.jobs.set_index("job_id")["nodes"].to_dict() == {1: "big", 2: "a"}
    assert list(result.jobs["start"]) == [0.0, 1.0]


def test_a_job_that_fits_only_a_smaller_partition_node_set_is_rejected_there() -> None:
    # Partition "small" holds the two 1,000 MB nodes only; the 8,000 MB node is elsewhere. 1 CPU
    # with 5,000 MB in "small" fits no node of that partition: rejected, although "big" could run it.
    cluster = ClusterSpec((NodeSpec("a", 4, 1000), NodeSpec("b", 4, 1000), NodeSpec("big", 4, 8000)),
                          (PartitionSpec("small", nodes=("a", "b")), PartitionSpec("large", nodes=("big",))))
    jobs = [TraceJob(1, 0.0, 10.0, 1, 10.0, memory_mb=5000, partition="small"),
            TraceJob(2, 0.0, 10.0, 1, 10.0, memory_mb=5000, partition="large")]
    result = Simulation(jobs, cluster, FIFO).run()
    assert result.rejected.values.tolist() == [[1, NODE_CONFIG_UNAVAILABLE]]
    assert list(result.jobs["job_id"]) == [2]


@pytest.mark.parametrize(("shape", "cpus", "lacks"), [
    # 6 tasks of 1 CPU, 6 tasks per node: 6 CPUs on one node, nodes have 4 cores.
    (JobShape(6, 1, tasks_per_node=6), 6, "6 cores per node, nodes have 4"),
    # 2 tasks per node x 600 MB = 1,200 MB per node > 1,000 MB.
    (JobShape(2, 1, tasks_per_node=2, memory_per_task=600), 2, "1200 MB of memory per node, nodes have 1000 MB"),
    # 1 task of 5 CPUs: filling nodes puts it on one node of 4 cores.
    (JobShape(1, 5), 5, "5 cores per node, nodes have 4"),
])
def test_a_shaped_job_that_fits_no_node_is_refused_at_submit(shape: JobShape, cpus: int, lacks: str) -> None:
    sim = Simulation([], FOUR_NODES, FIFO, checker=InvariantChecker(FOUR_NODES))
    assert sim.admission(TraceJob(1, 0.0, 10.0, cpus, 10.0), shape) == f"{NODE_CONFIG_UNAVAILABLE} ({lacks})"
    with pytest.raises(ModelError, match=NODE_CONFIG_UNAVAILABLE):
        sim.submit(TraceJob(1, 0.0, 10.0, cpus, 10.0), shape)
    sim.submit(TraceJob(2, 0.0, 10.0, 1, 10.0))
    assert sim.job(2).state == "RUNNING"


def test_a_shaped_job_that_fits_an_empty_cluster_waits_instead() -> None:
    # 2 tasks per node x 400 MB = 800 MB <= 1,000 MB: it fits the empty cluster. Job 1 holds 300 MB
    # on every node (1 task each): 700 MB are left, so job 2 pends; after job 1 ends at 10 it runs.
    sim = Simulation([], FOUR_NODES, FIFO, checker=InvariantChecker(FOUR_NODES))
    sim.submit(TraceJob(1, 0.0, 10.0, 4, 10.0), JobShape(4, 1, tasks_per_node=1, memory_per_task=300))
    sim.submit(TraceJob(2, 0.0, 10.0, 2, 20.0), JobShape(2, 1, tasks_per_node=2, memory_per_task=400))
    assert sim.job(2).state == "PENDING"
    sim.advance(10.0)
    assert sim.job(2).state == "RUNNING" and sim.job(2).start == 10.0
