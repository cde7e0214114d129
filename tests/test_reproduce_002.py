"""Paper 002's reproduction on hand-made runs: the claims of figs. 6, 7 and 11 are declared on runs
that exist and can fail, and policies.png carries Table II's and sec. VII's values from the claims."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from djsb.plotting import PAPER_LABEL, paper_points, plt
from djsb.reproduce.paper_002 import (
    FEW_SEEDS,
    FIGURE_CLAIMS,
    FIGURE_RUNS,
    HALF_ENERGY,
    POLICIES,
    bar_chart,
    checks_of,
    figure_rows,
    paper_marks,
)

SEEDS = (1, 2, 3)
METRICS = ("energy_kwh", "mean_overhead_minutes", "good_tasks_killed", "good_tasks")


def runs(policies: list[str], level: dict[str, float] | None = None, variant: str = "") -> pd.DataFrame:
    """One row per policy and seed: every metric ``level[policy]`` (10 unless given) plus 10 x seed."""
    return pd.DataFrame([{"variant": variant, "policy": policy, "seed": seed, "legacy_share": 0.2,
                          **{metric: (level or {}).get(policy, 10.0) + 10.0 * seed for metric in METRICS}}
                         for policy in policies for seed in SEEDS])


def test_figures_6_7_and_11_are_claims_on_runs_that_exist() -> None:
    sources = {source.split(" of 002")[0] for _, source, *_ in FIGURE_CLAIMS}
    assert {"Fig. 6 (a)", "Fig. 6 (b)", "Fig. 6 (c)", "Fig. 7 (a)", "Fig. 7 (b)", "Fig. 7 (c)",
            "Fig. 11 (c)"} <= sources
    for _, _, column, a, b, _ in FIGURE_CLAIMS:
        assert a in FIGURE_RUNS and b in FIGURE_RUNS and a != b and column in METRICS
    assert set(HALF_ENERGY) <= set(FIGURE_RUNS)
    assert len(FEW_SEEDS) == 10


def test_a_figure_claim_fails_when_the_pair_goes_the_other_way() -> None:
    # I1(12 h) using 5 kWh more than N1(2) on every pool: "I1 uses less energy than N1" fails
    figures = runs(list(FIGURE_RUNS), {"I1(12 h) C1": 15.0})
    rows = {row.claim.item: row for row in figure_rows(figures)}
    energy = rows["I1 uses less energy than N1"]
    assert (energy.measured.value, energy.measured.low, energy.measured.high) == (-5.0, -5.0, -5.0)
    assert energy.own_verdict() == "not reproduced"
    assert math.isnan(energy.claim.paper_value)
    # the same runs: I1(12 h) kills 5 more good tasks than N1(2), the paper's direction
    assert rows["I1 kills more good tasks than N1"].own_verdict() == "reproduced"


def test_policies_chart_draws_the_paper_values_of_the_claims() -> None:
    table = runs(list(POLICIES), {"X0 C1": 90.0})  # X0 C1: 100, 110, 120 on the three pools
    single = runs(["X0 C1", "X0 C2", "X0 C3"], variant="one type")
    lengths = pd.concat([runs(["X0 C1"], variant="short"), runs(["X0 C1"], variant="long")])
    rows = checks_of(table, single, lengths, runs(list(FIGURE_RUNS)))
    marks = {(mark.panel, mark.at): mark for mark in paper_marks(table, rows)}
    # Table II of 002: X0 C1's overhead is 20.03 minutes, drawn as it is
    assert marks["mean_overhead_minutes", "X0 C1"].value == 20.03
    # its energies C2 / C1 = 123.58 / 137.54, times our X0 C1 mean 110
    assert marks["energy_kwh", "X0 C2"].value == pytest.approx(123.58 / 137.54 * 110)
    assert marks["mean_overhead_minutes", "X0 C3"].value == pytest.approx(15.77 / 20.03 * 110)
    # sec. VII: N2(3) uses around 1/2 of X0's energy
    assert marks["energy_kwh", "N2(3) C3"].value == pytest.approx(55.0)
    fig = bar_chart(table, list(marks.values()))
    try:
        energy, overhead, _ = fig.axes
        bars = list(dict.fromkeys(table["policy"]))
        assert (bars.index("X0 C1"), 20.03) in paper_points(overhead)
        assert (bars.index("N2(3) C3"), pytest.approx(55.0)) in paper_points(energy)
        assert PAPER_LABEL in energy.get_legend_handles_labels()[1]
    finally:
        plt.close(fig)
