"""``bf_max_job_array_resv`` (djsb/model/array_resv.py): a backfill pass reserves for at most
so many tasks of one job array (sched/backfill's ``_attempt_backfill``, backfill.c: ``test_array_count``
checked before its ``goto next_task``), worked by hand on small clusters for both planners."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import FIVE_JOBS, assert_experiment_error, model_starts

from djsb.model import ClusterSpec
from djsb.model.invariants import InvariantChecker
from djsb.model.scheduler import SchedulerConfig
from djsb.simulate import load_experiment
from djsb.slurmsite.slurm_config import scheduler_config
from djsb.workloads.job import TraceJob


def task(job_id: int, submit: float, cpus: int, run: float, array_id: int, index: int) -> TraceJob:
    """Task ``index`` of job array ``array_id``, asking ``cpus`` CPUs for exactly ``run`` seconds."""
    return TraceJob(job_id, submit, run, cpus, requested_time=run, array_task=(array_id, index))


def job(job_id: int, submit: float, cpus: int, run: float) -> TraceJob:
    """A job outside any array, asking ``cpus`` CPUs for exactly ``run`` seconds."""
    return TraceJob(job_id, submit, run, cpus, requested_time=run)


FOUR_TASKS = [job(1, 0, 5, 100), *(task(i, 1, 2, 100, 2, i - 2) for i in range(2, 6)), job(6, 2, 1, 200)]
"""J1 (5 CPUs, 0-100) leaves 1 CPU free; array 2's four tasks (J2-J5, 2 CPUs x 100 s) wait for it and
block the main pass; S = J6 (1 CPU, 200 s) fits the free CPU now, until 100 at least."""

PLANNERS = [("profile", ClusterSpec.homogeneous(1, 6)), ("will_run", ClusterSpec.homogeneous(6, 1))]
"""6 CPUs: one node of 6 cores for the model's planner, 6 nodes of 1 for the will-run one (which
reserves whole nodes)."""


def config(planner: str, limit: int) -> SchedulerConfig:
    """Conservative backfill (every job tested reserves) every 10 s, unrounded, main passes at events."""
    return SchedulerConfig(backfill="conservative", sched_interval=0, bf_interval=10, bf_resolution=0,
                           bf_planner=planner, bf_max_job_array_resv=limit)


@pytest.mark.parametrize(("planner", "cluster"), PLANNERS)
def test_a_pass_reserves_for_at_most_so_many_tasks_of_an_array(planner: str, cluster: ClusterSpec) -> None:
    # The backfill pass at 10 (J2-J5 pending since 1, S since 2; the main passes start only J1):
    # default 20 (and 3): J2, J3, J4 reserve 2 CPUs each over [100, 200), all 6; J5 reserves at 200.
    #   S would run 10-210: at 100 no CPU is left for it, so it is reserved at 200 and starts then,
    #   beside J5 (the main pass at 200, when J2-J4 end). J2-J4 start at 100.
    # bf_max_job_array_resv 2: J2 and J3 reserve [100, 200) (4 CPUs; test_array_count reaches 2, so
    #   _attempt_backfill leaves the array's record: J4 and J5 are neither tested nor reserved for).
    #   S has 1 CPU over [10, 100) and 2 over [100, 200): it starts at 10. At 100 J2, J3 start (4 CPUs +
    #   S's 1); J4 needs 2 of the 1 left and waits for 200 with J5.
    jobs = FOUR_TASKS
    waits = {1: 0, 2: 100, 3: 100, 4: 100, 5: 200, 6: 200}
    assert model_starts(jobs, cluster, config(planner, 20)) == waits
    assert model_starts(jobs, cluster, config(planner, 3)) == waits
    backfilled = {1: 0, 2: 100, 3: 100, 4: 200, 5: 200, 6: 10}
    assert model_starts(jobs, cluster, config(planner, 2)) == backfilled
    assert model_starts(jobs, cluster, config(planner, 1)) == backfilled  # J2 alone reserves: 4 CPUs left


def test_the_limit_holds_each_array_and_the_invariants_keep() -> None:
    # J4 and J5 as tasks of a second array (4): limit 2 is each array's. The pass at 10: J2, J3 (array 2)
    # and J4 (array 4) reserve [100, 200), all 6 CPUs; J5 (array 4's second) reserves [200, 300). S finds
    # no CPU at 100, is reserved at 200 and starts then, as with the default (the checker sees no
    # reservation delayed by a start).
    cluster = ClusterSpec.homogeneous(1, 6)
    jobs = [*FOUR_TASKS[:3], *(task(i, 1, 2, 100, 4, i - 4) for i in (4, 5)), FOUR_TASKS[-1]]
    checker = InvariantChecker(cluster)
    assert model_starts(jobs, cluster, config("profile", 2), checker) == \
        {1: 0, 2: 100, 3: 100, 4: 100, 5: 200, 6: 200}


@pytest.mark.parametrize(("planner", "cluster"), PLANNERS)
def test_with_0_no_task_is_backfilled(planner: str, cluster: ClusterSpec) -> None:
    # J1 (4 CPUs, 0-100) leaves 2 free; J2 (6 CPUs) waits for it, reserved at 100 (6 CPUs, to 200),
    # blocking the main pass. T = J3, a task (2 CPUs, 50 s), fits now beside J1 and ends before J2's
    # reservation: the pass at 10 backfills it. With 0, _job_runnable_now drops every array record
    # (pend_run_tasks 0 >= 0): T waits for the main pass at 200, when J2 ends.
    jobs = [job(1, 0, 4, 100), job(2, 1, 6, 100), task(3, 2, 2, 50, 3, 0)]
    assert model_starts(jobs, cluster, config(planner, 20)) == {1: 0, 2: 100, 3: 10}
    assert model_starts(jobs, cluster, config(planner, 0)) == {1: 0, 2: 100, 3: 200}


def test_slurm_conf_and_a_config_give_it_in_slurms_range(tmp_path: Path) -> None:
    # slurm.conf(5): default 20, min 0, max 1000 (backfill.c MAX_BF_MAX_JOB_ARRAY_RESV)
    assert SchedulerConfig().bf_max_job_array_resv == 20
    assert scheduler_config({"SchedulerParameters": "bf_max_job_array_resv=0"}).bf_max_job_array_resv == 0
    assert scheduler_config({"SchedulerParameters": "bf_max_job_array_resv=5"}).bf_max_job_array_resv == 5
    path = tmp_path / "sim.yaml"
    text = FIVE_JOBS + "cluster:\n  nodes: [{count: 2, cores: 2}]\npolicy:\n  scheduler:\n" \
        "    bf_max_job_array_resv: LIMIT\n"
    path.write_text(text.replace("LIMIT", "3"))
    assert load_experiment(path).scheduler.bf_max_job_array_resv == 3
    path.write_text(text.replace("LIMIT", "1001"))
    assert_experiment_error(path, 7, "policy.scheduler.bf_max_job_array_resv", "must be <= 1000")


def test_a_trace_without_array_tasks_is_unchanged() -> None:
    # the same jobs outside any array: no count, whatever the limit (J4 reserves as J2 and J3 do)
    jobs = [TraceJob(j.job_id, j.submit, j.run_time, j.cpus, requested_time=j.requested_time) for j in FOUR_TASKS]
    for limit in (0, 2, 20):
        assert model_starts(jobs, ClusterSpec.homogeneous(1, 6), config("profile", limit))[6] == 200
