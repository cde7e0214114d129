"""The model's scheduler options, one declaration each (djsb/model/scheduler.py): the reference page
is generated from them, and each option is read, checked and blamed at its own key's line."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from support import FIVE_JOBS, assert_experiment_error, model_starts, user_job

from djsb.model import ClusterSpec
from djsb.model.scheduler import SETTINGS, SchedulerConfig, reference
from djsb.simulate import load_experiment
from djsb.slurmsite.slurm_config import scheduler_config

ROOT = Path(__file__).resolve().parents[1]
SIMULATE = FIVE_JOBS + """\
cluster:
  nodes: [{count: 2, cores: 2}]
policy:
  scheduler:
    sched_interval: 10
    bf_interval: 5
    {key}: {value}
"""
"""A simulate config whose ninth line sets one scheduler option."""


def test_the_reference_page_is_the_declarations() -> None:
    page = (ROOT / "docs" / "reference" / "scheduler.md").read_text()
    assert page == reference(), "docs/reference/scheduler.md is stale: run make reference"


def test_the_reference_lists_every_option_with_its_default() -> None:
    page = reference()
    for name in SETTINGS:
        assert f"| `{name}` |" in page
    assert "| `bf_window` | 86400.0 | s | bf_window (minutes there) |" in page
    assert "`extend_limit` is set by `workload.at_time_limit: run`" in page


@pytest.mark.parametrize(("key", "value", "needle"), [
    ("backfill", "eazy", "unknown backfill policy 'eazy'"),
    ("bf_planner", "wil_run", "unknown backfill planner 'wil_run'"),
    ("node_select", "cons-tres", "expected one of first_fit, cons_tres, got 'cons-tres'"),
    ("bf_max_job_test", 0, "must be >= 1"),
    ("batch_sched_delay", "-5", "must be a time >= 0 s"),
    ("requeue_delay", "5", "must be >= 6 (AuthInfo cred_expire, at least 5 s"),
])
def test_a_bad_option_is_blamed_at_its_own_line(tmp_path: Path, key: str, value: object, needle: str) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text(SIMULATE.replace("{key}", key).replace("{value}", str(value)))
    assert_experiment_error(path, 9, f"policy.scheduler.{key}", needle)


@pytest.mark.parametrize(("key", "value", "field", "expected"), [
    ("backfill", "EASY", "backfill", "easy"), ("backfill", "Conservative", "backfill", "conservative"),
    ("bf_planner", "WILL_RUN", "bf_planner", "will_run"), ("node_select", "CONS_TRES", "node_select", "cons_tres"),
    ("bf_max_job_test", "UNLIMITED", "bf_max_job_test", math.inf),
    ("batch_sched_delay", "0:02", "batch_sched_delay", 2.0),
])
def test_names_in_any_case_and_every_option_readable(tmp_path: Path, key: str, value: str, field: str,
                                                     expected: object) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text(SIMULATE.replace("{key}", key).replace("{value}", str(value)))
    assert getattr(load_experiment(path).scheduler, field) == expected


def test_defaults_are_slurms() -> None:
    # slurm.conf(5), SchedulerParameters: sched_interval 60, bf_interval 30, bf_window 1440 minutes,
    # bf_resolution 60, bf_max_job_test 500, default_queue_depth 100, batch_sched_delay 3; KillWait 30
    config = SchedulerConfig()
    assert (config.sched_interval, config.bf_interval, config.bf_window, config.bf_resolution) == \
        (60.0, 30.0, 1440 * 60.0, 60.0)
    assert (config.bf_max_job_test, config.default_queue_depth, config.batch_sched_delay, config.kill_wait) == \
        (500, 100, 3.0, 30.0)


@pytest.mark.parametrize(("limit", "users"), [(SchedulerConfig(bf_max_job_user=1), "BBAAA"),
                                               (SchedulerConfig(bf_max_job_part=2), "abcde")])
def test_a_backfill_pass_tests_at_most_so_many_jobs_of_one_user_or_partition(limit: SchedulerConfig,
                                                                             users: str) -> None:
    # 1 node x 4 cores, one partition. J1 (2 cores) runs 0-100 and J2 (4 cores) waits for it, reserved
    # at 100, blocking the main pass. J3-J5 (1 core, 5 s) fit beside J1 before 100. Backfill every 10 s:
    # without a limit the pass at 10 starts J3 and J4 (2 free cores), J5 at 20. With bf_max_job_user 1
    # (J3-J5 are user A's) each pass tests one of A's jobs; with bf_max_job_part 2 (every job another
    # user's) each pass tests J2, which counts though it cannot start, and one more (backfill.c
    # _job_exceeds_max_bf_param). Either way J3 at 10, J4 at 20, J5 at 30; J2 starts at 100.
    jobs = [user_job(i, max(0, i - 1) if i < 3 else i, cpus, run, users[i - 1])
            for i, cpus, run in ((1, 2, 100), (2, 4, 10), (3, 1, 5), (4, 1, 5), (5, 1, 5))]
    cluster = ClusterSpec.homogeneous(1, 4)
    config = SchedulerConfig(sched_interval=0, bf_interval=10, bf_resolution=0)
    assert model_starts(jobs, cluster, config) == {1: 0, 2: 100, 3: 10, 4: 10, 5: 20}
    limited = dataclasses.replace(config, bf_max_job_user=limit.bf_max_job_user,
                                  bf_max_job_part=limit.bf_max_job_part)
    assert model_starts(jobs, cluster, limited) == {1: 0, 2: 100, 3: 10, 4: 20, 5: 30}


def test_slurm_conf_gives_bf_max_job_user_and_0_is_no_limit() -> None:
    assert scheduler_config({"SchedulerParameters": "bf_max_job_user=3"}).bf_max_job_user == 3
    assert scheduler_config({"SchedulerParameters": "bf_max_job_user=0"}).bf_max_job_user == math.inf
