"""One grammar for every time a config gives (djsb.yamlnodes.parse_duration / as_duration): Slurm's
sbatch --time forms with ':' or '-', a bare number in the unit its key documents whether quoted or
not, and UNLIMITED / INFINITE only where the key takes no limit. Expected values are worked by hand
from the forms' fields (days x 86400 + hours x 3600 + minutes x 60 + seconds)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from djsb.calibrate.spec import load_calibration
from djsb.cli import main
from djsb.config import config_from_tree
from djsb.errors import ConfigError
from djsb.pool.config import read_experiment
from djsb.simulate import load_experiment
from djsb.yamlnodes import UNLIMITED, Located, TimeUnit, as_duration, load_yaml, parse_duration
from job_modules.simulated import SimulatedJobModule

FIXTURES = Path(__file__).resolve().parent / "fixtures"
GRAMMAR_S = ("a number of seconds (quoted or not), or a Slurm time MM:SS, HH:MM:SS, D-HH, D-HH:MM or "
             "D-HH:MM:SS")


def node(value: object) -> Located:
    return Located(value, 7, "section.key", "c.yaml")


@pytest.mark.parametrize(("text", "seconds"), [
    ("1-02:03:04", 1 * 86400 + 2 * 3600 + 3 * 60 + 4),  # 93784
    ("5:30", 5 * 60 + 30),  # minutes:seconds, 330
    ("90:00", 90 * 60),
    ("1:30:00", 1 * 3600 + 30 * 60),  # 5400
    ("00:01:30", 90),
    ("2-12", 2 * 86400 + 12 * 3600),  # days-hours, 216000
    ("1-0:30", 86400 + 30 * 60),  # days-hours:minutes, 88200
    ("12-00:00:00", 12 * 86400),
    ("10:00.250", 600.25),  # sacct prints fractions of a second
    (" 0:45 ", 45),
])
@pytest.mark.parametrize("unit", ["s", "min", "h"])
def test_slurm_forms_do_not_depend_on_the_unit(text: str, seconds: float, unit: TimeUnit) -> None:
    assert parse_duration(text, unit) == seconds
    assert as_duration(node(text), unit=unit) == seconds


@pytest.mark.parametrize(("value", "unit", "seconds"), [
    (90, "min", 5400.0), ("90", "min", 5400.0), (90, "s", 90.0), ("90", "s", 90.0),
    (1.5, "s", 1.5), ("1.5", "s", 1.5), (2, "h", 7200.0), ("2", "h", 7200.0), ("1", "day", 86400.0),
    (0, "s", 0.0), ("1.5e3", "s", 1500.0),
])
def test_a_bare_number_is_in_the_keys_unit_quoted_or_not(value: str | float, unit: TimeUnit,
                                                          seconds: float) -> None:
    assert parse_duration(value, unit) == seconds
    assert as_duration(node(value), unit=unit) == seconds


def test_quoted_and_unquoted_yaml_give_the_same_seconds(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("plain: 90\nquoted: '90'\nfloat: 2.5\nquoted_float: \"2.5\"\n")
    keys = load_yaml(path).mapping()
    units: tuple[tuple[TimeUnit, int], ...] = (("s", 1), ("min", 60))
    for unit, scale in units:
        assert as_duration(keys["plain"], unit=unit) == as_duration(keys["quoted"], unit=unit) == 90 * scale
        assert as_duration(keys["float"], unit=unit) == as_duration(keys["quoted_float"], unit=unit) == 2.5 * scale


@pytest.mark.parametrize("word", ["UNLIMITED", "unlimited", "Infinite", " INFINITE "])
def test_no_limit_only_where_the_key_takes_it(word: str) -> None:
    assert parse_duration(word, "s", unlimited=True) == UNLIMITED == math.inf
    assert as_duration(node(word), unit="min", minimum=1, strict=True, unlimited=True) == math.inf
    with pytest.raises(ConfigError) as refused:
        as_duration(node(word), unit="s")
    assert refused.value.one_line() == (f"c.yaml:7: section.key: no limit ({word.strip()}) is not accepted "
                                        f"here: expected {GRAMMAR_S}")


@pytest.mark.parametrize("value", ["1h", "1:2:3:4", "1-", "-5", "1-2-3", "", "90 min", "1:30:", True, [1],
                                   None, math.inf, math.nan, ".inf", "1e400", 10**400, "9" * 400 + ":00"])
def test_anything_else_is_one_line_naming_the_grammar(value: object) -> None:
    with pytest.raises(ConfigError) as bad:
        as_duration(node(value), unit="s")
    line = bad.value.one_line()
    assert line.startswith(f"c.yaml:7: section.key: expected {GRAMMAR_S}, got "), line
    assert "\n" not in line


def test_bounds_hold_in_seconds_for_every_form() -> None:
    with pytest.raises(ConfigError, match=r"must be a time > 0 s, got '0:00' \(0 s\)"):
        as_duration(node("0:00"), unit="min", strict=True)
    with pytest.raises(ConfigError, match=r"must be a time >= 1 s, got 0.5 \(0.5 s\)"):
        as_duration(node(0.5), unit="s", minimum=1)
    assert as_duration(node("0:01"), unit="min", minimum=1) == 1.0  # 1 s, not 1 minute
    with pytest.raises(ConfigError, match="must be a time >= 0 s"):
        as_duration(node(-1), unit="s")


# ---------------------------------------------------------------- through the command line

SIMULATE = """\
workload:
  generator: poisson_exponential
  params: {n_jobs: 20, arrival_rate: 0.1, service_rate: 0.02}
cluster:
  nodes: [{count: 2, cores: 4}]
  partitions: [{name: batch, max_time: "00:01:30"}, {name: long, max_time: UNLIMITED}]
  qos: [{name: normal, max_wall: "2-12"}]
policy:
  scheduler: {backfill: easy, bf_window: "1-00:00:00", bf_resolution: "1:00", kill_wait: "30"}
"""

RUN = """\
general: {num_of_samples: 1, sleep_min_time: '1', sleep_max_time: '0:02', num_of_dyn_analysis: [1],
          scenarios: [oversubscription], poll_interval: '0.5'}
job_module: {name: local, options: {cpus: '0', kill_grace: '0:03'}}
simulation: {total_tasks: 1, cpus_per_task: 1, total_memory: 64MiB, exec_time: "00:01:30"}
analytics: {total_tasks: 1, cpus_per_task: 1, total_memory: 16MiB, exec_time: 1}
"""


def validates(capsys: pytest.CaptureFixture[str], path: Path, kind: str) -> None:
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out.startswith(f"{path}: valid {kind} config")


def test_simulate_times_as_slurm_writes_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text(SIMULATE)
    validates(capsys, path, "simulate")
    experiment = load_experiment(path)
    assert experiment.scheduler.bf_window == 86400.0
    assert experiment.scheduler.bf_resolution == 60.0
    assert experiment.scheduler.kill_wait == 30.0
    assert [p.max_time for p in experiment.cluster.partitions] == [90.0, None]
    assert experiment.cluster.qos[0].max_wall == 2 * 86400 + 12 * 3600
    path.write_text(SIMULATE.replace('bf_window: "1-00:00:00"', "bf_window: unlimited"))
    assert load_experiment(path).scheduler.bf_window == math.inf


@pytest.mark.parametrize(("old", "new", "message"), [
    ('kill_wait: "30"', "kill_wait: UNLIMITED",
     f"sim.yaml:9: policy.scheduler.kill_wait: no limit (UNLIMITED) is not accepted here: expected {GRAMMAR_S}"),
    ('bf_window: "1-00:00:00"', "bf_window: 1d",
     f"sim.yaml:9: policy.scheduler.bf_window: expected {GRAMMAR_S}, or UNLIMITED, got '1d'"),
    ('max_time: "00:01:30"', "max_time: '0:00'",
     "sim.yaml:6: cluster.partitions[0].max_time: must be a time >= 1 s, got '0:00' (0 s)"),
])
def test_a_bad_time_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str,
                                            message: str) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text(SIMULATE.replace(old, new))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"djsb: error: {tmp_path}/{message}"], err


def test_run_config_times_as_slurm_writes_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(RUN)
    validates(capsys, path, "run")
    config = config_from_tree(load_yaml(path))
    assert config.simulation.exec_time == 90.0
    assert (config.general.sleep_min_time, config.general.sleep_max_time) == (1.0, 2.0)
    assert config.general.poll_interval == 0.5


def test_calibrate_poll_interval_as_slurm_writes_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(FIXTURES / "calibrate" / "kth_sp2_window.swf", tmp_path)
    text = (FIXTURES / "calibrate" / "calibrate.yaml").read_text()
    assert "  poll_interval: 2\n" in text
    path = tmp_path / "calibrate.yaml"
    path.write_text(text.replace("  poll_interval: 2\n", "  poll_interval: '0:05'\n"))
    validates(capsys, path, "calibrate")
    assert load_calibration(path).poll_interval == 5.0


def test_simulated_module_reads_its_scheduler_times() -> None:
    values = SimulatedJobModule.read_options({"time_limit": "UNLIMITED", "eligibility_delay": "0:02",
                                              "scheduler": {"bf_window": "1-00:00:00", "bf_interval": "30"}})
    assert values["time_limit"] is None
    assert values["eligibility_delay"] == 2.0
    assert values["scheduler"] == {"bf_window": 86400.0, "bf_interval": 30.0}
    assert SimulatedJobModule.read_options({"time_limit": "1:30:00"})["time_limit"] == 5400.0


def test_workflow_times_as_slurm_writes_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "wrappers.yaml"
    path.write_text("workload: {generator: empty}\n"
                    "cluster: {nodes: [{count: 2, cores: 8}], partitions: [{name: p, max_time: '2-00'}]}\n"
                    "workflow: {shape: vertical, count: 3, cpus: 4, run_time: '30:00', submit: '1:00:00',\n"
                    "           strategy: [none, vertical], limits: {max_wallclock: '1-00'}}\n")
    validates(capsys, path, "wrappers")
    plan = load_experiment(path).workflow
    assert plan is not None
    assert plan.submit == 3600.0
    assert {job.run_time for job in plan.workflow.jobs} == {1800.0}
    assert plan.limits.max_wallclock == 86400.0  # below the partition's 2 days (172800 s)


POOL = """\
seed: 1
pool:
  days: 2
  failure_repair_hours: "1:30:00"
  sleep_after_minutes: 0.7
  clusters: [{name: lib, computers: 4, type: normal, open_hour: 0, close_hour: 24,
              mean_idle_minutes: "6:11:00", mean_session_minutes: "60"}]
workload: {generate: {tasks: 20, days: "1-00"}}
policy: {abandon: {rule: A1, t_hours: "1-00"}, placement: C1}
"""


def test_pool_times_in_the_unit_their_key_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "pool.yaml"
    path.write_text(POOL)
    validates(capsys, path, "pool")
    experiment = read_experiment(load_yaml(path), tmp_path)
    assert experiment.pool.failure_repair_hours == 1.5  # 5400 s in hours
    assert experiment.pool.sleep_after_minutes == 0.7  # an unquoted number is kept as written
    assert experiment.pool.clusters[0].mean_idle_minutes == 6 * 60 + 11
    assert experiment.pool.clusters[0].mean_session_minutes == 60.0
    assert getattr(experiment.abandon, "t_hours") == 24.0  # noqa: B009 - a field of the A1 policy only
    path.write_text(POOL.replace('t_hours: "1-00"', "t_hours: UNLIMITED"))
    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"djsb: error: {path}:9: policy.abandon.t_hours: no limit (UNLIMITED) is not accepted here: expected a "
        "number of hours (quoted or not), or a Slurm time MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS\n")
