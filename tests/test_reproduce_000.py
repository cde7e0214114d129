"""Paper 000's reproduction pieces worked by hand: Table 2's ranges of cores, Fig. 1's eq. (1) and
the paper's ratios drawn on the wait and makespan charts."""

from __future__ import annotations

import pandas as pd
import pytest

from djsb.plotting import paper_points, plt
from djsb.report.psp_scenarios import TABLE_4, bar_chart
from djsb.reproduce.paper_000 import (
    FIG_1_JOBS,
    aged,
    chart_marks,
    figure_1_plot,
    figure_1_row,
    table_2,
    table_2_setup,
    trace_rows,
)


def test_table_2_counts_jobs_of_more_than_one_core_per_range() -> None:
    # Sec. 4.1 of 000 keeps jobs of more than one core: the 1-core job is left out, 7 remain.
    # 2-16: {2, 16}; 17-64: {17, 64}; 65-256: {65}; 257-1024: {300}; 1025 or more: {2000}.
    table = table_2({"t": pd.Series([1, 2, 16, 17, 64, 65, 300, 2000])})
    assert table["t"].tolist() == pytest.approx([2 / 7, 2 / 7, 1 / 7, 1 / 7, 1 / 7])
    assert table["CEA-Curie"].tolist() == [0.60, 0.07, 0.18, 0.14, 0.01]  # Table 2 of 000
    # a description of the input trace: a setup row, not a claim
    (row,) = table_2_setup(table)
    assert (row.value, row.paper_value) == ("0.29", "CEA-Curie 0.60, Gaia 0.87")


def test_fig_1_follows_eq_1_every_150_s() -> None:
    # Eq. (1) of 000, g = 49, a 1 h request, submitted at 0: p(150) = 49 + 49 * 150 / 3600 =
    # 51.0417; p(300) = 49 + 51.0417 * 300 / 3600 = 53.2535; p(450) = 49 + 53.2535 * 450 / 3600 = 55.6567.
    points = aged(49, 3600.0, 450.0)
    assert [t for t, _ in points] == [0.0, 150.0, 300.0, 450.0]
    assert [p for _, p in points] == pytest.approx([49.0, 51.041667, 53.253472, 55.656684])


def test_fig_1_ratio_is_not_reproduced_whatever_the_requests_000_does_not_give() -> None:
    # eq. (1) by hand for a g10 job (49) with a 1 h request: each 150 s step multiplies by
    # wait / 3600 and adds 49; at 6,750 s it has grown far past the 12 h job's priority
    p1 = p12 = 49.0
    for k in range(1, 46):
        p1 = 49.0 + p1 * (k * 150.0) / 3600.0
        p12 = 49.0 + p12 * (k * 150.0) / 43200.0
    curves = {name: aged(g, request, 6750.0) for name, (g, request) in FIG_1_JOBS.items()}
    row = figure_1_row(curves)
    assert row.measured.value == pytest.approx(p1 / p12, rel=1e-9)
    # 61 / 58 = 1.05 in 000; ours is far above 1.05 x 1.25, and the note changes nothing
    assert p1 / p12 > 1.25 * 61 / 58 and row.own_verdict() == "not reproduced"
    # the figure shows the paper's j1 / j4 = 61 / 58 on our 12 h job at 6,750 s
    fig = figure_1_plot(curves)
    try:
        assert paper_points(fig.axes[0]) == [(6750.0, pytest.approx(p12 * 61 / 58))]
    finally:
        plt.close(fig)


def test_wait_and_makespan_charts_draw_table_5_and_6_ratios_from_the_claims() -> None:
    trace = "KTH-SP2-1996-2.1-cln"
    waits = {1: 600.0, 2: 500.0, 3: 400.0, 4: 700.0, 5: 450.0, 6: 300.0}
    frame = pd.DataFrame([{"trace": trace, "scenario": TABLE_4[(policy, estimate)], "policy": policy,
                           "estimate": estimate, "mean_wait_min": waits[TABLE_4[(policy, estimate)]],
                           "makespan_days": 12.0 if TABLE_4[(policy, estimate)] == 6 else 10.0}
                          for policy, estimate in TABLE_4])
    marks = chart_marks(trace_rows(trace, frame, "default load", None, ""), frame, "default load")
    # Table 5 of 000, CEA-Curie: 1/6 = 4569 / 2336, 4/6 = 4609 / 2336, 5/6 = 3706 / 2336, times our
    # scenario 6's 300 min; Table 6: 6/4 = 17.71 / 16.17 times our scenario 4's 10 days
    assert marks["wait", trace] == pytest.approx({1: 4569 / 2336 * 300, 4: 4609 / 2336 * 300,
                                                  5: 3706 / 2336 * 300})
    assert marks["makespan", trace] == pytest.approx({6: 17.71 / 16.17 * 10})
    fig = bar_chart(frame, trace, "mean_wait_min", "mean wait (minutes)", marks["wait", trace])
    try:
        ax = fig.axes[0]
        fcfs_perfect = ax.containers[0][0]  # scenario 1: FCFS, perfect estimates
        middle = fcfs_perfect.get_x() + fcfs_perfect.get_width() / 2
        assert (pytest.approx(middle), pytest.approx(4569 / 2336 * 300)) in paper_points(ax)
        assert len(paper_points(ax)) == 3
    finally:
        plt.close(fig)
