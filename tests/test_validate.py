"""``djsb validate`` tells every kind of config apart and checks it with that kind's reader."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support import TraceFile

from djsb.cli import main
from djsb.validate import validate

REPO = Path(__file__).resolve().parent.parent
KINDS = {
    "local-quick.yaml": "run", "paper-marenostrum.yaml": "run", "paper-simulated-busy.yaml": "run",
    "paper-simulated.yaml": "run", "sge-local.yaml": "run", "simulated-busy-quick.yaml": "run",
    "simulated-quick.yaml": "run", "slurm-mini.yaml": "run", "lsf-quick.yaml": "run",
    "metacentrum-geometry.yaml": "simulate", "metacentrum-own.yaml": "simulate",
    "simulate-kth-easy.yaml": "simulate", "simulate-lanl-mn4.yaml": "simulate",
    "wrappers-vertical-empty.yaml": "wrappers",
    "pool-baseline.yaml": "sweep", "pool-n1-sweep.yaml": "sweep", "psp-scenarios.yaml": "sweep",
    "sweep-seeds.yaml": "sweep", "wrappers-dynamic-sweep.yaml": "sweep", "wrappers-static-sweep.yaml": "sweep",
    "metacentrum-policy-change.yaml": "sweep", "wrappers-contended-fairshare.yaml": "sweep",
}


def test_every_config_in_configs_is_listed() -> None:
    assert {p.name for p in (REPO / "configs").glob("*.yaml")} == set(KINDS)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_config_in_configs_is_valid_and_of_its_kind(name: str, trace: TraceFile) -> None:
    path = REPO / "configs" / name
    for needed in re.findall(r"shared/data/traces/([\w.-]+)", path.read_text()):
        trace(needed)  # a config that names a real trace is read only where that trace is
    assert validate(path).kind == KINDS[name]


def test_the_calibration_fixture_is_a_calibrate_config() -> None:
    assert validate(REPO / "tests" / "fixtures" / "calibrate" / "calibrate.yaml").kind == "calibrate"


def test_a_pool_config_without_sweep(tmp_path: Path) -> None:
    path = tmp_path / "pool.yaml"
    path.write_text("seed: 1\npool: {days: 3, generate: {clusters: 2, computers: 10}}\n"
                    "workload: {generate: {tasks: 20, days: 1}}\npolicy: {abandon: {rule: X0}}\n")
    assert validate(path).kind == "pool"


def test_the_command_checks_several_files_and_says_each_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(REPO / "configs" / "local-quick.yaml"),
                 str(REPO / "configs" / "wrappers-vertical-empty.yaml")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "valid run config; job module local" in out[0]
    assert "valid wrappers config; strategies none, vertical" in out[1]


def test_a_file_of_no_kind_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "what.yaml"
    path.write_text("colour: blue\n")
    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err.startswith(f"djsb: error: {path}:1: (top level): not a djsb config")


def test_a_bad_value_names_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text((REPO / "configs" / "wrappers-vertical-empty.yaml").read_text().replace(
        "run_time: 1800", "run_time: soon"))
    assert main(["validate", str(path)]) == 2
    assert "workflow.run_time: expected a number of seconds (quoted or not), or a Slurm time" in capsys.readouterr().err
