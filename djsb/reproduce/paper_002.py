"""Paper 002 (McGough et al., miscreant tasks in a cycle-stealing pool): Table II, sec. II-B's
deallocation counts and sec. VI-VII's energy of N2(3) and D(m, d), on configs/pool-baseline.yaml's
pool drawn from the paper's statistics (the Newcastle traces are not available), over seeds.

Default: the 160-computer pool of the config, seeds 1-5. ``full``: the paper's 1,359 computers in 35
clusters, with the tasks scaled by the same ratio (17,000).
"""

from __future__ import annotations

import contextlib
import copy
import statistics
from pathlib import Path
from typing import Any

import pandas as pd

from djsb.pool.config import located, read_experiment
from djsb.pool.metrics import pool_metrics
from djsb.pool.runner import simulate_pool
from djsb.pool.simulation import PoolResult
from djsb.progress import Progress
from djsb.reproduce.checks import Between, Check, Figure, Reproduction, SameSide, Within
from djsb.reproduce.registry import CONFIGS, PAPERS
from djsb.yamlnodes import load_yaml

TABLE_II = {"C1": (20.03, 137.54), "C2": (15.05, 123.58), "C3": (15.77, 117.43)}
"""Table II of 002, X0 under each placement: (overhead in minutes, energy in "mWh")."""
DEALLOCATIONS = {"good": 1.38, "bad": 44.89}
"""Sec. II-B of 002: mean deallocations of a good and of a bad task (fig. 3)."""
POLICIES = {"X0 C1": ({"rule": "X0"}, "C1"), "X0 C2": ({"rule": "X0"}, "C2"), "X0 C3": ({"rule": "X0"}, "C3"),
            "N2(3) C3": ({"rule": "N2", "n": 3}, "C3"),
            "D(2, 8, 90 h) C3": ({"rule": "D", "n": 2, "m": 8, "d_hours": 90}, "C3")}
"""The runs: Table II's three, N2(3) (sec. VII: "without loosing a significant number of good
tasks") and D(m, d) with ~90 h on dedicated computers (sec. VI: "zero good task terminations")."""
SEEDS = (1, 2, 3, 4, 5)


def legacy_share(result: PoolResult) -> float:
    """The share of task run hours spent on legacy computers (Table I's 100-180 W type)."""
    legacy = total = 0.0
    for record in result.records:
        for run in record.runs:
            if run.computer >= 0:
                total += run.duration
                legacy += run.duration if result.computers[run.computer].kind.name == "legacy" else 0.0
    return legacy / total if total else 0.0


def run_all(base: dict[str, Any]) -> pd.DataFrame:
    """One row per policy and seed: the metrics of 002 sec. VI and the legacy share of task hours."""
    rows = []
    bar = Progress("pool runs", len(SEEDS) * len(POLICIES), line_every=10.0)
    with contextlib.closing(bar):
        for seed in SEEDS:
            for name, (abandon, placement) in POLICIES.items():
                config = copy.deepcopy(base)
                config["seed"] = seed
                config["policy"] = {"abandon": abandon, "placement": placement}
                result = simulate_pool(read_experiment(located(config), CONFIGS))
                rows.append({"policy": name, "seed": seed, **pool_metrics(result),
                             "legacy_share": legacy_share(result)})
                bar.advance()
    return pd.DataFrame(rows)


def _mean(table: pd.DataFrame, policy: str, column: str) -> float:
    return float(table[table["policy"] == policy][column].mean())


def _per_seed(table: pd.DataFrame, policy: str, column: str) -> list[float]:
    return table[table["policy"] == policy].sort_values("seed")[column].tolist()


def ranking_checks(table: pd.DataFrame) -> list[Check]:
    """C2 and C3 against C1 (Table II): the mean of the per-seed ratios, and at how many seeds it is
    below 1; where energy ranks the other way, the share of task hours on legacy computers (C2 and C3
    rank computers by idle share alone, and a room's type does not enter)."""
    checks = []
    for column, index, what in (("mean_overhead_minutes", 0, "overhead"), ("energy_kwh", 1, "energy")):
        base = _per_seed(table, "X0 C1", column)
        for placement in ("C2", "C3"):
            ours = _per_seed(table, f"X0 {placement}", column)
            ratios = [a / b for a, b in zip(ours, base, strict=True)]
            below = [seed for seed, r in zip(SEEDS, ratios, strict=True) if r < 1]
            paper = TABLE_II[placement][index] / TABLE_II["C1"][index]
            other_way = ""
            if what == "energy" and len(below) < len(SEEDS):
                legacy_c1 = _per_seed(table, "X0 C1", "legacy_share")
                legacy = _per_seed(table, f"X0 {placement}", "legacy_share")
                other_way = "; legacy 100-180 W computers' share of task hours where it is not: " + ", ".join(
                    f"seed {seed} {legacy[i]:.0%} vs {legacy_c1[i]:.0%} under C1"
                    for i, seed in enumerate(SEEDS) if seed not in below)
            checks.append(Check(f"Table II of 002: X0 {placement} / X0 C1 {what}", paper,
                                statistics.fmean(ratios), SameSide(1.0),
                                detail=f"mean of the per-seed ratios, seeds {SEEDS[0]}-{SEEDS[-1]}; "
                                       f"below 1 at {len(below)} of {len(SEEDS)} seeds{other_way}"))
    return checks


def checks_of(table: pd.DataFrame) -> list[Check]:
    checks = [Check("Table II of 002: X0 C1 overhead per completed good task (minutes)", TABLE_II["C1"][0],
                    _mean(table, "X0 C1", "mean_overhead_minutes"), Within(2.0),
                    detail="mean over seeds; the pool is drawn from 002's statistics, not Newcastle's logs")]
    checks += ranking_checks(table)
    for placement in TABLE_II:
        checks.append(Check(f"Table II of 002: X0 {placement} good tasks killed", 0.0,
                            _mean(table, f"X0 {placement}", "good_tasks_killed"), Between(0, 0),
                            detail="mean over seeds"))
    for kind, paper in DEALLOCATIONS.items():
        checks.append(Check(f"Sec. II-B of 002: mean deallocations of a {kind} task (X0 C1)", paper,
                            _mean(table, "X0 C1", f"mean_{kind}_deallocations"), Within(2.0),
                            detail="mean over seeds"))
    x0 = _per_seed(table, "X0 C1", "energy_kwh")
    for policy in ("N2(3) C3", "D(2, 8, 90 h) C3"):
        ratios = [a / b for a, b in zip(_per_seed(table, policy, "energy_kwh"), x0, strict=True)]
        checks.append(Check(f"Sec. VII of 002: energy of {policy} / X0 C1 (\"around 1/2 of the original\")",
                            0.5, statistics.fmean(ratios), Between(0.35, 0.65),
                            detail=f"mean over seeds, per seed {min(ratios):.2f}-{max(ratios):.2f}"))
    killed = _mean(table, "D(2, 8, 90 h) C3", "good_tasks_killed")
    checks.append(Check("Sec. VI of 002: good tasks killed by D(m, d) with ~90 h dedicated time", 0.0, killed,
                        Between(0, 0), detail="mean over seeds"))
    checks.append(Check("Sec. VII of 002: good tasks killed by N2(3) C3, as a share of good tasks", 0.0,
                        _mean(table, "N2(3) C3", "good_tasks_killed")
                        / _mean(table, "N2(3) C3", "good_tasks"),
                        Between(0, 0.05), detail="\"without loosing a significant number of good tasks\": "
                                                 "at most 5 % of them"))
    return checks


def bar_chart(table: pd.DataFrame, path: Path) -> None:
    """Energy, overhead and good tasks killed of each policy (mean and range over seeds)."""
    from djsb.plotting import plt, save

    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    grouped = table.groupby("policy", sort=False)
    for ax, (column, title) in zip(axes, (("energy_kwh", "energy (kWh)"),
                                          ("mean_overhead_minutes", "overhead per good task (min)"),
                                          ("good_tasks_killed", "good tasks killed")), strict=True):
        mean, low, high = grouped[column].mean(), grouped[column].min(), grouped[column].max()
        ax.bar(mean.index, mean, yerr=[mean - low, high - mean], capsize=3)
        ax.set_title(title)
        ax.tick_params(axis="x", labelrotation=30)
        ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    save(fig, path, dpi=110)


@PAPERS.register("002")
def reproduce_002(out_dir: Path, full: bool) -> Reproduction:
    """Run the five policies at every seed; write points.csv and the chart; return the checks."""
    base = load_yaml(CONFIGS / "pool-baseline.yaml").plain()
    base.pop("sweep")
    if full:
        base["pool"]["generate"].update(clusters=35, computers=1359)
        base["workload"]["generate"]["tasks"] = 17000
    table = run_all(base)
    out_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(out_dir / "points.csv", index=False)
    bar_chart(table, out_dir / "policies.png")
    shape = base["pool"]["generate"]
    return Reproduction(
        "002", "Reducing miscreant task executions in a multi-use cluster",
        f"{shape['computers']} computers in {shape['clusters']} rooms drawn from 002's statistics, "
        f"{base['workload']['generate']['tasks']} tasks, seeds {SEEDS[0]}-{SEEDS[-1]} (points.csv).",
        checks_of(table),
        [Figure(Path("policies.png"), "Table II and figs. 5 and 9 of 002",
                "energy, overhead and good tasks killed per policy (bars: mean; whiskers: seed range)")])
