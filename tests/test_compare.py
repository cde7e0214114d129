"""djsb compare: Welch's test against numbers worked by hand, the alignment of runs on their shared
cells, the config diff, and the command end to end on two real simulated runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from djsb.cli import main
from djsb.report.compare import compare_samples, config_differences, flatten, welch

ROOT = Path(__file__).resolve().parent.parent
T_975_2 = 4.302652729749462
"""Student's t quantile 0.975 at 2 degrees of freedom (tables: 4.303), the 95% CI of 3 samples."""


def test_welch_against_the_hand_worked_statistic_and_degrees_of_freedom() -> None:
    # base 1, 2, 3: mean 2, variance 1; other 4, 6, 8, 10: mean 7, variance 20/3.
    # Squared standard error 1/3 + (20/3)/4 = 2, so t = (7 - 2) / sqrt(2) = 3.5355;
    # df = 2^2 / ((1/3)^2 / 2 + (5/3)^2 / 3) = 4 / (1/18 + 25/27) = 216/53 = 4.0755.
    test = welch([1, 2, 3], [4, 6, 8, 10])
    assert test.t == pytest.approx(5 / math.sqrt(2), rel=1e-12)
    assert test.df == pytest.approx(216 / 53, rel=1e-12)
    # two-sided: 2 P(T > 3.5355) at 4.0755 df; between t tables' 0.05 (2.776 at 4 df) and 0.02 (3.747)
    assert test.p_value == pytest.approx(0.0233767676, rel=1e-8)
    assert test.significant and test.reason == ""
    swapped = welch([4, 6, 8, 10], [1, 2, 3])
    assert (swapped.t, swapped.df, swapped.p_value) == pytest.approx((-test.t, test.df, test.p_value))


def test_welch_gives_nan_and_says_why_when_no_test_can_be_made() -> None:
    one_sample = welch([1.0], [2.0, 3.0])
    assert math.isnan(one_sample.p_value) and not one_sample.significant
    assert one_sample.reason == "no test: fewer than 2 samples"
    assert welch([2.0, 2.0], [2.0, 2.0, 2.0]).reason == "no test: same constant samples"
    assert welch([2.0, 2.0], [3.0, 3.0]).reason == "no test: constant samples"
    # one constant side: the standard error is the other side's alone, sqrt(1/3); t = (3 - 5) / sqrt(1/3)
    # and df = (1/3)^2 / ((1/3)^2 / 2) = 2
    one_sided = welch([5.0, 5.0, 5.0], [2.0, 3.0, 4.0])
    assert (one_sided.t, one_sided.df) == pytest.approx((-2 * math.sqrt(3), 2.0))


def samples(rows: list[tuple[str, int, int, float]]) -> pd.DataFrame:
    """A samples.csv frame whose every metric of a row is its given value (a handy fake)."""
    metrics = ("slowdown_s", "slowdown_a", "t_s", "t_a", "w_s", "w_a", "dynamicity")
    return pd.DataFrame([{"scenario": s, "n_a": n, "sample": k, **dict.fromkeys(metrics, v)}
                         for s, n, k, v in rows])


def test_runs_are_aligned_on_their_shared_cells_with_means_cis_and_differences() -> None:
    base = samples([("dynamic", 1, 0, 1.0), ("dynamic", 1, 1, 2.0), ("dynamic", 1, 2, 3.0),
                    ("stopcont", 2, 0, 1.0), ("stopcont", 2, 1, 1.0)])
    other = samples([("dynamic", 1, 0, 4.0), ("dynamic", 1, 1, 6.0), ("dynamic", 1, 2, 8.0),
                     ("dynamic", 1, 3, 10.0), ("oversubscription", 1, 0, 9.0)])
    compare, unshared = compare_samples(["base", "other"], [base, other])
    assert set(zip(compare["scenario"], compare["n_a"], strict=True)) == {("dynamic", 1)}
    assert len(compare) == 7 * 2  # every metric, each run
    assert unshared.values.tolist() == [["oversubscription", 1, "other"], ["stopcont", 2, "base"]]
    rows = compare[compare["metric"] == "slowdown_s"].set_index("run")
    # base: mean 2, sd 1, CI 4.3027 / sqrt(3); other: mean 7, sd sqrt(20/3), 4 samples
    assert rows.loc["base", ["samples", "mean", "ci95"]].tolist() == pytest.approx([3, 2.0, T_975_2 / math.sqrt(3)])
    assert rows.loc["other", ["samples", "mean", "diff"]].tolist() == pytest.approx([4, 7.0, 5.0])
    assert rows.loc["other", ["t", "df"]].tolist() == pytest.approx([5 / math.sqrt(2), 216 / 53])
    assert bool(rows.loc["other", "significant"])
    assert math.isnan(rows.loc["base", "p_value"])  # the base is not tested against itself


def test_config_differences_list_the_keys_whose_values_differ() -> None:
    a = {"general": {"seed": 3, "scenarios": ["stopcont", "dynamic"]},
         "job_module": {"name": "simulated", "options": {"policy": "easy", "nodes": 4}}}
    b = {"general": {"seed": 3, "scenarios": ["dynamic"]},
         "job_module": {"name": "slurm", "options": {"nodes": 4, "partition": "debug"}}}
    assert flatten(a) == {"general.seed": 3, "general.scenarios": ["stopcont", "dynamic"],
                          "job_module.name": "simulated", "job_module.options.policy": "easy",
                          "job_module.options.nodes": 4}
    assert config_differences([a, b]) == [("general.scenarios", [["stopcont", "dynamic"], ["dynamic"]]),
                                          ("job_module.name", ["simulated", "slurm"]),
                                          ("job_module.options.policy", ["easy", None]),
                                          ("job_module.options.partition", [None, "debug"])]
    assert config_differences([a, a]) == []


def simulated_run(tmp_path: Path, name: str, policy: str, scenarios: list[str]) -> Path:
    """A run of configs/simulated-quick.yaml with 3 samples on 4 nodes busy with a synthetic background
    load (so samples differ) under ``policy``, for ``scenarios``."""
    config = yaml.safe_load((ROOT / "configs" / "simulated-quick.yaml").read_text())
    config["general"].update(num_of_samples=3, scenarios=scenarios, poll_interval=5)
    config["job_module"]["options"].update(
        nodes=4, policy=policy, time_limit=600,
        background={"synthetic": {"n_jobs": 400, "arrival_rate": 0.07, "service_rate": 0.01, "cpus": 4,
                                  "seed": 7}, "warmup": 600})
    config_path = tmp_path / f"{name}.yaml"
    config_path.write_text(yaml.safe_dump(config))
    run = tmp_path / name
    assert main(["run", str(config_path), "-o", str(run)]) == 0
    return run


def test_compare_two_simulated_runs_of_different_configs(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    easy = simulated_run(tmp_path, "easy", "easy", ["oversubscription", "stopcont", "dynamic"])
    fifo = simulated_run(tmp_path, "fifo", "fifo", ["stopcont", "dynamic"])
    capsys.readouterr()
    out = tmp_path / "compare"
    assert main(["compare", str(easy), str(fifo), "-o", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].split() == ["scenario", "n_a", "metric", "easy", "fifo", "fifo", "-", "easy"]
    assert printed[-4:-3] == [f"  results: {out}"]  # the summary block ends stdout

    table = pd.read_csv(out / "compare.csv", keep_default_na=False, na_values={"p_value": [""]})
    # only the scenarios both ran: 2 scenarios x 2 n_a x 7 metrics x 2 runs
    assert set(zip(table["scenario"], table["n_a"], strict=True)) == {
        ("stopcont", 1), ("stopcont", 2), ("dynamic", 1), ("dynamic", 2)}
    assert len(table) == 2 * 2 * 7 * 2
    assert (table["samples"] == 3).all()
    # each run's mean and CI are its summary.csv's; t is (mean fifo - mean easy) / sqrt(var_e/3 + var_f/3)
    # over the samples of samples.csv
    for run in (easy, fifo):
        summary = pd.read_csv(run / "summary.csv").set_index(["scenario", "n_a"])
        mine = table[table["run"] == run.name]
        assert mine["mean"].tolist() == pytest.approx(
            [summary.loc[(s, n), m] for s, n, m in zip(mine["scenario"], mine["n_a"], mine["metric"], strict=True)])
        assert mine["ci95"].tolist() == pytest.approx(
            [summary.loc[(s, n), f"{m}_ci95"] for s, n, m in zip(mine["scenario"], mine["n_a"], mine["metric"],
                                                                strict=True)])
    a, b = (pd.read_csv(run / "samples.csv").query("scenario == 'stopcont' and n_a == 1")["slowdown_s"]
            for run in (easy, fifo))
    row = table.query("scenario == 'stopcont' and n_a == 1 and metric == 'slowdown_s' and run == 'fifo'")
    assert float(row["t"].iloc[0]) == pytest.approx((b.mean() - a.mean()) / math.sqrt(a.var() / 3 + b.var() / 3))
    # every difference after the base is tested or says why not
    tested = table[table["run"] == "fifo"]
    assert (tested["p_value"].notna() | tested["note"].str.startswith("no test")).all()

    assert main(["compare", "--json", str(easy), str(fifo), "-o", str(tmp_path / "again")]) == 0
    headline = json.loads(capsys.readouterr().out)["headline"]
    assert headline["cells"] == {"value": 4, "unit": "cells"}
    assert headline["differences_tested"]["value"] == int(tested["p_value"].notna().sum()) <= 2 * 2 * 7
    assert headline["significant"]["value"] == int((tested["p_value"] < 0.05).sum())

    page = (out / "report.html").read_text()
    assert "job_module.options.policy" in page and "general.scenarios" in page
    assert "<td>oversubscription</td><td>1</td><td>easy</td>" in page  # not compared: only easy has it
    for metric in ("slowdown_s", "slowdown_a", "dynamicity"):
        assert (out / "figures" / f"compare_{metric}.png").stat().st_size > 10_000
        assert f'src="figures/compare_{metric}.png"' in page


def test_compare_needs_two_run_directories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(tmp_path), "-o", str(tmp_path / "out")]) == 2
    assert "needs two run directories" in capsys.readouterr().err
