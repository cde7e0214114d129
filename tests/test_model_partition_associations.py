"""Associations of one partition (djsb/model/assoc_spec.py ``AssocTree.partition_of``): a job of a user
in an account and partition gets the user's association of that partition when there is one, else the
one without partition, as Slurm 22.05's job_mgr.c ``_job_create`` asks assoc_mgr.c
``assoc_mgr_fill_in_assoc`` with ``assoc_rec.partition`` the job's partition (``_find_assoc_rec`` with
the partition first, then without). That association's limits, its own or inherited from its account
(its parent: not the user's association without partition), hold the job, checked by acct_policy.c
``acct_policy_job_runnable_pre_select`` (MaxJobs at the user association, GrpJobs at each level) and
``_post_select`` (GrpTRES at each level). Every expected start is worked by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import FIVE_JOBS, assert_edited_experiment_error, reasons, starts

from djsb.errors import ConfigError
from djsb.model import ClusterSpec, QosSpec, SchedulerConfig, Simulation, SimulationResult
from djsb.model.assoc_spec import AssocSpec, AssocTree
from djsb.model.cluster_spec import NodeSpec, PartitionSpec
from djsb.model.invariants import InvariantChecker
from djsb.simulate.experiment import load_experiment
from djsb.slurmsite.assoc_text import parse_association_limits
from djsb.slurmsite.slurm_config import ASSOCIATIONS_COMMAND, parse_associations
from djsb.workloads.job import TraceJob


def job(job_id: int, cpus: int, partition: str, user: str = "u1") -> TraceJob:
    """A job of ``user`` in account a1 and ``partition``, submitted at 0, asking ``cpus`` for 100 s."""
    return TraceJob(job_id, 0.0, 100.0, cpus, requested_time=100.0, user=user, account="a1",
                    partition=partition)


def run(jobs: list[TraceJob], *associations: AssocSpec) -> SimulationResult:
    """``jobs`` under ``associations`` on two nodes of 4 cores, n0 in partition p1 and n1 in p2."""
    spec = ClusterSpec((NodeSpec("n0", 4), NodeSpec("n1", 4)),
                       (PartitionSpec("p1", nodes=("n0",)), PartitionSpec("p2", nodes=("n1",))),
                       (QosSpec("normal"),), associations=associations)
    config = SchedulerConfig(sched_interval=0.0, bf_interval=0.0, bf_resolution=0.0, backfill="easy")
    return Simulation(jobs, spec, config, checker=InvariantChecker(spec)).run()


def test_a_job_gets_its_partition_s_association_else_the_one_without() -> None:
    # a1 MaxJobs 2; u1@a1 MaxJobs 1; u1@a1 of partition p2 sets none: it inherits a1's 2 (its parent is
    # a1, not u1@a1). Jobs 1 and 2 in p1: no association of p1, they get u1@a1: job 1 at 0, job 2 held
    # (used_jobs 1 >= MaxJobs 1, AssocMaxJobsLimit) until job 1 ends at 100. Jobs 3, 4, 5 in p2 get
    # u1@a1 of p2, which counts them alone: 3 and 4 at 0 (0, 1 < 2), 5 at 100 when 3 and 4 end.
    # Taking every job to u1@a1 instead (no partition rule) would run one at a time: 0, 100, ..., 400.
    jobs = [job(1, 1, "p1"), job(2, 1, "p1"), job(3, 1, "p2"), job(4, 1, "p2"), job(5, 1, "p2")]
    result = run(jobs, AssocSpec("a1", max_jobs=2), AssocSpec("a1", "u1", max_jobs=1),
                 AssocSpec("a1", "u1", partition="p2"))
    assert starts(result) == {1: 0.0, 2: 100.0, 3: 0.0, 4: 0.0, 5: 100.0}
    assert reasons(result)[2] == reasons(result)[5] == "AssocMaxJobsLimit"


def test_a_partition_s_association_holds_its_own_grp_tres_and_counts_in_its_account() -> None:
    # u1@a1 of p2 GrpTRES cpu=2; a1 GrpJobs 3 (every job below a1 counts there). In queue order at 0:
    # job 1 (2 CPUs, p2): a1 0 < 3, u1@a1 of p2 0 + 2 <= 2: starts. Job 2 (1 CPU, p2): 2 + 1 > 2 at
    # u1@a1 of p2 (AssocGrpCpuLimit). Job 3 (2 CPUs, p1) gets u1@a1 (not declared: no limit of its own):
    # a1 1 < 3, starts. Job 4 (u2, p1): a1 2 < 3, starts. Job 5 (u2, p1): a1 3 >= 3 (AssocGrpJobsLimit).
    # At 100 jobs 1, 3, 4 end: job 2 (a1 0 < 3, 0 + 1 <= 2) and job 5 (a1 1 < 3) start.
    # Without the partition's association job 2 would start at 0 and hold a1's third job: 4 and 5 at 100.
    jobs = [job(1, 2, "p2"), job(2, 1, "p2"), job(3, 2, "p1"), job(4, 1, "p1", "u2"), job(5, 1, "p1", "u2")]
    result = run(jobs, AssocSpec("a1", grp_jobs=3), AssocSpec("a1", "u1", partition="p2", grp_tres=(("cpu", 2),)))
    assert starts(result) == {1: 0.0, 2: 100.0, 3: 0.0, 4: 0.0, 5: 100.0}
    assert reasons(result)[5] == "AssocGrpJobsLimit"  # job 2's too, once a1 held 3 jobs at 0


def test_a_partition_s_association_gives_its_max_wall_to_a_job_asking_none() -> None:
    # _acct_policy_validate's _validate_time_limit: a job without --time gets its association's MaxWall.
    # u1@a1 of p2 MaxWall 50 s: job 1 in p2 (running 100 s) runs under 50 s and ends at its limit; job 2
    # in p1 (u1@a1 MaxWall 80 s) under 80 s.
    jobs = [TraceJob(i, 0.0, 100.0, 1, user="u1", account="a1", partition=part) for i, part in ((1, "p2"), (2, "p1"))]
    result = run(jobs, AssocSpec("a1", "u1", max_wall=80.0), AssocSpec("a1", "u1", partition="p2", max_wall=50.0))
    assert dict(zip(result.jobs["job_id"], result.jobs["end"], strict=True)) == {1: 50.0, 2: 80.0}


def test_only_a_user_s_association_has_a_partition_and_once() -> None:
    with pytest.raises(ConfigError, match="association a1: only a user's association has a partition"):
        AssocTree((AssocSpec("a1", partition="p2"),))
    with pytest.raises(ConfigError, match="association u1@a1 partition p2 given twice"):
        AssocTree((AssocSpec("a1", "u1", partition="p2"), AssocSpec("a1", "u1", partition="p2")))
    AssocTree((AssocSpec("a1", "u1"), AssocSpec("a1", "u1", partition="p2")))  # siblings


ASSOCIATIONS = """\
root|||1|||||||||||||
a1||root|1|||2||||||||||
a1|u1||1|||1||||||||||
a1|u1||5|||2||||||||||p2
a1|u2||1|||||||||||||p2
"""
"""ASSOCIATIONS_COMMAND's 17 columns, the last Partition: u1 has an association without partition
(MaxJobs 1) and one of p2 (Share 5, a1's MaxJobs 2 printed as inherited); u2 only one of p2, without
a limit."""


def test_sacctmgr_s_partition_column_is_read() -> None:
    assert ASSOCIATIONS_COMMAND[-1].endswith(",MaxTRESPerNode,Partition")
    found, notes = parse_association_limits(ASSOCIATIONS)
    # a user association of a partition is kept without a limit: it alone holds u2's jobs in p2
    assert found == (AssocSpec("root"), AssocSpec("a1", max_jobs=2), AssocSpec("a1", "u1", max_jobs=1),
                     AssocSpec("a1", "u1", max_jobs=2, partition="p2"), AssocSpec("a1", "u2", partition="p2"))
    assert notes == []
    tree = parse_associations(ASSOCIATIONS)
    assert tree.pairs == (("u1", "a1"),)
    assert tree.notes == (
        "association u1@a1 of partition p2: its own fair-share leaf (Share 5, usage) has no model; its jobs "
        "count in u1@a1",
        "association u2@a1 of partition p2: its own fair-share leaf (Share 1, usage) has no model; its jobs "
        "count in u2@a1")


SIMULATE = FIVE_JOBS + """\
cluster:
  nodes:
    - {count: 1, cores: 4}
  associations:
    - {account: a1, user: u1, partition: batch, max_jobs: 1}
"""
"""A simulate config with a user association of one partition (line 7)."""


def test_the_partition_is_read_from_a_config(tmp_path: Path) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text(SIMULATE)
    assert load_experiment(path).cluster.associations == (AssocSpec("a1", "u1", max_jobs=1, partition="batch"),)
    assert_edited_experiment_error(tmp_path, SIMULATE, "user: u1, ", "", 7, "cluster.associations[0]",
                                   "only a user's association has a partition")
