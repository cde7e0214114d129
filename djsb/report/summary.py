"""From jobs.csv to the per-sample and per-cell tables of the DJSB report (paper 001 sec. 4.3-4.4)."""

from __future__ import annotations

import pandas as pd

from djsb import metrics
from djsb.harness.scenarios import scenario_names

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
        values = metrics.cell_metrics(
            str(scenario), n_cpus_s=int(sim["cpus"].iloc[0]), n_cpus_a=int(ana["cpus"].iloc[0]),
            sim_response=float(sim["response"].iloc[0]), sim_exec=float(sim["exec"].iloc[0]),
            analytics_response=ana["response"].astype(float).tolist(),
            analytics_exec=ana["exec"].astype(float).tolist(),
            t_ref_s=float(t_ref["simulation"]), t_ref_a=float(t_ref["analytics"]))
        rows.append({"scenario": scenario, "n_a": int(n_a), "sample": int(sample), **vars(values)})
    return pd.DataFrame(rows, columns=list(SAMPLE_COLUMNS))


def summary_table(samples: pd.DataFrame) -> pd.DataFrame:
    """Per (scenario, n_a): mean and 95% CI half-width over samples of each metric.

    Rows come in the scenarios' fixed order (djsb/harness/scenarios/), then by n_a.
    """
    rows = []
    for (scenario, _), group in samples.groupby(["scenario", "n_a"], sort=True):
        row: dict[str, object] = {"scenario": scenario, "n_a": int(group["n_a"].iloc[0]),
                                  "samples": len(group)}
        for name in SUMMARY_METRICS:
            mean, half = metrics.mean_ci95(group[name].astype(float).tolist())
            row[name] = mean
            row[f"{name}_ci95"] = half
        rows.append(row)
    columns = ["scenario", "n_a", "samples"] + [c for m in SUMMARY_METRICS for c in (m, f"{m}_ci95")]
    return in_scenario_order(pd.DataFrame(rows, columns=columns))


def in_scenario_order(table: pd.DataFrame) -> pd.DataFrame:
    """``table``'s rows in the scenarios' fixed order (djsb/harness/scenarios/), then by n_a."""
    order = {name: rank for rank, name in enumerate(scenario_names())}
    table = table.sort_values(["scenario", "n_a"], kind="stable",
                              key=lambda column: column.map(order) if column.name == "scenario" else column)
    return table.reset_index(drop=True)
