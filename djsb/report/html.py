"""report.html: one page that shows a run (or a ``djsb simulate`` experiment) whole.

Both pages extend one base template (templates/base.html.j2: style, and a script that marks each
figure's load state and shows a note under a broken one) and share its macros
(templates/macros.html.j2). Figures are linked relatively, so the directory can be moved or
served as it is.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd
import yaml

from djsb.harness.rundir import RunDirectory, describe_cell
from djsb.jobs.outage import Outage
from djsb.registry import UnknownName
from djsb.report.cells import failure_reasons, left_out
from djsb.report.summary import summary_warnings
from djsb.scenarios import scenario

RUN_FIGURES = (("figures/djsb.png", "slowdown of the simulation, of the analytics, and dynamicity"),)
"""The page shows each figure once: the three panels together (figures/ also holds each panel alone)."""
SUMMARY_COLUMNS = (("slowdown_s", "slowdown sim."), ("slowdown_a", "slowdown analytics"),
                   ("dynamicity", "dynamicity"), ("w_s", "w_s"), ("w_a", "w_a"), ("t_s", "T_s (s)"),
                   ("t_a", "T_a (s)"))
EXAMPLES = 20  # skipped or rejected records listed one by one; the rest are only counted


def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("djsb.report", "templates"), autoescape=True,
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def render(template: str, out_path: Path, **context: Any) -> Path:
    """Render ``template`` with ``context`` into ``out_path``."""
    out_path.write_text(_environment().get_template(template).render(**context))
    return out_path


def existing_figures(directory: Path, figures: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (relative path, caption) of the figures that exist in ``directory``."""
    return [(path, caption) for path, caption in figures if (directory / path).is_file()]


def plus_minus(mean: float, half_width: float) -> str:
    """``mean ± half-width`` with three decimals; the mean alone when there is no CI (too few samples)."""
    return f"{mean:.3f}" if math.isnan(half_width) else f"{mean:.3f} ± {half_width:.3f}"


def scenario_label(name: str) -> str:
    """The scenario's label for people (its name when the scenario is unknown to this version)."""
    try:
        return scenario(name).style.label
    except UnknownName:
        return name


def summary_rows(summary: pd.DataFrame, include_outages: bool = False) -> list[list[str]]:
    """One row per (scenario, n_a): label, n_a, samples, each metric as mean ± CI, then the samples
    that failed or overlapped an outage, on the row where they happened (empty: none)."""
    return [[scenario_label(str(row["scenario"])), str(int(row["n_a"])), str(int(row["samples"]))]
            + [plus_minus(float(row[name]), float(row[f"{name}_ci95"])) for name, _ in SUMMARY_COLUMNS]
            + [left_out(row, include_outages)]
            for _, row in summary.iterrows()]


def outage_rows(outages: Sequence[Outage]) -> list[list[str]]:
    """outages.csv for people: when each began (local time), how long the scheduler did not answer,
    which scheduler, the failed attempts and the first error."""
    return [[time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(o.start)), f"{o.duration:.1f}", o.scheduler,
             str(o.attempts), o.error] for o in outages]


def human_size(size: int) -> str:
    """Bytes in GiB or MiB, whole where they are (``4GiB``, ``200MiB``: a size the config reader reads
    back), else to a tenth of the largest unit they reach (``14.9GiB``); below 1 MiB, in KiB or bytes."""
    units = (("GiB", 1024**3), ("MiB", 1024**2))
    for unit, scale in units:
        if size >= scale and size % scale == 0:
            return f"{size // scale}{unit}"
    unit, scale = next(((unit, scale) for unit, scale in units if size >= scale), ("KiB", 1024))
    return f"{size / scale:.1f}{unit}" if size >= scale else f"{size}B"


SIZE_KEYS = frozenset({"memory_per_node", "memory_bytes"})
"""Keys of sizes in bytes besides those ending in ``memory`` (``total_memory``); not
``memory_bandwidth_per_node``, a bandwidth."""


def with_human_sizes(value: Any, key: str = "") -> Any:
    """``value`` (config or metadata) with every whole number under a size key (``*memory``,
    SIZE_KEYS) in :func:`human_size` units: people read 4GiB, not 4294967296."""
    if isinstance(value, dict):
        return {k: with_human_sizes(v, str(k)) for k, v in value.items()}
    size_key = key.endswith("memory") or key in SIZE_KEYS
    if size_key and isinstance(value, int) and not isinstance(value, bool):
        return human_size(value)
    return value


def _display(value: Any) -> str:
    """A metadata or metric value for people: six significant digits, nested values as JSON."""
    if isinstance(value, float):
        return f"{value:.6g}"
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def cell_notes(cells: pd.DataFrame) -> list[str]:
    """One line per failed calibration or reference cell, with its reason (cells.csv; a failed
    execution cell, and samples that overlapped an outage, are among summary.csv's warnings)."""
    return [f"{describe_cell(cell)} failed and is not in the summary: {reason}"
            for cell, reason in failure_reasons(cells) if cell.stage != "execution"]


def write_run_html(run_dir: Path, summary: pd.DataFrame, cells: pd.DataFrame,
                   include_outages: bool = False) -> Path:
    """RUN_DIR/report.html: summary with confidence intervals, the cells left out or failed, figures,
    metadata, resolved config."""
    meta_path = run_dir / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    config_path = run_dir / "config.yaml"
    return render(
        "run.html.j2", run_dir / "report.html", title=f"DJSB run {run_dir.name}",
        summary_headers=["scenario", "n_a", "samples"] + [label for _, label in SUMMARY_COLUMNS]
        + ["failed / outage samples"],
        summary_rows=summary_rows(summary, include_outages), warnings=summary_warnings(summary),
        cell_notes=cell_notes(cells),
        outage_headers=["began", "lasted (s)", "scheduler", "failed attempts", "first error"],
        outage_rows=outage_rows(RunDirectory(run_dir).outages()),
        figure_items=existing_figures(run_dir, RUN_FIGURES),
        meta={key.removesuffix("_bytes"): _display(value) for key, value in with_human_sizes(meta).items()},
        config_text=yaml.safe_dump(with_human_sizes(yaml.safe_load(config_path.read_text())), sort_keys=False)
        if config_path.is_file() else "(no config.yaml)")


def write_simulate_html(out_dir: Path, *, config_text: str, metrics: Mapping[str, Any],
                        skipped: pd.DataFrame, rejected: pd.DataFrame,
                        figures: Sequence[tuple[str, str]]) -> Path:
    """OUT_DIR/report.html of ``djsb simulate``: metrics, plots, the records not replayed, config.

    ``skipped`` has columns line, reason, text (trace records the reader skipped); ``rejected``
    job_id, reason (jobs the model refused at submission).
    """
    def counts(frame: pd.DataFrame) -> list[tuple[str, int]]:
        return [(str(reason), int(n)) for reason, n in frame["reason"].value_counts().items()]

    return render(
        "simulate.html.j2", out_dir / "report.html", title=f"DJSB simulate {out_dir.name}",
        metrics={key: _display(value) for key, value in metrics.items()},
        figure_items=existing_figures(out_dir, figures),
        skipped_total=len(skipped), skipped_counts=counts(skipped),
        skipped_examples=skipped.head(EXAMPLES).values.tolist(),
        rejected_total=len(rejected), rejected_counts=counts(rejected),
        rejected_examples=rejected.head(EXAMPLES).values.tolist(),
        config_text=config_text)
