"""The figures of a model replay (``djsb simulate``, its sweeps' points): the wait time ECDF and the
queue length and utilisation over time, binned so a year of events stays readable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

SIMULATE_FIGURES = (("wait_ecdf.png", "wait time ECDF"),
                    ("queue_utilisation.png", "queue length and utilisation"))
"""The figures :func:`plot_replay` draws, with their captions in report.html."""


STEP_BINS = 200
"""Time bins of queue_utilisation.png: a year of events drawn one by one is a solid block of ink."""


def step_bins(times: Any, values: Any, bins: int) -> pd.DataFrame:
    """The step function ``values[i]`` from ``times[i]`` to ``times[i + 1]`` (sorted times; the last
    value holds for no time) over ``bins`` equal time bins from the first time to the last: columns
    ``start``, ``end``, ``mean`` (weighted by how long each value held), ``low`` and ``high`` (the
    values held in the bin)."""
    import numpy as np

    times, values = np.asarray(times, dtype=float), np.asarray(values, dtype=float)
    edges = np.linspace(times[0], times[-1], bins + 1)
    points = np.union1d(times, edges)
    starts = points[:-1]
    pieces = pd.DataFrame({"value": values[np.searchsorted(times, starts, side="right") - 1],
                           "width": np.diff(points),
                           "bin": np.minimum(np.searchsorted(edges, starts, side="right") - 1, bins - 1)})
    pieces = pieces[pieces["width"] > 0]
    pieces["area"] = pieces["value"] * pieces["width"]
    grouped = pieces.groupby("bin")
    table = pd.DataFrame({"mean": grouped["area"].sum() / grouped["width"].sum(),
                          "low": grouped["value"].min(), "high": grouped["value"].max()})
    table.insert(0, "start", edges[table.index])
    table.insert(1, "end", edges[table.index + 1])
    return table.reset_index(drop=True)


def plot_replay(jobs: Any, util: Any, total_cores: int, out_dir: Path, total_gpus: int = 0) -> None:
    """Draw :data:`SIMULATE_FIGURES` of a replay's jobs.csv and utilisation.csv into ``out_dir``; on a
    machine with GPUs (``total_gpus``) the utilisation panel has the GPUs' beside the cores'."""

    from djsb.plotting import plt, save, save_wait_ecdf  # matplotlib is imported only when drawing

    waits = jobs["wait"].to_numpy()
    save_wait_ecdf({"wait": waits}, "wait time (s)", f"{out_dir.name}: wait time ECDF of {len(waits)} jobs",
                   out_dir / "wait_ecdf.png")

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 5.5), sharex=True, constrained_layout=True)
    if len(util) > 1:
        span = float(util["time"].iloc[-1] - util["time"].iloc[0])
        unit, seconds = ("days", 86400.0) if span > 3 * 86400 else ("hours", 3600.0)
        shares = util.assign(busy=util["busy_cores"] / max(total_cores, 1))
        for ax, column, label in ((top, "queued_jobs", "queued jobs"), (bottom, "busy", "utilisation")):
            binned = step_bins(shares["time"], shares[column], min(STEP_BINS, len(util) - 1))
            middle = ((binned["start"] + binned["end"]) / 2 - util["time"].iloc[0]) / seconds
            ax.fill_between(middle, binned["low"], binned["high"], color="C0", alpha=0.2, linewidth=0,
                            label="lowest to highest in the bin")
            ax.plot(middle, binned["mean"], color="C0", linewidth=1, label="mean over the bin")
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
        overall = float(step_bins(shares["time"], shares["busy"], 1)["mean"].iloc[0])
        bottom.axhline(overall, color="k", linestyle="--", linewidth=0.8,
                       label=f"mean over the run: {overall:.0%}")
        if total_gpus and "busy_gpus" in util:
            held = step_bins(util["time"], util["busy_gpus"] / total_gpus, min(STEP_BINS, len(util) - 1))
            bottom.plot(((held["start"] + held["end"]) / 2 - util["time"].iloc[0]) / seconds, held["mean"],
                        color="C1", linewidth=1, label=f"GPUs held, mean over the bin ({total_gpus} GPUs)")
        bottom.set_xlabel(f"{unit} since the first event (bins of {span / seconds / len(binned):.3g} {unit})")
        fig.legend(*bottom.get_legend_handles_labels(), loc="outside lower center", ncol=3, fontsize=8)
    bottom.set_ylim(0, 1.05)
    gpus = f", {total_gpus} GPUs" if total_gpus else ""
    fig.suptitle(f"{out_dir.name}: queued jobs and utilisation ({total_cores} cores{gpus})")
    save(fig, out_dir / "queue_utilisation.png")
