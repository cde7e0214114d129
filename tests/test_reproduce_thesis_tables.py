"""The static experiment's report from a sweep.csv (004 Tables A.1-A.4, 4.1, eq. 4.1), on made-up data
whose answers are known: waits follow the thesis' own fit exactly, priorities are linear in fair share."""

from __future__ import annotations

import itertools
import json
import math
import statistics
from pathlib import Path

import pandas as pd
import pytest

from djsb.plotting import PAPER_LABEL, paper_points, plt
from djsb.reproduce.paper_004 import paper_fit
from djsb.reproduce.thesis_tables import (
    correlation_table,
    dynamic_tables,
    fit_exponential,
    fit_figure,
    static_tables,
    write_static_report,
)

A, B = 7.4689, 657.56  # eq. 4.1 as fitted in 004 fig. 4.1
SHARES = (0.01, 0.1, 0.2, 0.25, 0.3, 0.5, 0.7, 0.75, 0.8, 0.9)
SPREAD = {1: 0.9, 2: 1.0, 3: 1.1}  # seed -> factor on the wait: the mean over seeds is the curve itself


def made_up_sweep() -> pd.DataFrame:
    rows = [{"point": k, "seed": seed, "workflow.run_time": rt, "workflow.cpus": cpus,
             "workflow.fairshare_target": fs, "workflow_queue_time_s": B * math.exp(-A * fs) * SPREAD[seed],
             "workflow_priority_at_start": 100000 * fs + seed}
            for k, (seed, rt, cpus, fs) in enumerate(itertools.product(
                SPREAD, (1800, 3600, 7200, 12600), (96, 192, 384, 672, 1152), SHARES))]
    return pd.DataFrame(rows)


def test_fit_recovers_the_thesis_parameters() -> None:
    xs = [x for x in SHARES if x >= 0.1]
    a, b = fit_exponential(xs, [B * math.exp(-A * x) for x in xs])
    assert (a, b) == (pytest.approx(A, rel=1e-6), pytest.approx(B, rel=1e-6))


def test_tables_aggregate_over_the_workloads() -> None:
    # Cell (1800 s, 96 CPUs, 0.5): waits B e^(-0.5 A) x 0.9 / 1.0 / 1.1, priorities 50001 ... 50003.
    cells = static_tables(made_up_sweep())
    assert len(cells) == 4 * 5 * 10
    cell = cells[(cells["workflow.run_time"] == 1800) & (cells["workflow.cpus"] == 96)
                 & (cells["workflow.fairshare_target"] == 0.5)].iloc[0]
    curve = B * math.exp(-0.5 * A)
    assert (cell["Tq_mean"], cell["Tq_max"], cell["Tq_min"]) == (
        pytest.approx(curve), pytest.approx(1.1 * curve), pytest.approx(0.9 * curve))
    assert (cell["P_mean"], cell["P_max"], cell["P_min"]) == (pytest.approx(50002), 50003, 50001)


def test_correlation_table_against_an_independent_pearson() -> None:
    cells = static_tables(made_up_sweep())
    frame = correlation_table(cells)

    def table(row: str, column: str) -> float:
        return float(frame[column][row])
    # The design is balanced and the wait does not depend on run time or CPUs: correlation 0.
    assert abs(table("Runtime", "Tq_mean")) < 1e-9
    assert abs(table("CPUs", "Tq_max")) < 1e-9
    # Fair share against the mean wait: Python's statistics.correlation over the 200 cells' values.
    fs = [fs for _ in range(20) for fs in SHARES]
    expected = statistics.correlation(fs, [B * math.exp(-A * x) for x in fs])
    assert table("Fair share", "Tq_mean") == pytest.approx(expected)
    assert table("Fair share", "P_mean") == pytest.approx(1.0)  # P is linear in fair share here


def test_report_files(tmp_path: Path) -> None:
    made_up_sweep().to_csv(tmp_path / "sweep.csv", index=False)
    out = write_static_report(tmp_path / "sweep.csv", tmp_path / "report")
    names = sorted(p.name for p in out.iterdir())
    assert names == ["fit.json", "table_4_1_correlation.csv", "table_A1_runtime_1800s.csv",
                     "table_A2_runtime_3600s.csv", "table_A3_runtime_7200s.csv", "table_A4_runtime_12600s.csv",
                     "wait_boxplots.png", "wait_vs_fairshare.png"]
    fit = json.loads((out / "fit.json").read_text())
    assert (fit["a"], fit["b"]) == (pytest.approx(A, rel=1e-6), pytest.approx(B, rel=1e-6))


def test_dynamic_tables_improvement_column() -> None:
    # Three rows of Table 4.2 (004) as input: A.2 at fair share 1.0 unwrapped 134 s, wrapped 4 s:
    # delta 130, 130 / 134 = 97.01 %; A.1 at 6.9e-3: 1047 vs 1294: delta -247, -23.59 %; A.1 at 1.0:
    # 0 vs 0: 0 %. Instants sort into labels A.1 (10 h), A.2 (15 h).
    rows = [("vertical", "none", 36000, 1.0, 0.0), ("vertical", "vertical", 36000, 1.0, 0.0),
            ("vertical", "none", 54000, 1.0, 134.0), ("vertical", "vertical", 54000, 1.0, 4.0),
            ("vertical", "none", 36000, 6.9e-3, 1047.0), ("vertical", "vertical", 36000, 6.9e-3, 1294.0)]
    sweep = pd.DataFrame(rows, columns=["workflow.shape", "workflow.strategy", "workflow.submit",
                                        "workflow.fairshare_target", "workflow_queue_time_s"])
    table = dynamic_tables(sweep)
    assert list(table["label"]) == ["A.1", "A.2", "A.1"]
    assert list(table["workflow.fairshare_target"]) == [1.0, 1.0, 6.9e-3]
    assert list(table["delta"]) == [0.0, 130.0, -247.0]
    assert [round(v, 2) for v in table["improvement_pct"]] == [0.0, 97.01, -23.59]


def test_fig_4_1_draws_the_thesis_fit_from_its_claims() -> None:
    # the thesis' curve 657.56 e^(-7.4689 x) dashed in every panel; at fair share 0.1 it is 311.57 s
    # and at 1.0 0.3751 s (worked by hand: e^-0.74689 = 0.47384, e^-7.4689 = 0.00057043)
    assert paper_fit() == (A, B)
    fig = fit_figure(static_tables(made_up_sweep()), (1.0, 100.0), "made-up", paper_fit())
    try:
        panels = [ax for ax in fig.axes if ax.get_title().startswith("run time")]
        assert len(panels) == 4
        for ax in panels:
            points = dict(paper_points(ax))
            assert points[0.1] == pytest.approx(311.57, abs=0.01)
            assert points[1.0] == pytest.approx(0.3751, abs=1e-4)
        assert PAPER_LABEL in panels[0].get_legend_handles_labels()[1]
        assert paper_points(fit_figure(static_tables(made_up_sweep()), (A, B), "no paper").axes[0]) == []
    finally:
        plt.close("all")
