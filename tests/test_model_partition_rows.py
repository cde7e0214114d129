"""The rule between partitions of different OverSubscribe (djsb/model/partition_rows.py), worked by
hand, with textbook passes (at every event) and the invariant checker on.

Slurm 22.05's cons_common ``_verify_node_state`` (job_test.c) keeps a job that does not share cores
(``_get_job_node_req``: NODE_CR_ONE_ROW) off a node where another partition of two rows or more
(``_create_part_data``: YES:N and FORCE:N have N) has cores allocated (``_is_node_busy`` with
``sharing_only``), and a job that shares cores (NODE_CR_AVAILABLE) off a node running a ONE_ROW job.
Measured on a live 22.05 mini-cluster: a 1-CPU job of a NO partition of high PriorityTier preempted a
job of a YES:4 partition rather than take a free CPU beside one.
"""

from __future__ import annotations

import dataclasses

import pytest

from djsb.model import TEXTBOOK, ClusterSpec, SchedulerConfig, Simulation
from djsb.model.cluster_spec import NodeSpec, PartitionSpec
from djsb.model.cluster_state import ClusterState
from djsb.model.invariants import InvariantChecker
from djsb.slurmsite.slurm_config import cluster_spec
from djsb.workloads.job import TraceJob

KILL = dataclasses.replace(TEXTBOOK, extend_limit=False)
NODES = tuple(NodeSpec(f"n{i}", 2) for i in range(1, 5))
MEASURED = ClusterSpec(NODES, (PartitionSpec("oversub", oversubscribe="YES:4"),
                               PartitionSpec("high", priority_tier=10)))


def oversub_jobs(short: float, ends: tuple[float, float, float, float]) -> list[TraceJob]:
    """n1 and n3 run a 1-CPU oversub job each beside one that ends at ``short`` (leaving a free CPU
    there), n2 and n4 a 2-CPU one; the long jobs end at ``ends`` (n1, n2, n3, n4)."""
    def job(job_id: int, cpus: int, run: float) -> TraceJob:
        return TraceJob(job_id, 0.0, run, cpus, requested_time=run, nodes=1, partition="oversub")
    return [job(1, 1, ends[0]), job(2, 1, short), job(3, 2, ends[1]), job(4, 1, ends[2]),
            job(5, 1, short), job(6, 2, ends[3])]


def replay(cluster: ClusterSpec, scheduler: SchedulerConfig,
           jobs: list[TraceJob]) -> dict[int, tuple[float, float, str, str]]:
    """(start, end, nodes, state) of each job."""
    frame = Simulation(jobs, cluster, scheduler, checker=InvariantChecker(cluster)).run().jobs
    states = frame["state"] if "state" in frame else ["COMPLETED"] * len(frame)
    return {int(i): (float(s), float(e), str(n), str(state)) for i, s, e, n, state in zip(
        frame["job_id"], frame["start"], frame["end"], frame["nodes"], states, strict=True)}


def test_the_measured_case_a_high_job_preempts_the_sharing_partition_s_job_instead_of_a_free_cpu() -> None:
    # _verify_node_state: the 1-CPU high job (NO: ONE_ROW) may not use n1 or n3, where oversub (YES:4, 4
    # rows: _is_node_busy(sharing_only=1)) holds cores, though each has a free CPU; n2 and n4 are full.
    # Preemption removes the candidates in preempt_partition_prio.c's order (job 1 first): n1 is then
    # usable and the job starts there. Without the rule it would take n1's free CPU at 10.
    scheduler = dataclasses.replace(KILL, preempt_type="partition_prio", preempt_mode="cancel")
    jobs = [*oversub_jobs(5.0, (1000.0, 1000.0, 1000.0, 1000.0)),
            TraceJob(7, 10.0, 50.0, 1, requested_time=50.0, partition="high")]
    result = replay(MEASURED, scheduler, jobs)
    assert result[1] == (0.0, 10.0, "n1", "PREEMPTED")
    assert result[7] == (10.0, 60.0, "n1", "COMPLETED")
    assert [result[i][3] for i in (3, 4, 6)] == ["COMPLETED"] * 3


def test_without_preemption_the_high_job_waits_for_a_node_without_sharing_partition_jobs() -> None:
    # _verify_node_state / _is_node_busy(sharing_only=1): free CPUs on n1 and n3 from 5 on, yet the
    # high job waits until n1's last oversub job ends at 100 (without the rule: starts at 10 on n1)
    jobs = [*oversub_jobs(5.0, (100.0, 200.0, 300.0, 300.0)),
            TraceJob(7, 10.0, 50.0, 1, requested_time=50.0, partition="high")]
    assert replay(MEASURED, KILL, jobs)[7][:3] == (100.0, 150.0, "n1")


def test_a_force_job_does_not_start_beside_a_job_that_does_not_share_cores() -> None:
    # _get_job_node_req: a FORCE:2 job is NODE_CR_AVAILABLE; _verify_node_state clears a node whose
    # node_state is NODE_CR_ONE_ROW (job 1 of NO partition plain on n1) for it: job 2 takes n2
    # (without the rule n1, the first node with room). Conversely job 3 of plain (ONE_ROW) may not
    # join the force job on n2 (_is_node_busy: force has 2 rows) and waits for job 1's end at 100.
    cluster = ClusterSpec(NODES[:2], (PartitionSpec("plain"), PartitionSpec("force", oversubscribe="FORCE:2")))
    jobs = [TraceJob(1, 0.0, 100.0, 1, requested_time=100.0, partition="plain"),
            TraceJob(2, 1.0, 200.0, 1, requested_time=200.0, partition="force"),
            TraceJob(3, 2.0, 10.0, 2, requested_time=10.0, nodes=1, partition="plain")]
    result = replay(cluster, KILL, jobs)
    assert result[2][:3] == (1.0, 201.0, "n2")
    assert result[3][:3] == (100.0, 110.0, "n1")


def test_partitions_that_do_not_share_cores_share_nodes_freely() -> None:
    # _is_node_busy(sharing_only=1) counts only partitions of two rows or more: two NO partitions
    # over the same node run their 1-CPU jobs side by side (the rule keeps no state here)
    cluster = ClusterSpec(NODES[:1], (PartitionSpec("a"), PartitionSpec("b")))
    assert ClusterState(cluster).rows is None
    jobs = [TraceJob(1, 0.0, 100.0, 1, requested_time=100.0, partition="a"),
            TraceJob(2, 1.0, 100.0, 1, requested_time=100.0, partition="b")]
    result = replay(cluster, KILL, jobs)
    assert (result[1][:3], result[2][:3]) == ((0.0, 100.0, "n1"), (1.0, 101.0, "n1"))


def test_a_sharing_partition_alone_is_untouched() -> None:
    # _is_node_busy(sharing_only=1) skips the job's own partition: a YES:4 partition alone runs its
    # jobs side by side (the rule keeps no state here)
    cluster = ClusterSpec(NODES[:1], (PartitionSpec("oversub", oversubscribe="YES:4"),))
    assert ClusterState(cluster).rows is None
    jobs = [TraceJob(1, 0.0, 100.0, 1, requested_time=100.0, partition="oversub"),
            TraceJob(2, 1.0, 100.0, 1, requested_time=100.0, partition="oversub")]
    result = replay(cluster, KILL, jobs)
    assert (result[1][:3], result[2][:3]) == ((0.0, 100.0, "n1"), (1.0, 101.0, "n1"))


@pytest.mark.parametrize("planner", ["profile", "will_run"])
def test_the_backfill_planners_keep_the_rule_over_time(planner: str) -> None:
    # No preemption; the high job (ONE_ROW) may start only on a node without oversub jobs
    # (_is_node_busy(sharing_only=1)): the planners see n1 free of them once job 1 ends at 100 (the
    # will-run test's job_res_rm_job takes an ending job out of the partitions' rows) and reserve
    # it there. Oversub job 8 (1 CPU, 500 s) comes at 20: backfilled, it keeps off n1 (it would hold
    # n1 past 100 and so keep the high job off it) and takes n3's free CPU; the high job starts at
    # 100 as planned. Without the rule in the planners the high job gets no reservation, job 8
    # takes n1's free CPU and the high job waits for n2 at 200.
    scheduler = dataclasses.replace(KILL, bf_planner=planner, bf_resolution=0)
    jobs = [*oversub_jobs(5.0, (100.0, 200.0, 300.0, 300.0)),
            TraceJob(7, 10.0, 50.0, 1, requested_time=50.0, partition="high"),
            TraceJob(8, 20.0, 500.0, 1, requested_time=500.0, nodes=1, partition="oversub")]
    result = replay(MEASURED, scheduler, jobs)
    assert result[7][:3] == (100.0, 150.0, "n1")
    assert result[8][:3] == (20.0, 520.0, "n3")


def test_a_site_s_yes_partition_keeps_its_rows_beside_a_partition_that_does_not_share() -> None:
    # the measured site as scontrol shows it: oversub (YES:4) keeps its 4 rows beside cal_high (NO),
    # which _is_node_busy counts; alone, or beside an exclusive partition, it is read as NO
    def record(name: str, oversubscribe: str, tier: str) -> dict[str, str]:
        return {"PartitionName": name, "Nodes": "n[1-4]", "OverSubscribe": oversubscribe, "PriorityTier": tier}
    nodes = [{"NodeName": f"n{i}", "CPUTot": "2", "RealMemory": "1000"} for i in range(1, 5)]
    oversub, high = record("oversub", "YES:4", "1"), record("cal_high", "NO", "10")
    spec = cluster_spec([oversub, high], nodes, "oversub", ["cal_high"])
    assert [p.oversubscribe for p in spec.partitions] == ["YES:4", "NO"]
    assert ClusterState(spec).rows is not None
    assert cluster_spec([oversub], nodes, "oversub").partitions[0].oversubscribe == "NO"
    exclusive = record("whole", "EXCLUSIVE", "1")
    spec = cluster_spec([oversub, high, exclusive], nodes, "oversub", ["cal_high", "whole"])
    assert [p.oversubscribe for p in spec.partitions] == ["NO", "NO", "EXCLUSIVE"]
