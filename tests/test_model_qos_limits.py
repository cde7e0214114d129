"""QoS limits as Slurm 22.05 enforces them with AccountingStorageEnforce=limits (djsb/model/limits.py),
and the pending reasons of the jobs table (djsb/model/reasons.py). Each expected start is worked
out by hand from the Slurm function cited."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from support import FIVE_JOBS, assert_edited_experiment_error, never, reasons, starts

from djsb.model import ClusterSpec, QosSpec, SchedulerConfig, Simulation, SimulationResult
from djsb.model.cluster_spec import NodeSpec, PartitionSpec
from djsb.model.invariants import InvariantChecker, InvariantViolation
from djsb.model.limits import RunningLimits
from djsb.model.simulation import ModelError
from djsb.simulate import run_simulate
from djsb.simulate.experiment import load_experiment
from djsb.workloads.gpus import GpuRequest
from djsb.workloads.job import TraceJob


def job(job_id: int, submit: float, cpus: int, run: float, limit: float | None = -1.0, user: str = "u1",
        account: str = "a1", qos: str | None = None, **more: Any) -> TraceJob:
    """A job asking ``cpus`` for ``limit`` (by default exactly its run time; None: no --time)."""
    return TraceJob(job_id, submit, run, cpus, requested_time=run if limit == -1.0 else limit, user=user,
                    account=account, qos=qos, **more)


def run(jobs: list[TraceJob], cluster: ClusterSpec, checker: bool = True, **options: Any) -> SimulationResult:
    settings: dict[str, Any] = {"sched_interval": 0.0, "bf_interval": 0.0, "bf_resolution": 0.0,
                                "backfill": "easy"}
    settings.update(options)
    return Simulation(jobs, cluster, SchedulerConfig(**settings),
                      checker=InvariantChecker(cluster) if checker else None).run()


def cluster(qos: QosSpec, nodes: int = 1, cores: int = 4, **node: Any) -> ClusterSpec:
    return ClusterSpec(tuple(NodeSpec(f"n{i}", cores, **node) for i in range(nodes)), (PartitionSpec("batch"),),
                       (qos, QosSpec("free")))


# ---------------------------------------------------------------- MaxWall


@pytest.mark.parametrize("backfill", ["none", "easy", "conservative"])
def test_a_job_over_max_wall_pends_forever_and_blocks_nobody(backfill: str) -> None:
    # _qos_job_runnable_pre_select: time_limit 200 > MaxWall 100 -> WAIT_QOS_MAX_WALL_PER_JOB, held
    # (not cut to 100): job 1 never starts, job 2 behind it starts at once (the limit does not block).
    qos = QosSpec("normal", max_wall=100)
    result = run([job(1, 0, 1, 50, limit=200), job(2, 0, 1, 50)], cluster(qos), backfill=backfill)
    assert starts(result) == {2: 0}
    assert never(result) == {1: "never started: QOSMaxWallDurationPerJobLimit"}


def test_a_job_without_time_gets_max_wall() -> None:
    # acct_policy.c _set_time_limit: a job without --time (NO_VAL) gets the QoS's MaxWall as its
    # limit: it runs and is killed at 100 s (it would run 300).
    qos = QosSpec("normal", max_wall=100)
    result = run([job(1, 0, 1, 300, limit=None)], cluster(qos), extend_limit=False)
    row = result.jobs.iloc[0]
    assert (row["start"], row["end"], row["requested_time"], bool(row["killed"])) == (0, 100, 100, True)


def test_deny_on_limit_refuses_a_job_over_max_wall_at_submission() -> None:
    # _acct_policy_validate: strict_checking from the QoS flag DenyOnLimit, then _qos_policy_validate
    # returns false with WAIT_QOS_MAX_WALL_PER_JOB: sbatch refuses the job, whose error is the reason.
    qos = QosSpec("normal", max_wall=100, deny_on_limit=True)
    sim = Simulation([], cluster(qos), SchedulerConfig(sched_interval=0.0))
    with pytest.raises(ModelError, match="rejected: QOSMaxWallDurationPerJobLimit"):
        sim.submit(job(1, 0, 1, 50, limit=200))
    assert sim.submit(job(2, 0, 1, 50, limit=100)).start == 0


def test_deny_on_limit_refuses_a_job_over_max_tres_per_job() -> None:
    # _qos_policy_validate with strict_checking: 8 CPUs > MaxTRESPerJob cpu=4 ->
    # WAIT_QOS_MAX_CPU_PER_JOB, the job refused ("QOSMaxCpuPerJobLimit"); 4 CPUs pass.
    qos = QosSpec("normal", max_tres_per_job=(("cpu", 4),), deny_on_limit=True)
    result = run([job(1, 0, 8, 10), job(2, 0, 4, 10)], cluster(qos, cores=8))
    assert never(result) == {1: "QOSMaxCpuPerJobLimit"}
    assert starts(result) == {2: 0}


def test_a_job_pending_forever_counts_as_submitted_until_cancelled() -> None:
    # MaxSubmitJobsPerUser 1 and MaxWall 100: job 1 (200 s) is accepted and pends forever, counting
    # as u1's one submitted job, so job 2 is refused; once job 1 is cancelled
    # (acct_policy_remove_job_submit), job 3 is accepted and starts.
    qos = QosSpec("normal", max_wall=100, max_submit_jobs_per_user=1)
    sim = Simulation([], cluster(qos), SchedulerConfig(sched_interval=0.0))
    assert sim.submit(job(1, 0, 1, 50, limit=200)).state == "PENDING"
    with pytest.raises(ModelError, match="QOSMaxSubmitJobPerUserLimit"):
        sim.submit(job(2, 0, 1, 50))
    sim.cancel(1)
    assert sim.submit(job(3, 0, 1, 50)).start == 0


# ---------------------------------------------------------------- job counts


def test_max_submit_jobs_per_user_refuses_the_extra_job_and_counts_until_the_end() -> None:
    # _qos_policy_validate: used submit_jobs + 1 > MaxSubmitJobsPerUser 2 -> refused
    # (QOSMaxSubmitJobPerUserLimit), whatever DenyOnLimit. One core: job 1 runs [0, 10), job 2 waits;
    # job 3 at t=1 is the third: refused. Job 4 at t=12: job 1 ended at 10 (acct_policy_remove_job_submit),
    # so u1 has one (job 2, running [10, 20)): accepted, starts at 20. u2's job 5 at t=1 is counted apart.
    qos = QosSpec("normal", max_submit_jobs_per_user=2)
    jobs = [job(1, 0, 1, 10), job(2, 0, 1, 10), job(3, 1, 1, 10), job(5, 1, 1, 10, user="u2"),
            job(4, 12, 1, 10)]
    result = run(jobs, cluster(qos, cores=1))
    assert never(result) == {3: "QOSMaxSubmitJobPerUserLimit"}
    assert starts(result) == {1: 0, 2: 10, 5: 20, 4: 30}


def test_grp_jobs_holds_the_qos_and_not_the_other() -> None:
    # _qos_job_runnable_pre_select: grp_used_jobs 1 >= GrpJobs 1 -> WAIT_QOS_GRP_JOB. 4 cores: u2's job
    # 2 waits for u1's job 1 (ends at 10) though cores are free; job 3 of QoS "free" starts at once.
    qos = QosSpec("normal", grp_jobs=1)
    jobs = [job(1, 0, 1, 10), job(2, 0, 1, 10, user="u2"), job(3, 0, 1, 10, qos="free")]
    result = run(jobs, cluster(qos))
    assert starts(result) == {1: 0, 2: 10, 3: 0}
    assert reasons(result) == {1: "None", 2: "QOSGrpJobsLimit", 3: "None"}


def test_max_jobs_per_account_counts_the_account_across_users() -> None:
    # _qos_job_runnable_pre_select: the account's used jobs 1 >= MaxJobsPerAccount 1 ->
    # WAIT_QOS_MAX_JOB_PER_ACCT ("MaxJobsPerAccount"): u2 of account a1 waits for u1's job; u3 of a2 does not.
    qos = QosSpec("normal", max_jobs_per_account=1)
    jobs = [job(1, 0, 1, 10), job(2, 0, 1, 10, user="u2"), job(3, 0, 1, 10, user="u3", account="a2")]
    result = run(jobs, cluster(qos))
    assert starts(result) == {1: 0, 2: 10, 3: 0}
    assert reasons(result)[2] == "MaxJobsPerAccount"


# ---------------------------------------------------------------- TRES


def test_max_tres_per_user_cpus_hold_the_user_only() -> None:
    # _qos_job_runnable_post_select: u1 holds 3 CPUs, job 2 asks 2: 3 + 2 > MaxTRESPerUser cpu=4 ->
    # WAIT_QOS_MAX_CPU_PER_USER; u2's 2-CPU job starts on the 8-core node at once. Job 2 starts at 10.
    qos = QosSpec("normal", max_tres_per_user=(("cpu", 4),))
    jobs = [job(1, 0, 3, 10), job(2, 0, 2, 10), job(3, 0, 2, 10, user="u2")]
    result = run(jobs, cluster(qos, cores=8))
    assert starts(result) == {1: 0, 2: 10, 3: 0}
    assert reasons(result)[2] == "QOSMaxCpuPerUserLimit"


def test_grp_tres_gpus_count_the_gpus_placed() -> None:
    # GrpTRES gres/gpu=2: job 1 holds 2 GPUs (one node of 4), job 2 asks 1: 2 + 1 > 2 -> WAIT_QOS_GRP_GRES
    # ("QOSGrpGRES") until job 1 ends at 10; job 3 asks none and starts at once.
    qos = QosSpec("normal", grp_tres=(("gres/gpu", 2),))
    jobs = [job(1, 0, 1, 10, gpus=GpuRequest(2)), job(2, 0, 1, 10, user="u2", gpus=GpuRequest(1)),
            job(3, 0, 1, 10, user="u3")]
    result = run(jobs, cluster(qos, gpus=(("gpu", 4),)))
    assert starts(result) == {1: 0, 2: 10, 3: 0}
    assert reasons(result)[2] == "QOSGrpGRES"


def test_a_job_over_max_tres_per_job_pends_forever() -> None:
    # _qos_job_runnable_post_select: 8 CPUs > MaxTRESPerJob cpu=4 -> WAIT_QOS_MAX_CPU_PER_JOB, never
    # runnable (no DenyOnLimit: accepted); the job behind it starts at once.
    qos = QosSpec("normal", max_tres_per_job=(("cpu", 4),))
    result = run([job(1, 0, 8, 10), job(2, 0, 4, 10)], cluster(qos, cores=8))
    assert starts(result) == {2: 0}
    assert never(result) == {1: "never started: QOSMaxCpuPerJobLimit"}


def test_max_tres_per_node_divides_by_the_nodes_placed() -> None:
    # _validate_tres_limits_for_qos with divisor tres_req_cnt[NODE]: MaxTRESPerNode cpu=2. Two 2-core
    # nodes: job 1 asks 4 CPUs on 2 nodes, 4 / 2 = 2 <= 2: runs [0, 10). At 10 job 2 (2 CPUs, one
    # node: 2 <= 2) takes n0; job 3 (3 CPUs on 2 nodes: 3 // 2 = 1 <= 2) needs both nodes: 20.
    qos = QosSpec("normal", max_tres_per_node=(("cpu", 2),))
    jobs = [job(1, 0, 4, 10, nodes=2), job(2, 10, 2, 10, nodes=1), job(3, 10, 3, 10, nodes=2)]
    result = run(jobs, cluster(qos, nodes=2, cores=2))
    assert starts(result) == {1: 0, 2: 10, 3: 20}


def test_max_tres_per_node_holds_a_job_packed_on_one_node() -> None:
    # 4-core node, MaxTRESPerNode cpu=2: a 3-CPU job on its one node has 3 > 2 per node ->
    # WAIT_QOS_MAX_CPU_PER_NODE ("QOSMaxCpuPerNode") at every pass: it never starts.
    qos = QosSpec("normal", max_tres_per_node=(("cpu", 2),))
    result = run([job(1, 0, 3, 10), job(2, 0, 2, 10)], cluster(qos))
    assert starts(result) == {2: 0}
    assert never(result) == {1: "never started: QOSMaxCpuPerNode"}


def test_grp_tres_nodes_count_distinct_nodes() -> None:
    # _get_unique_job_node_cnt: GrpTRES node=1 counts the nodes the QoS holds, a node once. Two
    # 2-core nodes: jobs 1 and 2 (1 CPU each) share n0: one node. Job 3 (2 CPUs) can only go on n1:
    # a second node, 1 + 1 > 1 -> WAIT_QOS_GRP_NODE ("QOSGrpNodeLimit"), until both end at 10.
    qos = QosSpec("normal", grp_tres=(("node", 1),))
    jobs = [job(1, 0, 1, 10), job(2, 0, 1, 10, user="u2"), job(3, 0, 2, 10, user="u3")]
    result = run(jobs, cluster(qos, nodes=2, cores=2))
    assert starts(result) == {1: 0, 2: 0, 3: 10}
    assert reasons(result)[3] == "QOSGrpNodeLimit"


def test_memory_per_user_counts_megabytes() -> None:
    # MaxTRESPerUser mem=1G is 1024 MB: jobs of 600 MB each, 600 + 600 > 1024 -> the second waits
    # ("QOSMaxMemoryPerUser") until 10.
    qos = QosSpec("normal", max_tres_per_user=(("mem", 1024),))
    jobs = [job(1, 0, 1, 10, memory_mb=600), job(2, 0, 1, 10, memory_mb=600)]
    result = run(jobs, cluster(qos, memory_mb=4096))
    assert starts(result) == {1: 0, 2: 10}
    assert reasons(result)[2] == "QOSMaxMemoryPerUser"


def test_the_invariant_checker_catches_a_start_over_a_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # With the post-select check switched off, job 2 starts at 0 over MaxTRESPerUser cpu=4 (3 + 2):
    # the checker, counting afresh, must refuse it.
    monkeypatch.setattr(RunningLimits, "blocks", lambda self, job, alloc: False)
    qos = QosSpec("normal", max_tres_per_user=(("cpu", 4),))
    with pytest.raises(InvariantViolation, match="MaxTRESPerUser"):
        run([job(1, 0, 3, 10), job(2, 0, 2, 10)], cluster(qos, cores=8))


# ---------------------------------------------------------------- pending reasons


def test_resources_then_priority_as_the_main_pass_gives_them() -> None:
    # No backfill, one 4-core node. Job 1 (4 CPUs) runs [0, 100). Job 2 (3 CPUs, t=1) is tested and
    # does not fit: WAIT_RESOURCES (select_nodes). Job 3 (1 CPU, t=2) is behind it in the failed
    # partition: WAIT_PRIORITY (_schedule's _failed_partition). At 100 both start (3 + 1 cores) with
    # those last reasons; job 1 never waited: None.
    jobs = [job(1, 0, 4, 100), job(2, 1, 3, 10), job(3, 2, 1, 10)]
    result = run(jobs, cluster(QosSpec("normal")), backfill="none")
    assert starts(result) == {1: 0, 2: 100, 3: 100}
    assert reasons(result) == {1: "None", 2: "Resources", 3: "Priority"}


def test_a_job_tested_again_after_priority_gets_resources() -> None:
    # As above, but job 3 asks 2 CPUs: at 100 job 2 takes 3 cores, job 3 is tested and does not fit
    # (Resources); it starts at 110 with that reason.
    jobs = [job(1, 0, 4, 100), job(2, 1, 3, 10), job(3, 2, 2, 10)]
    result = run(jobs, cluster(QosSpec("normal")), backfill="none")
    assert starts(result) == {1: 0, 2: 100, 3: 110}
    assert reasons(result) == {1: "None", 2: "Resources", 3: "Resources"}


def test_a_backfilled_job_keeps_the_reason_the_main_pass_gave_it() -> None:
    # EASY, one 4-core node: job 1 holds 3 cores until 100; job 2 (4 CPUs) does not fit (Resources);
    # job 3 (1 CPU, 5 s) is behind it in the failed partition (Priority) and backfill starts it at
    # once on the free core (it ends at 7, before job 2's reservation at 100), with that reason.
    jobs = [job(1, 0, 3, 100), job(2, 1, 4, 10), job(3, 2, 1, 5)]
    result = run(jobs, cluster(QosSpec("normal")), backfill="easy")
    assert starts(result) == {1: 0, 2: 100, 3: 2}
    assert reasons(result) == {1: "None", 2: "Resources", 3: "Priority"}


# ---------------------------------------------------------------- configuration

SIMULATE = FIVE_JOBS + """\
cluster:
  nodes:
    - {count: 2, cores: 4}
  qos:
    - name: normal
      max_tres_per_user: {cpu: 64, gres/gpu: 4, mem: 2G}
      grp_tres: "cpu=128,node=4"
      max_submit_jobs_per_user: 10
"""
"""A simulate config whose QoS keys sit on lines 8-10."""


def test_tres_limits_read_as_a_mapping_or_as_slurm_text(tmp_path: Path) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text(SIMULATE)
    (qos,) = load_experiment(path).cluster.qos
    assert qos.max_tres_per_user == (("cpu", 64), ("mem", 2048), ("gres/gpu", 4))
    assert qos.grp_tres == (("cpu", 128), ("node", 4))
    assert qos.max_submit_jobs_per_user == 10


@pytest.mark.parametrize(("old", "new", "line", "key", "needle"), [
    ("gres/gpu: 4,", "gpu: 4,", 8, "cluster.qos[0].max_tres_per_user", "unknown TRES 'gpu'"),
    ("cpu: 64", "cpu: 6.5", 8, "cluster.qos[0].max_tres_per_user", "whole amount"),
    ("cpu=128,node=4", "cpu=lots", 9, "cluster.qos[0].grp_tres", "not a number"),
    ("max_submit_jobs_per_user: 10", "max_submit_jobs_per_user: 0", 10,
     "cluster.qos[0].max_submit_jobs_per_user", "must be >= 1"),
])
def test_a_bad_limit_is_blamed_at_its_own_line(tmp_path: Path, old: str, new: str, line: int, key: str,
                                               needle: str) -> None:
    assert_edited_experiment_error(tmp_path, SIMULATE, old, new, line, key, needle)


def test_simulate_lists_a_job_held_forever_and_counts_it(tmp_path: Path) -> None:
    # SWF job 1 asks 200 s under MaxWall 150: accepted, never started (rejected.csv says why,
    # metrics.json counts it as never started); job 2 asks 100 s and starts at the first pass that
    # tests it, which no pass did before: reason None.
    (tmp_path / "jobs.swf").write_text("1 0 -1 50 1 -1 -1 1 200 -1 1 1 1 -1 1 -1 -1 -1\n"
                                       "2 0 -1 50 1 -1 -1 1 100 -1 1 1 1 -1 1 -1 -1 -1\n")
    config = tmp_path / "sim.yaml"
    config.write_text("seed: 1\nworkload: {swf: jobs.swf}\ncluster:\n  nodes: [{count: 1, cores: 4}]\n"
                      "  qos: [{name: normal, max_wall: 150}]\n")
    out = run_simulate(config, tmp_path / "out")
    metrics = json.loads((out / "metrics.json").read_text())
    assert (metrics["rejected"], metrics["never_started"], metrics["units"]["never_started"]) == (1, 1, "jobs")
    rejected = pd.read_csv(out / "rejected.csv")
    assert rejected.values.tolist() == [[1, "never started: QOSMaxWallDurationPerJobLimit"]]
    jobs = pd.read_csv(out / "jobs.csv", keep_default_na=False)
    assert jobs[["job_id", "reason"]].values.tolist() == [[2, "None"]]


# ---------------------------------------------------------------- job arrays


def test_a_throttled_array_runs_at_most_its_throttle_and_holds_no_other_job() -> None:
    # build_job_queue leaves a task out while max_run_tasks of its array run (JobArrayTaskLimit). 4
    # cores, one array of 4 one-core tasks of 10 s throttled to %2: tasks 1-2 run 0-10, 3-4 10-20;
    # job 5 (no array), submitted with them, starts at once beside the first two.
    array = (1, 2)
    jobs = [*(job(i, 0, 1, 10, array=array) for i in range(1, 5)), job(5, 0, 1, 10)]
    result = run(jobs, cluster(QosSpec("normal")))
    assert starts(result) == {1: 0, 2: 0, 3: 10, 4: 10, 5: 0}
    sacct = dict(zip(result.jobs["job_id"], result.jobs["sacct_reason"], strict=True))
    assert (sacct[3], sacct[4], sacct[5]) == ("JobArrayTaskLimit", "JobArrayTaskLimit", "None")


@pytest.mark.parametrize("backfill", ["easy", "conservative"])
def test_backfill_keeps_a_throttled_array_to_its_throttle(backfill: str) -> None:
    # 2 cores; job 1 (2 cores, 0-30) blocks job 2 (2 cores) reserved at 30. Tasks 3-5 of an array
    # throttled to %1, one core for 5 s each, cannot start before 30 (job 1 holds both cores); after
    # job 2 (30-60), one at a time: 60, 65, 70. The checker fails on any second task running.
    jobs = [job(1, 0, 2, 30), job(2, 0, 2, 30), *(job(i, 1, 1, 5, array=(3, 1)) for i in range(3, 6))]
    result = run(jobs, cluster(QosSpec("normal"), cores=2), backfill=backfill)
    assert starts(result) == {1: 0, 2: 30, 3: 60, 4: 65, 5: 70}


def test_the_checker_catches_an_array_over_its_throttle() -> None:
    limits = RunningLimits([QosSpec("normal")], [job(1, 0, 1, 10, array=(1, 1))])
    assert limits.arrays
    jobs = [job(i, 0, 1, 10, array=(1, 1)) for i in (1, 2)]
    checker = InvariantChecker(cluster(QosSpec("normal")))
    sim = Simulation(jobs, cluster(QosSpec("normal")), SchedulerConfig(sched_interval=0.0), checker=checker)
    sim.limits.arrays = False  # the passes no longer check the throttle: both start at 0
    with pytest.raises(InvariantViolation, match="2 tasks of job array 1 running at t=0 over its throttle %1"):
        sim.run()
