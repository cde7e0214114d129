"""Figures like paper 001's figs. 3-5: simulation slowdown, analytics slowdown and dynamicity versus
the number of analytics, one line per scenario (its means), with 95% confidence intervals over
samples; a point with fewer samples than a CI needs (noise.MIN_CI_SAMPLES, summary.csv leaves its CI
empty) shows its individual samples instead of an error bar. A point that lost a sample to a failed
cell or to a scheduler outage (summary.csv's ``failed_samples``, ``outage_samples``) is marked at the
foot of each panel, in its scenario's colour, where it happened. A paper's values, when given, are
dashed lines across their panels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from djsb.plotting import paper_curve, plt, save
from djsb.scenarios import scenario, scenario_names

DODGE = 0.06
"""How far apart (in analytics) the scenarios' points at one n_a are drawn."""

LEFT_OUT_MARKS = (("failed_samples", "X", 0.04, "a sample failed"),
                  ("outage_samples", "v", 0.11, "a sample overlapped an outage"))
"""summary.csv's column, the marker, its height (a fraction of the panel) and its legend entry."""

PANELS = (("slowdown_s", "(a) slowdown of the simulation"), ("slowdown_a", "(b) slowdown of the analytics"),
          ("dynamicity", "(c) dynamicity"))


PaperLines = Mapping[str, Sequence[tuple[str, float]]]
"""A paper's values to draw across the panels: by metric, (scenario, value) pairs."""


def plot_summary(summary: pd.DataFrame, out_dir: Path, title: str = "",
                 samples: pd.DataFrame | None = None, paper: PaperLines | None = None) -> list[Path]:
    """Write the three-panel figure (PNG and PDF) and one PNG per panel; returns the paths.
    ``samples`` (samples.csv) gives the individual values drawn where a CI is missing; ``paper``: a
    paper's values, each a dashed line across its metric's panel."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    paths = [out_dir / f"djsb.{suffix}" for suffix in ("png", "pdf")]
    save(summary_figure(summary, title, samples, paper), *paths)
    written.extend(paths)
    for metric, label in PANELS:
        fig, ax = plt.subplots(figsize=(4.8, 4.4), constrained_layout=True)
        _panel(ax, summary, metric, label.split(") ", 1)[-1], samples, (paper or {}).get(metric, ()))
        _legend(fig, ax, summary)
        if title:
            fig.suptitle(f"Run {title}", fontsize="medium")
        path = out_dir / f"{metric}.png"
        save(fig, path)
        written.append(path)
    return written


def summary_figure(summary: pd.DataFrame, title: str = "", samples: pd.DataFrame | None = None,
                   paper: PaperLines | None = None) -> plt.Figure:
    """The three-panel figure of :func:`plot_summary`."""
    what = "mean and 95% CI over samples; dots: samples of a point without a CI"
    if paper:
        what += "; dashed: the paper's values"
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), constrained_layout=True)
    for ax, (metric, label) in zip(axes, PANELS, strict=True):
        _panel(ax, summary, metric, label, samples, (paper or {}).get(metric, ()))
    _legend(fig, axes[0], summary)
    fig.suptitle(f"Run {title}: {what}" if title else what)
    return fig


def _panel(ax: plt.Axes, summary: pd.DataFrame, metric: str, label: str,
           samples: pd.DataFrame | None, paper: Sequence[tuple[str, float]] = ()) -> None:
    # Each scenario's fixed order, label, colour and marker, so figures of different runs compare at a glance;
    # each scenario is shifted by DODGE along x so error bars at the same n_a do not hide each other.
    present = [name for name in scenario_names() if name in set(summary["scenario"])]
    for rank, name in enumerate(present):
        style = scenario(name).style
        shift = (rank - (len(present) - 1) / 2) * DODGE
        group = summary[summary["scenario"] == name].sort_values("n_a")
        ax.errorbar(group["n_a"] + shift, group[metric], yerr=group[f"{metric}_ci95"], marker=style.marker,
                    capsize=3, label=style.label, color=style.colour)
        without_ci = group.loc[group[f"{metric}_ci95"].isna(), "n_a"]
        if samples is not None and not without_ci.empty:
            points = samples[(samples["scenario"] == name) & samples["n_a"].isin(without_ci)]
            ax.scatter(points["n_a"] + shift, points[metric], marker=style.marker, color=style.colour,
                       alpha=0.45, s=18, linewidths=0)
        mark_left_out(ax, group, shift, style.colour)
    span = [float(summary["n_a"].min()), float(summary["n_a"].max())] if not summary.empty else [0.0, 1.0]
    for name, value in paper:
        paper_curve(ax, span, [value, value])
        ax.annotate(f"paper, {scenario(name).style.label}", (span[1], value), fontsize=7, ha="right",
                    va="bottom", color=scenario(name).style.colour)
    if metric.startswith("slowdown"):
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    ax.set_title(label)
    ax.set_xlabel("number of analytics")
    ax.set_ylabel(metric)
    if not summary.empty:
        ax.set_xticks(sorted(summary["n_a"].unique()))
    ax.grid(alpha=0.3)


def mark_left_out(ax: plt.Axes, group: pd.DataFrame, shift: float, colour: str) -> None:
    """Mark, at the foot of the panel (x in analytics, y a fraction of the panel: seen whatever the
    values), each n_a of ``group`` that lost samples to a failure or an outage; one legend entry each."""
    labelled = set(ax.get_legend_handles_labels()[1])
    for column, marker, height, text in LEFT_OUT_MARKS:
        if column not in group:
            continue
        flagged = group.loc[group[column].astype(str) != "", "n_a"]
        if flagged.empty:
            continue
        ax.scatter(flagged + shift, [height] * len(flagged), transform=ax.get_xaxis_transform(),
                   marker=marker, s=46, color=colour, edgecolors="black", linewidths=0.6, zorder=5,
                   label=text if text not in labelled else None)


def _legend(fig: plt.Figure, ax: plt.Axes, summary: pd.DataFrame) -> None:
    """The scenarios' legend under the panels, where it hides no point or error bar."""
    if not summary.empty:
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=3)


def plot_comparison(compare: pd.DataFrame, out_dir: Path) -> list[tuple[Path, str]]:
    """One PNG per metric of PANELS from compare.csv's tidy rows (djsb.report.compare): a panel per
    scenario, each run's means against n_a with their 95% CIs, runs in their order and colours, shifted
    by DODGE so their bars stay apart. Returns (path, caption) of each figure."""
    out_dir.mkdir(parents=True, exist_ok=True)
    runs = list(dict.fromkeys(compare["run"]))
    present = [name for name in scenario_names() if name in set(compare["scenario"])]
    written = []
    for metric, label in PANELS:
        rows = compare[compare["metric"] == metric]
        fig, axes = plt.subplots(1, len(present), figsize=(4.2 * len(present) + 0.8, 3.8), sharey=True,
                                 constrained_layout=True, squeeze=False)
        for ax, name in zip(axes[0], present, strict=True):
            for rank, run in enumerate(runs):
                group = rows[(rows["scenario"] == name) & (rows["run"] == run)].sort_values("n_a")
                ax.errorbar(group["n_a"] + (rank - (len(runs) - 1) / 2) * DODGE, group["mean"],
                            yerr=group["ci95"], marker="o", capsize=3, label=run, color=f"C{rank % 10}")
            if metric.startswith("slowdown"):
                ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
            ax.set_title(scenario(name).style.label)
            ax.set_xlabel("number of analytics")
            ax.set_xticks(sorted(rows["n_a"].unique()))
            ax.grid(alpha=0.3)
        axes[0][0].set_ylabel(metric)
        fig.legend(*axes[0][0].get_legend_handles_labels(), loc="outside lower center",
                   ncol=min(len(runs), 4))
        caption = f"{label.split(') ', 1)[-1]}: {' vs '.join(runs)} (mean, 95% CI)"
        fig.suptitle(caption)
        path = out_dir / f"compare_{metric}.png"
        save(fig, path)
        written.append((path, caption))
    return written
