"""Figures like paper 001's figs. 3-5: simulation slowdown, analytics slowdown and dynamicity versus
the number of analytics, one line per scenario (its means), with 95% confidence intervals over
samples; a point with fewer samples than a CI needs (noise.MIN_CI_SAMPLES, summary.csv leaves its CI
empty) shows its individual samples instead of an error bar."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from djsb.plotting import plt, save
from djsb.scenarios import scenario, scenario_names

DODGE = 0.06
"""How far apart (in analytics) the scenarios' points at one n_a are drawn."""

PANELS = (("slowdown_s", "(a) slowdown of the simulation"), ("slowdown_a", "(b) slowdown of the analytics"),
          ("dynamicity", "(c) dynamicity"))


def plot_summary(summary: pd.DataFrame, out_dir: Path, title: str = "",
                 samples: pd.DataFrame | None = None) -> list[Path]:
    """Write the three-panel figure (PNG and PDF) and one PNG per panel; returns the paths.
    ``samples`` (samples.csv) gives the individual values drawn where a CI is missing."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), constrained_layout=True)
    for ax, (metric, label) in zip(axes, PANELS, strict=True):
        _panel(ax, summary, metric, label, samples)
    if title:
        fig.suptitle(title)
    paths = [out_dir / f"djsb.{suffix}" for suffix in ("png", "pdf")]
    save(fig, *paths)
    written.extend(paths)
    for metric, label in PANELS:
        fig, ax = plt.subplots(figsize=(4.6, 3.8), constrained_layout=True)
        _panel(ax, summary, metric, label, samples)
        path = out_dir / f"{metric}.png"
        save(fig, path)
        written.append(path)
    return written


def _panel(ax: plt.Axes, summary: pd.DataFrame, metric: str, label: str,
           samples: pd.DataFrame | None) -> None:
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
    if metric.startswith("slowdown"):
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    ax.set_title(label)
    ax.set_xlabel("number of analytics")
    ax.set_ylabel(metric)
    if not summary.empty:
        ax.set_xticks(sorted(summary["n_a"].unique()))
        ax.legend()
    ax.grid(alpha=0.3)
