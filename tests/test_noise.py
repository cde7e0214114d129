"""Measurement noise made visible: the pure checks worked by hand, summary.csv's warnings
and empty CIs, and the figure's individual samples where a CI is missing."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from djsb import noise
from djsb.harness.rundir import RunDirectory
from djsb.report import summary_warnings, write_report
from djsb.report.summary import run_notes, summary_table


def test_coefficient_of_variation_worked_by_hand() -> None:
    # [10, 11, 12]: mean 11, sample variance ((-1)^2 + 0 + 1^2) / (3 - 1) = 1, std 1 -> CV = 1/11 = 0.0909
    assert noise.coefficient_of_variation([10, 11, 12]) == pytest.approx(0.0909, abs=1e-4)
    # [8, 12]: mean 10, variance (4 + 4) / 1 = 8, std 2.828 -> CV 0.2828
    assert noise.coefficient_of_variation([8, 12]) == pytest.approx(0.2828, abs=1e-4)
    assert noise.coefficient_of_variation([5]) is None


def test_relative_drift_worked_by_hand() -> None:
    # calibration 12 s, reference mean 13.8 s: (13.8 - 12) / 12 = +0.15
    assert noise.relative_drift(12, 13.8) == pytest.approx(0.15)
    assert noise.relative_drift(0, 5) is None


def test_reference_notes_name_the_threshold() -> None:
    # simulation: CV of [10, 11, 12] = 0.0909 < 0.10 and drift (11 - 10.5)/10.5 = +4.8%: quiet.
    # analytics: CV of [2, 3] = 0.7071/2.5 = 0.283 > 0.10; drift (2.5 - 2)/2 = +25% > 10%
    notes = noise.reference_notes({"simulation": [10.5], "analytics": [2.0]},
                                  {"simulation": [10, 11, 12], "analytics": [2, 3]})
    assert notes == ["analytics reference runs vary by CV 0.28 > 0.1",
                     "analytics reference mean drifted +25% from calibration (limit 10%)"]


def test_load_warning_per_cpu() -> None:
    # 1.2 on 2 CPUs = 0.6 per CPU > 0.5; 0.9 on 2 CPUs = 0.45: quiet
    assert noise.load_warning(1.2, 2) == "machine busy: load 1.20 on 2 CPUs (0.60 per CPU > 0.5)"
    assert noise.load_warning(0.9, 2) is None


def test_cell_warnings_for_slowdowns_below_one_and_dynamicity_above_one() -> None:
    quiet = noise.cell_warnings({"slowdown_s": 1.3, "slowdown_a": 0.96, "dynamicity": 0.8})
    assert quiet == []
    # 0.90 < 0.95 and dynamicity 1.08 > 1.05 (eq. (2): > 1 only through a slowdown < 1)
    flagged = noise.cell_warnings({"slowdown_s": 1.0, "slowdown_a": 0.90, "dynamicity": 1.08})
    assert flagged[:2] == ["slowdown_a 0.90 < 0.95", "dynamicity 1.08 > 1.05"]
    assert "noise" in flagged[2]


def _samples(values: dict[tuple[str, int], list[float]]) -> pd.DataFrame:
    """samples.csv rows: every metric of a sample equal to its given slowdown, for simple arithmetic."""
    rows = []
    for (scenario, n_a), slowdowns in values.items():
        for sample, sd in enumerate(slowdowns):
            rows.append({"scenario": scenario, "n_a": n_a, "sample": sample, "slowdown_s": sd, "slowdown_a": sd,
                         "t_s": sd, "t_a": sd, "w_s": 1.0, "w_a": 1.0, "dynamicity": 1 / sd})
    return pd.DataFrame(rows)


def test_summary_ci_needs_three_samples_and_warnings_column() -> None:
    samples = _samples({("oversubscription", 1): [1.2, 1.4], ("oversubscription", 2): [1.1, 1.2, 1.3],
                        ("stopcont", 1): [0.9, 0.8, 0.85]})
    summary = summary_table(samples, notes=["machine busy: load 1.20 on 2 CPUs (0.60 per CPU > 0.5)"])
    two, three, fast = (summary.iloc[i] for i in range(3))
    assert math.isnan(two["slowdown_s_ci95"]) and two["slowdown_s"] == pytest.approx(1.3)
    # [1.1, 1.2, 1.3]: std 0.1, t(0.975, 2) = 4.303 -> 4.303 * 0.1 / sqrt(3) = 0.24844
    assert three["slowdown_s_ci95"] == pytest.approx(0.24844, abs=1e-3)  # the table rounds t to 3 decimals
    # mean 1.2: no cell warning, only the run's note
    assert three["warnings"] == "machine busy: load 1.20 on 2 CPUs (0.60 per CPU > 0.5)"
    # stopcont: mean slowdown 0.85 < 0.95; dynamicity mean(1/0.9, 1/0.8, 1/0.85) = 1.1765 > 1.05
    assert fast["warnings"].startswith("slowdown_s 0.85 < 0.95; slowdown_a 0.85 < 0.95; dynamicity 1.18 > 1.05")
    lines = summary_warnings(summary)
    assert "slowdown_s 0.85 < 0.95 [stopcont/n_a=1]" in lines
    assert "machine busy: load 1.20 on 2 CPUs (0.60 per CPU > 0.5)" in lines  # every row: no cell list


def test_summary_says_how_many_samples_have_no_dynamicity() -> None:
    samples = _samples({("stopcont", 1): [1.2, 1.4, 1.3]})
    samples.loc[1, "dynamicity"] = math.nan  # eq. (2) undefined in that sample (weights without a positive sum)
    row = summary_table(samples).iloc[0]
    assert math.isnan(row["dynamicity"])
    assert row["slowdown_s"] == pytest.approx(1.3)
    assert "dynamicity undefined in 1 of 3 samples" in row["warnings"]


def _job(stage: str, app: str, exec_s: float, sample: int = 0) -> dict[str, object]:
    return {"stage": stage, "scenario": "", "n_a": 0, "sample": sample, "app": app, "state": "COMPLETED",
            "exec": exec_s}


def test_run_notes_from_jobs_and_meta() -> None:
    jobs = pd.DataFrame([_job("calibration", "simulation", 12.0), _job("calibration", "analytics", 2.0),
                         _job("reference", "simulation", 12.0), _job("reference", "simulation", 12.4, 1),
                         _job("reference", "analytics", 2.0), _job("reference", "analytics", 3.0, 1)])
    # the 3.1 load sample is taken after the reference stage (the run's own jobs): not a warning
    meta = {"load": [{"stage": "reference", "at": "start", "load_1min": 1.5, "cpus": 2},
                     {"stage": "reference", "at": "end", "load_1min": 3.1, "cpus": 2}]}
    # analytics [2, 3]: CV 0.283; drift (2.5 - 2) / 2 = +25%. simulation [12, 12.4]: CV 0.0233, drift +1.7%
    assert run_notes(jobs, meta) == ["analytics reference runs vary by CV 0.28 > 0.1",
                                     "analytics reference mean drifted +25% from calibration (limit 10%)",
                                     "machine busy: load 1.50 on 2 CPUs (0.75 per CPU > 0.5)"]


def test_report_writes_warnings_and_plots_samples_without_ci(tmp_path: Path) -> None:
    run = RunDirectory.create(tmp_path / "run", {}, {"load": [
        {"stage": "reference", "at": "start", "load_1min": 0.1, "cpus": 2}]})
    rows = [_job("calibration", "simulation", 10.0), _job("calibration", "analytics", 2.0),
            _job("reference", "simulation", 10.0), _job("reference", "analytics", 2.0)]
    # one oversubscription cell with n_a = 1 and two samples: the simulation took 9 s (slowdown 0.9)
    for sample in (0, 1):
        rows += [{**_job("execution", "simulation", 9.0, sample), "scenario": "oversubscription", "n_a": 1},
                 {**_job("execution", "analytics", 3.0, sample), "scenario": "oversubscription", "n_a": 1}]
    frame = pd.DataFrame(rows)
    frame["submit"] = frame["start"] = 0.0
    frame["end"] = frame["response"] = frame["exec"]
    frame["cpus"] = [2 if app == "simulation" else 1 for app in frame["app"]]
    frame.to_csv(run.path / "jobs.csv", index=False)
    summary = write_report(run.path)
    written = pd.read_csv(run.path / "summary.csv", keep_default_na=False)
    assert written["slowdown_s_ci95"].tolist() == [""]  # two samples: no CI
    # slowdown_s = 9 / 10 = 0.9 < 0.95
    assert written["warnings"].iloc[0].startswith("slowdown_s 0.90 < 0.95")
    assert summary["samples"].iloc[0] == 2
    assert (run.path / "figures" / "slowdown_s.png").is_file()
    # report.html lists the warning too (the one cell: no cell list), escaped
    assert "<li>slowdown_s 0.90 &lt; 0.95</li>" in (run.path / "report.html").read_text()


def test_plot_shows_samples_where_the_ci_is_missing() -> None:
    import matplotlib.pyplot as plt
    from matplotlib.collections import PathCollection

    from djsb.report.plots import _panel

    samples = _samples({("oversubscription", 1): [1.2, 1.4], ("oversubscription", 2): [1.1, 1.2, 1.3]})
    fig, ax = plt.subplots()
    _panel(ax, summary_table(samples), "slowdown_s", "(a)", samples)
    scattered = [c for c in ax.collections if isinstance(c, PathCollection)]
    # only n_a = 1 (2 samples) is drawn as points; n_a = 2 (3 samples) has an error bar instead
    # (one scenario present: no dodge, its points sit at n_a itself)
    assert len(scattered) == 1
    assert np.asarray(scattered[0].get_offsets()).tolist() == [[1.0, 1.2], [1.0, 1.4]]
    plt.close(fig)


def test_driver_records_the_machine_load_in_meta(tmp_path: Path) -> None:
    import os

    from djsb.clock import WallClock
    from djsb.config import load_config
    from djsb.harness.driver import Driver
    from djsb.jobs.loader import load_job_module
    from djsb.transport import LocalTransport

    config = load_config(Path(__file__).resolve().parent.parent / "configs" / "local-quick.yaml")
    transport = LocalTransport()
    run = RunDirectory.create(tmp_path / "run", {}, {})
    said: list[str] = []
    driver = Driver(config, load_job_module("local", {}, transport), run, WallClock(), transport, tmp_path,
                    progress=said.append)
    before = os.getloadavg()[0]
    driver.records.record_load("reference", "start")
    driver.records.record_load("reference", "end")
    after = os.getloadavg()[0]
    samples = run.meta()["load"]
    assert [(s["stage"], s["at"]) for s in samples] == [("reference", "start"), ("reference", "end")]
    assert samples[0]["cpus"] == os.cpu_count()
    assert min(before, after) - 0.01 <= samples[0]["load_1min"] <= max(before, after) + 0.01
    # a warning only for the sample before the reference stage, and only on a busy machine
    busy = noise.load_warning(samples[0]["load_1min"], samples[0]["cpus"])
    assert said == ([f"warning: {busy}"] if busy else [])
