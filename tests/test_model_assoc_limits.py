"""Association limits as Slurm 22.05 enforces them with AccountingStorageEnforce=limits
(djsb/model/assoc_limits.py, djsb/model/assoc_spec.py). Each expected start is worked out by hand
from the acct_policy.c function cited: ``acct_policy_job_runnable_pre_select`` (GrpJobs at each level
of the association's path, MaxJobs and MaxWall at the user association), ``_post_select`` (GrpTRES
at each level, MaxTRES per job), ``_acct_policy_validate`` (MaxSubmitJobs), a limit the QoS sets
skipped (``qos_rec``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import FIVE_JOBS, assert_edited_experiment_error, never, reasons, starts

from djsb.errors import ConfigError
from djsb.model import ClusterSpec, QosSpec, SchedulerConfig, Simulation, SimulationResult
from djsb.model.assoc_limits import AssocLimits
from djsb.model.assoc_spec import AssocSpec
from djsb.model.cluster_spec import NodeSpec, PartitionSpec
from djsb.model.invariants import InvariantChecker, InvariantViolation
from djsb.simulate.experiment import load_experiment
from djsb.slurmsite.assoc_text import parse_association_limits
from djsb.slurmsite.slurm_config import ASSOCIATION_COLUMNS, ASSOCIATIONS_COMMAND
from djsb.workloads.job import TraceJob


def job(job_id: int, submit: float, cpus: int, run: float, user: str = "u1", account: str = "a1",
        limit: float | None = -1.0, **more: Any) -> TraceJob:
    """A job asking ``cpus`` for ``limit`` (by default exactly its run time; None: no --time)."""
    return TraceJob(job_id, submit, run, cpus, requested_time=run if limit == -1.0 else limit, user=user,
                    account=account, **more)


def run(jobs: list[TraceJob], *associations: AssocSpec, qos: QosSpec | None = None,
        cores: int = 4) -> SimulationResult:
    """``jobs`` on one node of ``cores`` under ``associations`` and one QoS ``qos`` (none: normal)."""
    spec = ClusterSpec((NodeSpec("n0", cores),), (PartitionSpec("batch"),), (qos or QosSpec("normal"),),
                       associations=associations)
    config = SchedulerConfig(sched_interval=0.0, bf_interval=0.0, bf_resolution=0.0, backfill="easy")
    return Simulation(jobs, spec, config, checker=InvariantChecker(spec)).run()


def test_grp_jobs_of_an_account_holds_every_user_of_it() -> None:
    # pre_select's walk up the path: at account a1, used_jobs 1 >= GrpJobs 1 -> WAIT_ASSOC_GRP_JOB. u2's
    # job 2 (a1) waits for u1's job 1 (ends at 100) though 3 cores are free; u3's job 3 in a2 does not.
    jobs = [job(1, 0, 1, 100), job(2, 0, 1, 100, user="u2"), job(3, 0, 1, 100, user="u3", account="a2")]
    result = run(jobs, AssocSpec("a1", grp_jobs=1))
    assert starts(result) == {1: 0, 2: 100, 3: 0}
    assert reasons(result)[2] == "AssocGrpJobsLimit"


def test_grp_jobs_of_a_parent_account_counts_its_children() -> None:
    # a1 and a2 hang under dept (GrpJobs 1): _adjust_limit_usage counts job 1 (a1) at dept too, so job 2
    # of a2 finds dept's used_jobs 1 >= 1 on the walk up and waits for job 1's end at 100.
    tree = (AssocSpec("dept", grp_jobs=1), AssocSpec("a1", parent="dept"), AssocSpec("a2", parent="dept"))
    result = run([job(1, 0, 1, 100), job(2, 0, 1, 100, user="u2", account="a2")], *tree)
    assert starts(result) == {1: 0, 2: 100}
    assert reasons(result)[2] == "AssocGrpJobsLimit"


def test_max_jobs_is_per_user_and_inherited_from_the_account() -> None:
    # a1's MaxJobs 1 is every user association's of a1 that sets none (slurmdbd propagates it): u1's
    # job 2 waits for its job 1 (AssocMaxJobsLimit, used_jobs 1 >= 1 at u1's association), u2's job 3
    # starts at once; u3 sets its own MaxJobs 2 in a1: its jobs 4 and 5 both start at 0.
    jobs = [job(1, 0, 1, 100), job(2, 0, 1, 100), job(3, 0, 1, 100, user="u2"),
            job(4, 0, 1, 100, user="u3"), job(5, 0, 1, 100, user="u3")]
    result = run(jobs, AssocSpec("a1", max_jobs=1), AssocSpec("a1", user="u3", max_jobs=2), cores=8)
    assert starts(result) == {1: 0, 2: 100, 3: 0, 4: 0, 5: 0}
    assert reasons(result)[2] == "AssocMaxJobsLimit"


def test_a_qos_max_jobs_per_user_overrides_the_association_max_jobs() -> None:
    # pre_select checks the association's MaxJobs only if qos_rec.max_jobs_pu is INFINITE: the QoS's
    # MaxJobsPerUser 2 is set, so a1's MaxJobs 1 is skipped: jobs 1 and 2 start at 0, job 3 waits for
    # job 1 with the QoS's reason.
    result = run([job(1, 0, 1, 100), job(2, 0, 1, 100), job(3, 0, 1, 100)], AssocSpec("a1", max_jobs=1),
                 qos=QosSpec("normal", max_jobs_per_user=2))
    assert starts(result) == {1: 0, 2: 0, 3: 100}
    assert reasons(result)[3] == "QOSMaxJobsPerUserLimit"


def test_grp_tres_cpus_of_an_account() -> None:
    # post_select: a1's grp_used_tres cpu 2 + job 2's 2 > GrpTRES cpu=3 -> WAIT_ASSOC_GRP_CPU
    # ("AssocGrpCpuLimit"): job 2 waits for job 1's end at 100; job 3 (1 CPU): 2 + 1 <= 3, starts at 0.
    result = run([job(1, 0, 2, 100), job(2, 0, 2, 100, user="u2"), job(3, 0, 1, 100, user="u3")],
                 AssocSpec("a1", grp_tres=(("cpu", 3),)), cores=8)
    assert starts(result) == {1: 0, 2: 100, 3: 0}
    assert reasons(result)[2] == "AssocGrpCpuLimit"


def test_max_tres_per_job_and_max_wall_hold_a_job_forever() -> None:
    # post_select at the user association: 3 CPUs > MaxTRES cpu=2 -> WAIT_ASSOC_MAX_CPU_PER_JOB, never
    # runnable; pre_select: time limit 200 > MaxWall 150 -> WAIT_ASSOC_MAX_WALL_PER_JOB. Job 3 (2 CPUs,
    # 100 s) starts at once; job 4 without --time gets MaxWall 150 (_set_time_limit) and starts at 0.
    jobs = [job(1, 0, 3, 100), job(2, 0, 1, 100, limit=200), job(3, 0, 2, 100), job(4, 0, 1, 100, limit=None)]
    result = run(jobs, AssocSpec("a1", max_tres_per_job=(("cpu", 2),), max_wall=150))
    assert never(result) == {1: "never started: AssocMaxCpuPerJobLimit",
                             2: "never started: AssocMaxWallDurationPerJobLimit"}
    assert starts(result) == {3: 0, 4: 0}
    assert result.jobs.set_index("job_id").loc[4, "requested_time"] == 150


def test_max_submit_jobs_refuses_the_extra_job_of_the_user() -> None:
    # _acct_policy_validate: used_submit_jobs 1 + 1 > MaxSubmitJobs 1 -> WAIT_ASSOC_MAX_SUB_JOB: u1's
    # job 2 is refused; u2's job 3 (its own association) is accepted; job 4 at 150 after job 1's end.
    jobs = [job(1, 0, 1, 100), job(2, 0, 1, 100), job(3, 0, 1, 100, user="u2"), job(4, 150, 1, 10)]
    result = run(jobs, AssocSpec("a1", max_submit_jobs=1))
    assert never(result) == {2: "AssocMaxSubmitJobLimit"}
    assert starts(result) == {1: 0, 3: 0, 4: 150}


SIMULATE = FIVE_JOBS + """\
cluster:
  nodes:
    - {count: 2, cores: 4}
  associations:
    - {account: dept, grp_jobs: 4, grp_tres: "cpu=8,gres/gpu=2"}
    - {account: a1, parent: dept, max_jobs: 2, max_wall: "1-00:00:00"}
    - {account: a1, user: u1, max_submit_jobs: 5, max_tres_per_job: {cpu: 4}}
"""
"""A simulate config whose associations sit on lines 7-9."""


def test_associations_read_from_a_config(tmp_path: Path) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text(SIMULATE)
    assert load_experiment(path).cluster.associations == (
        AssocSpec("dept", grp_jobs=4, grp_tres=(("cpu", 8), ("gres/gpu", 2))),
        AssocSpec("a1", parent="dept", max_jobs=2, max_wall=86400.0),
        AssocSpec("a1", user="u1", max_submit_jobs=5, max_tres_per_job=(("cpu", 4),)))


@pytest.mark.parametrize(("old", "new", "line", "key", "needle"), [
    ("account: a1, user: u1,", "account: a1,", 9, "cluster.associations[2]", "association a1 given twice"),
    ("{account: dept,", "{account: dept, parent: a1,", 8, "cluster.associations[1]", "account cycle"),
    ("max_jobs: 2", "max_jobs: 0", 8, "cluster.associations[1].max_jobs", "must be >= 1"),
])
def test_a_bad_association_is_blamed_at_its_line(tmp_path: Path, old: str, new: str, line: int, key: str,
                                                 needle: str) -> None:
    assert_edited_experiment_error(tmp_path, SIMULATE, old, new, line, key, needle)


ASSOCIATIONS = """\
root|||1||||||
dept||root|1|4|cpu=8,billing=10||||
a1||dept|1|||2|||1-00:00:00
a1|u1||1|||2|5|cpu=4|1-00:00:00
a1|u2||1||||||
"""
"""sacctmgr show associations with ASSOCIATIONS_COMMAND's columns: fair share's four, then GrpJobs,
GrpTRES, MaxJobs, MaxSubmit, MaxTRES, MaxWall; u1's row carries a1's MaxJobs and MaxWall, inherited."""


def test_sacctmgr_s_association_limits_are_read() -> None:
    # every account is kept (the tree's shape), a user association only when it sets a limit
    found, notes = parse_association_limits(ASSOCIATIONS)
    assert found == (AssocSpec("root"), AssocSpec("dept", grp_jobs=4, grp_tres=(("cpu", 8),)),
                     AssocSpec("a1", parent="dept", max_jobs=2, max_wall=86400.0),
                     AssocSpec("a1", "u1", max_jobs=2, max_submit_jobs=5, max_tres_per_job=(("cpu", 4),),
                               max_wall=86400.0))
    assert notes == ["association dept: GrpTRES billing=10 has no model (only cpu, mem, node, gres/gpu are "
                     "counted)"]
    assert ASSOCIATIONS_COMMAND[-1] == "format=" + ",".join(
        (*ASSOCIATION_COLUMNS[:7], "MaxSubmitJobs", "MaxTRES", "MaxWallDurationPerJob", "GrpTRESMins",
         "GrpTRESRunMins", "MaxTRESMinsPerJob", "GrpSubmitJobs", "GrpWall", "MaxTRESPerNode", "Partition"))
    # the four columns DJSB asked before: the accounts, no limit
    four = parse_association_limits("root|||1\na1||root|1\na1|u1||1\n")
    assert four == ((AssocSpec("root"), AssocSpec("a1")), [])


def test_a_bad_association_limit_names_the_file_line_and_key() -> None:
    with pytest.raises(ConfigError, match="assoc.txt:2: --associations: MaxWall 'soon' is not a Slurm time"):
        parse_association_limits("root|||1\na1||root|1||||||soon\n", "assoc.txt", "--associations")


def test_deny_on_limit_refuses_a_job_over_an_association_limit_at_submission() -> None:
    # _acct_policy_validate with strict_checking (the QoS's DenyOnLimit): job 1's 3 CPUs are over a1's
    # MaxTRES cpu=2 by themselves: refused at submission (WAIT_ASSOC_MAX_CPU_PER_JOB), not left pending.
    result = run([job(1, 0, 3, 100), job(2, 0, 2, 100)], AssocSpec("a1", max_tres_per_job=(("cpu", 2),)),
                 qos=QosSpec("normal", deny_on_limit=True))
    assert never(result) == {1: "AssocMaxCpuPerJobLimit"}
    assert starts(result) == {2: 0}


def test_the_invariant_checker_catches_a_start_over_an_association_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # With the pre-select check switched off, job 2 starts at 0 over a1's GrpJobs 1: the checker,
    # counting afresh over the running jobs below a1, must refuse it.
    monkeypatch.setattr(AssocLimits, "allows", lambda self, job, path: True)
    with pytest.raises(InvariantViolation, match="GrpJobs 1"):
        run([job(1, 0, 1, 100), job(2, 0, 1, 100, user="u2")], AssocSpec("a1", grp_jobs=1))


def test_backfill_skips_a_job_an_association_grp_tres_holds() -> None:
    # One node of 4 cores, a1's GrpTRES cpu=5. Job 1 (u1@a1, 3 CPUs) runs [0, 100). Job 2 (u2@a1, 4 CPUs,
    # t=1) does not fit now, and 3 + 4 > 5 CPUs of a1: backfill.c _attempt_backfill skips a job
    # acct_policy_job_runnable_post_select refuses, so it gets no reservation, and job 3 (u3@a2, 1 CPU,
    # 200 s, t=2) starts at once on the free core. Job 2 starts when job 3 ends (at 100 a1 holds 0
    # CPUs, but 3 cores are free only): 202. Were job 2 reserved at 100, job 3 would wait.
    jobs = [job(1, 0, 3, 100), job(2, 1, 4, 100, user="u2"), job(3, 2, 1, 200, user="u3", account="a2")]
    result = run(jobs, AssocSpec("a1", grp_tres=(("cpu", 5),)))
    assert starts(result) == {1: 0, 2: 202, 3: 2}
