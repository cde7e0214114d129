"""A partition's QoS (slurm.conf ``QOS=``) and AllowQos, as Slurm 22.05 enforces them
(djsb/model/qos_order.py, djsb/model/limits.py, djsb/model/admission.py). Each expected start is
worked out by hand from the Slurm function cited: acct_policy.c ``acct_policy_set_qos_order`` (the
partition's QoS first unless the job's has OverPartQOS), the ``qos_out_ptr`` of
``_qos_job_runnable_pre_select`` / ``_qos_job_runnable_post_select`` / ``_qos_policy_validate`` (a
limit taken from the first QoS that sets it), ``_adjust_limit_usage`` (a job counted in both QoS),
and partition_mgr.c ``part_policy_valid_qos`` (AllowQos)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import FIVE_JOBS, assert_edited_experiment_error, never, reasons, starts

from djsb.errors import ConfigError
from djsb.model import ClusterSpec, QosSpec, SchedulerConfig, Simulation, SimulationResult
from djsb.model.cluster_spec import NodeSpec, PartitionSpec
from djsb.model.invariants import InvariantChecker
from djsb.model.qos_order import job_limits, qos_order
from djsb.simulate.experiment import load_experiment
from djsb.slurmsite.qos_text import parse_qos
from djsb.slurmsite.slurm_conf import parse_slurm_conf
from djsb.slurmsite.slurm_config import cluster_spec
from djsb.workloads.gpus import GpuRequest
from djsb.workloads.job import TraceJob


def job(job_id: int, submit: float, cpus: int, run: float, limit: float | None = -1.0, user: str = "u1",
        qos: str | None = None, partition: str | None = None, **more: Any) -> TraceJob:
    """A job asking ``cpus`` for ``limit`` (by default exactly its run time; None: no --time)."""
    return TraceJob(job_id, submit, run, cpus, requested_time=run if limit == -1.0 else limit, user=user,
                    account="a1", qos=qos, partition=partition, **more)


def cluster(part_qos: str | None, *qos: QosSpec, cores: int = 4, gpus: int = 0,
            allow: tuple[str, ...] = ()) -> ClusterSpec:
    """One node of ``cores`` (and ``gpus``) in partition ``batch`` of QoS ``part_qos`` (and AllowQos
    ``allow``), and partition ``free`` on the same node with no QoS; QoS ``normal`` first."""
    node = NodeSpec("n0", cores, gpus=(("gpu", gpus),) if gpus else ())
    partitions = (PartitionSpec("batch", qos=part_qos, allow_qos=allow), PartitionSpec("free"))
    return ClusterSpec((node,), partitions, (QosSpec("normal"), *qos))


def run(jobs: list[TraceJob], spec: ClusterSpec) -> SimulationResult:
    config = SchedulerConfig(sched_interval=0.0, bf_interval=0.0, bf_resolution=0.0, backfill="easy")
    return Simulation(jobs, spec, config, checker=InvariantChecker(spec)).run()


# ---------------------------------------------------------------- the order of the two QoS


def test_the_partition_qos_comes_first_unless_the_job_qos_overrides_it() -> None:
    # acct_policy_set_qos_order: qos_ptr_1 is the partition's QoS, unless the job's QoS has
    # QOS_FLAG_OVER_PART_QOS; the same QoS twice is looked at once.
    part, own = QosSpec("pq"), QosSpec("mine")
    assert qos_order(own, part) == (part, own)
    flagged = QosSpec("mine", over_part_qos=True)
    assert qos_order(flagged, part) == (flagged, part)
    assert qos_order(part, part) == (part,) and qos_order(own, None) == (own,)


def test_the_second_qos_keeps_only_the_limits_the_first_leaves_unset() -> None:
    # qos_out_ptr: a limit is taken from the first QoS that sets it, TRES by TRES; at submission
    # _qos_policy_validate checks MaxTRESPerUser with GrpTRES in one call, so a TRES either sets in
    # the first leaves both unchecked in the second.
    part = QosSpec("pq", max_jobs_per_user=2, grp_tres=(("cpu", 4),))
    own = QosSpec("mine", max_jobs_per_user=1, grp_jobs=3, max_wall=60,
                  grp_tres=(("cpu", 1), ("gres/gpu", 1)), max_tres_per_user=(("cpu", 2), ("mem", 100)))
    first, second = job_limits(own, part)
    assert first is part
    assert (second.max_jobs_per_user, second.grp_jobs, second.max_wall) == (None, 3, 60)
    assert second.grp_tres == (("gres/gpu", 1),)
    assert second.max_tres_per_user == (("cpu", 2), ("mem", 100))
    submitted = job_limits(own, part, submission=True)[1]
    assert submitted.grp_tres == (("gres/gpu", 1),) and submitted.max_tres_per_user == (("mem", 100),)


# ---------------------------------------------------------------- the limits at each pass


def test_a_partition_qos_holds_jobs_of_another_qos() -> None:
    # Jobs 1 and 2 of QoS normal in partition batch, whose QoS pq has GrpJobs 1: pq is qos_ptr_1, and
    # _qos_job_runnable_pre_select finds grp_used_jobs 1 >= 1 for job 2 (WAIT_QOS_GRP_JOB): it waits for
    # job 1's end at 100 though 3 cores are free. Without the partition's QoS both start at 0.
    pq = QosSpec("pq", grp_jobs=1)
    result = run([job(1, 0, 1, 100), job(2, 0, 1, 100)], cluster("pq", pq))
    assert starts(result) == {1: 0, 2: 100}
    assert reasons(result)[2] == "QOSGrpJobsLimit"
    assert starts(run([job(1, 0, 1, 100), job(2, 0, 1, 100)], cluster(None, pq))) == {1: 0, 2: 0}


def test_a_job_counts_in_its_partition_qos_usage() -> None:
    # _adjust_limit_usage counts job 1 (QoS normal, partition batch of QoS pq) in pq too: job 2 of QoS
    # pq itself, in partition free (no QoS), finds pq's grp_used_jobs 1 >= GrpJobs 1 and waits for
    # job 1's end at 100 (QOSGrpJobsLimit); job 3 of QoS normal in free is held by nothing.
    pq = QosSpec("pq", grp_jobs=1)
    jobs = [job(1, 0, 1, 100, partition="batch"), job(2, 0, 1, 100, qos="pq", partition="free"),
            job(3, 0, 1, 100, partition="free")]
    result = run(jobs, cluster("pq", pq))
    assert starts(result) == {1: 0, 2: 100, 3: 0}
    assert reasons(result)[2] == "QOSGrpJobsLimit"


@pytest.mark.parametrize(("over_part", "expected"),
                         [(False, {1: 0, 2: 0, 3: 100}), (True, {1: 0, 2: 100, 3: 200})],
                         ids=["partition-first", "OverPartQOS"])
def test_the_first_qos_sets_max_jobs_per_user(over_part: bool, expected: dict[int, float]) -> None:
    # pq (the partition's) MaxJobsPerUser 2, the jobs' QoS mine MaxJobsPerUser 1. Partition first:
    # qos_out_ptr->max_jobs_pu = 2 and mine's 1 is skipped: jobs 1 and 2 start at 0, job 3 waits for
    # job 1's end at 100. With OverPartQOS on mine: its 1 holds: one at a time, 0, 100, 200.
    pq = QosSpec("pq", max_jobs_per_user=2)
    mine = QosSpec("mine", max_jobs_per_user=1, over_part_qos=over_part)
    result = run([job(i, 0, 1, 100, qos="mine") for i in (1, 2, 3)], cluster("pq", pq, mine))
    assert starts(result) == expected
    assert reasons(result)[3] == "QOSMaxJobsPerUserLimit"


def test_grp_tres_is_taken_tres_by_tres_from_the_first_qos_that_sets_it() -> None:
    # One node of 8 cores and 2 GPUs. pq (the partition's, first) GrpTRES cpu=4; the jobs' QoS g GrpTRES
    # cpu=1,gres/gpu=1: _validate_tres_usage_limits_for_qos skips g's cpu (pq set it) but keeps its gpu.
    # Job 1 (2 CPUs, 1 GPU) starts at 0: cpu 2 <= 4 (pq's), gpu 1 <= 1 (g's). Job 2 (2 CPUs, 1 GPU):
    # cpu 2 + 2 <= 4, but gpu 1 + 1 > 1 in g's usage: WAIT_QOS_GRP_GRES until job 1 ends at 100.
    # Without the partition's QoS, g's cpu=1 holds job 1 forever (2 CPUs > 1 by itself).
    pq, g = QosSpec("pq", grp_tres=(("cpu", 4),)), QosSpec("g", grp_tres=(("cpu", 1), ("gres/gpu", 1)))
    jobs = [job(1, 0, 2, 100, qos="g", gpus=GpuRequest(1)), job(2, 0, 2, 100, qos="g", gpus=GpuRequest(1))]
    result = run(jobs, cluster("pq", pq, g, cores=8, gpus=2))
    assert starts(result) == {1: 0, 2: 100}
    assert reasons(result)[2] == "QOSGrpGRES"
    alone = run(jobs, cluster(None, pq, g, cores=8, gpus=2))
    assert never(alone)[1] == "never started: QOSGrpCpuLimit"


def test_a_job_without_time_gets_its_partition_qos_max_wall() -> None:
    # _set_time_limit with qos_out_ptr->max_wall_pj from the partition's QoS pq (MaxWall 50): a job of
    # QoS normal (no MaxWall) without --time runs under 50 s and is killed at 50 (it would run 300).
    pq = QosSpec("pq", max_wall=50)
    row = run([job(1, 0, 1, 300, limit=None)], cluster("pq", pq)).jobs.iloc[0]
    assert (row["start"], row["end"], bool(row["killed"])) == (0, 50, True)


def test_a_job_over_its_partition_qos_max_wall_pends_forever() -> None:
    # _qos_job_runnable_pre_select over pq: time limit 200 > MaxWall 100 -> WAIT_QOS_MAX_WALL_PER_JOB,
    # never runnable; job 2 (100 s) starts at once.
    pq = QosSpec("pq", max_wall=100)
    result = run([job(1, 0, 1, 50, limit=200), job(2, 0, 1, 100)], cluster("pq", pq))
    assert starts(result) == {2: 0}
    assert never(result) == {1: "never started: QOSMaxWallDurationPerJobLimit"}


# ---------------------------------------------------------------- submission


def test_max_submit_jobs_per_user_of_the_partition_qos_refuses_the_extra_job() -> None:
    # _qos_policy_validate over pq: submit_jobs 1 + 1 > MaxSubmitJobsPerUser 1 -> refused
    # (QOSMaxSubmitJobPerUserLimit); job 3 in partition free (no QoS) is accepted.
    pq = QosSpec("pq", max_submit_jobs_per_user=1)
    jobs = [job(1, 0, 1, 100), job(2, 0, 1, 100), job(3, 0, 1, 100, partition="free")]
    result = run(jobs, cluster("pq", pq))
    assert never(result) == {2: "QOSMaxSubmitJobPerUserLimit"}
    assert starts(result) == {1: 0, 3: 0}


def test_deny_on_limit_of_the_partition_qos_refuses_a_job_over_its_own_qos_limit() -> None:
    # _acct_policy_validate: strict_checking from either QoS's DenyOnLimit (pq's here), so the job's
    # own QoS g's MaxTRESPerJob cpu=2 refuses job 1 (3 CPUs, WAIT_QOS_MAX_CPU_PER_JOB) at submission.
    pq, g = QosSpec("pq", deny_on_limit=True), QosSpec("g", max_tres_per_job=(("cpu", 2),))
    result = run([job(1, 0, 3, 100, qos="g"), job(2, 0, 2, 100, qos="g")], cluster("pq", pq, g))
    assert never(result) == {1: "QOSMaxCpuPerJobLimit"}
    assert starts(result) == {2: 0}


def test_allow_qos_refuses_a_job_of_another_qos() -> None:
    # job_mgr.c _part_access_check -> part_policy_valid_qos: partition batch allows QoS high only, so a
    # job of QoS normal is refused (ESLURM_INVALID_QOS, "Invalid qos specification"); one of high runs.
    spec = cluster(None, QosSpec("high"), allow=("high",))
    result = run([job(1, 0, 1, 10), job(2, 0, 1, 10, qos="high")], spec)
    assert never(result) == {1: "Invalid qos specification (partition batch allows high not normal)"}
    assert starts(result) == {2: 0}


# ---------------------------------------------------------------- configuration and a site's files

SIMULATE = FIVE_JOBS + """\
cluster:
  nodes:
    - {count: 2, cores: 4}
  partitions:
    - {name: batch, qos: pq, allow_qos: "normal,PQ"}
  qos:
    - {name: normal}
    - {name: pq, grp_jobs: 1, over_part_qos: false}
"""
"""A simulate config whose partition sits on line 7."""


def test_a_partition_qos_and_allow_qos_read_from_a_config(tmp_path: Path) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text(SIMULATE)
    (part,) = load_experiment(path).cluster.partitions
    assert (part.qos, part.allow_qos) == ("pq", ("normal", "pq"))


def test_a_partition_qos_the_cluster_lacks_is_blamed_at_its_line(tmp_path: Path) -> None:
    assert_edited_experiment_error(tmp_path, SIMULATE, "qos: pq,", "qos: nope,", 7,
                                   "cluster.partitions[0].qos", "QoS 'nope' is none of cluster.qos")
    with pytest.raises(ConfigError, match="QoS 'nope' is none"):
        ClusterSpec((NodeSpec("n0", 1),), (PartitionSpec("batch", qos="nope"),))


@pytest.mark.parametrize(("written", "qos"), [("QOS=pq", "pq"), ("QoS=PQ", "pq"), ("QoS=N/A", None),
                                              ("QOS=other", None)])
def test_a_site_s_partition_qos_is_read_from_slurm_conf_or_scontrol(written: str, qos: str | None) -> None:
    # slurm.conf writes QOS=, scontrol show partition QoS= (N/A for none); a QoS the --qos table lacks is
    # left out, as slurmctld leaves out one its database lacks ("Partition %s has an invalid qos")
    site = parse_slurm_conf(f"NodeName=n1 CPUs=2\nPartitionName=p Nodes=ALL {written} AllowQos=pq,Normal\n")
    table = parse_qos("normal|0|\npq|0|\n").qos
    part = cluster_spec(site.partitions, site.nodes, "p", qos=table).partitions[0]
    assert (part.qos, part.allow_qos) == (qos, ("pq", "normal"))


def test_sacctmgr_s_over_part_qos_flag_is_read() -> None:
    table = parse_qos("normal|0|\nmine|0|||OverPartQOS,DenyOnLimit\n")
    assert table.qos[1] == QosSpec("mine", over_part_qos=True, deny_on_limit=True)
