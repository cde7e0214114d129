"""Figures like paper 001's figs. 3-5: simulation slowdown, analytics slowdown and dynamicity versus
the number of analytics, one line per scenario, with 95% confidence intervals over samples."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from djsb.harness.scenarios import scenario, scenario_names  # noqa: E402

PANELS = (("slowdown_s", "(a) slowdown of the simulation"), ("slowdown_a", "(b) slowdown of the analytics"),
          ("dynamicity", "(c) dynamicity"))


def plot_summary(summary: pd.DataFrame, out_dir: Path, title: str = "") -> list[Path]:
    """Write the three-panel figure (PNG and PDF) and one PNG per panel; returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), constrained_layout=True)
    for ax, (metric, label) in zip(axes, PANELS, strict=True):
        _panel(ax, summary, metric, label)
    if title:
        fig.suptitle(title)
    for suffix in ("png", "pdf"):
        path = out_dir / f"djsb.{suffix}"
        fig.savefig(path, dpi=120)
        written.append(path)
    plt.close(fig)
    for metric, label in PANELS:
        fig, ax = plt.subplots(figsize=(4.6, 3.8), constrained_layout=True)
        _panel(ax, summary, metric, label)
        path = out_dir / f"{metric}.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written


def _panel(ax: plt.Axes, summary: pd.DataFrame, metric: str, label: str) -> None:
    # Each scenario's fixed order, label, colour and marker, so figures of different runs compare at a glance.
    present = set(summary["scenario"])
    for name in (name for name in scenario_names() if name in present):
        style = scenario(name).style
        group = summary[summary["scenario"] == name].sort_values("n_a")
        ax.errorbar(group["n_a"], group[metric], yerr=group[f"{metric}_ci95"], marker=style.marker, capsize=3,
                    label=style.label, color=style.colour)
    if metric.startswith("slowdown"):
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    ax.set_title(label)
    ax.set_xlabel("number of analytics")
    ax.set_ylabel(metric)
    if not summary.empty:
        ax.set_xticks(sorted(summary["n_a"].unique()))
        ax.legend()
    ax.grid(alpha=0.3)
