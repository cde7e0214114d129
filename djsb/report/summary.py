"""From jobs.csv to the per-sample and per-cell tables of the DJSB report (paper 001 sec. 4.3-4.4)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from djsb import benchmark_metrics, noise
from djsb.scenarios import scenario_names

SAMPLE_COLUMNS = ("scenario", "n_a", "sample", "slowdown_s", "slowdown_a", "t_s", "t_a", "w_s", "w_a",
                  "dynamicity")
SUMMARY_METRICS = ("slowdown_s", "slowdown_a", "dynamicity", "w_s", "w_a", "t_s", "t_a")


def sample_table(jobs: pd.DataFrame) -> pd.DataFrame:
    """One row per execution cell (scenario, n_a, sample): eq. (1)-(8) of 001 over its jobs.

    A cell counts only when its simulation and all its analytics completed; T_ref_alone is the mean
    execution time of each application's completed reference jobs.
    """
    done = jobs[jobs["state"] == "COMPLETED"]
    ref = done[done["stage"] == "reference"]
    execution = jobs[jobs["stage"] == "execution"]
    if ref.empty or execution.empty:
        return pd.DataFrame(columns=list(SAMPLE_COLUMNS))
    t_ref = ref.groupby("app")["exec"].mean()
    rows = []
    for (scenario, n_a, sample), cell in execution.groupby(["scenario", "n_a", "sample"], sort=True):
        sim = cell[cell["app"] == "simulation"]
        ana = cell[cell["app"] == "analytics"]
        if len(sim) != 1 or len(ana) != n_a or (cell["state"] != "COMPLETED").any():
            continue
        values = benchmark_metrics.cell_metrics(
            str(scenario), n_cpus_s=int(sim["cpus"].iloc[0]), n_cpus_a=int(ana["cpus"].iloc[0]),
            sim_response=float(sim["response"].iloc[0]), sim_exec=float(sim["exec"].iloc[0]),
            analytics_response=ana["response"].astype(float).tolist(),
            analytics_exec=ana["exec"].astype(float).tolist(),
            t_ref_s=float(t_ref["simulation"]), t_ref_a=float(t_ref["analytics"]))
        rows.append({"scenario": scenario, "n_a": int(n_a), "sample": int(sample), **vars(values)})
    return pd.DataFrame(rows, columns=list(SAMPLE_COLUMNS))


def summary_table(samples: pd.DataFrame, notes: Sequence[str] = ()) -> pd.DataFrame:
    """Per (scenario, n_a): mean and 95% CI half-width over samples of each metric, and ``warnings``.

    The CI is left empty (NaN) with fewer than noise.MIN_CI_SAMPLES samples. ``warnings`` joins the
    row's own noise warnings (slowdowns < 1, dynamicity > 1: djsb.noise; a dynamicity undefined) and
    the run's ``notes`` (reference spread, machine load) with "; ", so each row says when it is not to
    be trusted. Rows come in the scenarios' fixed order (djsb/scenarios/), then by n_a.
    """
    rows = []
    for (scenario, _), group in samples.groupby(["scenario", "n_a"], sort=True):
        row: dict[str, object] = {"scenario": scenario, "n_a": int(group["n_a"].iloc[0]),
                                  "samples": len(group)}
        means: dict[str, float] = {}
        for name in SUMMARY_METRICS:
            mean, half = benchmark_metrics.mean_ci95(group[name].astype(float).tolist())
            means[name] = mean
            row[name] = mean
            row[f"{name}_ci95"] = half if len(group) >= noise.MIN_CI_SAMPLES else math.nan
        undefined = int(group["dynamicity"].isna().sum())
        row["warnings"] = "; ".join([*noise.cell_warnings(means), *notes, *(
            [f"dynamicity undefined in {undefined} of {len(group)} samples: their analytics outlived the "
             "simulation, so the weights of eq. (2) have no positive sum"] if undefined else [])])
        rows.append(row)
    columns = (["scenario", "n_a", "samples"] + [c for m in SUMMARY_METRICS for c in (m, f"{m}_ci95")]
               + ["warnings"])
    return in_scenario_order(pd.DataFrame(rows, columns=columns))


def in_scenario_order(table: pd.DataFrame) -> pd.DataFrame:
    """``table``'s rows in the scenarios' fixed order (djsb/scenarios/), then by n_a."""
    order = {name: rank for rank, name in enumerate(scenario_names())}
    table = table.sort_values(["scenario", "n_a"], kind="stable",
                              key=lambda column: column.map(order) if column.name == "scenario" else column)
    return table.reset_index(drop=True)


def run_notes(jobs: pd.DataFrame, meta: Mapping[str, Any]) -> list[str]:
    """The run's noise warnings from its files: each application's reference spread and drift from
    calibration (completed jobs of jobs.csv), and the machine's load before the reference stage
    (meta.json's ``load`` samples, written by the driver)."""
    done = jobs[jobs["state"] == "COMPLETED"]

    def times(stage: str) -> dict[str, list[float]]:
        rows = done[done["stage"] == stage]
        return {str(app): group["exec"].astype(float).tolist() for app, group in rows.groupby("app")}

    notes = noise.reference_notes(times("calibration"), times("reference"))
    for sample in meta.get("load", []):
        warning = noise.load_warning(float(sample["load_1min"]), int(sample["cpus"]))
        if warning and (sample.get("stage"), sample.get("at")) == noise.BEFORE_JOBS:
            notes.append(warning)
    return notes


def summary_warnings(summary: pd.DataFrame) -> list[str]:
    """Every distinct warning of summary.csv's ``warnings`` column, each once, first seen first, with
    the cells it concerns (none when it concerns every row): for the end of a run, ``djsb report``
    and report.html."""
    cells: dict[str, list[str]] = {}
    for _, row in summary.iterrows():
        for warning in filter(None, str(row["warnings"]).split("; ")):
            cells.setdefault(warning, []).append(f"{row['scenario']}/n_a={row['n_a']}")
    return [f"{warning} [{', '.join(where)}]" if len(where) < len(summary) else warning
            for warning, where in cells.items()]
