"""The model's scheduler options, one declaration each (djsb/model/scheduler.py): the reference page
is generated from them, and each option is read, checked and blamed at its own key's line."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from support import assert_experiment_error

from djsb.model.scheduler import SETTINGS, SchedulerConfig, reference
from djsb.simulate import load_experiment

ROOT = Path(__file__).resolve().parents[1]
SIMULATE = """\
seed: 1
workload: {generator: poisson_exponential, params: {n_jobs: 5, arrival_rate: 0.1, service_rate: 0.1}}
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
