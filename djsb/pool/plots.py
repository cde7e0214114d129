"""Figures like figs. 5-11 of paper 002: energy (a), good tasks killed (b) and overhead (c)
against a policy parameter, one line per combination of the other swept keys."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

PANELS = (("energy_kwh", "energy (kWh)"), ("good_tasks_killed", "good tasks killed"),
          ("mean_overhead_minutes", "overhead per completed task (min)"))


def x_key(table: pd.DataFrame, swept: list[str]) -> str:
    """The swept key drawn on the x axis: the first numeric one, else the first."""
    numeric = [key for key in swept if pd.api.types.is_numeric_dtype(table[key])]
    return (numeric or swept)[0]


def plot_sweep(table: pd.DataFrame, swept: list[str], path: Path) -> None:
    """Write the three panels of one sweep into ``path`` (PNG)."""
    from djsb.plotting import plt, save  # matplotlib is imported only when drawing

    x = x_key(table, swept)
    numeric_x = pd.api.types.is_numeric_dtype(table[x])
    others = [key for key in swept if key != x]
    groups = table.groupby(others, sort=False) if others else [("all", table)]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for name, group in groups:
        label = ", ".join(str(v) for v in (name if isinstance(name, tuple) else (name,)))
        for ax, (column, _) in zip(axes, PANELS, strict=True):
            ax.plot(group[x] if numeric_x else group[x].astype(str), group[column], marker="o", label=label)
    for ax, (letter, (_, title)) in zip(axes, zip("abc", PANELS, strict=True), strict=True):
        ax.set_xlabel(x)
        if not numeric_x:
            ax.tick_params(axis="x", labelrotation=30)
        ax.set_title(f"({letter}) {title}")
        ax.grid(alpha=0.3)
    axes[0].legend(title=", ".join(others) or None, fontsize=8)
    fig.tight_layout()
    save(fig, path, dpi=110)
