"""Under preempt/qos the queue puts a preemptor ahead of the jobs it may preempt, as Slurm 22.05's
job_scheduler.c ``sort_job_queue2`` does (``preempt_g_job_preempt_check``, preempt_qos.c
``preempt_p_job_preempt_check``: before reservations, PriorityTier and priority), so the main pass
reaches it before the jobs it preempted, requeued, take their nodes back. Without it a replay with
PreemptMode=REQUEUE never ends: the backfill pass preempts for a preemptor the main pass never
reaches, and each main pass restarts a requeued job on the freed cores first.
"""

from __future__ import annotations

import dataclasses

import pytest

from djsb.model import ClusterSpec, SchedulerConfig, Simulation
from djsb.model.cluster_spec import PartitionSpec, QosSpec
from djsb.model.invariants import InvariantChecker
from djsb.model.preemption import preempt_ranks
from djsb.workloads.job import TraceJob

# Slurm's default passes (the background loop's queued main pass at the next whole second, main
# passes every 60 s, backfill passes every 30 s), conservative reservations, a requeued job eligible
# again 6 s later (cred_expire 5 s, the least slurm_cred.c takes, + 1: job_mgr.c batch_requeue_fini).
REQUEUE = dataclasses.replace(SchedulerConfig(), backfill="conservative", extend_limit=False,
                              preempt_type="qos", preempt_mode="requeue", requeue_delay=6.0)
QOS = (QosSpec("low"), QosSpec("high", preempt=("low",), priority=10))
# One node of 8 cores, every job submitted at 0 with its run time as its limit; jobs 1-4 of QoS
# low, job 5 of QoS high (which preempts low).
SPEC = [(1000.0, 2, "low"), (1000.0, 3, "low"), (100.0, 4, "low"), (100.0, 6, "low"), (50.0, 6, "high")]
JOBS = [TraceJob(i, 0.0, run, cpus, requested_time=run, partition="p", qos=qos, requeue=True)
        for i, (run, cpus, qos) in enumerate(SPEC, 1)]


def replay(config: SchedulerConfig) -> dict[int, tuple[float, float, int]]:
    """(start, end, requeues) of each job finished by 20000 s (the replay is cut there)."""
    cluster = ClusterSpec(ClusterSpec.homogeneous(1, 8).nodes, (PartitionSpec("p"),), QOS)
    sim = Simulation(JOBS, cluster, config, checker=InvariantChecker(cluster))
    sim.advance(20000.0)  # 8 times the sum of the run times: a replay still going is looping
    return {job.trace.job_id: (float(job.start or 0.0), float(job.end or 0.0), job.requeues)
            for job in sim.finished}


# The queue: job 5 first (its QoS preempts low), then 1, 2, 3, 4 (equal priority, submit 0: job id).
# Main pass at 1: job 5 starts (6 cores), job 1 too (2: 8 busy); job 2 (3) does not fit and, low,
# preempts nobody: it blocks the partition. Backfill passes find no room. At 51 job 5 ends: job 2
# starts (2 + 3 = 5 busy), job 3 (4) does not fit. At 1001 job 1 ends: 3 busy, job 3 starts (7
# busy), to 1101. At 1051 job 2 ends: 4 free, job 4 (6) waits; at 1101 job 3 ends and it starts, to
# 1201. Nobody is preempted. Without the rule the queue is 1, 2, 3, 4, 5: at 1 jobs 1 and 2 start
# and job 3 blocks the partition before job 5; the backfill pass at 30 preempts jobs 1 and 2 for
# job 5, the main pass at 30 starts job 3 on the freed cores ahead of it, job 4 blocks again, and
# every 30 s the backfill pass preempts the jobs restarted since: no job ever ends.
@pytest.mark.timeout(120)
@pytest.mark.parametrize("will_run", [True, False], ids=["will_run", "profile"])
def test_a_preemptor_sorts_ahead_of_the_jobs_it_may_preempt(will_run: bool) -> None:
    assert replay(dataclasses.replace(REQUEUE, bf_will_run=will_run)) == {
        1: (1.0, 1001.0, 0), 2: (51.0, 1051.0, 0), 3: (1001.0, 1101.0, 0), 4: (1101.0, 1201.0, 0),
        5: (1.0, 51.0, 0)}


def test_a_qos_ranks_above_the_qos_it_preempts() -> None:
    # top preempts mid, mid preempts low, low none; a cycle (a preempts b, b preempts a) stops
    ranks = preempt_ranks([QosSpec("low"), QosSpec("mid", preempt=("low",)), QosSpec("top", preempt=("mid",)),
                           QosSpec("a", preempt=("b",)), QosSpec("b", preempt=("a",))])
    assert ranks["low"] == 0 and ranks["mid"] == 1 and ranks["top"] == 2
    assert ranks["a"] >= 1 and ranks["b"] >= 1
