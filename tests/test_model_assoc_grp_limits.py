"""Association GrpSubmitJobs, GrpWall and MaxTRESPerNode as Slurm 22.05 enforces them with
AccountingStorageEnforce=limits (djsb/model/assoc_limits.py, djsb/model/assoc_spec.py, the wall usage
in djsb/model/tres_minutes.py). Each expected start or refusal is worked out by hand from the Slurm
function cited: acct_policy.c ``_acct_policy_validate`` (GrpSubmitJobs against ``used_submit_jobs`` at
each level of the path; with DenyOnLimit ``_validate_time_limit`` on GrpWall and
``_validate_tres_limits_for_assoc`` on MaxTRESPerNode), ``acct_policy_job_runnable_pre_select``
(GrpWall against ``grp_used_wall / 60``), ``acct_policy_job_runnable_post_select`` (MaxTRESPerNode:
the job's TRES divided by its node count), and priority_multifactor.c's decay thread, which alone adds
to and decays ``grp_used_wall`` (``_apply_new_usage``: ``run_delta * decay_factor ** run_delta`` per
running job; ``_apply_decay``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import FIVE_JOBS, assert_edited_experiment_error, never, reasons, starts

from djsb.model import ClusterSpec, QosSpec, SchedulerConfig, Simulation, SimulationResult
from djsb.model.assoc_spec import AssocSpec
from djsb.model.cluster_spec import NodeSpec, PartitionSpec
from djsb.model.invariants import InvariantChecker
from djsb.model.priority.base import PriorityPlugin
from djsb.model.priority.multifactor import MultifactorPriority, MultifactorWeights
from djsb.simulate.experiment import load_experiment
from djsb.slurmsite.assoc_text import parse_association_limits
from djsb.workloads.job import TraceJob


def job(job_id: int, submit: float, cpus: int, run: float, user: str = "u1", account: str = "a1",
        limit: float | None = -1.0, **more: Any) -> TraceJob:
    """A job asking ``cpus`` for ``limit`` (by default exactly its run time; None: no --time)."""
    return TraceJob(job_id, submit, run, cpus, requested_time=run if limit == -1.0 else limit, user=user,
                    account=account, **more)


def run(jobs: list[TraceJob], *associations: AssocSpec, qos: QosSpec | None = None, cores: int = 4,
        nodes: int = 1, priority: PriorityPlugin | None = None, safe: bool = False) -> SimulationResult:
    """``jobs`` on ``nodes`` nodes of ``cores`` under ``associations``, one QoS ``qos`` (none: normal)
    and ``priority`` (none: FIFO, priority/basic, no decay thread); ``safe``: AccountingStorageEnforce=safe."""
    spec = ClusterSpec(tuple(NodeSpec(f"n{i}", cores) for i in range(nodes)), (PartitionSpec("batch"),),
                       (qos or QosSpec("normal"),), associations=associations)
    config = SchedulerConfig(sched_interval=0.0, bf_interval=0.0, bf_resolution=0.0, backfill="easy",
                             enforce_safe=safe)
    return Simulation(jobs, spec, config, priority, checker=InvariantChecker(spec)).run()


# ----------------------------------------------------------------- GrpSubmitJobs
def test_grp_submit_jobs_counts_pending_and_running_jobs_of_the_account() -> None:
    # One core, a1 GrpSubmitJobs 2. _acct_policy_validate at a1: job 1 (u1) used_submit_jobs 0 + 1 <= 2,
    # starts at 0; job 2 (u2) 1 + 1 <= 2, pends behind job 1; job 3 (u3) 2 + 1 > 2 -> WAIT_ASSOC_GRP_SUB_JOB
    # ("AssocGrpSubmitJobsLimit"): refused, though its user association has no limit. Job 1 ends at 100
    # (acct_policy_remove_job_submit): job 4 (u1) at 150 finds 1 + 1 <= 2, starts after job 2, at 200.
    jobs = [job(1, 0, 1, 100), job(2, 0, 1, 100, user="u2"), job(3, 0, 1, 100, user="u3"),
            job(4, 150, 1, 100)]
    result = run(jobs, AssocSpec("a1", grp_submit_jobs=2), cores=1)
    assert never(result) == {3: "AssocGrpSubmitJobsLimit"}
    assert starts(result) == {1: 0, 2: 100, 4: 200}


def test_grp_submit_jobs_of_a_parent_counts_every_account_below_it() -> None:
    # a1 and a2 under dept (GrpSubmitJobs 2): _adjust_limit_usage adds a submission at every level of the
    # path, so jobs 1 (a1) and 2 (a2) make dept's used_submit_jobs 2 and job 3 (a2) is refused at dept
    # (AssocGrpSubmitJobsLimit); job 4 of a3, outside dept, is accepted.
    tree = (AssocSpec("dept", grp_submit_jobs=2), AssocSpec("a1", parent="dept"), AssocSpec("a2", parent="dept"))
    jobs = [job(1, 0, 1, 100), job(2, 0, 1, 100, user="u2", account="a2"),
            job(3, 0, 1, 100, user="u3", account="a2"), job(4, 0, 1, 100, user="u4", account="a3")]
    result = run(jobs, *tree)
    assert never(result) == {3: "AssocGrpSubmitJobsLimit"}
    assert starts(result) == {1: 0, 2: 0, 4: 0}


# ----------------------------------------------------------------- GrpWall
def multifactor() -> MultifactorPriority:
    """priority/multifactor with PriorityDecayHalfLife 1 h and PriorityCalcPeriod 5 minutes (the decay
    thread runs at 300, 600, ... s)."""
    return MultifactorPriority(MultifactorWeights(), decay_half_life=3600.0, calc_period=300.0)


def test_grp_wall_holds_until_the_decayed_wall_time_falls_under_it() -> None:
    # a1 GrpWall 20 minutes. decay_factor d = 1 - 0.693 / 3600, one 300 s period q = d ** 300 = 0.94388064.
    # Job 1 runs [0, 1800): each decay thread run at 300, ..., 1800 decays a1's grp_used_wall W by q, then
    # adds 300 q (_apply_new_usage's run_decay): W_6 = 300 (q + ... + q^6) = 1477.72 s = 24.63 min at 1800.
    # Job 2 submitted at 1800: pre_select's wall_mins (uint32)(1477.72 / 60) = 24 >= 20 ->
    # WAIT_ASSOC_GRP_WALL ("AssocGrpWallLimit"). Only decay now: 2100: 1394.79 s (23 min), 2400: 1316.52
    # (21), 2700: 1242.64 (20, still >= 20), 3000: 1172.90 s = 19.55 min, 19 < 20: job 2 starts at the
    # decay thread's run at 3000.
    jobs = [job(1, 0, 1, 1800), job(2, 1800, 1, 60)]
    result = run(jobs, AssocSpec("a1", grp_wall=1200), priority=multifactor())
    assert starts(result) == {1: 0, 2: 3000}
    assert reasons(result)[2] == "AssocGrpWallLimit"
    # a GrpWall of the parent account holds it the same (grp_used_wall is added at every level)
    tree = (AssocSpec("dept", grp_wall=1200), AssocSpec("a1", parent="dept"))
    assert starts(run(jobs, *tree, priority=multifactor())) == {1: 0, 2: 3000}
    # under priority/basic nothing adds to grp_used_wall: job 2 starts at its submission
    assert starts(run(jobs, AssocSpec("a1", grp_wall=1200))) == {1: 0, 2: 1800}


def test_safe_grp_wall_counts_the_job_s_own_limit() -> None:
    # AccountingStorageEnforce=safe, a1 GrpWall 10 min, priority/basic (grp_used_wall stays 0).
    # pre_select's safe_limits branch: 0 + job 1's 11 min > 10 -> AssocGrpWallLimit, and the usage never
    # goes below 0: it pends forever. Job 2's 10 min: 0 + 10 <= 10, starts at 0. Job 3 asks no time:
    # _validate_time_limit at submission gives it GrpWall's 10 min (_set_time_limit), and it starts.
    jobs = [job(1, 0, 1, 600, limit=660), job(2, 0, 1, 600), job(3, 0, 1, 300, limit=None)]
    result = run(jobs, AssocSpec("a1", grp_wall=600), safe=True)
    assert never(result) == {1: "never started: AssocGrpWallLimit"}
    assert starts(result) == {2: 0, 3: 0}
    assert result.jobs.set_index("job_id").loc[3, "requested_time"] == 600
    # without safe only the usage counts: job 1 starts too
    assert starts(run(jobs, AssocSpec("a1", grp_wall=600))) == {1: 0, 2: 0, 3: 0}


def test_deny_on_limit_refuses_a_limit_over_grp_wall_at_submission() -> None:
    # _acct_policy_validate with strict_checking (DenyOnLimit): _validate_time_limit finds job 1's 11 min
    # over a1's GrpWall 10 -> WAIT_ASSOC_GRP_WALL, refused by sbatch; job 2's 10 min is accepted.
    result = run([job(1, 0, 1, 600, limit=660), job(2, 0, 1, 600)], AssocSpec("a1", grp_wall=600),
                 qos=QosSpec("normal", deny_on_limit=True))
    assert never(result) == {1: "AssocGrpWallLimit"}
    assert starts(result) == {2: 0}


# ----------------------------------------------------------------- MaxTRESPerNode
def test_max_tres_per_node_divides_by_the_nodes_and_is_inherited() -> None:
    # a1 MaxTRESPerNode cpu=2, inherited by u1@a1 (pre-propagated). Two 4-core nodes. post_select's
    # _validate_tres_limits_for_assoc with divisor tres_req_cnt[NODE]: job 1, 4 CPUs on 2 nodes,
    # 4 / 2 = 2 <= 2, starts at 0; job 2, 3 CPUs on its one node, 3 > 2 -> WAIT_ASSOC_MAX_CPU_PER_NODE
    # ("AssocMaxCpuPerNode") at every pass: never starts. Job 3 (2 CPUs, one node) starts at 0.
    jobs = [job(1, 0, 4, 100, nodes=2), job(2, 0, 3, 100), job(3, 0, 2, 100)]
    result = run(jobs, AssocSpec("a1", max_tres_per_node=(("cpu", 2),)), nodes=2)
    assert never(result) == {2: "never started: AssocMaxCpuPerNode"}
    assert starts(result) == {1: 0, 3: 0}


def test_a_qos_max_tres_per_node_skips_the_association_s_and_deny_on_limit_refuses() -> None:
    # _validate_tres_limits_for_assoc skips a TRES qos_rec.max_tres_pn_ctld holds: the QoS's
    # MaxTRESPerNode cpu=3 leaves a1's cpu=2 unchecked, so the 3-CPU job starts at 0.
    limit = AssocSpec("a1", max_tres_per_node=(("cpu", 2),))
    assert starts(run([job(1, 0, 3, 100)], limit, qos=QosSpec("normal", max_tres_per_node=(("cpu", 3),)))) \
        == {1: 0}
    # with DenyOnLimit, _acct_policy_validate refuses it: 3 CPUs / 1 node asked > 2
    refused = run([job(1, 0, 3, 100)], limit, qos=QosSpec("normal", deny_on_limit=True))
    assert never(refused) == {1: "AssocMaxCpuPerNode"}


# ----------------------------------------------------------------- reading
SIMULATE = FIVE_JOBS + """\
cluster:
  nodes:
    - {count: 2, cores: 4}
  associations:
    - {account: dept, grp_submit_jobs: 10, grp_wall: "2:00:00"}
    - {account: a1, parent: dept, max_tres_per_node: "cpu=2,mem=1G"}
"""
"""A simulate config whose associations sit on lines 7-8."""


def test_the_three_limits_read_from_a_config(tmp_path: Path) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text(SIMULATE)
    assert load_experiment(path).cluster.associations == (
        AssocSpec("dept", grp_submit_jobs=10, grp_wall=7200.0),
        AssocSpec("a1", parent="dept", max_tres_per_node=(("cpu", 2), ("mem", 1024))))


@pytest.mark.parametrize(("old", "new", "line", "key", "needle"), [
    ("grp_submit_jobs: 10", "grp_submit_jobs: 0", 7, "cluster.associations[0].grp_submit_jobs", ">= 1"),
    ('grp_wall: "2:00:00"', "grp_wall: soon", 7, "cluster.associations[0].grp_wall", "soon"),
    ('"cpu=2,mem=1G"', '"node=1"', 8, "cluster.associations[1].max_tres_per_node", "unknown TRES 'node'"),
])
def test_a_bad_limit_is_blamed_at_its_key(tmp_path: Path, old: str, new: str, line: int, key: str,
                                         needle: str) -> None:
    assert_edited_experiment_error(tmp_path, SIMULATE, old, new, line, key, needle)


ASSOCIATIONS = """\
root|||1||||||||||||
dept||root|1||||||||||10|2:00:00|
a1||dept|1||||||||||||cpu=2,node=1
a1|u1||1||||||||||||cpu=2,node=1
"""
"""ASSOCIATIONS_COMMAND's 16 columns, the last three GrpSubmit, GrpWall (sacctmgr's print_fields_time)
and MaxTRESPerNode; u1's row carries a1's MaxTRESPerNode, inherited."""


def test_sacctmgr_s_grp_submit_grp_wall_and_max_tres_per_node_are_read() -> None:
    found, notes = parse_association_limits(ASSOCIATIONS)
    assert found == (AssocSpec("root"), AssocSpec("dept", grp_submit_jobs=10, grp_wall=7200.0),
                     AssocSpec("a1", parent="dept", max_tres_per_node=(("cpu", 2),)),
                     AssocSpec("a1", "u1", max_tres_per_node=(("cpu", 2),)))
    assert notes == [f"association {who}: MaxTRESPerNode node=1 has no model (only cpu, mem, node, gres/gpu "
                     "are counted)" for who in ("a1", "u1@a1")]
