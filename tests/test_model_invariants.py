"""Property tests: on random small workloads the model never breaks its invariants, whatever
the priority plugin (FIFO, multifactor with Fair Tree or Classic, PSP+AGING).

The InvariantChecker (independent brute-force tallies) raises inside the run if a node is
oversubscribed beyond its partition's OverSubscribe setting, if a backfill start makes a
reservation of a higher-priority job infeasible, or if a reserved job starts after its reserved
start without an event that may move it (node memory, memory requests and node counts are drawn
too).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from djsb.model import (
    ClusterSpec,
    InvariantChecker,
    InvariantViolation,
    NodeSpec,
    PartitionSpec,
    SchedulerConfig,
    Simulation,
)
from djsb.model.cluster import ClusterState
from djsb.model.job import SimJob
from djsb.model.placement import Placement
from djsb.model.priority import FifoPriority, MultifactorPriority, MultifactorWeights, PspAgingPriority
from djsb.model.scheduler import BACKFILL_VARIANTS
from djsb.workloads.job import TraceJob

PLUGINS = {
    "fifo": FifoPriority,
    "fair_tree": lambda: MultifactorPriority(MultifactorWeights(age=10, fairshare=100, job_size=5),
                                             max_age=50, decay_half_life=30, calc_period=5),
    "classic": lambda: MultifactorPriority(MultifactorWeights(fairshare=100), fairshare="classic",
                                           calc_period=3),
    "psp": lambda: PspAgingPriority(time_step=4),
}


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[TraceJob], ClusterSpec, SchedulerConfig, str]:
    n_nodes = draw(st.integers(1, 3))
    cores = draw(st.integers(1, 4))
    oversubscribe = draw(st.sampled_from(["NO", "YES:2", "FORCE:2", "EXCLUSIVE"]))
    memory = draw(st.sampled_from([None, 1000]))
    nodes = tuple(NodeSpec(f"n{i}", cores, memory) for i in range(n_nodes))
    partitions = [PartitionSpec("all", oversubscribe=oversubscribe)]
    if n_nodes > 1 and draw(st.booleans()):
        partitions.append(PartitionSpec("small", nodes=("n0",), oversubscribe=oversubscribe))
    cluster = ClusterSpec(nodes, tuple(partitions))
    jobs = []
    for job_id in range(1, draw(st.integers(1, 14)) + 1):
        run = draw(st.integers(0, 30))
        cpus = draw(st.integers(1, n_nodes * cores))
        # at most 250 MB per CPU and enough nodes for the CPUs: every job fits an empty partition
        # (jobs that never fit are admission's case, tests/test_model_admission.py)
        per_cpu = draw(st.sampled_from([None, 100, 250]))
        partition = draw(st.sampled_from(partitions))
        part_nodes = 1 if partition.nodes else n_nodes
        jobs.append(TraceJob(
            job_id, draw(st.integers(0, 40)), run, cpus, requested_time=draw(st.integers(1, 40)),
            memory_mb=None if per_cpu is None else per_cpu * cpus,
            nodes=draw(st.sampled_from([None, *range(-(-cpus // cores), part_nodes + 1)])),
            partition=partition.name, user=draw(st.sampled_from(["a", "b"]))))
    config = SchedulerConfig(
        backfill=draw(st.sampled_from(BACKFILL_VARIANTS)),
        sched_interval=draw(st.sampled_from([0, 7])),
        bf_interval=draw(st.sampled_from([0, 5])),
        bf_resolution=draw(st.sampled_from([0, 4])),
        bf_window=draw(st.sampled_from([20, 1000])),
        bf_max_job_test=draw(st.integers(1, 20)),
        defer=draw(st.booleans()),
        extend_limit=draw(st.booleans()))
    return jobs, cluster, config, draw(st.sampled_from(sorted(PLUGINS)))


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_invariants_hold_on_random_workloads(
        case: tuple[list[TraceJob], ClusterSpec, SchedulerConfig, str]) -> None:
    jobs, cluster, config, plugin = case
    checker = InvariantChecker(cluster)
    result = Simulation(jobs, cluster, config, PLUGINS[plugin](), checker=checker).run()
    table = result.jobs
    assert len(table) + len(result.rejected) == len(jobs)
    assert (table["start"] >= table["submit"]).all()
    assert checker.starts_checked == len(table)
    if not config.extend_limit:
        assert (table["run_time"] <= table["requested_time"]).all()


def test_checker_catches_an_oversubscribed_node() -> None:
    # The checker must not trust the model: hand it two 2-core jobs on one 2-core node.
    cluster = ClusterSpec.homogeneous(1, 2)
    state = ClusterState(cluster)
    part = state.partitions[0]
    checker = InvariantChecker(cluster)
    for job_id in (1, 2):
        job = SimJob(TraceJob(job_id, 0, 10, 2, 10), part, cluster.qos[0], 10, 2, 0.0)
        job.alloc, job.start = Placement.of([(0, 2)]), 0.0
        if job_id == 1:
            checker.on_start(job, 0.0, 10.0)
        else:
            with pytest.raises(InvariantViolation):
                checker.on_start(job, 0.0, 10.0)


@settings(max_examples=200, deadline=None)
@given(scenarios())
def test_walks_stopped_early_start_the_same_jobs(
        case: tuple[list[TraceJob], ClusterSpec, SchedulerConfig, str]) -> None:
    # Without a checker a backfill pass stops walking the queue where no job left could start
    # (and the core skips passes where none fits); with one it walks every job it may test. The
    # full walk is the oracle: stopping early must not move any start, end or node.
    jobs, cluster, config, plugin = case
    columns = ["job_id", "start", "end", "nodes", "backfilled"]
    full = Simulation(jobs, cluster, config, PLUGINS[plugin](), checker=InvariantChecker(cluster)).run()
    stopped = Simulation(jobs, cluster, config, PLUGINS[plugin]()).run()
    assert stopped.jobs[columns].equals(full.jobs[columns])
    assert stopped.rejected.equals(full.rejected)


@pytest.mark.xfail(strict=True, raises=InvariantViolation,
                   reason="a model defect hypothesis found: conservative backfill with bf_window 20 and "
                          "bf_max_job_test 3 moves job 3's reservation from t=47 to t=49 at t=45 (present "
                          "since before the planner's view; not yet understood)")
def test_a_reservation_is_not_moved_later_with_a_window_and_a_test_limit() -> None:
    # 3 one-core nodes; partition "small" is n0 alone. (job, submit, run, cpus, limit, partition)
    spec = [(1, 28, 0, 1, 1, "all"), (2, 0, 0, 1, 1, "all"), (3, 13, 0, 3, 8, "all"), (4, 12, 26, 3, 26, "all"),
            (5, 0, 0, 1, 1, "all"), (6, 28, 0, 1, 1, "small"), (7, 0, 0, 1, 1, "all"), (8, 12, 6, 1, 9, "all"),
            (9, 0, 0, 2, 1, "small"), (10, 12, 8, 1, 8, "all"), (11, 0, 0, 2, 1, "small")]
    jobs = [TraceJob(job_id, submit, run, cpus, limit, user="a", partition=part)
            for job_id, submit, run, cpus, limit, part in spec]
    cluster = ClusterSpec(tuple(NodeSpec(f"n{i}", 1) for i in range(3)),
                          (PartitionSpec("all"), PartitionSpec("small", nodes=("n0",))))
    config = SchedulerConfig(backfill="conservative", sched_interval=0, bf_interval=5, bf_window=20,
                             bf_resolution=0, bf_max_job_test=3)
    Simulation(jobs, cluster, config, PLUGINS["psp"](), checker=InvariantChecker(cluster)).run()
