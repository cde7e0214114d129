"""The stdout contract of every command: the same summary block at the end (what ran, where the
results are, headline numbers with units), or with --json the same content as one JSON object and
nothing else on stdout; metrics.json's ``units`` map beside its values."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from djsb.cli import build_parser, main
from djsb.commands.calibrate import calibration_outcome
from djsb.completion import subcommands
from djsb.outcome import Headline, Outcome, as_json, summary_block
from djsb.progress import NORMAL, set_verbosity

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def normal_verbosity() -> None:
    """main() sets the process's verbosity: every test starts from the default."""
    set_verbosity(NORMAL)


def test_the_block_and_its_json_say_the_same() -> None:
    outcome = Outcome("simulate", "x.yaml replayed", Path("runs/x"),
                      [Headline("jobs", 50, "jobs"), Headline("mean_wait", 812.4375, "s"),
                       Headline("slowdown", 1.5, "1"), Headline("empty", float("nan"), "s")])
    # 4 significant digits, no unit for a ratio, '-' for a value that does not exist
    assert summary_block(outcome).splitlines() == [
        "djsb simulate: x.yaml replayed", "  results: runs/x", "  jobs       50 jobs",
        "  mean_wait  812.4 s", "  slowdown   1.5", "  empty      - s"]
    assert json.loads(as_json(outcome)) == {
        "command": "simulate", "ran": "x.yaml replayed", "results": "runs/x", "details": None,
        "headline": {"jobs": {"value": 50, "unit": "jobs"}, "mean_wait": {"value": 812.4375, "unit": "s"},
                     "slowdown": {"value": 1.5, "unit": "1"}, "empty": {"value": None, "unit": "s"}}}


def test_every_command_but_completion_takes_json() -> None:
    for name, sub in subcommands(build_parser()).items():
        options = {option for action in sub.parser._actions for option in action.option_strings}
        assert ("--json" in options) == (name != "completion"), name


def simulate_config(tmp_path: Path) -> Path:
    config = tmp_path / "sim.yaml"
    config.write_text("workload: {generator: poisson_exponential, params: {n_jobs: 50, arrival_rate: 0.1, "
                      "service_rate: 0.02}}\ncluster: {nodes: [{count: 2, cores: 2}]}\noutput: {plots: false}\n")
    return config


def test_simulate_json_is_the_only_stdout_and_its_numbers_are_the_job_tables(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["simulate", "--json", str(simulate_config(tmp_path)), "-o", str(out)]) == 0
    printed = capsys.readouterr()
    ended = json.loads(printed.out)  # the whole of stdout is one object
    assert "jobs 50/50" in printed.err  # progress went to stderr
    assert (ended["command"], ended["results"]) == ("simulate", str(out))
    jobs = pd.read_csv(out / "jobs.csv")
    headline = ended["headline"]
    assert headline["jobs"] == {"value": 50, "unit": "jobs"}
    assert headline["mean_wait"]["unit"] == "s"
    assert headline["mean_wait"]["value"] == pytest.approx((jobs["start"] - jobs["submit"]).mean())
    assert headline["makespan"] == {"value": pytest.approx(jobs["end"].max() - jobs["submit"].min()),
                                    "unit": "s"}
    # utilisation: core-seconds used over 2 x 2 cores x makespan, a fraction
    used = (jobs["cpus"] * jobs["run_time"]).sum() / (4 * headline["makespan"]["value"])
    assert headline["utilisation"] == {"value": pytest.approx(used), "unit": "1"}
    metrics = json.loads((out / "metrics.json").read_text())
    units = metrics["units"]
    assert units["mean_wait"] == units["p95_wait"] == units["makespan"] == "s" and units["jobs"] == "jobs"
    assert set(units) <= set(metrics) and metrics["mean_wait"] == headline["mean_wait"]["value"]


def test_simulate_ends_with_the_block(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    config = simulate_config(tmp_path)
    assert main(["simulate", str(config), "-o", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"djsb simulate: {config} replayed on the scheduler model"
    assert lines[1] == f"  results: {out}"
    assert lines[2].split() == ["jobs", "50", "jobs"]
    assert [line.split()[0] for line in lines[3:]] == [
        "rejected", "mean_wait", "p95_wait", "mean_bounded_slowdown", "utilisation", "makespan"]


def test_validate_json_names_each_file_and_counts_the_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    files = [REPO / "configs" / name for name in ("simulate-kth-easy.yaml", "sweep-seeds.yaml",
                                                  "pool-baseline.yaml", "simulated-quick.yaml")]
    assert main(["validate", "--json", *map(str, files)]) == 0
    ended = json.loads(capsys.readouterr().out)
    assert [row["file"] for row in ended["details"]] == list(map(str, files))
    kinds = [row["kind"] for row in ended["details"]]
    assert kinds[3] == "run" and kinds[0] == "simulate"
    assert sum(h["value"] for h in ended["headline"].values()) == 4
    assert all(h["unit"] == "files" for h in ended["headline"].values())


def test_run_json_counts_the_cells_and_gives_each_scenarios_last_numbers(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = yaml.safe_load((REPO / "configs" / "simulated-quick.yaml").read_text())
    config["general"].update(num_of_samples=1, scenarios=["stopcont", "dynamic"])
    path = tmp_path / "quick.yaml"
    path.write_text(yaml.safe_dump(config))
    run = tmp_path / "run"
    assert main(["run", "--json", str(path), "-o", str(run)]) == 0
    ended = json.loads(capsys.readouterr().out)
    headline = ended["headline"]
    # a calibration cell, a reference cell and 2 scenarios x n_a 1, 2 x 1 sample = 4 execution
    # cells (paper 001 sec. 4), none failed
    assert headline["cells"] == {"value": 1 + 1 + 4, "unit": "cells"}
    assert headline["failed_cells"]["value"] == headline["outage_cells"]["value"] == 0
    summary = pd.read_csv(run / "summary.csv").set_index(["scenario", "n_a"])
    for scenario in ("stopcont", "dynamic"):
        assert headline[f"dynamicity[{scenario}, n_a=2]"] == {
            "value": pytest.approx(summary.loc[(scenario, 2), "dynamicity"]), "unit": "1"}
    # configs/simulated-quick.yaml worked by hand: the analytics' slowdown is 1 under stop&continue
    # and 2 in the dynamic scenario (4 of 8 threads' bandwidth)
    assert headline["slowdown_a[stopcont, n_a=2]"]["value"] == pytest.approx(1.0, rel=0.02)
    assert headline["slowdown_a[dynamic, n_a=2]"]["value"] == pytest.approx(2.0, rel=0.02)
    assert len(ended["details"]) == 4  # summary.csv's rows


def test_calibrate_ends_with_the_models_errors_against_slurm(tmp_path: Path) -> None:
    # comparison.json as djsb calibrate writes it (djsb.calibrate.compare.Comparison.as_dict); the
    # model's mean wait 110 s against Slurm's 100 s is a +10% error
    model = {"jobs": 12, "tau": 0.94, "start_error_mean": 1.5, "start_error_median": 1.0, "start_error_max": 4.0,
             "mean_wait_a": 100.0, "mean_wait_b": 110.0, "mean_wait_error": (110.0 - 100.0) / 100.0,
             "backfilled_a": [], "backfilled_b": []}
    (tmp_path / "comparison.json").write_text(json.dumps({"notes": [], "model vs slurm_1": model}))
    ended = json.loads(as_json(calibration_outcome(Path("c.yaml"), tmp_path, "a line\nresults in x")))
    assert ended["headline"] == {"jobs": {"value": 12, "unit": "jobs"}, "kendall_tau": {"value": 0.94, "unit": "1"},
                                 "start_error_mean": {"value": 1.5, "unit": "s"},
                                 "start_error_max": {"value": 4.0, "unit": "s"},
                                 "mean_wait_error": {"value": pytest.approx(10.0), "unit": "%"}}
    assert ended["details"] == ["a line", "results in x"]
