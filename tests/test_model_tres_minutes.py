"""TRES-minutes limits as Slurm 22.05 enforces them (djsb/model/tres_minutes.py): GrpTRESMins,
GrpTRESRunMins and MaxTRESMinsPerJob of a QoS and of an association. Each expected start is worked
out by hand from the Slurm function cited: acct_policy.c ``_validate_tres_usage_limits`` (called by
``acct_policy_job_runnable_post_select`` for an association, ``_qos_job_runnable_post_select`` for a
QoS, with the job's ``job_tres_time_limit`` = TRES x time limit in minutes, the usage
``usage_tres_raw / 60`` as ``curr_usage`` and the running jobs' ``grp_used_tres_run_secs / 60``) and
priority_multifactor.c's decay thread, which alone adds to and decays the usage, every
PriorityCalcPeriod (``_apply_decay``: ``decay_factor = 1 - 0.693 / PriorityDecayHalfLife``;
``_apply_new_usage``: a running job's TRES times ``run_delta * decay_factor ** run_delta``).

Every run is on one node of 4 cores, passes at every event (sched_interval 0: a decay thread run that
may free a job runs the main pass at once)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import FIVE_JOBS, assert_edited_experiment_error, never, reasons, starts

from djsb.model import ClusterSpec, QosSpec, SchedulerConfig, Simulation, SimulationResult
from djsb.model.assoc_spec import AssocSpec
from djsb.model.cluster_spec import NodeSpec, PartitionSpec
from djsb.model.invariants import InvariantChecker
from djsb.model.limits import RunningLimits
from djsb.model.priority.base import PriorityPlugin
from djsb.model.priority.multifactor import MultifactorPriority, MultifactorWeights
from djsb.simulate.experiment import load_experiment
from djsb.slurmsite.assoc_text import parse_association_limits
from djsb.slurmsite.qos_text import parse_qos
from djsb.workloads.job import TraceJob

CPU_100: Any = (("cpu", 100),)


def job(job_id: int, submit: float, cpus: int, run: float, limit: float | None = None, user: str = "u1",
        account: str = "a1") -> TraceJob:
    """A job asking ``cpus`` for ``limit`` seconds (by default exactly its run time)."""
    return TraceJob(job_id, submit, run, cpus, requested_time=run if limit is None else limit, user=user,
                    account=account)


def multifactor(half_life: float) -> MultifactorPriority:
    """priority/multifactor with PriorityDecayHalfLife ``half_life`` and PriorityCalcPeriod 5 minutes
    (the decay thread runs at 300, 600, ... s)."""
    return MultifactorPriority(MultifactorWeights(), decay_half_life=half_life, calc_period=300.0)


def run(jobs: list[TraceJob], *associations: AssocSpec, qos: QosSpec | None = None,
        priority: PriorityPlugin | None = None, safe: bool = False) -> SimulationResult:
    """``jobs`` on one node of 4 cores under ``associations``, one QoS ``qos`` (none: normal) and
    ``priority`` (none: FIFO, priority/basic); ``safe``: AccountingStorageEnforce=safe."""
    spec = ClusterSpec((NodeSpec("n0", 4),), (PartitionSpec("batch"),), (qos or QosSpec("normal"),),
                       associations=associations)
    config = SchedulerConfig(sched_interval=0.0, bf_interval=0.0, bf_resolution=0.0, backfill="easy",
                             enforce_safe=safe)
    return Simulation(jobs, spec, config, priority, checker=InvariantChecker(spec)).run()


def test_safe_grp_tres_mins_counts_the_running_job_s_minutes_left() -> None:
    # a1 GrpTRESMins cpu=100, AccountingStorageEnforce=safe, priority/basic (no decay thread: the usage
    # stays 0). Job 1, 2 CPUs x 30 min = 60 cpu-min: 60 <= 100, starts at 0; its 60 min are a1's
    # grp_used_tres_run_secs (_adjust_limit_usage). Job 2, the same: safe_limits in
    # _validate_tres_usage_limits: 60 + 60 running > 100 - 0 used -> TRES_USAGE_REQ_NOT_SAFE_WITH_USAGE,
    # AssocGrpCPUMinutesLimit. priority_basic.c priority_p_job_end takes job 1's 60 min off at its end,
    # 1800, and the usage is still 0: 60 + 0 <= 100, job 2 starts at 1800.
    jobs = [job(1, 0, 2, 1800), job(2, 0, 2, 1800)]
    result = run(jobs, AssocSpec("a1", grp_tres_mins=CPU_100), safe=True)
    assert starts(result) == {1: 0, 2: 1800}
    assert reasons(result)[2] == "AssocGrpCPUMinutesLimit"
    # without safe only the usage (0 < 100) counts: both start at once
    assert starts(run(jobs, AssocSpec("a1", grp_tres_mins=CPU_100))) == {1: 0, 2: 0}


def test_grp_tres_mins_holds_until_the_decay_thread_brings_the_usage_under_it() -> None:
    # priority/multifactor, PriorityDecayHalfLife 1 h: decay_factor d = 1 - 0.693 / 3600, over one 300 s
    # period q = d ** 300 = 0.94388064. a1 GrpTRESMins cpu=90. Job 1, 4 CPUs, runs [0, 1800). The decay
    # thread at each of 300, 600, ..., 1800 decays a1's usage U by q, then adds 4 CPUs x 300 s x q
    # (_apply_new_usage's run_delta * decay_factor ** run_delta): U_k = (U_k-1 + 1200) q, so
    # U_6 = 1200 (q + q^2 + ... + q^6) = 5910.89 cpu-s = 98.51 min at 1800 (job 1's end adds its
    # run_delta 0). Job 2 (1 CPU, 1 min) submitted at 1800: (uint64)(98.51) = 98 >= 90 ->
    # TRES_USAGE_CUR_EXCEEDS_LIMIT, AssocGrpCPUMinutesLimit. No job runs, only decay: at 2100
    # U = 5910.89 q = 5579.17 = 92.99 min, 92 >= 90, held; at 2400 U = 5266.07 = 87.77 min, 87 < 90:
    # job 2 starts at the decay thread's run at 2400, not between two runs (the usage changes only then).
    jobs = [job(1, 0, 4, 1800), job(2, 1800, 1, 60)]
    result = run(jobs, AssocSpec("a1", grp_tres_mins=(("cpu", 90),)), priority=multifactor(3600.0))
    assert starts(result) == {1: 0, 2: 2400}
    assert reasons(result)[2] == "AssocGrpCPUMinutesLimit"
    # under priority/basic nothing adds to the usage: job 2 starts at 1800
    assert starts(run(jobs, AssocSpec("a1", grp_tres_mins=(("cpu", 90),))))[2] == 1800


def test_a_qos_grp_tres_mins_and_the_association_s_it_skips() -> None:
    # The same usage in the QoS (_qos_job_runnable_post_select, usage_tres_raw of the QoS):
    # QOSGrpCPUMinutesLimit, job 2 starts at 2400. The QoS setting GrpTRESMins cpu leaves a1's cpu
    # unchecked (_validate_tres_usage_limits_for_assoc skips a TRES qos_rec.grp_tres_mins_ctld holds):
    # with the QoS's cpu=100000 and a1's cpu=90, job 2 starts at its submission, 1800.
    jobs = [job(1, 0, 4, 1800), job(2, 1800, 1, 60)]
    held = run(jobs, qos=QosSpec("normal", grp_tres_mins=(("cpu", 90),)), priority=multifactor(3600.0))
    assert starts(held) == {1: 0, 2: 2400}
    assert reasons(held)[2] == "QOSGrpCPUMinutesLimit"
    skipped = run(jobs, AssocSpec("a1", grp_tres_mins=(("cpu", 90),)),
                  qos=QosSpec("normal", grp_tres_mins=(("cpu", 100000),)), priority=multifactor(3600.0))
    assert starts(skipped) == {1: 0, 2: 1800}


def test_grp_tres_run_mins_counts_what_the_running_jobs_have_left() -> None:
    # a1 GrpTRESRunMins cpu=150. Job 1, 2 CPUs x 60 min: 120 <= 150, starts at 0. Job 2, 1 CPU x 60 min:
    # _validate_tres_usage_limits (safe_limits true for RunMins): 60 + 120 > 150 ->
    # AssocGrpCPURunMinutesLimit. Job 3, 4 CPUs x 60 min = 240 > 150 by itself
    # (TRES_USAGE_REQ_EXCEEDS_LIMIT): never runs.
    jobs = [job(1, 0, 2, 3600), job(2, 0, 1, 3600), job(3, 0, 4, 3600)]
    limit = AssocSpec("a1", grp_tres_run_mins=(("cpu", 150),))
    # priority/basic: job 1's 120 min are released at its end only (priority_p_job_end): job 2 at 3600
    basic = run(jobs, limit)
    assert starts(basic) == {1: 0, 2: 3600}
    assert reasons(basic)[2] == "AssocGrpCPURunMinutesLimit"
    assert never(basic) == {3: "never started: AssocGrpCPURunMinutesLimit"}
    # priority/multifactor: each decay thread run takes 2 CPUs x 300 s = 10 min off (_apply_new_usage's
    # tres_run_delta): 60 + 120 - 10 k <= 150 first at k = 3, job 2 starts at 900
    assert starts(run(jobs, limit, priority=multifactor(3600.0))) == {1: 0, 2: 900}


def test_max_tres_mins_per_job_holds_a_job_forever_or_refuses_it() -> None:
    # QoS MaxTRESMinsPerJob cpu=60: job 1, 2 CPUs x 30 min = 60, starts; job 2 asks 1801 s, 31 whole
    # minutes (slurmctld keeps minutes, rounded up): 62 > 60; job 3, 4 x 30 = 120 > 60.
    # _qos_job_runnable_post_select's _validate_tres_limits_for_qos on job_tres_time_limit ->
    # WAIT_QOS_MAX_CPU_MINS_PER_JOB: never runnable.
    jobs = [job(1, 0, 2, 1800), job(2, 0, 2, 1800, limit=1801), job(3, 0, 4, 1800)]
    qos = QosSpec("normal", max_tres_mins_per_job=(("cpu", 60),))
    result = run(jobs, qos=qos)
    assert starts(result) == {1: 0}
    assert never(result) == {2: "never started: QOSMaxCpuMinutesPerJobLimit",
                             3: "never started: QOSMaxCpuMinutesPerJobLimit"}
    # DenyOnLimit: _qos_policy_validate's _validate_tres_time_limits refuses them at submission
    denied = run(jobs, qos=QosSpec("normal", max_tres_mins_per_job=(("cpu", 60),), deny_on_limit=True))
    assert never(denied) == {2: "QOSMaxCpuMinutesPerJobLimit", 3: "QOSMaxCpuMinutesPerJobLimit"}
    # an account's MaxTRESMins, inherited by its user associations (AssocMaxCpuMinutesPerJobLimit)
    assoc = run(jobs, AssocSpec("a1", max_tres_mins_per_job=(("cpu", 60),)))
    assert never(assoc) == {2: "never started: AssocMaxCpuMinutesPerJobLimit",
                            3: "never started: AssocMaxCpuMinutesPerJobLimit"}


def test_without_a_tres_minutes_limit_no_usage_is_kept() -> None:
    # the passes never ask, and no decay thread run is applied: the hot path stays as it was
    plain = RunningLimits((QosSpec("normal", grp_tres=(("cpu", 4),)),), associations=(AssocSpec("a1"),))
    assert plain.minutes is None
    assert RunningLimits((QosSpec("normal", grp_tres_run_mins=(("cpu", 4),)),)).minutes is not None


ASSOCIATIONS = "\n".join("|".join(fields) for fields in (
    # ASSOCIATIONS_COMMAND's 13 columns: Account, User, ParentName, Share, GrpJobs, GrpTRES, MaxJobs,
    # MaxSubmit, MaxTRES, MaxWall, GrpTRESMins, GrpTRESRunMins, MaxTRESMins
    ("root", "", "", "1", "", "", "", "", "", "", "", "", ""),
    ("dept", "", "root", "1", "", "", "", "", "", "", "cpu=6000,gres/gpu=100", "cpu=3000", ""),
    ("a1", "", "dept", "1", "", "", "", "", "", "", "", "", "cpu=120,billing=500"),
    ("a1", "u1", "", "1", "", "", "", "", "", "", "", "", "cpu=120,billing=500"),
    ("a1", "u2", "", "1", "", "", "", "", "", "", "", "", ""),
)) + "\n"
"""``sacctmgr --noheader --parsable2 show associations format=...`` as Slurm 22.05 prints it: dept
with GrpTRESMins and GrpTRESRunMins, a1's MaxTRESMins (MaxTRESMinsPerJob) printed again on its user
u1's row (inherited); u2 sets nothing of its own and prints nothing."""

QOS = "\n".join("|".join((name, priority, *[""] * 12, "00:00:00", "cluster", *minutes))
                for name, priority, minutes in (
    # QOS_FORMAT's 19 columns: Name, Priority, twelve limits and Preempt (none set), GraceTime,
    # PreemptMode, then GrpTRESMins, GrpTRESRunMins, MaxTRESMins
    ("normal", "0", ("", "", "")),
    ("capped", "10", ("cpu=6000,gres/gpu=100", "cpu=3000", "cpu=120,mem=1000M")),
)) + "\n"
"""``sacctmgr show qos`` with QOS_FORMAT's 19 columns, the last three GrpTRESMins, GrpTRESRunMins and
MaxTRESMins."""


def test_sacctmgr_s_tres_minutes_columns_are_read() -> None:
    found, notes = parse_association_limits(ASSOCIATIONS)
    assert found == (AssocSpec("root"),
                     AssocSpec("dept", grp_tres_mins=(("cpu", 6000), ("gres/gpu", 100)),
                               grp_tres_run_mins=(("cpu", 3000),)),
                     AssocSpec("a1", parent="dept", max_tres_mins_per_job=(("cpu", 120),)),
                     AssocSpec("a1", "u1", max_tres_mins_per_job=(("cpu", 120),)))
    assert notes == [f"association {who}: MaxTRESMins billing=500 has no model (only cpu, mem, node, "
                     "gres/gpu are counted)" for who in ("a1", "u1@a1")]
    table = parse_qos(QOS)
    assert table.qos[1] == QosSpec("capped", 10, grp_tres_mins=(("cpu", 6000), ("gres/gpu", 100)),
                                   grp_tres_run_mins=(("cpu", 3000),),
                                   max_tres_mins_per_job=(("cpu", 120), ("mem", 1000)))


SIMULATE = FIVE_JOBS + """\
cluster:
  nodes:
    - {count: 1, cores: 4}
  qos:
    - {name: normal, grp_tres_mins: "cpu=6000,gres/gpu=100", max_tres_mins_per_job: {cpu: 120}}
  associations:
    - {account: a1, grp_tres_run_mins: {cpu: 3000}, max_tres_mins_per_job: "cpu=60"}
policy:
  scheduler: {enforce_safe: true}
"""
"""A simulate config with TRES-minutes limits: the QoS on line 7, the association on line 9."""


def test_tres_minutes_limits_read_from_a_config(tmp_path: Path) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text(SIMULATE)
    experiment = load_experiment(path)
    assert experiment.cluster.qos[0].grp_tres_mins == (("cpu", 6000), ("gres/gpu", 100))
    assert experiment.cluster.qos[0].max_tres_mins_per_job == (("cpu", 120),)
    assert experiment.cluster.associations == (
        AssocSpec("a1", grp_tres_run_mins=(("cpu", 3000),), max_tres_mins_per_job=(("cpu", 60),)),)
    assert experiment.scheduler.enforce_safe


@pytest.mark.parametrize(("old", "new", "line", "key", "needle"), [
    ('grp_tres_mins: "cpu=6000', 'grp_tres_mins: "watts=6000', 7, "cluster.qos[0].grp_tres_mins",
     "unknown TRES 'watts'"),
    ("grp_tres_run_mins: {cpu: 3000}", "grp_tres_run_mins: {cpu: many}", 9,
     "cluster.associations[0].grp_tres_run_mins", "not a number"),
])
def test_a_bad_tres_minutes_limit_is_blamed_at_its_line(tmp_path: Path, old: str, new: str, line: int,
                                                        key: str, needle: str) -> None:
    assert_edited_experiment_error(tmp_path, SIMULATE, old, new, line, key, needle)
