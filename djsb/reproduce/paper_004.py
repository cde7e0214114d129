"""Paper 004 (MSc thesis, wrappers in workflows): its static and dynamic experiments (ch. 4) on the
model, and fair share on a week with a standing queue.

* static (configs/wrappers-static-sweep.yaml): eq. 4.1's fit and Table 4.1's correlations, with
  Tables A.1-A.4 and figs. 4.1 and 4.3 written by :mod:`djsb.reproduce.thesis_tables`;
* dynamic (configs/wrappers-dynamic-sweep.yaml, LLNL-Atlas' busiest week for CEA-Curie's): the share
  of Tables 4.2-4.3's points where wrapping shortens or lengthens the workflow's queue time, the
  instants where horizontal wrapping loses and why, and the fair-share effect;
* contended (configs/wrappers-contended-fairshare.yaml, KTH-SP2's week with the most recorded
  queueing): the fair-share effect where other users' jobs do queue.

Default: the static sweep at seeds 1-3 (600 of its 2,000 points); ``full``: all 10 seeds.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from djsb.errors import RunError
from djsb.model import SimulationResult
from djsb.reproduce.checks import (
    Claim,
    Figure,
    Measured,
    Reproduction,
    Row,
    SetupRow,
    band,
    direction,
    interval,
)
from djsb.reproduce.papers import CONFIGS, PAPERS
from djsb.reproduce.sweeps import run_config_sweep
from djsb.reproduce.thesis_tables import (
    FAIRSHARE,
    PRIORITY,
    SHAPE,
    STRATEGY,
    SUBMIT,
    WAIT,
    correlation_table,
    dynamic_tables,
    static_tables,
    write_static_report,
)
from djsb.simulate.experiment import load_experiment
from djsb.sweep.spec import read_sweep
from djsb.workflows.run import run_workflow
from djsb.yamlnodes import load_yaml

Table = Mapping[tuple[str, str, str], tuple[float, float]]
"""Tables 4.2-4.3 keyed by (workflow shape, "best" | "worst" fair share, instant): (unwrapped T_q,
wrapped T_q) in seconds."""
FIT_CLAIMS = {name: Claim(item, "eq. 4.1 of 004 (fig. 4.1)", metric, paper,
                         band(paper, 0.25, "a fit to another machine's waits"))
              for name, item, metric, paper in (("a", "eq. 4.1 a", "fitted a (fair share >= 0.1)", 7.4689),
                                                ("b", "eq. 4.1 b (s)", "fitted b (s)", 657.56))}
"""Eq. 4.1 of 004 as fitted in fig. 4.1, f(x) = b e^(-a x): its two parameters as claims."""
TABLE_4_1 = {("Fair share", "Tq_mean"): -0.8719868, ("Runtime", "Tq_mean"): 0.0048274,
             ("CPUs", "Tq_mean"): 0.0005572, ("Fair share", "P_mean"): 0.9951687}
MEAN_P = {0.01: 22064.0, 0.1: 29051.0}
"""Tables A.1-A.4 of 004: the mean priority at start over the 20 job configurations, by fair share."""
LABELS = ("A.1", "A.2", "A.3", "B.1", "B.2", "B.3")
"""The instants of Table 3.24 of 004, in time order."""
DYNAMIC: Table = {  # Tables 4.2-4.3 of 004
    **{("vertical", fs, label): pair for fs, rows in (
        ("best", ((0, 0), (134, 4), (0, 0), (0, 0), (221, 0), (0, 0))),
        ("worst", ((1047, 1294), (249, 8), (183, 3), (291, 416), (1323, 167), (5710, 1504))))
       for label, pair in zip(LABELS, rows, strict=True)},
    **{("horizontal", fs, label): pair for fs, rows in (
        ("best", ((0, 0), (126, 65), (0, 0), (0, 0), (1927, 407), (0, 0))),
        ("worst", ((2453, 2270), (557, 435), (3, 857), (50, 50), (9800, 289), (1265, 11569))))
       for label, pair in zip(LABELS, rows, strict=True)},
}
JOBS = {"vertical": 7, "horizontal": 12}
"""Jobs of each workflow unwrapped (004 sec. 3.3.2)."""
PASS_DELAY = 1.0
"""Seconds each submission waits in the model for the background loop's next whole-second wake-up
on an idle machine (docs/results-thesis.md, cause 3): a difference of at most this much per
unwrapped job is a tie."""
SHARE_TOLERANCE = 0.25
"""A share of points agrees within 3 of the 12 points of Tables 4.2-4.3."""
CONTENDED = "KTH-SP2's most queued week"
WRAPPING_FAIR_SHARES = (1.0, 0.5, 0.1, 0.01)
"""The fair-share targets at which the vertical workflow is run wrapped and unwrapped on the
contended week: the thesis' best and worst, and two between."""
AFTER = 6 * 3600.0
"""How long after an instant the background jobs' waits are looked at (the workflows' span)."""


def paper_fit() -> tuple[float, float]:
    """The thesis' (a, b) of eq. 4.1, from :data:`FIT_CLAIMS`: what fig. 4.1 draws of the paper."""
    return FIT_CLAIMS["a"].paper_value, FIT_CLAIMS["b"].paper_value


def outcome(unwrapped: float, wrapped: float, jobs: int) -> int:
    """+1 when wrapping shortens the queue time, -1 when it lengthens it, 0 for a tie (within
    :data:`PASS_DELAY` per unwrapped job)."""
    delta = unwrapped - wrapped
    return 0 if abs(delta) <= PASS_DELAY * jobs else (1 if delta > 0 else -1)


def fair_share_label(value: float) -> str:
    """The row of Tables 4.2-4.3 a fair-share target belongs to: 1.0 is the best, any lower the worst."""
    return "best" if value >= 1.0 else "worst"


def ours_table(sweep: pd.DataFrame) -> Table:
    """Our Tables 4.2-4.3 keyed as :data:`DYNAMIC`."""
    table = dynamic_tables(sweep)
    return {(row[SHAPE], fair_share_label(row[FAIRSHARE]), row["label"]):
            (row["unwrapped_Tq"], row["wrapped_Tq"]) for _, row in table.iterrows()}


def static_rows(sweep: pd.DataFrame, fit: dict[str, float], seeds: int) -> tuple[list[Row], list[SetupRow]]:
    """Eq. 4.1's fit and Table 4.1 of 004 (the static sweep, each point a seeded run); the fair
    share's correlation with the priority at start is set by the priority formula (the fair-share
    factor is the priority's largest term), so it is a setup row, not a claim."""
    cells = static_tables(sweep)
    corr = correlation_table(cells)
    priority = sweep.groupby(FAIRSHARE)[PRIORITY].mean()
    wait = sweep.groupby(FAIRSHARE)[WAIT].mean()
    fitted = Measured.single(fit["a"], f"least-squares fit over {len(sweep)} points ({seeds} seeds)")
    rows = [Row(FIT_CLAIMS["a"], fitted),
            Row(FIT_CLAIMS["b"],
                Measured.single(fit["b"], f"least-squares fit over {len(sweep)} points ({seeds} seeds)"),
                note=f"mean wait at fair share 0.1: {wait[0.1]:.0f} s (004: 309 s), at 0.01: "
                     f"{wait[0.01]:.0f} s "
                     f"(004: 307 s); mean priority at start {priority[0.01]:.0f} at 0.01 and "
                     f"{priority[0.1]:.0f} at 0.1 (Tables A.1-A.4: {MEAN_P[0.01]:.0f} and "
                     f"{MEAN_P[0.1]:.0f})")]
    for (row, column), paper in TABLE_4_1.items():
        if column == "P_mean":
            continue
        rule = (band(paper, 0.25, "a correlation over another machine's sweep") if row == "Fair share"
                else interval(-0.1, 0.1, "004: no effect of the job's size"))
        rows.append(Row(Claim(f"correlation of {row.lower()} with the mean wait",
                              f"Table 4.1 of 004, {row} row",
                              f"Pearson correlation over the {len(cells)} job configurations' cells", paper,
                              rule), Measured.single(float(corr[column][row]), f"{seeds} seeds' cells")))
    setup = [SetupRow("correlation of fair share with the mean priority at start", "Table 4.1 of 004",
                      f"{float(corr['P_mean']['Fair share']):.4g}",
                          f"{TABLE_4_1[('Fair share', 'P_mean')]:.4g}",
                      "the fair-share factor is the priority's largest term: set by the formula")]
    return rows, setup


def wrapping_rows(ours: Table) -> tuple[list[Row], list[SetupRow]]:
    """The shares of Tables 4.2-4.3's points where wrapping shortens or lengthens the workflow's queue
    time. Vertical wrapping on the model submits each job when the previous one ends, so it can
    lengthen the queue time by at most its pass delays: that share is a setup row."""
    rows, setup = [], []
    for shape in JOBS:
        keys = [key for key in DYNAMIC if key[0] == shape]
        paper = [outcome(*DYNAMIC[key], JOBS[shape]) for key in keys]
        measured = [outcome(*ours[key], JOBS[shape]) for key in keys]
        table = "Table 4.2" if shape == "vertical" else "Table 4.3"
        for side, word in ((1, "shortens"), (-1, "lengthens")):
            share_paper = paper.count(side) / len(keys)
            share = measured.count(side) / len(keys)
            where = ", ".join(f"{key[2]} {key[1]}"
                              for key, m in zip(keys, measured, strict=True) if m == side)
            item = f"share of the 12 points where {shape} wrapping {word} the queue time"
            if (shape, word) == ("vertical", "lengthens"):
                setup.append(SetupRow(item, f"{table} of 004", f"{share:.3g} ({where or 'none'})",
                                      f"{share_paper:.3g}", "the model's vertical wrapper waits no longer "
                                      "than its jobs' pass delays: it cannot lengthen"))
                continue
            rows.append(Row(Claim(item, f"{table} of 004, all 12 points", f"points where {shape} wrapping "
                                  f"{word} T_q (ties within {PASS_DELAY:g} s per unwrapped job) / 12",
                                  share_paper,
                                  interval(max(share_paper - SHARE_TOLERANCE, 0.0),
                                           min(share_paper + SHARE_TOLERANCE, 1.0),
                                           "within 3 of the 12 points"),
                                  attainable=(0.0, 1.0)),
                            Measured.single(share, "one deterministic run per point"),
                            note=f"here at: {where or 'none'}"))
    return rows, setup


def background_queue(result_jobs: pd.DataFrame, workflow_ids: set[int],
                     instants: Sequence[float]) -> tuple[list[int], list[float]]:
    """At each instant, the background jobs queued, and the longest wait of those submitted in the
    :data:`AFTER` seconds after it."""
    background = result_jobs[~result_jobs["job_id"].isin(workflow_ids)]
    queued, longest = [], []
    for t in instants:
        queued.append(int(((background["submit"] <= t) & (background["start"] > t)).sum()))
        later = background[(background["submit"] >= t) & (background["submit"] < t + AFTER)]
        longest.append(float(later["wait"].max()) if len(later) else 0.0)
    return queued, longest


def queue_text(queued: Sequence[int], longest: Sequence[float]) -> str:
    """What :func:`background_queue` found, in words."""
    return (f"at the {len(queued)} instants {sum(queued)} background jobs are queued in all "
            f"({', '.join(str(q) for q in queued)}), and those submitted in the next {AFTER / 3600:.0f} h "
            f"wait at most {max(longest):.0f} s")


def run_point(config: Path, values: dict[str, object]) -> tuple[SimulationResult, set[int]]:
    """Run the sweep point of ``config`` with ``values``: its result and the workflow's job ids."""
    spec = read_sweep(config)
    index = next(k for k in range(len(spec.points))
                 if all(spec.point_values(k)[key] == value for key, value in values.items()))
    tree = spec.point_tree(index)
    experiment = load_experiment(Path(tree.source), tree)
    plan = experiment.workflow
    if plan is None:
        raise RunError(f"{config.name} has no workflow section to run")
    first = max(j.job_id for j in experiment.jobs) + 1
    result, _ = run_workflow(experiment.jobs, experiment.cluster, experiment.scheduler, experiment.priority,
                             experiment.seed, plan, plan.strategies[0])
    return result, {int(i) for i in result.jobs["job_id"] if i >= first}


def hole_evidence(config: Path, instants: dict[str, float], sweep: pd.DataFrame) -> str:
    """Why the horizontal wrapper loses where it does: while it waits, how long the machine has room
    for one 96-CPU job and how long for the 1,152-CPU wrapper (004 sec. 5: a wider job finds fewer
    holes)."""
    table = dynamic_tables(sweep)
    loses = [shape == "horizontal" and outcome(u, w, JOBS[shape]) < 0
             for shape, u, w in zip(table[SHAPE], table["unwrapped_Tq"], table["wrapped_Tq"], strict=True)]
    lost = table[loses]
    parts = []
    for label, group in lost.groupby("label"):
        submit = instants[str(label)]
        fair_share = float(group[FAIRSHARE].min())
        result, ids = run_point(config, {SHAPE: "horizontal", STRATEGY: "horizontal", SUBMIT: submit,
                                         FAIRSHARE: fair_share})
        wrapper = result.jobs[result.jobs["job_id"].isin(ids)].iloc[0]
        util = result.utilisation
        window = util[(util["time"] >= submit) & (util["time"] < wrapper["start"])]
        times = np.append(window["time"].to_numpy(float), float(wrapper["start"]))
        free = result.total_cores - window["busy_cores"].to_numpy(float)
        spans = np.diff(times)
        span = float(spans.sum()) or 1.0
        job_cpus = int(wrapper["cpus"]) // JOBS["horizontal"]
        room_small = float(spans[free >= job_cpus].sum()) / span
        room_wide = float(spans[free >= wrapper["cpus"]].sum()) / span
        parts.append(f"{label} (fair share {fair_share:g}): the {int(wrapper['cpus'])}-CPU wrapper waits "
                     f"{wrapper['wait']:.0f} s, during which {room_small:.0%} of the time has room for a "
                     f"{job_cpus}-CPU job and {room_wide:.0%} for the wrapper")
    return "; ".join(parts)


def dynamic_rows(sweep: pd.DataFrame, config: Path) -> tuple[list[Row], list[SetupRow], str]:
    """Tables 4.2-4.3: who wins and where horizontal wrapping loses, on LLNL-Atlas' busiest week;
    also what its queue holds (the text of :func:`queue_text`)."""
    ours = ours_table(sweep)
    labels = dynamic_tables(sweep).drop_duplicates("label").set_index("label")[SUBMIT].to_dict()
    result, ids = run_point(config, {SHAPE: "vertical", STRATEGY: "none", SUBMIT: min(labels.values()),
                                     FAIRSHARE: 1.0})
    quiet = queue_text(*background_queue(result.jobs, ids, sorted(labels.values())))
    holes = hole_evidence(config, {str(k): float(v) for k, v in labels.items()}, sweep)
    rows, setup = wrapping_rows(ours)
    for fs in ("best", "worst"):
        paper = [key[2] for key in DYNAMIC if key[0] == "horizontal" and key[1] == fs
                 and outcome(*DYNAMIC[key], JOBS["horizontal"]) < 0]
        measured = [key[2] for key in ours if key[0] == "horizontal" and key[1] == fs
                    and outcome(*ours[key], JOBS["horizontal"]) < 0]
        rows.append(Row(Claim(f"instants where horizontal wrapping lengthens T_q, {fs} fair share",
                              f"Table 4.3 of 004, {fs} fair share rows", "number of the 6 instants",
                              float(len(paper)),
                              interval(len(paper), len(paper), f"004: {', '.join(paper) or 'none'}"),
                              attainable=(0.0, 6.0)),
                        Measured.single(float(len(measured)), "one deterministic run per instant"),
                        note=f"here: {', '.join(measured) or 'none'}; {holes}"))
    return rows, setup, quiet


def fair_share_row(where: str, table: Table, counterfactual: str = "", note: str = "") -> Row:
    """Table 4.2: the unwrapped vertical workflow's mean queue time over the instants, worst / best
    fair share (004: 1,467 s / 59 s)."""
    paper = [statistics.fmean(DYNAMIC[("vertical", fs, label)][0] for label in LABELS)
             for fs in ("worst", "best")]
    mean = {fs: statistics.fmean(pair[0] for key, pair in table.items()
                                 if key[0] == "vertical" and key[1] == fs) for fs in ("worst", "best")}
    ratio = mean["worst"] / mean["best"] if mean["best"] > 0 else math.inf
    return Row(Claim(f"unwrapped vertical T_q, worst / best fair share, {where}",
                     "Table 4.2 of 004, unwrapped column, mean over the 6 instants",
                     "mean queue time at the worst fair share over the best", paper[0] / paper[1],
                     direction(paper[0] / paper[1], 1.0, "004: the worst fair share waits longer")),
               Measured.single(ratio, "one deterministic run per instant"), counterfactual,
               f"004: {paper[0]:.0f} s / {paper[1]:.0f} s; here {mean['worst']:.0f} s / {mean['best']:.0f} s"
               + (f"; {note}" if note else ""))


def contended_rows(sweep: pd.DataFrame, config: Path) -> list[Row]:
    """Fair share where other users' jobs queue: the ratio of Table 4.2 and the share of instants
    where the worst fair share waits longer (004: all 6)."""
    labels = {t: f"{'AB'[k // 3]}.{k % 3 + 1}" for k, t in enumerate(sorted(sweep[SUBMIT].unique()))}
    result, ids = run_point(config, {SUBMIT: min(labels), FAIRSHARE: 1.0})
    queue = queue_text(*background_queue(result.jobs, ids, sorted(labels)))
    table = {("vertical", fair_share_label(row[FAIRSHARE]), labels[row[SUBMIT]]): (row[WAIT], math.nan)
             for _, row in sweep.iterrows()}
    longer = [table[("vertical", "worst", label)][0] > table[("vertical", "best", label)][0]
              for label in labels.values()]
    paper = [DYNAMIC[("vertical", "worst", label)][0] > DYNAMIC[("vertical", "best", label)][0]
             for label in labels.values()]
    share = sum(paper) / len(paper)
    return [fair_share_row(CONTENDED, table, note=queue),
            Row(Claim("share of instants where the worst fair share waits longer, " + CONTENDED,
                      "Table 4.2 of 004, unwrapped vertical, worst against best at each instant",
                      "instants where the worst fair share's T_q exceeds the best's / 6", share,
                      interval(share - SHARE_TOLERANCE, 1.0,
                               "004: all 6; within the tolerance of the shares"),
                      attainable=(0.0, 1.0)),
                Measured.single(sum(longer) / len(longer), "one deterministic run per instant"),
                note="waits (s), best / worst: " + ", ".join(
                    f"{label} {table[('vertical', 'best', label)][0]:.0f} / "
                    f"{table[('vertical', 'worst', label)][0]:.0f}" for label in labels.values()))]


def paper_gains(fair_share: str) -> list[float]:
    """Table 4.2 of 004: unwrapped - wrapped T_q of the vertical workflow at each instant (s)."""
    return [DYNAMIC[("vertical", fair_share, label)][0] - DYNAMIC[("vertical", fair_share, label)][1]
            for label in LABELS]


def run_contended_wrapping(config: Path, out_dir: Path) -> pd.DataFrame:
    """The vertical workflow unwrapped and wrapped on KTH-SP2's most queued week, at each instant of
    ``config`` and each fair share of :data:`WRAPPING_FAIR_SHARES`: Tables 4.2's rows (unwrapped_Tq,
    wrapped_Tq, delta) where other users' jobs queue."""
    submits = load_yaml(config).plain()["sweep"]["grid"][SUBMIT]
    sweep = {"runner": "workflow",
             "zip": {SHAPE: ["vertical", "vertical"], "workflow.count": [JOBS["vertical"]] * 2,
                     STRATEGY: ["none", "vertical"]},
             "grid": {SUBMIT: submits, FAIRSHARE: list(WRAPPING_FAIR_SHARES)}}
    table = dynamic_tables(pd.read_csv(run_config_sweep(config, out_dir, {("sweep",): sweep}) / "sweep.csv"))
    table.to_csv(out_dir / "wrapping_by_fairshare.csv", index=False)
    return table


def contended_wrapping_rows(table: pd.DataFrame) -> list[Row]:
    """004's central claim where jobs queue: wrapping the vertical workflow shortens its queue time at
    the worst fair share, and more than at the best. Each is the mean over the 6 instants of the
    paired per-instant gain, with its t interval."""
    gains = {fs: table[table[FAIRSHARE] == fs].sort_values(SUBMIT)["delta"].astype(float).tolist()
             for fs in WRAPPING_FAIR_SHARES}
    worst, best = min(WRAPPING_FAIR_SHARES), max(WRAPPING_FAIR_SHARES)
    by_share = ", ".join(f"{fs:g}: {statistics.fmean(g):.0f} s" for fs, g in gains.items())
    paper_worst = statistics.fmean(paper_gains("worst"))
    paper_more = statistics.fmean(paper_gains("worst")) - statistics.fmean(paper_gains("best"))
    source = "Table 4.2 of 004 and sec. 5: wrapping helps a workflow whose fair share is poor"
    return [Row(Claim(f"vertical wrapping's gain in T_q at fair share {worst:g}, {CONTENDED}", source,
                      "unwrapped - wrapped T_q (s), mean over the 6 instants", paper_worst,
                      direction(paper_worst, 0.0, "wrapping shortens the queue time")),
                Measured.t_interval(gains[worst], "instants (paired per instant)"),
                note=f"mean gain by fair share: {by_share}"),
            Row(Claim(f"vertical wrapping's gain, fair share {worst:g} over {best:g}, {CONTENDED}", source,
                      f"gain at {worst:g} - gain at {best:g} (s), mean over the 6 instants", paper_more,
                      direction(paper_more, 0.0, "the poorer the fair share, the more wrapping helps")),
                Measured.t_interval([w - b for w, b in zip(gains[worst], gains[best], strict=True)],
                                    "instants (paired per instant)"))]


@PAPERS.register("004")
def reproduce_004(out_dir: Path, full: bool) -> Reproduction:
    """Run the three sweeps, the static one at seeds 1-3 (1-10 with ``full``)."""
    return run(out_dir, list(range(1, 11)) if full else [1, 2, 3])


def run(out_dir: Path, seeds: list[int]) -> Reproduction:
    """Run the three sweeps, the static one at ``seeds``, write the thesis' tables and figures, return
    the checks."""
    static_dir = run_config_sweep(CONFIGS / "wrappers-static-sweep.yaml", out_dir / "static",
                                  {("sweep", "grid", "seed"): seeds})
    write_static_report(static_dir / "sweep.csv", static_dir / "report", paper_fit=paper_fit())
    fit = json.loads((static_dir / "report" / "fit.json").read_text())
    static = pd.read_csv(static_dir / "sweep.csv")
    dynamic_config = CONFIGS / "wrappers-dynamic-sweep.yaml"
    dynamic_dir = run_config_sweep(dynamic_config, out_dir / "dynamic")
    dynamic = pd.read_csv(dynamic_dir / "sweep.csv")
    dynamic_tables(dynamic).to_csv(dynamic_dir / "tables_4_2_4_3.csv", index=False)
    contended_config = CONFIGS / "wrappers-contended-fairshare.yaml"
    contended = pd.read_csv(run_config_sweep(contended_config, out_dir / "contended") / "sweep.csv")
    static_claims, setup = static_rows(static, fit, len(seeds))
    dynamic_claims, wrapping_setup, quiet = dynamic_rows(dynamic, dynamic_config)
    contended_claims = contended_rows(contended, contended_config)
    contended_claims += contended_wrapping_rows(run_contended_wrapping(contended_config,
                                                                       out_dir / "contended-wrapping"))
    atlas = fair_share_row("LLNL-Atlas' busiest week", ours_table(dynamic), contended_claims[0].claim.item,
                           quiet)
    rows = [*static_claims, *dynamic_claims, atlas, *contended_claims]
    return Reproduction(
        "004", "Evaluating the impact of task aggregation (wrappers) in workflows",
        f"Static: configs/wrappers-static-sweep.yaml at seeds {seeds[0]}-{seeds[-1]} ({len(static)} "
        "points; Tables A.1-A.4 and 4.1 in static/report/). Dynamic: configs/wrappers-dynamic-sweep.yaml, "
        "LLNL-Atlas' busiest week for CEA-Curie's (Tables 4.2-4.3 in dynamic/tables_4_2_4_3.csv). Contended: "
        "configs/wrappers-contended-fairshare.yaml, KTH-SP2's week with the most recorded queueing. The "
        "static sweep tracks one job and has no wrapper strategies, so the shares of points won by wrapping "
        "are those of Tables 4.2-4.3.",
        rows,
        [Figure(Path("static/report/wait_vs_fairshare.png"), "Fig. 4.1 of 004",
                "mean wait against fair share per job configuration, with the fit of eq. 4.1 (dashed: the "
                "thesis' fit)"),
         Figure(Path("static/report/wait_boxplots.png"), "Fig. 4.3 of 004", "wait per fair share")],
        [*setup, *wrapping_setup])
