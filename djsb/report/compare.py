"""``djsb compare``: the same cells of two or more runs side by side, as an administrator compares
schedulers, clusters or scheduler settings with one benchmark.

Each run is read from its run directory (samples.csv, one row per execution cell and sample, and
config.yaml). Runs are compared on the (scenario, n_a, metric) cells they all have: a cell only some
runs have is listed, not compared. Per cell and run: the number of samples, the mean and the 95%
confidence half-width (Student t, as summary.csv; none below noise.MIN_CI_SAMPLES samples); per
cell and run after the first: the difference of its mean from the first run's and Welch's t-test of
the two sets of samples (unequal variances, since two schedulers need not spread alike), with its
p-value and whether it is significant at 0.05. A test that cannot be made (fewer than two samples on
a side, no spread on either side) gives NaN and says why.

The functions below the readers are pure: tidy frames in, tidy frames out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from djsb import benchmark_metrics, noise
from djsb.errors import InputError
from djsb.harness.rundir import RunDirectory
from djsb.report.html import plus_minus, render, with_human_sizes
from djsb.report.summary import SUMMARY_METRICS, in_scenario_order

ALPHA = 0.05
"""Significance level of each test (no correction for the number of cells tested)."""
CELL = ["scenario", "n_a", "metric"]
COMPARE_COLUMNS = (*CELL, "run", "samples", "mean", "ci95", "diff", "t", "df", "p_value", "significant",
                   "note")


@dataclass(frozen=True)
class Run:
    """One run directory as compare reads it: its label, samples (samples.csv) and config (config.yaml)."""

    label: str
    path: Path
    samples: pd.DataFrame
    config: Mapping[str, Any]


@dataclass(frozen=True)
class Welch:
    """Welch's t-test of ``other`` against ``base``: t = (mean other - mean base) / standard error, the
    Welch-Satterthwaite degrees of freedom, the two-sided p-value, and why they are NaN if they are."""

    t: float
    df: float
    p_value: float
    reason: str = ""

    @property
    def significant(self) -> bool:
        return self.p_value < ALPHA


def read_runs(paths: Sequence[Path]) -> list[Run]:
    """The runs at ``paths``, labelled by directory name (by path where two names are the same); a
    directory given twice (under any spelling) is refused, since it would be compared with itself."""
    resolved = [path.resolve() for path in paths]
    for index, path in enumerate(paths):
        if resolved[index] in resolved[:index]:
            first = paths[resolved.index(resolved[index])]
            what = f"{path} is given twice" if first == path else f"{first} and {path} are the same run"
            raise InputError(f"{what}: a run compared with itself differs in nothing", key="RUN_DIR")
    names = [path.name for path in resolved]
    runs = []
    for path, name in zip(paths, names, strict=True):
        run_dir = RunDirectory.open(path)
        samples_csv = path / "samples.csv"
        if not samples_csv.is_file():
            raise InputError(f"no samples.csv in {path}: djsb report {path} writes it from jobs.csv",
                             key="RUN_DIR")
        runs.append(Run(label=name if names.count(name) == 1 else str(path), path=path,
                        samples=pd.read_csv(samples_csv, dtype={"scenario": str}),
                        config=yaml.safe_load(run_dir.config_path.read_text()) or {}))
    return runs


def long_samples(samples: pd.DataFrame) -> pd.DataFrame:
    """samples.csv melted to one row per (scenario, n_a, sample, metric) with its ``value``."""
    return samples.melt(id_vars=["scenario", "n_a", "sample"], value_vars=list(SUMMARY_METRICS),
                        var_name="metric", value_name="value")


def welch(base: Sequence[float], other: Sequence[float]) -> Welch:
    """Welch's t-test of ``other`` against ``base`` (scipy.stats.ttest_ind_from_stats with
    equal_var=False: ttest_ind's test, from the exact means and variances of ``statistics``, so that
    constant samples are told apart from nearly constant ones)."""
    if min(len(base), len(other)) < 2:
        return Welch(math.nan, math.nan, math.nan, "no test: fewer than 2 samples")
    mean_base, mean_other = statistics.fmean(base), statistics.fmean(other)
    var_base, var_other = statistics.variance(base), statistics.variance(other)
    if var_base == 0 and var_other == 0:
        reason = "same constant samples" if mean_base == mean_other else "constant samples"
        return Welch(math.nan, math.nan, math.nan, f"no test: {reason}")
    a, b = var_base / len(base), var_other / len(other)
    df = (a + b) ** 2 / (a**2 / (len(base) - 1) + b**2 / (len(other) - 1))
    import scipy.stats  # half a second to import: only when this test is made

    result = scipy.stats.ttest_ind_from_stats(mean_other, math.sqrt(var_other), len(other),
                                              mean_base, math.sqrt(var_base), len(base), equal_var=False)
    return Welch(float(result.statistic), df, float(result.pvalue))


def compare_samples(labels: Sequence[str],
                    samples: Sequence[pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(compare, unshared): ``compare`` has one row per shared (scenario, n_a, metric) and run, in the
    order of ``labels`` (the first is the base every other run is tested against), with the columns of
    COMPARE_COLUMNS; ``unshared`` one row per (scenario, n_a) some runs lack, with ``runs`` (those that
    have it)."""
    by_cell = [{key: v.astype(float).tolist() for key, v in long_samples(frame).groupby(CELL)["value"]}
               for frame in samples]
    cells = [set(zip(frame["scenario"], frame["n_a"], strict=True)) for frame in samples]
    shared = set.intersection(*cells) if cells else set()
    unshared = sorted(set.union(*cells) - shared) if cells else []
    unshared_table = in_scenario_order(pd.DataFrame(
        [{"scenario": s, "n_a": n, "runs": ", ".join(label for label, have in zip(labels, cells, strict=True)
                                                      if (s, n) in have)} for s, n in unshared],
        columns=["scenario", "n_a", "runs"]))
    rows = []
    for scenario, n_a in shared:
        for metric in SUMMARY_METRICS:
            values = [run_cells[(scenario, n_a, metric)] for run_cells in by_cell]
            base_mean = statistics.fmean(values[0])
            for rank, (label, run_values) in enumerate(zip(labels, values, strict=True)):
                mean, half = benchmark_metrics.mean_ci95(run_values)
                row: dict[str, Any] = {"scenario": scenario, "n_a": int(n_a), "metric": metric, "run": label,
                                       "samples": len(run_values), "mean": mean,
                                       "ci95": half if len(run_values) >= noise.MIN_CI_SAMPLES else math.nan}
                if rank:
                    test = welch(values[0], run_values)
                    row.update(diff=mean - base_mean, t=test.t, df=test.df, p_value=test.p_value,
                               significant=test.significant, note=test.reason)
                rows.append(row)
    table = pd.DataFrame(rows, columns=list(COMPARE_COLUMNS))
    table["metric"] = pd.Categorical(table["metric"], categories=list(SUMMARY_METRICS), ordered=True)
    table["run"] = pd.Categorical(table["run"], categories=list(labels), ordered=True)
    table = in_scenario_order(table.sort_values(["metric", "run"], kind="stable"))
    table["metric"], table["run"] = table["metric"].astype(str), table["run"].astype(str)
    return table, unshared_table


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``config`` as {dotted key: value}; lists are values (a changed list is one difference)."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def config_differences(configs: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[Any]]]:
    """(dotted key, each run's value or None where the run has no such key) of every key whose values
    are not all the same, in the order the keys first appear."""
    flat = [flatten(config) for config in configs]
    keys = list(dict.fromkeys(key for one in flat for key in one))
    values = [(key, [one.get(key) for one in flat]) for key in keys]
    return [(key, each) for key, each in values if any(value != each[0] for value in each[1:])]


def job_module(config: Mapping[str, Any]) -> str:
    """The job module a run's config names (``?`` if none)."""
    return str(config.get("job_module", {}).get("name", "?"))


def side_by_side(compare: pd.DataFrame, labels: Sequence[str]) -> pd.DataFrame:
    """One row per (scenario, n_a, metric) of ``compare``: each run's ``mean ± CI (samples)``, then for
    each run after the first its difference from the first with the p-value, ``*`` when significant
    (what ``djsb compare`` prints and the page shows)."""
    rows = []
    for (scenario, n_a, metric), cell in compare.groupby(CELL, sort=False):
        by_run = cell.set_index("run")
        row = {"scenario": scenario, "n_a": str(n_a), "metric": metric}
        for label in labels:
            run = by_run.loc[label]
            row[label] = f"{plus_minus(float(run['mean']), float(run['ci95']))} ({int(run['samples'])})"
        for label in labels[1:]:
            run = by_run.loc[label]
            test = str(run["note"]) or f"p={float(run['p_value']):.3g}{' *' if run['significant'] else ''}"
            row[f"{label} - {labels[0]}"] = f"{float(run['diff']):+.3f} ({test})"
        rows.append(row)
    return pd.DataFrame(rows)


def text_table(side: pd.DataFrame) -> str:
    """``side`` (from :func:`side_by_side`) as left-aligned text columns for the terminal."""
    rows = [list(side.columns), *side.values.tolist()]
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True))
                     .rstrip() for row in rows)


def write_comparison(paths: Sequence[Path], out_dir: Path, *, plots: bool = True) -> pd.DataFrame:
    """Compare the runs at ``paths`` (the first is the base) into ``out_dir``: compare.csv (tidy, one
    row per shared scenario, n_a, metric and run), figures/compare_<metric>.png and report.html (the
    runs, what differs in their configs, the side-by-side table, the cells not shared). Returns the
    side-by-side table."""
    if len(paths) < 2:
        raise InputError("djsb compare needs two run directories or more", key="RUN_DIR")
    runs = read_runs(paths)
    labels = [run.label for run in runs]
    compare, unshared = compare_samples(labels, [run.samples for run in runs])
    if compare.empty:
        raise InputError(f"{', '.join(labels)} share no (scenario, n_a) cell with samples: "
                         "nothing to compare", key="RUN_DIR")
    out_dir.mkdir(parents=True, exist_ok=True)
    compare.to_csv(out_dir / "compare.csv", index=False)
    figures: list[tuple[str, str]] = []
    if plots:
        from djsb.report.plots import plot_comparison  # matplotlib costs 0.3 s to import: only when drawing

        figures = [(str(path.relative_to(out_dir)), caption)
                   for path, caption in plot_comparison(compare, out_dir / "figures")]
    side = side_by_side(compare, labels)
    differences = config_differences([with_human_sizes(run.config) for run in runs])
    render("compare.html.j2", out_dir / "report.html", title=f"DJSB compare: {' vs '.join(labels)}",
           runs=[[run.label, str(run.path.resolve()), job_module(run.config),
                  str(run.samples[["scenario", "n_a"]].drop_duplicates().shape[0])] for run in runs],
           difference_headers=["config key", *labels],
           differences=[[key, *(_config_value(value) for value in values)] for key, values in differences],
           side_headers=list(side.columns), side_rows=side.values.tolist(), alpha=ALPHA,
           unshared=unshared.values.tolist(), figure_items=figures)
    return side


def _config_value(value: Any) -> str:
    """A config value as YAML writes it inline; ``(absent)`` for a key the run does not have."""
    if value is None:
        return "(absent)"
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()
