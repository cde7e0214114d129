"""The one place DJSB sets up matplotlib: every module that draws imports pyplot from here.

DJSB only writes figures to files (PNG, PDF), on machines without a display, so the backend is Agg,
chosen once here rather than by each drawing module before its own pyplot import. pyplot picks its
backend when the first figure is made, not when it is imported, so choosing it after the import holds.

Importing this module imports matplotlib (about 0.3 s): a module that draws only on some of its paths
imports it where it draws.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

matplotlib.use("Agg")

__all__ = ["PAPER_LABEL", "ecdf_step", "mark_paper", "plt", "save"]


def save(fig: Figure, *paths: Path, dpi: int = 120) -> None:
    """Write ``fig`` to each of ``paths`` (the format from the suffix) and close it, since pyplot keeps
    every figure it made open until it is closed."""
    for path in paths:
        fig.savefig(path, dpi=dpi)
    plt.close(fig)


def ecdf_step(ax: Axes, ordered: np.ndarray, **kwargs: Any) -> None:
    """Draw the empirical CDF of the sorted values ``ordered`` as a step line (``kwargs`` to ``ax.step``)."""
    ax.step(ordered, np.arange(1, len(ordered) + 1) / max(len(ordered), 1), where="post", **kwargs)


PAPER_LABEL = "paper"
"""The legend label of a paper's value drawn on one of our figures."""


def mark_paper(ax: Axes, x: float, value: float, width: float = 0.8) -> None:
    """Draw a paper's ``value`` at ``x`` on ``ax``: a dashed black segment ``width`` wide, labelled
    :data:`PAPER_LABEL` in the legend once per axis."""
    labelled = PAPER_LABEL in ax.get_legend_handles_labels()[1]
    ax.hlines(value, x - width / 2, x + width / 2, colors="k", linestyles="dashed", linewidth=1.4,
              label="_nolegend_" if labelled else PAPER_LABEL, zorder=3)
