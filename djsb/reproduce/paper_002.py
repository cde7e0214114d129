"""Paper 002 (McGough et al., miscreant tasks in a cycle-stealing pool): Table II, sec. II-B's
deallocation counts, the directions sec. VI reads off figs. 5-11 and sec. VII's energy of the
policies, on configs/pool-baseline.yaml's pool drawn from the paper's statistics (the Newcastle
traces are not available), over seeds, paired on each drawn pool.

Default: the 160-computer pool of the config, seeds 1-20 for Table II, 1-10 for the rest.
``full``: the paper's 1,359 computers in 35 clusters, with the tasks scaled by the same ratio
(17,000).

Two inputs 002 does not give are varied to explain where our numbers differ: the computer type of
each room (Table I gives three types, not which rooms hold them: the baseline is rerun with every
computer of the normal type) and the good tasks' run times (sec. II-B gives totals that bound
their mean: X0 C1 is rerun at both bounds).
"""

from __future__ import annotations

import contextlib
import copy
import math
import multiprocessing
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from djsb.machine import usable_cpus
from djsb.pool.config import located, read_experiment
from djsb.pool.event_loop import PoolResult
from djsb.pool.generator import TaskShape
from djsb.pool.metrics import pool_metrics
from djsb.pool.runner import simulate_pool
from djsb.progress import Progress
from djsb.reproduce.checks import (
    REPRODUCED,
    Claim,
    Figure,
    Measured,
    PaperMark,
    Reproduction,
    Row,
    SetupRow,
    above,
    direction,
    factor,
    interval,
)
from djsb.reproduce.papers import CONFIGS, PAPERS
from djsb.reproduce.sweeps import SWEEP_JOBS
from djsb.yamlnodes import load_yaml

if TYPE_CHECKING:
    from matplotlib.figure import Figure as MplFigure

TABLE_II = {"C1": (20.03, 137.54), "C2": (15.05, 123.58), "C3": (15.77, 117.43)}
"""Table II of 002, X0 under each placement: (overhead in minutes, energy in "mWh")."""
DEALLOCATIONS = {"good": 1.38, "bad": 44.89}
"""Sec. II-B of 002: mean deallocations of a good and of a bad task (fig. 3)."""
POLICIES: dict[str, tuple[dict[str, Any], str]] = {
    "X0 C1": ({"rule": "X0"}, "C1"), "X0 C2": ({"rule": "X0"}, "C2"), "X0 C3": ({"rule": "X0"}, "C3"),
    "N2(3) C3": ({"rule": "N2", "n": 3}, "C3"),
    "D(2, 8, 90 h) C3": ({"rule": "D", "n": 2, "m": 8, "d_hours": 90}, "C3")}
"""The runs: Table II's three, N2(3) (sec. VII: "without loosing a significant number of good
tasks") and D(m, d) with ~90 h on dedicated computers (sec. VI: "zero good task terminations")."""
SEEDS = tuple(range(1, 21))
"""Seeds of Table II's runs: C3 and C2 differ by 5 % in 002, the spread between drawn pools is as
large, so their per-seed ratio needs twenty pools to have a chance of an interval on one side of 1."""
FEW_SEEDS = SEEDS[:10]
"""Seeds of the counterfactual runs and of the runs of figs. 5-11."""
FIGURE_RUNS: dict[str, tuple[dict[str, Any], str]] = {
    "N1(2) C1": ({"rule": "N1", "n": 2}, "C1"), "N2(2) C1": ({"rule": "N2", "n": 2}, "C1"),
    "R1(0.1) C1": ({"rule": "R1", "p": 0.1}, "C1"), "R1(0.5) C1": ({"rule": "R1", "p": 0.5}, "C1"),
    "D(2, 8, 10 h) C1": ({"rule": "D", "n": 2, "m": 8, "d_hours": 10}, "C1"),
    "D(2, 8, 90 h) C1": ({"rule": "D", "n": 2, "m": 8, "d_hours": 90}, "C1"),
    "A1(5 h) C1": ({"rule": "A1", "t_hours": 5}, "C1"), "A1(40 h) C1": ({"rule": "A1", "t_hours": 40}, "C1"),
    "I1(12 h) C1": ({"rule": "I1", "t_hours": 12}, "C1"),
    "I1(20 h) C1": ({"rule": "I1", "t_hours": 20}, "C1"),
    "I1(30 h) C1": ({"rule": "I1", "t_hours": 30}, "C1"),
    "E1(0.1) C1": ({"rule": "E1", "k": 0.1}, "C1"), "E1(0.5) C1": ({"rule": "E1", "k": 0.5}, "C1"),
    "E2(0.01/h) C1": ({"rule": "E2", "k": 0.01}, "C1"), "E2(0.05/h) C1": ({"rule": "E2", "k": 0.05}, "C1"),
    "P1(90 %) C1": ({"rule": "P1", "p": 90}, "C1"), "P1(99 %) C1": ({"rule": "P1", "p": 99}, "C1"),
    "P2(90 %) C1": ({"rule": "P2", "p": 90}, "C1"), "P2(99 %) C1": ({"rule": "P2", "p": 99}, "C1")}
"""The runs of the claims of figs. 5-11 of 002 (sec. VI): pairs of one policy at two settings. 002
gives its figures' axes without numbers we can read, so each pair is two settings a factor apart on
either side of what the sentence contrasts: I1 below and above the 24 h step of fig. 6 (a), 12 h
the middle of the individual times below it, against N1(2), the setting of fig. 5's claim (002
names none for "in comparison with N1"); E1 and E2 at growth factors 5 apart, as R1's p (per
deallocation for E1, per accrued hour for E2: the unit 002 does not give, djsb.pool.abandon);
P1 and P2 at 90 % and 99 %, the percentiles sec. VI names ("P1 benefit as low as 90 %", P2 "almost
exactly 100 %")."""
FIGURE_CLAIMS = (
    ("N2 kills fewer good tasks than N1 at small n", "Fig. 5 (c) of 002: \"N2 gives a significant "
     "improvement for 'good' tasks terminated when the value of n is small\"", "good_tasks_killed",
     "N1(2) C1", "N2(2) C1", "N1 kills more: N2 ignores the deallocations users cause"),
    ("I1 uses less energy than N1", "Fig. 6 (a) of 002: \"This policy gives better energy performance "
     "and overheads in comparison with N1\"", "energy_kwh", "N1(2) C1", "I1(12 h) C1",
     "N1(2) uses more than I1(12 h)"),
    ("I1 has lower overheads than N1", "Fig. 6 (b) of 002: \"This policy gives better energy "
     "performance and overheads in comparison with N1\"", "mean_overhead_minutes", "N1(2) C1",
     "I1(12 h) C1", "N1(2)'s overhead exceeds I1(12 h)'s"),
    ("I1 kills more good tasks than N1", "Fig. 6 (c) of 002: \"However, this is at significant impact "
     "on the number of 'good' tasks which are terminated\"", "good_tasks_killed", "I1(12 h) C1",
     "N1(2) C1", "I1(12 h) kills more than N1(2)"),
    ("I1's energy steps up at 24 h", "Fig. 6 (a) of 002: \"the steep step in energy in Figure 6(a) "
     "corresponds with an individual execution time of 24 hours\"", "energy_kwh", "I1(30 h) C1",
     "I1(20 h) C1", "a bound past a day uses more than one below it"),
    ("E1 uses less energy at a higher growth factor", "Fig. 7 (a) of 002: \"for this policy energy and "
     "overheads fall as the growth factor increases\"", "energy_kwh", "E1(0.1) C1", "E1(0.5) C1",
     "k = 0.1 uses more than k = 0.5"),
    ("E1 has lower overheads at a higher growth factor", "Fig. 7 (b) of 002: \"for this policy energy "
     "and overheads fall as the growth factor increases\"", "mean_overhead_minutes", "E1(0.1) C1",
     "E1(0.5) C1", "k = 0.1's overhead exceeds k = 0.5's"),
    ("E1 kills more good tasks at a higher growth factor", "Fig. 7 (c) of 002: \"the number of good "
     "tasks terminated increases\"", "good_tasks_killed", "E1(0.5) C1", "E1(0.1) C1",
     "k = 0.5 kills more than k = 0.1"),
    ("E2 uses less energy at a higher growth factor", "Fig. 7 (a) of 002: \"for this policy energy and "
     "overheads fall as the growth factor increases\"", "energy_kwh", "E2(0.01/h) C1", "E2(0.05/h) C1",
     "k = 0.01/h uses more than k = 0.05/h"),
    ("E2 has lower overheads at a higher growth factor", "Fig. 7 (b) of 002: \"for this policy energy "
     "and overheads fall as the growth factor increases\"", "mean_overhead_minutes", "E2(0.01/h) C1",
     "E2(0.05/h) C1", "k = 0.01/h's overhead exceeds k = 0.05/h's"),
    ("E2 kills more good tasks at a higher growth factor", "Fig. 7 (c) of 002: \"the number of good "
     "tasks terminated increases\"", "good_tasks_killed", "E2(0.05/h) C1", "E2(0.01/h) C1",
     "k = 0.05/h kills more than k = 0.01/h"),
    ("R1's good tasks killed increase with p", "Fig. 8 (c) of 002: \"the number of 'good' tasks killed is "
     "high and increases\"", "good_tasks_killed", "R1(0.5) C1", "R1(0.1) C1", "more kills at the higher p"),
    ("D(m, d) kills fewer good tasks at a longer dedicated time", "Fig. 9 (c) of 002: \"Only the maximum "
     "dedicated time has an impact on the number of good tasks killed\"", "good_tasks_killed",
     "D(2, 8, 10 h) C1", "D(2, 8, 90 h) C1", "d = 10 h kills more than d = 90 h"),
    ("A1 kills more good tasks at a low accrued time", "Fig. 10 (c) of 002: \"Low accrued times offer lower "
     "energy consumption at the expense of 'good' tasks killed\"", "good_tasks_killed", "A1(5 h) C1",
     "A1(40 h) C1", "t = 5 h kills more than t = 40 h"),
    ("A1 uses less energy at a low accrued time", "Fig. 10 (a) of 002: \"Low accrued times offer lower "
     "energy consumption\"", "energy_kwh", "A1(40 h) C1", "A1(5 h) C1", "t = 40 h uses more than t = 5 h"),
    ("P1 kills fewer good tasks near the 100th percentile", "Fig. 11 (c) of 002: \"only as the percentile "
     "tends to 100% do the number of 'good' tasks terminated reduce significantly\"", "good_tasks_killed",
     "P1(90 %) C1", "P1(99 %) C1", "p = 90 % kills more than p = 99 %"),
    ("P2 kills fewer good tasks near the 100th percentile", "Fig. 11 (c) of 002: \"only as the percentile "
     "tends to 100% do the number of 'good' tasks terminated reduce significantly\"", "good_tasks_killed",
     "P2(90 %) C1", "P2(99 %) C1", "p = 90 % kills more than p = 99 %"),
    ("P1 kills fewer good tasks than P2 at 90 %", "Fig. 11 (c) of 002: \"In order to get benefit from "
     "using policy P2 the percentile needs to be almost exactly 100% [...] Whilst policy P1 benefit as "
     "low as 90%\"", "good_tasks_killed", "P2(90 %) C1", "P1(90 %) C1", "P2(90 %) kills more than P1(90 %)"),
)
"""(item, source, metric, policy a, policy b, reason): the claim is a - b > 0 on each drawn pool."""
USEFUL_SECONDS = 1_684_940_087 - 1_218_729_685
"""Sec. II-B of 002: seconds the 2010 tasks consumed less those wasted, i.e. the good tasks' run times."""
GOOD_TASKS = (2_022 / 0.01, 561_851)
"""Bounds on the number of good tasks in sec. II-B of 002: at least the 2,022 failures of a 6-retry
limit over the at most 1 % of good tasks it fails ("for 99 % we need a threshold of 6"), at most
every task submitted."""


def legacy_share(result: PoolResult) -> float:
    """The share of task run hours spent on legacy computers (Table I's 100-180 W type)."""
    legacy = total = 0.0
    for record in result.records:
        for run in record.runs:
            if run.computer >= 0:
                total += run.duration
                legacy += run.duration if result.computers[run.computer].kind.name == "legacy" else 0.0
    return legacy / total if total else 0.0


def good_mean_minutes() -> tuple[float, float]:
    """The bounds on a good task's mean run time that sec. II-B of 002 implies (minutes)."""
    most, fewest = GOOD_TASKS
    return USEFUL_SECONDS / fewest / 60.0, USEFUL_SECONDS / most / 60.0


def pool_point(task: tuple[dict[str, Any], str, dict[str, Any], str, int, str]) -> dict[str, Any]:
    """One run: ``base`` at one seed under one abandon rule and placement; its row of
    :func:`run_all`."""
    base, name, abandon, placement, seed, variant = task
    config = copy.deepcopy(base)
    config["seed"] = seed
    config["policy"] = {"abandon": abandon, "placement": placement}
    result = simulate_pool(read_experiment(located(config), CONFIGS))
    return {"variant": variant, "policy": name, "seed": seed, **pool_metrics(result),
            "legacy_share": legacy_share(result)}


def run_all(base: dict[str, Any], policies: dict[str, tuple[dict[str, Any], str]], variant: str,
            seeds: tuple[int, ...]) -> pd.DataFrame:
    """One row per policy and seed: the metrics of 002 sec. VI and the legacy share of task hours,
    the runs shared among the sweeps' worker processes (each run is seeded: the rows do not depend
    on which process ran them)."""
    tasks = [(base, name, abandon, placement, seed, variant)
             for seed in seeds for name, (abandon, placement) in policies.items()]
    bar = Progress(f"pool runs{' (' + variant + ')' if variant else ''}", len(tasks), line_every=10.0)
    rows = []
    with contextlib.closing(bar), \
            multiprocessing.get_context("fork").Pool(min(SWEEP_JOBS, usable_cpus(), len(tasks))) as pool:
        for row in pool.imap(pool_point, tasks, chunksize=1):
            rows.append(row)
            bar.advance()
    return pd.DataFrame(rows)


def one_type(base: dict[str, Any]) -> dict[str, Any]:
    """``base`` with every computer of Table I's normal type."""
    config = copy.deepcopy(base)
    config["pool"]["generate"]["types"] = {"normal": 1.0}
    return config


def task_length(base: dict[str, Any], mean_minutes: float) -> dict[str, Any]:
    """``base`` with good run times of mean ``mean_minutes`` (the generator's lognormal keeps its
    sigma: median = mean / exp(sigma^2 / 2))."""
    config = copy.deepcopy(base)
    shape = config["workload"]["generate"]
    sigma = float(shape.get("good_sigma", TaskShape.good_sigma))
    shape["good_median_minutes"] = mean_minutes / math.exp(sigma * sigma / 2)
    return config


def _per_seed(table: pd.DataFrame, policy: str, column: str) -> list[float]:
    return table[table["policy"] == policy].sort_values("seed")[column].tolist()


def _ratios(table: pd.DataFrame, policy: str, base: str, column: str) -> list[float]:
    """``policy`` over ``base`` at each seed: the paired comparison of two placements on one pool."""
    ours, theirs = _per_seed(table, policy, column), _per_seed(table, base, column)
    return [a / b for a, b in zip(ours, theirs, strict=True)]


TABLE_II_COLUMNS = (("mean_overhead_minutes", "overhead"), ("energy_kwh", "energy"))
"""Table II's two measured columns (in :data:`TABLE_II`'s order): our metric and the paper's name."""


def ranking_item(placement: str, base: str, what: str) -> str:
    """The item of Table II's claim that X0 ``placement`` over X0 ``base`` is on the paper's side of 1."""
    return f"X0 {placement} / X0 {base} {what}"


def ranking_rows(table: pd.DataFrame, single: pd.DataFrame) -> list[Row]:
    """C2 and C3 against C1, and C3 against C2 (Table II): the per-seed ratios (paired on each
    drawn pool) with their 95 % t interval, under the paper's direction. For energy the same claim
    on the pool of one computer type (``single``: the type of each room is an input 002 does not
    give; C2 and C3 rank on idleness alone, so where the idlest rooms are legacy, 100-180 W, they
    cost more per hour) is the counterfactual."""
    rows = []
    pairs = (("C2", "C1"), ("C3", "C1"), ("C3", "C2"))
    for index, (column, what) in enumerate(TABLE_II_COLUMNS):
        for placement, base in pairs:
            paper = TABLE_II[placement][index] / TABLE_II[base][index]
            rule = direction(paper, 1.0,
                             "Table II gives one pool; the order of the two placements is its claim")
            item = ranking_item(placement, base, what)
            source = f"Table II of 002, X0 {placement} and X0 {base}, {what} column"
            metric = f"{what} of X0 {placement} over X0 {base} on the same drawn pool"
            ratios = _ratios(table, f"X0 {placement}", f"X0 {base}", column)
            note = f"below 1 at {sum(r < 1 for r in ratios)} of {len(ratios)} seeds"
            counterfactual = ""
            if what == "energy":
                same = _ratios(single, f"X0 {placement}", f"X0 {base}", column)
                counterfactual = f"{item}, one computer type"
                rows.append(Row(Claim(counterfactual, source, metric + ", every computer of the normal type",
                                      paper, rule), Measured.t_interval(same, "seeds (paired ratios)"),
                                note=f"below 1 at {sum(r < 1 for r in same)} of {len(same)} seeds"))
            rows.append(Row(Claim(item, source, metric, paper, rule),
                            Measured.t_interval(ratios, "seeds (paired ratios)"), counterfactual, note))
    return rows


def overhead_rows(table: pd.DataFrame, lengths: pd.DataFrame) -> list[Row]:
    """Table II's C1 overhead, and the same claim at the good tasks' mean run times sec. II-B's totals
    allow (its counterfactuals: the overhead is mostly good run time lost to evictions)."""
    low, high = good_mean_minutes()
    paper = TABLE_II["C1"][0]
    rule = factor(paper, 2.0, "the pool is drawn from 002's statistics, not Newcastle's logs")
    source = "Table II of 002, X0 C1, overhead column"
    metric = "mean overhead per completed good task (minutes), X0 C1"
    shape = TaskShape()
    ours = shape.good_median_minutes * math.exp(shape.good_sigma ** 2 / 2)
    rows = [Row(Claim(f"X0 C1 overhead, good tasks of {minutes:.1f} min on mean", source, metric, paper,
                      rule),
                Measured.t_interval(runs["mean_overhead_minutes"].tolist(), "seeds"),
                note=f"sec. II-B's totals ({USEFUL_SECONDS:,} useful seconds over {GOOD_TASKS[0]:,.0f}-"
                     f"{GOOD_TASKS[1]:,} good tasks) bound the good tasks' mean to {low:.1f}-{high:.1f} min")
            for minutes, (_, runs) in zip((low, high), lengths.groupby("variant", sort=False), strict=True)]
    measured = Measured.t_interval(_per_seed(table, "X0 C1", "mean_overhead_minutes"), "seeds")
    candidates = [row for row in rows if row.own_verdict() == REPRODUCED] or rows
    rows.append(Row(Claim("X0 C1 overhead", source, metric, paper, rule), measured, candidates[0].claim.item,
                    note=f"the generator's good tasks run {ours:.0f} min on mean"))
    return rows


def setup_rows(table: pd.DataFrame) -> list[SetupRow]:
    """What cannot fail here: X0 abandons no task and D(m, d)'s 90 h exceed every good task's run
    time, so neither kills a good task; the deallocation counts are what the generator's defaults
    were chosen to give."""
    cap = TaskShape().good_max_hours
    rows = [SetupRow(f"X0 {placement}: good tasks killed", "Table II of 002",
                     _text(table, f"X0 {placement}", "good_tasks_killed"), "0", "X0 abandons no task")
            for placement in TABLE_II]
    rows.append(SetupRow("D(2, 8, 90 h) C3: good tasks killed", "sec. VI of 002",
                         _text(table, "D(2, 8, 90 h) C3", "good_tasks_killed"), "0",
                         f"good tasks run at most {cap:g} h (the generator's cap), below d = 90 h"))
    rows += [SetupRow(f"mean deallocations of a {kind} task (X0 C1)", "sec. II-B of 002 (fig. 3)",
                      _text(table, "X0 C1", f"mean_{kind}_deallocations"), f"{paper:g}",
                      "fitted: the generator's task defaults (djsb/pool/generator.py) were chosen to "
                      "give these")
             for kind, paper in DEALLOCATIONS.items()]
    return rows


def _text(table: pd.DataFrame, policy: str, column: str) -> str:
    values = _per_seed(table, policy, column)
    return f"{statistics.fmean(values):.4g} (seeds: {min(values):.4g}-{max(values):.4g})"


FIGURE_OF = {"I1": 6, "E1": 7, "E2": 7, "P1": 11, "P2": 11}
"""The figure of 002 that draws each policy family."""
HALF_ENERGY = ("I1(12 h) C1", "E1(0.5) C1", "E2(0.05/h) C1", "P1(90 %) C1", "P2(90 %) C1")
"""The runs of figs. 6, 7 and 11 held to sec. VII's "each policy is capable of [...] around 1/2 of
the original" (and fig. 11 (a)'s "energy comes down to an equivalent level as the other policies"):
each policy at the setting of its claims that abandons soonest."""


def half_energy_item(policy: str) -> str:
    """The item of sec. VII's claim that ``policy`` uses about half of X0 C1's energy."""
    return f"energy of {policy} / X0 C1"


def half_energy_row(policy: str, runs: pd.DataFrame, baseline: pd.DataFrame, source: str) -> Row:
    """Energy of ``policy`` (in ``runs``) over X0 C1 (in ``baseline``) paired on the seeds of
    ``runs``, against sec. VII's "around 1/2"."""
    seeds = set(runs[runs["policy"] == policy]["seed"])
    x0 = _per_seed(baseline[baseline["seed"].isin(seeds)], "X0 C1", "energy_kwh")
    ratios = [a / b for a, b in zip(_per_seed(runs, policy, "energy_kwh"), x0, strict=True)]
    return Row(Claim(half_energy_item(policy), source, f"energy of {policy} over X0 C1 on the same "
                     "drawn pool", 0.5, interval(0.35, 0.65, "\"around 1/2\": 0.5 +- 0.15")),
               Measured.t_interval(ratios, "seeds (paired ratios)"))


def policy_rows(table: pd.DataFrame, figures: pd.DataFrame) -> list[Row]:
    """Sec. VI-VII: N2(3), D(m, d) and the policies of figs. 6, 7 and 11 use about half of X0's
    energy, N2(3) losing few good tasks."""
    sec_vii = "sec. VII of 002: \"around 1/2 of the original\""
    rows = [half_energy_row(policy, table, table, sec_vii) for policy in ("N2(3) C3", "D(2, 8, 90 h) C3")]
    rows += [half_energy_row(policy, figures, table, f"{sec_vii}; fig. {FIGURE_OF[policy[:2]]} (a)")
             for policy in HALF_ENERGY]
    shares = [k / g for k, g in zip(_per_seed(table, "N2(3) C3", "good_tasks_killed"),
                                    _per_seed(table, "N2(3) C3", "good_tasks"), strict=True)]
    rows.append(Row(Claim("N2(3) C3: good tasks killed, share", "sec. VII of 002: \"without loosing a "
                          "significant number of good tasks\"", "good tasks killed / good tasks, N2(3) C3",
                          0.0,
                          interval(0.0, 0.05, "\"not a significant number\": at most 5 % of them"),
                          attainable=(0.0, 1.0)), Measured.t_interval(shares, "seeds")))
    return rows


def figure_rows(figures: pd.DataFrame) -> list[Row]:
    """The directions sec. VI reads off figs. 5-11: policy a's metric exceeds policy b's, paired on
    each drawn pool (002 gives curves, not values: the paper value is NaN and the rule the sign)."""
    rows = []
    for item, source, column, a, b, reason in FIGURE_CLAIMS:
        gaps = [x - y for x, y in zip(_per_seed(figures, a, column), _per_seed(figures, b, column),
                                      strict=True)]
        rows.append(Row(Claim(item, source, f"{column} of {a} - {b} on the same drawn pool", math.nan,
                              above(0.0, reason)), Measured.t_interval(gaps, "seeds (paired differences)")))
    return rows


def checks_of(table: pd.DataFrame, single: pd.DataFrame, lengths: pd.DataFrame,
              figures: pd.DataFrame) -> list[Row]:
    return [*overhead_rows(table, lengths), *ranking_rows(table, single), *policy_rows(table, figures),
            *figure_rows(figures)]


CHART_PANELS = (("energy_kwh", "energy (kWh)"), ("mean_overhead_minutes", "overhead per good task (min)"),
                ("good_tasks_killed", "good tasks killed"))
"""The panels of policies.png: a metric of :func:`djsb.pool.metrics.pool_metrics` and its title."""


def paper_marks(table: pd.DataFrame, rows: list[Row]) -> list[PaperMark]:
    """The paper's values on policies.png, from the claims of ``rows``: Table II's X0 C1 overhead as
    it is; its C2 and C3 over C1 ratios and sec. VII's "around 1/2" as the paper's ratio times our
    X0 C1 mean (002's pool is not ours: only ratios carry over)."""
    claims = {row.claim.item: row.claim for row in rows}

    def mean(column: str) -> float:
        return statistics.fmean(_per_seed(table, "X0 C1", column))

    overhead = claims["X0 C1 overhead"]
    marks = [PaperMark("mean_overhead_minutes", "X0 C1", overhead.paper_value, overhead.item)]
    for column, what in TABLE_II_COLUMNS:
        for placement in ("C2", "C3"):
            claim = claims[ranking_item(placement, "C1", what)]
            marks.append(PaperMark(column, f"X0 {placement}", claim.paper_value * mean(column), claim.item))
    for policy in ("N2(3) C3", "D(2, 8, 90 h) C3"):
        claim = claims[half_energy_item(policy)]
        marks.append(PaperMark("energy_kwh", policy, claim.paper_value * mean("energy_kwh"), claim.item))
    return marks


def bar_chart(table: pd.DataFrame, marks: list[PaperMark]) -> MplFigure:
    """Energy, overhead and good tasks killed of each policy (mean and range over seeds), the paper's
    values (``marks``) dashed on their bars."""
    from djsb.plotting import mark_paper, plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    grouped = table.groupby("policy", sort=False)
    for ax, (column, title) in zip(axes, CHART_PANELS, strict=True):
        mean, low, high = grouped[column].mean(), grouped[column].min(), grouped[column].max()
        ax.bar(mean.index, mean, yerr=[mean - low, high - mean], capsize=3)
        bars = list(mean.index)
        for mark in (m for m in marks if m.panel == column):
            mark_paper(ax, bars.index(mark.at), mark.value)
        if any(m.panel == column for m in marks):
            ax.legend(fontsize=8)
        ax.set_title(title)
        ax.tick_params(axis="x", labelrotation=30)
        ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


@PAPERS.register("002")
def reproduce_002(out_dir: Path, full: bool) -> Reproduction:
    """Run :func:`run` on the config's pool (002's 1,359 computers with ``full``)."""
    base = load_yaml(CONFIGS / "pool-baseline.yaml").plain()
    base.pop("sweep")
    if full:
        base["pool"]["generate"].update(clusters=35, computers=1359)
        base["workload"]["generate"]["tasks"] = 17000
    return run(out_dir, base)


def run(out_dir: Path, base: dict[str, Any], seeds: tuple[int, ...] = SEEDS,
        few_seeds: tuple[int, ...] = FEW_SEEDS) -> Reproduction:
    """Run the five policies of Table II on the pool and workload of ``base`` at ``seeds``, the other
    variants at ``few_seeds``; write points.csv and the chart; return the checks."""
    table = run_all(base, POLICIES, "", seeds)
    x0 = {name: POLICIES[name] for name in ("X0 C1", "X0 C2", "X0 C3")}
    single = run_all(one_type(base), x0, "one type", few_seeds)
    low, high = good_mean_minutes()
    lengths = pd.concat([run_all(task_length(base, minutes), {"X0 C1": POLICIES["X0 C1"]}, variant, few_seeds)
                         for variant, minutes in (("short", low), ("long", high))])
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = run_all(base, FIGURE_RUNS, "figs. 5-11", few_seeds)
    pd.concat([table, single, lengths, figures]).to_csv(out_dir / "points.csv", index=False)
    rows = checks_of(table, single, lengths, figures)
    from djsb.plotting import save

    save(bar_chart(table, paper_marks(table, rows)), out_dir / "policies.png", dpi=110)
    shape = base["pool"]["generate"]
    return Reproduction(
        "002", "Reducing miscreant task executions in a multi-use cluster",
        f"{shape['computers']} computers in {shape['clusters']} rooms drawn from 002's statistics, "
        f"{base['workload']['generate']['tasks']} tasks, seeds {seeds[0]}-{seeds[-1]} (points.csv).",
        rows,
        [Figure(Path("policies.png"), "Table II and figs. 5 and 9 of 002",
                "energy, overhead and good tasks killed per policy (bars: mean; whiskers: seed range; "
                "dashed: the paper's value, its ratios times our X0 C1 mean)")],
        setup_rows(table))
