"""The one place DJSB sets up matplotlib: every module that draws imports pyplot from here.

DJSB only writes figures to files (PNG, PDF), on machines without a display, so the backend is Agg,
chosen once here rather than by each drawing module before its own pyplot import. pyplot picks its
backend when the first figure is made, not when it is imported, so choosing it after the import holds.

Importing this module imports matplotlib (about 0.3 s): a module that draws only on some of its paths
imports it where it draws.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

matplotlib.use("Agg")

__all__ = ["PAPER_LABEL", "ecdf_step", "mark_paper", "paper_curve", "paper_points", "plt", "save",
           "save_wait_ecdf"]


def save(fig: Figure, *paths: Path, dpi: int = 120) -> None:
    """Write ``fig`` to each of ``paths`` (the format from the suffix) and close it, since pyplot keeps
    every figure it made open until it is closed."""
    for path in paths:
        fig.savefig(path, dpi=dpi)
    plt.close(fig)


def ecdf_step(ax: Axes, ordered: np.ndarray, **kwargs: Any) -> None:
    """Draw the empirical CDF of the sorted values ``ordered`` as a step line (``kwargs`` to ``ax.step``)."""
    ax.step(ordered, np.arange(1, len(ordered) + 1) / max(len(ordered), 1), where="post", **kwargs)


def save_wait_ecdf(samples: Mapping[str, np.ndarray], xlabel: str, title: str, path: Path) -> None:
    """Write to ``path`` the ECDF of each sample of waits in seconds, by label (a legend when there are
    several; an empty sample is not drawn), on a symmetric-log time axis: waits run from 0 to days."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, waits in samples.items():
        if len(waits):
            ecdf_step(ax, np.sort(waits), label=label)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of jobs")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if len(samples) > 1:
        ax.legend()
    fig.tight_layout()
    save(fig, path)


PAPER_LABEL = "paper"
"""The legend label of a paper's value drawn on one of our figures, and the gid of its artist (what a
test finds it by)."""


def _paper_label(ax: Axes) -> str:
    """The paper's label for the first paper artist of ``ax``, none for the next: one legend entry."""
    return "_nolegend_" if PAPER_LABEL in ax.get_legend_handles_labels()[1] else PAPER_LABEL


def mark_paper(ax: Axes, x: float, value: float, width: float = 0.8) -> None:
    """Draw a paper's ``value`` at ``x`` on ``ax``: a dashed black segment ``width`` wide."""
    lines = ax.hlines(value, x - width / 2, x + width / 2, colors="k", linestyles="dashed", linewidth=1.4,
                      label=_paper_label(ax), zorder=3)
    lines.set_gid(PAPER_LABEL)


def paper_curve(ax: Axes, xs: Sequence[float], ys: Sequence[float], marker: str = "") -> None:
    """Draw a paper's curve (a value along an axis, or with ``marker`` a point) on ``ax``: a dashed
    black line."""
    (line,) = ax.plot(xs, ys, color="k", linestyle="--", linewidth=1.4, marker=marker, label=_paper_label(ax),
                      zorder=3)
    line.set_gid(PAPER_LABEL)


def paper_points(ax: Axes) -> list[tuple[float, float]]:
    """The (x, y) points of the paper's values drawn on ``ax`` by :func:`mark_paper` (a segment's
    middle) and :func:`paper_curve` (each vertex): what a figure shows of the paper."""
    points: list[tuple[float, float]] = []
    for collection in ax.collections:
        if collection.get_gid() == PAPER_LABEL and isinstance(collection, LineCollection):
            points += [((s[0][0] + s[-1][0]) / 2, s[0][1]) for s in collection.get_segments()]
    for line in ax.lines:
        if line.get_gid() == PAPER_LABEL:
            xs, ys = np.asarray(line.get_xdata(), dtype=float), np.asarray(line.get_ydata(), dtype=float)
            points += [(float(x), float(y)) for x, y in zip(xs, ys, strict=True)]
    return points
