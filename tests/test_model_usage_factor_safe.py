"""The QoS flag UsageFactorSafe (djsb/model/tres_minutes.py ``checked_minutes``): the limits a pass
checks see a job's time limit times its QoS's UsageFactor, truncated to whole minutes. Every expected
start is worked by hand from Slurm 22.05's acct_policy.c: ``acct_policy_job_runnable_post_select``
(``time_limit *= usage_factor`` with QOS_FLAG_USAGE_FACTOR_SAFE, then ``job_tres_time_limit =
time_limit * tres_req_cnt`` for ``_qos_job_runnable_post_select`` and the association walk, where
``_validate_tres_usage_limits`` compares it: GrpTRESMins' own-minutes checks with ``safe_limits``
only, GrpTRESRunMins and MaxTRESMins always), ``_qos_job_runnable_pre_select`` (QoS MaxWall against the
factored limit) and ``acct_policy_job_runnable_pre_select`` (an association's MaxWall, and its GrpWall
with ``safe_limits``). The checks at submission (``_qos_policy_validate``, DenyOnLimit) see the limit
as asked, and what a start adds to the running jobs' minutes is times the factor with or without the
flag (``_adjust_limit_usage``).

Every run is on one node of 4 cores with passes at every event (sched_interval 0); under
priority/multifactor the decay thread runs every 300 s from 0, without decay (no half-life)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support import FIVE_JOBS, assert_edited_experiment_error, never, starts

from djsb.model import ClusterSpec, QosSpec, SchedulerConfig, Simulation, SimulationResult
from djsb.model.assoc_spec import AssocSpec
from djsb.model.cluster_spec import NodeSpec, PartitionSpec
from djsb.model.invariants import InvariantChecker
from djsb.model.priority.multifactor import MultifactorPriority, MultifactorWeights
from djsb.simulate.experiment import load_experiment
from djsb.slurmsite.qos_text import parse_qos
from djsb.workloads.job import TraceJob

HOUR = 3600.0


def job(job_id: int, cpus: int, qos: str | None = None) -> TraceJob:
    """A job of u1 in account a1 submitted at 0, asking ``cpus`` for an hour and running it."""
    return TraceJob(job_id, 0.0, HOUR, cpus, requested_time=HOUR, user="u1", account="a1", qos=qos)


def run(jobs: list[TraceJob], *qos: QosSpec, associations: tuple[AssocSpec, ...] = (), safe: bool = False,
        decay: bool = True) -> SimulationResult:
    """``jobs`` on one node of 4 cores under ``qos`` and ``associations``, AccountingStorageEnforce with
    ``safe`` or not, priority/multifactor (its decay thread) with ``decay``, else priority/basic."""
    spec = ClusterSpec((NodeSpec("n0", 4),), (PartitionSpec("batch"),), qos, associations=associations)
    config = SchedulerConfig(sched_interval=0.0, bf_interval=0.0, bf_resolution=0.0, backfill="easy",
                             enforce_safe=safe)
    priority = MultifactorPriority(MultifactorWeights(fairshare=1000), decay_half_life=0.0,
                                  calc_period=300.0) if decay else None
    return Simulation(jobs, spec, config, priority, checker=InvariantChecker(spec)).run()


def qos(**limits: Any) -> tuple[QosSpec, QosSpec]:
    """QoS normal with ``limits`` and UsageFactor 0.5, without and with Flags=UsageFactorSafe."""
    return QosSpec("normal", usage_factor=0.5, **limits), QosSpec("normal", usage_factor=0.5,
                                                                  usage_factor_safe=True, **limits)


def test_with_safe_limits_grp_tres_mins_checks_the_factored_minutes() -> None:
    # QoS normal GrpTRESMins cpu=100, UsageFactor 0.5, AccountingStorageEnforce=safe. Jobs 1 (2 CPUs),
    # 2 and 3 (1 CPU), an hour each. A start adds cpus x 3600 x 0.5 s to the running minutes either
    # way (_adjust_limit_usage).
    # Without the flag a job's minutes are cpus x 60: job 1's 120 > 100 by themselves
    # (TRES_USAGE_REQ_EXCEEDS_LIMIT): it never starts; job 2: 60 + 0 <= 100, starts (adds 30 min);
    # job 3: 60 + 30 <= 100, starts.
    # With it: cpus x floor(60 x 0.5) = cpus x 30. Job 1: 60 <= 100, starts (adds 60 min); job 2:
    # 30 + 60 <= 100, starts (90 min left); job 3: 30 + 90 > 100 (TRES_USAGE_REQ_NOT_SAFE_WITH_USAGE).
    # Each decay thread run moves 3 x 300 x 0.5 = 450 cpu-s from the minutes left to the usage, so
    # used + left stays about 90 and 30 + left > 100 - used until they end at 3600 with 90 min used:
    # 30 > 100 - 90, job 3 never starts.
    jobs = [job(1, 2), job(2, 1), job(3, 1)]
    plain, flagged = qos(grp_tres_mins=(("cpu", 100),))
    without = run(jobs, plain, safe=True)
    assert starts(without) == {2: 0.0, 3: 0.0}
    assert never(without) == {1: "never started: QOSGrpCPUMinutesLimit"}
    result = run(jobs, flagged, safe=True)
    assert starts(result) == {1: 0.0, 2: 0.0}
    assert never(result) == {3: "never started: QOSGrpCPUMinutesLimit"}
    # Without safe limits GrpTRESMins only compares the usage (0 < 100): all three start at 0.
    assert starts(run(jobs, flagged)) == {1: 0.0, 2: 0.0, 3: 0.0}


def test_grp_tres_run_mins_checks_the_factored_minutes_without_safe_too() -> None:
    # a1 GrpTRESRunMins cpu=100, QoS UsageFactor 0.5, no safe: _validate_tres_usage_limits_for_assoc
    # is called with safe_limits true for the running minutes whatever AccountingStorageEnforce says.
    # Without the flag: job 1's 2 x 60 = 120 > 100 by itself, never; job 2: 60 + 0 <= 100 (adds 30 min);
    # job 3: 60 + 30 <= 100: both at 0.
    # With it: job 1: 2 x 30 = 60 <= 100 (adds 60 min); job 2: 30 + 60 <= 100 (90 min left); job 3:
    # 30 + 90 > 100. Each decay run takes 3 x 300 x 0.5 = 450 cpu-s off the 5400 left: 4950 (82 min) at
    # 300, 4500 (75) at 600, 4050 (67) at 900: 30 + 67 <= 100, job 3 starts at 900.
    jobs = [job(1, 2), job(2, 1), job(3, 1)]
    plain, flagged = qos()
    limit = (AssocSpec("a1", grp_tres_run_mins=(("cpu", 100),)),)
    without = run(jobs, plain, associations=limit)
    assert starts(without) == {2: 0.0, 3: 0.0}
    assert never(without) == {1: "never started: AssocGrpCPURunMinutesLimit"}
    assert starts(run(jobs, flagged, associations=limit)) == {1: 0.0, 2: 0.0, 3: 900.0}


def test_a_factor_over_1_holds_a_job_under_max_tres_mins_per_job_but_not_at_submission() -> None:
    # QoS normal MaxTRESMinsPerJob cpu=100, UsageFactor 2, DenyOnLimit. Job 1, 1 CPU x 60 min. sbatch
    # checks 60 <= 100 (_qos_policy_validate: no factor) and accepts it; without the flag a pass checks
    # 60 too and it starts at 0; with it floor(60 x 2) = 120 > 100: it pends forever.
    limits: dict[str, Any] = {"max_tres_mins_per_job": (("cpu", 100),), "deny_on_limit": True,
                              "usage_factor": 2.0}
    assert starts(run([job(1, 1)], QosSpec("normal", **limits))) == {1: 0.0}
    result = run([job(1, 1)], QosSpec("normal", usage_factor_safe=True, **limits))
    assert never(result) == {1: "never started: QOSMaxCpuMinutesPerJobLimit"}


def test_max_wall_of_the_qos_and_the_association_sees_the_factored_limit() -> None:
    # MaxWall 30 min, UsageFactor 0.5, a job asking 60 min: over it without the flag, it pends forever
    # (_qos_job_runnable_pre_select / acct_policy_job_runnable_pre_select: time_limit > max_wall_pj);
    # with it floor(60 x 0.5) = 30, not over 30: it starts at 0 (and runs its hour).
    plain, flagged = qos(max_wall=1800.0)
    assert never(run([job(1, 1)], plain, decay=False)) == {1: "never started: QOSMaxWallDurationPerJobLimit"}
    assert starts(run([job(1, 1)], flagged, decay=False)) == {1: 0.0}
    plain, flagged = qos()
    wall = (AssocSpec("a1", max_wall=1800.0),)
    assert never(run([job(1, 1)], plain, associations=wall, decay=False)) == {
        1: "never started: AssocMaxWallDurationPerJobLimit"}
    assert starts(run([job(1, 1)], flagged, associations=wall, decay=False)) == {1: 0.0}


def test_with_safe_limits_an_association_s_grp_wall_sees_the_factored_limit() -> None:
    # a1 GrpWall 30 min, AccountingStorageEnforce=safe, UsageFactor 0.5. A job asking 60 min: without
    # the flag 0 + 60 > 30, it never starts; with it 0 + floor(60 x 0.5) = 30, not over 30: it starts.
    plain, flagged = qos()
    wall = (AssocSpec("a1", grp_wall=1800.0),)
    assert never(run([job(1, 1)], plain, associations=wall, safe=True)) == {
        1: "never started: AssocGrpWallLimit"}
    assert starts(run([job(1, 1)], flagged, associations=wall, safe=True)) == {1: 0.0}


def test_sacctmgr_s_usage_factor_safe_flag_is_read() -> None:
    # sacctmgr prints a QoS's flags comma-separated in its Flags column
    line = "half|0|||NoDecay,UsageFactorSafe|||||||||||||||0.500000"
    assert parse_qos(f"{line}\n").qos == (QosSpec("half", usage_factor=0.5, no_decay=True,
                                                  usage_factor_safe=True),)


SIMULATE = FIVE_JOBS + """\
cluster:
  nodes:
    - {count: 1, cores: 4}
  qos:
    - {name: normal, usage_factor: 0.5, usage_factor_safe: true}
"""
"""A simulate config with a QoS's UsageFactorSafe (line 7)."""


def test_the_flag_is_read_from_a_config(tmp_path: Path) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text(SIMULATE)
    assert load_experiment(path).cluster.qos[0] == QosSpec("normal", usage_factor=0.5, usage_factor_safe=True)
    assert_edited_experiment_error(tmp_path, SIMULATE, "usage_factor_safe: true", "usage_factor_safe: 2", 7,
                                   "cluster.qos[0].usage_factor_safe", "true or false")
