"""Figures like figs. 5-11 of paper 002: energy (a), good tasks killed (b) and overhead (c)
against a policy parameter, one line per combination of the other swept policy keys.

A swept seed repeats an experiment rather than changes it, so it is never an axis or a line: each
seed is a dot and the line joins the means over seeds (a sweep of seeds alone puts the seed on x).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

PANELS = (("energy_kwh", "energy (kWh)"), ("good_tasks_killed", "good tasks killed"),
          ("mean_overhead_minutes", "overhead per completed task (min)"))
DODGE = 0.08
"""How far apart (in x positions) the lines' points at one x value are drawn."""


def replicate_keys(swept: list[str]) -> list[str]:
    """The swept keys that only repeat the experiment: the seed (``seed``, or ``*.seed``)."""
    return [key for key in swept if key == "seed" or key.endswith(".seed")]


def x_key(table: pd.DataFrame, swept: list[str]) -> str:
    """The swept key drawn on the x axis: the first numeric policy key, else the first policy key
    (a seed only when nothing else is swept)."""
    policy = [key for key in swept if key not in replicate_keys(swept)] or swept
    numeric = [key for key in policy if pd.api.types.is_numeric_dtype(table[key])]
    return (numeric or policy)[0]


def plot_sweep(table: pd.DataFrame, swept: list[str], path: Path, run: str) -> None:
    """Write the three panels of one sweep (``table``: sweep.csv, ``swept``: its keys) into ``path``
    (PNG), titled with the sweep's name ``run``."""
    from djsb.plotting import plt, save  # matplotlib is imported only when drawing

    x = x_key(table, swept)
    seeds = [key for key in replicate_keys(swept) if key != x]
    others = [key for key in swept if key not in (x, *seeds)]
    numeric_x = pd.api.types.is_numeric_dtype(table[x])
    values = sorted(table[x].unique())
    position = {value: value if numeric_x else rank for rank, value in enumerate(values)}
    groups = list(table.groupby(others, sort=False)) if others else [("all", table)]
    step = min((b - a for a, b in zip(values, values[1:], strict=False)), default=1) if numeric_x else 1
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.4), constrained_layout=True)
    for rank, (name, group) in enumerate(groups):
        label = ", ".join(str(v) for v in (name if isinstance(name, tuple) else (name,)))
        shift = (rank - (len(groups) - 1) / 2) * DODGE * step
        xs = group[x].map(position) + shift
        for ax, (column, _) in zip(axes, PANELS, strict=True):
            means = group.groupby(x, sort=True)[column].mean()
            ax.plot(means.index.map(position) + shift, means.to_numpy(), marker="o", color=f"C{rank % 10}",
                    label=label if others else "mean over seeds" if seeds else x)
            if seeds:
                ax.scatter(xs, group[column], s=14, alpha=0.45, color=f"C{rank % 10}", linewidths=0)
    for ax, (letter, (_, title)) in zip(axes, zip("abc", PANELS, strict=True), strict=True):
        ax.set_xlabel(x)
        ax.set_xticks([position[value] for value in values], [f"{value:g}" if numeric_x else str(value)
                                                               for value in values])
        ax.set_title(f"({letter}) {title}")
        ax.grid(alpha=0.3)
    over = f"; dots: each of {table[seeds[0]].nunique()} seeds, line: their mean" if seeds else ""
    fig.suptitle(f"Pool sweep {run}: energy, good tasks killed and overhead against {x}{over}")
    if others or seeds:
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center",
                   ncol=min(len(groups), 6), title=", ".join(others) or None)
    save(fig, path, dpi=110)
