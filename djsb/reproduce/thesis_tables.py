"""The thesis' tables and plots from a sweep's ``sweep.csv`` (paper 004 ch. 4), which ``djsb
reproduce 004`` writes beside its checks (:mod:`djsb.reproduce.paper_004`).

``configs/wrappers-static-sweep.yaml`` run by ``djsb sweep`` gives one row per simulation with the
swept keys (``seed``, ``workflow.run_time``, ``workflow.cpus``, ``workflow.fairshare_target``) and the
tracked job's ``workflow_queue_time_s`` (T_q) and ``workflow_priority_at_start`` (P). From it:

* Tables A.1-A.4: per run time, for each CPUs x fair share cell, the mean, max and min of T_q and P
  over the 10 workloads (:func:`static_tables`);
* Table 4.1: the Pearson correlation of run time, CPUs and fair share with those six statistics
  across the cells (:func:`correlation_table`; a statistic that never varies has no correlation: NaN);
* eq. 4.1: f(x; a, b) = b e^(-a x) fitted by least squares to the cells' mean wait against fair share
  from 0.1 on (:func:`fit_exponential`; the thesis found a = 7.4689, b = 657.56);
* figs. 4.1 and 4.3: mean wait against fair share per job configuration with the fit, and box plots of
  the wait per fair share (:func:`write_static_report` writes them with the tables).

``configs/wrappers-dynamic-sweep.yaml`` gives Tables 4.2-4.3 (:func:`dynamic_tables`): per workflow,
fair share and submission instant, the workflow's queue time unwrapped and wrapped, their difference
and the relative improvement.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from matplotlib.figure import Figure as MplFigure

SHAPE, STRATEGY, SUBMIT = "workflow.shape", "workflow.strategy", "workflow.submit"
RUN_TIME, CPUS, FAIRSHARE = "workflow.run_time", "workflow.cpus", "workflow.fairshare_target"
WAIT, PRIORITY = "workflow_queue_time_s", "workflow_priority_at_start"
STATS = ("Tq_mean", "Tq_max", "Tq_min", "P_mean", "P_max", "P_min")
FIT_FROM = 0.1
"""The thesis fitted eq. 4.1 from fair share 0.1 on (fig. 4.1)."""


def static_tables(sweep: pd.DataFrame) -> pd.DataFrame:
    """One row per (run time, CPUs, fair share) cell: T_q and P over the workloads (Tables A.1-A.4)."""
    grouped = sweep.groupby([RUN_TIME, CPUS, FAIRSHARE])
    columns = {}
    for name, column in (("Tq", WAIT), ("P", PRIORITY)):
        columns.update({f"{name}_mean": grouped[column].mean(), f"{name}_max": grouped[column].max(),
                        f"{name}_min": grouped[column].min()})
    return pd.DataFrame(columns).reset_index()


def correlation_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Table 4.1: rows Runtime, CPUs, Fair share; columns the six statistics of :data:`STATS`."""
    rows = {"Runtime": RUN_TIME, "CPUs": CPUS, "Fair share": FAIRSHARE}
    return pd.DataFrame({stat: [_pearson(cells[column], cells[stat]) for column in rows.values()]
                         for stat in STATS}, index=list(rows))


def _pearson(x: pd.Series, y: pd.Series) -> float:
    if x.std() == 0 or y.std() == 0:
        return math.nan
    return float(x.corr(y))


def fit_exponential(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """(a, b) minimising sum (y - b e^(-a x))^2 (eq. 4.1 of 004), for a >= 0.

    For a given a the best b is linear least squares, b(a) = sum y e^(-ax) / sum e^(-2ax); the sum of
    squares left is then minimised over a by a coarse logarithmic scan and a golden-section search
    around its best point.
    """
    xs, ys = [float(v) for v in x], [float(v) for v in y]

    def b_of(a: float) -> float:
        weights = [math.exp(-a * xi) for xi in xs]
        norm = sum(w * w for w in weights)  # 0 once e^(-ax) underflows: the model is then 0
        return sum(yi * w for yi, w in zip(ys, weights, strict=True)) / norm if norm > 0 else 0.0

    def sse(a: float) -> float:
        b = b_of(a)
        return sum((yi - b * math.exp(-a * xi)) ** 2 for xi, yi in zip(xs, ys, strict=True))

    grid = [0.0] + [10 ** (k / 50) for k in range(-150, 151)]  # 0 and 1e-3 ... 1e3
    best = min(range(len(grid)), key=lambda k: sse(grid[k]))
    low, high = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(200):
        m1, m2 = high - ratio * (high - low), low + ratio * (high - low)
        if sse(m1) <= sse(m2):
            high = m2
        else:
            low = m1
    a = (low + high) / 2
    return a, b_of(a)


def write_static_report(sweep_csv: Path, out_dir: Path, paper_fit: tuple[float, float] | None = None) -> Path:
    """Tables A.1-A.4 (one CSV per run time), Table 4.1, the fit of eq. 4.1 (fit.json) and figs. 4.1
    and 4.3 (PNG) into ``out_dir``; ``paper_fit``: the thesis' (a, b) of eq. 4.1, drawn on fig. 4.1."""
    sweep = pd.read_csv(sweep_csv)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cells = static_tables(sweep)
    for k, (run_time, table) in enumerate(cells.groupby(RUN_TIME), 1):
        table.drop(columns=RUN_TIME).to_csv(out_dir / f"table_A{k}_runtime_{run_time:g}s.csv", index=False)
    correlation_table(cells).to_csv(out_dir / "table_4_1_correlation.csv")
    fitted = cells[cells[FAIRSHARE] >= FIT_FROM]
    a, b = fit_exponential(fitted[FAIRSHARE], fitted["Tq_mean"])
    fit = {"a": a, "b": b, "from_fairshare": FIT_FROM}
    (out_dir / "fit.json").write_text(json.dumps(fit, indent=2) + "\n")
    run = Path(sweep_csv).resolve().parent.name
    from djsb.plotting import save  # matplotlib is imported only when drawing

    save(fit_figure(cells, (a, b), run, paper_fit), out_dir / "wait_vs_fairshare.png")
    save(boxplot_figure(sweep, run), out_dir / "wait_boxplots.png")
    return out_dir


def fit_figure(cells: pd.DataFrame, fit: tuple[float, float], run: str,
               paper_fit: tuple[float, float] | None = None) -> MplFigure:
    """Fig. 4.1 of 004 titled with the sweep's name ``run``: each cell's mean wait against fair share,
    our eq. 4.1 ``fit`` (a, b) and, dashed, the thesis' ``paper_fit`` over the same fair shares."""
    from djsb.plotting import paper_curve, plt  # matplotlib is imported only when drawing

    # One panel per run time and one line per CPU count (20 lines in one panel hid each other), the
    # fit in every panel, the legend beside the panels rather than over the data.
    run_times, cpu_counts = sorted(cells[RUN_TIME].unique()), sorted(cells[CPUS].unique())
    colours = plt.get_cmap("viridis")([k / max(len(cpu_counts) - 1, 1) for k in range(len(cpu_counts))])
    fig, axes = plt.subplots(1, len(run_times), figsize=(3.4 * len(run_times) + 1.6, 4), sharey=True,
                             constrained_layout=True, squeeze=False)
    xs = [FIT_FROM + k * (1 - FIT_FROM) / 100 for k in range(101)]
    a, b = fit
    for ax, run_time in zip(axes[0], run_times, strict=True):
        for rank, cpus in enumerate(cpu_counts):
            cell = cells[(cells[RUN_TIME] == run_time) & (cells[CPUS] == cpus)].sort_values(FAIRSHARE)
            ax.plot(cell[FAIRSHARE], cell["Tq_mean"], marker="os^Dv"[rank % 5], markersize=4, linewidth=0.9,
                    color=colours[rank], label=f"{cpus:g} CPUs")
        ax.plot(xs, [b * math.exp(-a * x) for x in xs], color="tab:red", linewidth=1.2,
                label=f"eq. 4.1 fit: {b:.5g} e^(-{a:.4g} x)")
        if paper_fit is not None:
            paper_curve(ax, xs, [paper_fit[1] * math.exp(-paper_fit[0] * x) for x in xs])
        waits = cells[cells[RUN_TIME] == run_time].groupby(FAIRSHARE)["Tq_mean"]
        spread = waits.max() - waits.min()
        ax.text(0.97, 0.95, f"CPU counts differ by\nat most {spread.max():.3g} s", transform=ax.transAxes,
                ha="right", va="top", fontsize=8)
        ax.set_title(f"run time {run_time:g} s")
        ax.set_xlabel("fair share")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("mean wait over the workloads (s)")
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="outside right center", fontsize=8)
    title = f"{run}: the workflow's mean wait against its fair share (004 fig. 4.1"
    fig.suptitle(title + (f"; paper: {paper_fit[1]:.5g} e^(-{paper_fit[0]:.4g} x))" if paper_fit else ")"))
    return fig


def boxplot_figure(sweep: pd.DataFrame, run: str) -> MplFigure:
    """Fig. 4.3 of 004 titled with the sweep's name ``run``: the wait per fair share."""
    from djsb.plotting import plt  # matplotlib is imported only when drawing

    shares = sorted(sweep[FAIRSHARE].unique())
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.boxplot([sweep.loc[sweep[FAIRSHARE] == s, WAIT] for s in shares], showmeans=True)
    ax.set_xticks(range(1, len(shares) + 1), [f"{s:g}" for s in shares])
    ax.set_xlabel("fair share")
    ax.set_ylabel("wait time (s)")
    ax.set_title(f"{run}: wait per fair share, all job configurations (004 fig. 4.3)")
    fig.tight_layout()
    return fig


def dynamic_tables(sweep: pd.DataFrame) -> pd.DataFrame:
    """Tables 4.2-4.3: one row per (workflow shape, fair share, instant) with ``unwrapped_Tq`` (strategy
    none), ``wrapped_Tq``, ``delta`` = unwrapped - wrapped and ``improvement_pct`` = delta / unwrapped x
    100 (0 when both are 0; NaN when only the unwrapped one is). Instants are labelled in time order
    A.1-A.3 then B.1-B.3 (Table 3.24: Thursday then Friday at 10, 15 and 20 h); the best fair share
    comes first, as in the thesis."""
    labels = {t: f"{'AB'[k // 3]}.{k % 3 + 1}" for k, t in enumerate(sorted(sweep[SUBMIT].unique()))}
    wrapped = sweep[STRATEGY] != "none"
    keys = [SHAPE, FAIRSHARE, SUBMIT]
    table = sweep[~wrapped].set_index(keys)[[WAIT]].rename(columns={WAIT: "unwrapped_Tq"}).join(
        sweep[wrapped].set_index(keys)[[WAIT]].rename(columns={WAIT: "wrapped_Tq"})).reset_index()
    table.insert(2, "label", table[SUBMIT].map(labels))
    table["delta"] = table["unwrapped_Tq"] - table["wrapped_Tq"]
    table["improvement_pct"] = [_improvement(u, d) for u, d in zip(table["unwrapped_Tq"], table["delta"],
                                                                     strict=True)]
    ordered = table.sort_values([SHAPE, FAIRSHARE, SUBMIT], ascending=[False, False, True])
    return ordered.reset_index(drop=True)


def _improvement(unwrapped: float, delta: float) -> float:
    if unwrapped == 0:
        return 0.0 if delta == 0 else math.nan
    return 100.0 * delta / unwrapped
