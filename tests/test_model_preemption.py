"""Preemption in the model (djsb/model/preemption.py), worked by hand: PreemptType=
preempt/partition_prio, two partitions over the same two nodes of 2 cores, ``low`` (PriorityTier 1)
and ``high`` (PriorityTier 10), textbook passes (at every event) with the invariant checker on.

Jobs 1 and 2 of ``low`` (2 CPUs, 100 s) fill n0 and n1 at 0; job 3 of ``high`` (2 CPUs, 50 s) comes
at 10. The candidates are taken in preempt_partition_prio.c's order (PriorityTier, then node count,
then the job list's order), so job 1 goes first, and it alone makes room.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from djsb.errors import ConfigError
from djsb.model import TEXTBOOK, ClusterSpec, SchedulerConfig, Simulation
from djsb.model.cluster_spec import PartitionSpec, QosSpec
from djsb.model.invariants import InvariantChecker
from djsb.model.priority.multifactor import MultifactorPriority, MultifactorWeights
from djsb.model.sections import read_cluster
from djsb.slurm_text import exempt_seconds, partition_preempt_mode, preempt_mode, preempt_within
from djsb.workloads.job import TraceJob
from djsb.yamlnodes import load_yaml

KILL = dataclasses.replace(TEXTBOOK, extend_limit=False, preempt_type="partition_prio")
JOBS = [TraceJob(1, 0.0, 100.0, 2, requested_time=100.0, partition="low"),
        TraceJob(2, 0.0, 100.0, 2, requested_time=100.0, partition="low"),
        TraceJob(3, 10.0, 50.0, 2, requested_time=50.0, partition="high")]


def replay(scheduler: SchedulerConfig, grace: float = 0.0, jobs: list[TraceJob] = JOBS,
           low_mode: str = "cluster") -> dict[int, tuple[float, float, str, str, int]]:
    """(start, end, nodes, state, requeues) of each job; the state and requeues are in jobs.csv only
    with preemption on (else COMPLETED and 0 here)."""
    nodes = ClusterSpec.homogeneous(2, 2).nodes
    cluster = ClusterSpec(nodes, (PartitionSpec("low", grace_time=grace, preempt_mode=low_mode),
                                  PartitionSpec("high", priority_tier=10)))
    frame = Simulation(jobs, cluster, scheduler, checker=InvariantChecker(cluster)).run().jobs
    states = frame["state"] if "state" in frame else ["COMPLETED"] * len(frame)
    requeues = frame["requeues"] if "requeues" in frame else [0] * len(frame)
    return {int(i): (float(s), float(e), str(n), str(state), int(r)) for i, s, e, n, state, r in zip(
        frame["job_id"], frame["start"], frame["end"], frame["nodes"], states, requeues, strict=True)}


def test_cancel_ends_the_preempted_job_and_the_preemptor_takes_its_node() -> None:
    assert replay(dataclasses.replace(KILL, preempt_mode="cancel")) == {
        1: (0.0, 10.0, "n0", "PREEMPTED", 0), 2: (0.0, 100.0, "n1", "COMPLETED", 0),
        3: (10.0, 60.0, "n0", "COMPLETED", 0)}


def test_requeue_sends_the_preempted_job_back_to_run_anew() -> None:
    # job 1 eligible again at 10 + 121 = 131 (cred_expire + 1 s, as a node failure's requeue), then
    # runs its whole 100 s on the first free node
    assert replay(dataclasses.replace(KILL, preempt_mode="requeue"))[1] == (131.0, 231.0, "n0", "COMPLETED", 1)


@pytest.mark.parametrize(("flag", "job_requeue", "requeued"), [
    (None, True, True), (False, True, False), (None, False, False), (True, False, True)])
def test_requeue_preempts_a_job_slurm_may_not_requeue_by_killing_it(flag: bool | None, job_requeue: bool,
                                                                    requeued: bool) -> None:
    # job_mgr.c _job_requeue_op refuses a job whose details->requeue is 0 (sbatch --no-requeue, or no
    # --requeue under JobRequeue=0) and preempt.c slurm_job_preempt then kills it: under REQUEUE job
    # 1 either runs anew at 131 (as above) or ends PREEMPTED at 10, as under CANCEL
    jobs = [dataclasses.replace(JOBS[0], requeue=flag), *JOBS[1:]]
    config = dataclasses.replace(KILL, preempt_mode="requeue", job_requeue=job_requeue)
    assert replay(config, jobs=jobs)[1] == ((131.0, 231.0, "n0", "COMPLETED", 1) if requeued
                                            else (0.0, 10.0, "n0", "PREEMPTED", 0))


def test_a_partition_s_own_preempt_mode_says_what_its_jobs_do() -> None:
    # the cluster's PreemptMode is CANCEL; partition low's own (preempt_partition_prio.c
    # _job_preempt_mode) wins: REQUEUE sends job 1 back (eligible at 10 + 121, reruns 131..231), OFF
    # spares both low jobs (cons_common _build_cr_job_list), and job 3 waits for their end at 100
    cancel = dataclasses.replace(KILL, preempt_mode="cancel")
    assert replay(cancel, low_mode="requeue")[1] == (131.0, 231.0, "n0", "COMPLETED", 1)
    assert replay(cancel, low_mode="off")[3][:2] == (100.0, 150.0)
    assert partition_preempt_mode("") == "cluster" and partition_preempt_mode("REQUEUE") == "requeue"
    assert partition_preempt_mode("SUSPEND") == "suspend"  # tests/test_model_preempt_suspend.py


def test_grace_time_lets_the_preempted_job_run_on_and_the_preemptor_waits() -> None:
    result = replay(dataclasses.replace(KILL, preempt_mode="cancel"), grace=5.0)
    assert (result[1][1], result[1][3]) == (15.0, "PREEMPTED")
    assert result[3][:2] == (15.0, 65.0)


@pytest.mark.parametrize("scheduler", [
    dataclasses.replace(KILL, preempt_mode="cancel", preempt_exempt_time=20.0),  # jobs 1, 2 ran only 10 s
    dataclasses.replace(KILL, preempt_mode="off"),
    dataclasses.replace(KILL, preempt_type="none", preempt_mode="cancel"),
])
def test_without_preemption_the_high_job_waits_for_the_low_ones(scheduler: SchedulerConfig) -> None:
    result = replay(scheduler)
    assert result[3][:2] == (100.0, 150.0)
    assert result[1][3] == result[2][3] == "COMPLETED"


def test_only_the_candidates_the_placement_overlaps_are_preempted() -> None:
    # job 4 (high, 1 CPU) and job 1 (low, 1 CPU) share n0, job 2 (low, 2 CPUs) holds n1. Job 3 (high,
    # 2 CPUs on one node) at 10: job 1 is removed first but leaves n0 one core short; with job 2 removed
    # too job 3 fits on n1, so job 2 alone is preempted and job 1 runs to its end
    jobs = [TraceJob(1, 0.0, 100.0, 1, requested_time=100.0, partition="low"),
            TraceJob(2, 0.0, 100.0, 2, requested_time=100.0, partition="low"),
            TraceJob(3, 10.0, 50.0, 2, requested_time=50.0, partition="high", nodes=1),
            TraceJob(4, 0.0, 200.0, 1, requested_time=200.0, partition="high")]
    result = replay(dataclasses.replace(KILL, preempt_mode="cancel"), jobs=jobs)
    assert result[1] == (0.0, 100.0, "n0", "COMPLETED", 0)
    assert result[2] == (0.0, 10.0, "n1", "PREEMPTED", 0)
    assert result[3][:3] == (10.0, 60.0, "n1")


def test_slurm_conf_preemption_settings() -> None:
    assert [preempt_mode(text) for text in ("REQUEUE", "CANCEL", "SUSPEND,GANG", "GANG", "OFF")] == [
        "requeue", "cancel", "suspend", "off", "off"]
    assert (exempt_seconds("-1"), exempt_seconds("00:05:00")) == (0.0, 300.0)


def qos_replay(qos: tuple[QosSpec, ...], job_qos: tuple[str, str, str]) -> pd.DataFrame:
    """Under preempt/qos (CANCEL), one partition on two nodes of 2 cores: jobs 1 and 2 (2 CPUs, 100 s)
    from 0 and job 3 (2 CPUs, 50 s) from 10, of the QoS ``job_qos``; the jobs table by job id."""
    cluster = ClusterSpec(ClusterSpec.homogeneous(2, 2).nodes, (PartitionSpec("batch"),), (QosSpec("normal"), *qos))
    jobs = [TraceJob(1, 0.0, 100.0, 2, requested_time=100.0, qos=job_qos[0]),
            TraceJob(2, 0.0, 100.0, 2, requested_time=100.0, qos=job_qos[1]),
            TraceJob(3, 10.0, 50.0, 2, requested_time=50.0, qos=job_qos[2])]
    scheduler = dataclasses.replace(KILL, preempt_type="qos", preempt_mode="cancel")
    return Simulation(jobs, cluster, scheduler, checker=InvariantChecker(cluster)).run().jobs.set_index("job_id")


def test_preempt_qos_takes_the_qos_of_the_preempt_list_in_qos_priority_order() -> None:
    # one partition; QoS urgent (Preempt=scavenger,standby) over scavenger (priority 0) and standby
    # (priority 5): job 3 at 10 preempts the scavenger job first (preempt_qos.c _gen_job_prio: QoS
    # priority, lowest first) although it is job 2, and it runs on for scavenger's GraceTime of 4 s
    frame = qos_replay((QosSpec("scavenger", priority=0, grace_time=4.0), QosSpec("standby", priority=5),
                        QosSpec("urgent", priority=10, preempt=("scavenger", "standby"))),
                       ("standby", "scavenger", "urgent"))
    assert frame.loc[2, ["end", "state", "preempted_by"]].tolist() == [14.0, "PREEMPTED", 3]
    assert frame.loc[1, ["end", "state"]].tolist() == [100.0, "COMPLETED"]
    assert frame.loc[3, ["start", "nodes"]].tolist() == [14.0, "n1"]


def test_a_site_s_suspend_mode_suspends_and_a_grace_time_must_be_a_time(tmp_path: Path) -> None:
    # PreemptMode=SUSPEND,GANG read from a slurm.conf: job 3 suspends job 1 at 10 and runs at once, and
    # job 1 resumes at 60 to end at 150 (djsb/model/suspension.py; tests/test_model_preempt_suspend.py)
    suspend = dataclasses.replace(KILL, preempt_mode=preempt_mode("SUSPEND,GANG"))
    assert replay(suspend) == {1: (0.0, 150.0, "n0", "COMPLETED", 0), 2: (0.0, 100.0, "n1", "COMPLETED", 0),
                               3: (10.0, 60.0, "n0", "COMPLETED", 0)}
    config = tmp_path / "c.yaml"
    config.write_text("cluster:\n  nodes: [{cores: 2}]\n  partitions: [{name: low, grace_time: UNLIMITED}]\n")
    cluster = load_yaml(config).get("cluster")
    assert cluster is not None
    with pytest.raises(ConfigError, match="grace_time") as err:
        read_cluster(cluster)
    assert err.value.line == 3


@pytest.mark.parametrize(("cluster_within", "qos_within"), [(True, False), (False, True), (False, False)])
def test_within_lets_a_job_preempt_its_own_qos_of_lower_priority(cluster_within: bool, qos_within: bool) -> None:
    # one QoS; jobs 1 and 2 (2 CPUs) fill n0 and n1 at 0; job 3 (4 CPUs) comes at 10 with the higher
    # job-size priority. preempt_qos.c preempt_p_preemptable: the same QoS preempts only with WITHIN
    # (the cluster's PreemptMode or the QoS's own) and a higher priority: both are preempted (CANCEL)
    # and job 3 starts at 10 on both nodes; without WITHIN it waits until they end at 100.
    qos = (QosSpec("normal"), QosSpec("shared", preempt_within=qos_within))
    cluster = ClusterSpec(ClusterSpec.homogeneous(2, 2).nodes, (PartitionSpec("batch"),), qos)
    jobs = [TraceJob(1, 0.0, 100.0, 2, requested_time=100.0, qos="shared"),
            TraceJob(2, 0.0, 100.0, 2, requested_time=100.0, qos="shared"),
            TraceJob(3, 10.0, 50.0, 4, requested_time=50.0, qos="shared")]
    scheduler = dataclasses.replace(KILL, preempt_type="qos", preempt_mode="cancel", preempt_within=cluster_within)
    size = MultifactorPriority(MultifactorWeights(job_size=10000), job_size="slurm")
    frame = Simulation(jobs, cluster, scheduler, size, checker=InvariantChecker(cluster)).run().jobs
    frame = frame.set_index("job_id")
    assert frame.loc[3, "priority_at_start"] > frame.loc[1, "priority_at_start"]
    if cluster_within or qos_within:
        assert frame.loc[[1, 2], "state"].tolist() == ["PREEMPTED", "PREEMPTED"]
        assert frame.loc[3, "start"] == 10.0
    else:
        assert frame.loc[3, "start"] == 100.0


def test_a_qos_s_own_preempt_mode_says_what_its_jobs_do_and_off_spares_them() -> None:
    # QoS urgent preempts keep (PreemptMode OFF) and again (REQUEUE); the cluster's mode is CANCEL.
    # Job 1 (keep) on n0 and job 2 (again) on n1 run from 0; job 3 (urgent, 2 CPUs) comes at 10.
    # cons_common _build_cr_job_list leaves a candidate of mode OFF in place, so only job 2 makes room:
    # preempt_qos.c _job_preempt_mode gives it its QoS's REQUEUE, and it is queued again, eligible
    # cred_expire + 1 = 121 s later: it reruns 131..231, while job 1 completes at 100.
    frame = qos_replay((QosSpec("keep", preempt_mode="off"), QosSpec("again", preempt_mode="requeue"),
                        QosSpec("urgent", priority=10, preempt=("keep", "again"))), ("keep", "again", "urgent"))
    assert frame.loc[1, ["end", "state"]].tolist() == [100.0, "COMPLETED"]
    assert frame.loc[2, ["start", "end", "requeues"]].tolist() == [131.0, 231.0, 1]
    assert frame.loc[3, ["start", "nodes"]].tolist() == [10.0, "n1"]


def test_preempt_mode_within_read_from_slurm_conf() -> None:
    assert preempt_within("REQUEUE,WITHIN") and not preempt_within("CANCEL")
    assert preempt_mode("WITHIN,CANCEL") == "cancel"
