"""Paper 000 (Rocchetti et al., PSP+AGING): the six scenarios of its Table 4 on KTH-SP2 and
LLNL-Atlas (configs/psp-scenarios.yaml: CEA-Curie and Gaia are not available), their mean waits
and makespans beside Tables 5-6, through ``djsb psp-report``'s functions.

Default: the config's subsets (the first 5,000 KTH-SP2 and 10,000 Atlas jobs). ``full``: the whole
traces (000 does not give its subsets' sizes).

000 chose its subsets "to stress the simulated infrastructure" (sec. 4.2) and measured mean waits of
2,336-5,153 min; it does not give their load. The main rows run both traces with arrivals twice as
dense (:data:`PAPER_LOAD`); the config's own load is a second table, each of its rows naming the
same claim at 000's load as its counterfactual. Table 2 of 000 (cores requested) describes the
traces: a setup row. Fig. 1 of 000 (eq. (1) for four jobs submitted together) is redrawn.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from djsb.model import ClusterSpec, Simulation
from djsb.model.cluster_state import ClusterState
from djsb.model.job import SimJob
from djsb.model.priority.presets import preset
from djsb.model.priority.psp import CAP, PspAgingPriority
from djsb.pool.config import located
from djsb.report.psp_scenarios import (
    CHARTS,
    PAPER_MAKESPAN_DAYS,
    PAPER_WAIT_MIN,
    TABLE_4,
    WAIT_RATIOS,
    PaperValues,
    bar_charts,
    scenarios,
    write_psp_report,
)
from djsb.reproduce.checks import (
    Claim,
    Figure,
    Measured,
    Reproduction,
    Row,
    Rule,
    SetupRow,
    direction,
    factor,
)
from djsb.reproduce.papers import CONFIGS, PAPERS
from djsb.reproduce.sweeps import SWEEP_JOBS, absolute_paths, changed_config, run_config_sweep
from djsb.simulate.experiment import load_experiment
from djsb.workloads.job import TraceJob
from djsb.workloads.swf import read_swf
from djsb.yamlnodes import load_yaml

if TYPE_CHECKING:
    from matplotlib.figure import Figure as MplFigure

SITES = tuple(PAPER_WAIT_MIN)
PAPER_LOAD = 0.5
"""The factor on the traces' submit times for 000's load regime: arrivals twice as dense put
KTH-SP2's FCFS mean wait near 000's 2,336-5,153 min (sec. 4.2: subsets chosen "to stress the
simulated infrastructure")."""
TABLE_2_BINS = ((2, 16), (17, 64), (65, 256), (257, 1024), (1025, None))
TABLE_2 = {"CEA-Curie": (0.60, 0.07, 0.18, 0.14, 0.01), "Gaia": (0.87, 0.11, 0.02, 0.00, 0.00)}
"""Table 2 of 000: the shares of jobs per range of cores requested (jobs of more than one core)."""
FIG_1_STEP = 150.0
"""The time step of Fig. 1 of 000 (and of its experiments), seconds."""
FIG_1_JOBS = {"g10, 1 h": (49, 3600.0), "g10, 12 h": (49, 43200.0), "g5, 1 h": (30, 3600.0),
              "g5, 12 h": (30, 43200.0)}
"""Four jobs for Fig. 1 (000 does not give its four jobs' groups and requests): the best group and
a middle one (Table 1), each with a 1 h and a 12 h request."""
MEANING = {(1, 6): "FCFS perfect / PSP+AGING real", (4, 6): "FCFS real / PSP+AGING real",
           (1, 2): "FCFS perfect / PSP perfect", (4, 5): "FCFS real / PSP real",
           (5, 6): "PSP real / PSP+AGING real", (1, 3): "FCFS perfect / PSP+AGING perfect"}
FULL: dict[tuple[str, ...], Any] = {("sweep", "zip", "workload.limit"): [10**7, 10**7]}
"""Every job of both traces (a limit above their sizes)."""


def paper_ratio(table: dict[str, tuple[float, ...]], a: int, b: int) -> tuple[float, str]:
    """Table 5's (or 6's) ratio a / b at the first site, and the text giving every site's."""
    values = {site: table[site][a - 1] / table[site][b - 1] for site in table}
    return values[SITES[0]], ", ".join(f"{site} {value:.2f}" for site, value in values.items())


def makespan_note(sweep_dir: Path, runs: pd.DataFrame) -> str:
    """How close the default-load makespan is to its lower bound, the last submitted work's end
    (max of submit + run time), which no policy can move."""
    gaps = []
    for point in runs["point"]:
        jobs = pd.read_csv(sweep_dir / "points" / str(point) / "jobs.csv",
                           usecols=["submit", "run_time", "end"])
        gaps.append(float(jobs["end"].max() - (jobs["submit"] + jobs["run_time"]).max()))
    return (f"at the default load every scenario ends within {max(gaps):.0f} s of the last job's "
            "submit + run time")


def estimate_note(sweep_dir: Path, trace: str) -> str:
    """The share of a trace's jobs that carry no request, and of jobs PSP puts in g10 (Table 1's
    best group) for want of any (000's Table 3: 4-5 %)."""
    table = pd.read_csv(sweep_dir / "sweep.csv")
    real = table[(table["workload.estimate"] == "requested")
                 & table["workload.swf"].astype(str).str.contains(trace.split("-cln")[0], regex=False)]
    share = float((real["no_requested_time"] / real["jobs"]).iloc[0])
    groups = pd.read_csv(sweep_dir / "groups.csv")
    groups = groups[(groups["trace"] == trace) & (groups["scenario"] == 4)]
    best = float(groups[groups["group"] == 49]["jobs"].sum() / groups["jobs"].sum())
    return f"{share:.0%} of the jobs give no request; PSP puts {best:.0%} in g10 (000's Table 3: 4-5 %)"


def trace_point(config: Path, trace: str) -> dict[str, Any]:
    """The config (its paths made absolute, without its sweep) at the sweep point of ``trace``."""
    data = absolute_paths(load_yaml(config).plain(), config.parent)
    zipped = data.pop("sweep").get("zip", {})
    index = [Path(str(swf)).name.split(".swf")[0] for swf in zipped.get("workload.swf", [])].index(trace)
    for key, values in zipped.items():
        node = data
        *parents, last = key.split(".")
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        node[last] = values[index]
    return data


def loaded_run(task: tuple[Path, dict[str, Any], str, str, str, float]) -> dict[str, Any]:
    """One scenario of Table 4 (policy, estimate) on one trace's point with its submit times
    multiplied by a factor: mean wait (minutes), makespan (days), the share of jobs started at PSP's
    priority cap and of jobs that waited longer than their limit."""
    config, data, trace, policy, estimate, factor_ = task
    data = {**data, "policy": {"preset": policy}, "workload": {**data["workload"], "estimate": estimate}}
    experiment = load_experiment(config, located(data))
    jobs = [dataclasses.replace(job, submit=job.submit * factor_) for job in experiment.jobs]
    priority, _ = preset(policy)
    result = Simulation(jobs, experiment.cluster, experiment.scheduler, priority).run().jobs
    return {"trace": trace, "scenario": TABLE_4[(policy, estimate)], "load_factor": factor_,
            "mean_wait_min": float(result["wait"].mean()) / 60.0,
            "makespan_days": float(result["end"].max()) / 86400.0,
            "at_cap": float((result["priority_at_start"] >= CAP).mean()),
            "waited_past_limit": float((result["wait"] > result["requested_time"]).mean())}


def run_loads(config: Path, traces: list[str], factor_: float) -> pd.DataFrame:
    """Every scenario of Table 4 of 000 on each trace's point of ``config`` with its submit times
    multiplied by ``factor_`` (:func:`loaded_run`), on the sweep's number of worker processes.
    The longest runs go first (PSP+AGING's, then the larger trace's: on 10,000 Atlas jobs at 000's
    load it takes as long as all the others together), so no worker is left with one at the end."""
    tasks = [(config, trace_point(config, trace), trace, policy, estimate, factor_)
             for trace in traces for policy, estimate in TABLE_4]
    order = sorted(range(len(tasks)), reverse=True,
                   key=lambda i: (tasks[i][3] == "psp_aging", tasks[i][1]["workload"].get("limit", 0)))
    with multiprocessing.get_context("fork").Pool(min(SWEEP_JOBS, len(tasks))) as pool:
        results = pool.map(loaded_run, [tasks[i] for i in order], chunksize=1)
    return pd.DataFrame([results[order.index(i)] for i in range(len(tasks))])


def ratio_item(name: str, trace: str, load: str) -> str:
    """The item of a ratio's claim (``name``: "wait 1/6", "makespan 6/4") on ``trace`` at ``load``."""
    return f"{name}, {trace.split('-cln')[0]}, {load}"


CHART_RATIOS = {"wait": ((1, 6), (4, 6), (5, 6)), "makespan": ((6, 4),)}
"""The ratios of Tables 5-6 drawn on the charts of each stem: a / b as the paper's ratio times our b
on scenario a's bar (one per bar: each over scenario 6, PSP+AGING real, for the waits)."""


def chart_marks(rows: list[Row], frame: pd.DataFrame, load: str) -> PaperValues:
    """The paper's values on psp-report's charts of ``frame`` (the runs at ``load``), from the claims
    of ``rows``: for each ratio a / b of :data:`CHART_RATIOS`, the paper's ratio times our value of
    scenario b, on scenario a (000's sites are not our traces: only ratios carry over)."""
    claims = {row.claim.item: row.claim for row in rows}
    marks: dict[tuple[str, str], dict[int, float]] = {}
    for trace, runs in frame.groupby("trace"):
        for column, _, stem in CHARTS:
            ours = dict(zip(runs["scenario"], runs[column], strict=True))
            name = "wait" if stem == "wait" else "makespan"
            marks[(stem, str(trace))] = {
                a: claims[ratio_item(f"{name} {a}/{b}", str(trace), load)].paper_value * ours[b]
                for a, b in CHART_RATIOS[stem]}
    return marks


def trace_rows(trace: str, runs: pd.DataFrame, load: str, paper_load: str | None, note: str) -> list[Row]:
    """The wait ratios of sec. 5 (Table 5), PSP+AGING's gain over FCFS (4/6) and the makespan ratio of
    Table 6 for one trace at one load (``load``: its label); ``paper_load``: the label of the same
    trace's rows at 000's load, the counterfactual of these (None: these are 000's load)."""
    wait = dict(zip(runs["scenario"], runs["mean_wait_min"], strict=True))
    span = dict(zip(runs["scenario"], runs["makespan_days"], strict=True))
    run = f"one deterministic replay per scenario ({load}; FCFS real waits {wait[4]:,.0f} min)"
    rows = []

    def add(name: str, claim_source: str, metric: str, paper: float, rule: Rule, value: float) -> None:
        counterfactual = ratio_item(name, trace, paper_load) if paper_load else ""
        rows.append(Row(Claim(ratio_item(name, trace, load), claim_source, metric, paper, rule),
                        Measured.single(value, run), counterfactual, note))

    order = "the order of the two scenarios, as at both of 000's sites"
    for a, b in WAIT_RATIOS:
        paper, sites = paper_ratio(PAPER_WAIT_MIN, a, b)
        add(f"wait {a}/{b}", f"Table 5 of 000, scenarios {a} and {b} ({sites})",
            f"mean wait {MEANING[(a, b)]}", paper, direction(paper, 1.0, order), wait[a] / wait[b])
    paper, sites = paper_ratio(PAPER_WAIT_MIN, 4, 6)
    size = "the size of the gain, within 25 % (000's two sites differ by 9 %)"
    add("wait 4/6 size", f"Table 5 of 000, scenarios 4 and 6 ({sites})",
        "mean wait FCFS real / PSP+AGING real: how much PSP+AGING shortens FCFS's wait", paper,
        factor(paper, 1.25, size), wait[4] / wait[6])
    paper, sites = paper_ratio(PAPER_MAKESPAN_DAYS, 6, 4)
    add("makespan 6/4", f"Table 6 of 000, scenarios 6 and 4 ({sites})", "makespan PSP+AGING real / FCFS real",
        paper, direction(paper, 1.0, "000: PSP+AGING ends later at both sites"), span[6] / span[4])
    return rows


def table_2(requests: dict[str, pd.Series]) -> pd.DataFrame:
    """Table 2 of 000 for our traces: the share of jobs (of more than one core) per range of cores
    requested, with the paper's CEA-Curie and Gaia beside."""
    rows = []
    for index, (low, high) in enumerate(TABLE_2_BINS):
        label = f"{low} to {high}" if high is not None else f"{low} or more"
        row: dict[str, object] = {"cores requested": label}
        for trace, cores in requests.items():
            wide = cores[cores > 1]
            inside = (wide >= low) & (wide <= high) if high is not None else wide >= low
            row[trace] = float(inside.mean())
        row.update({site: shares[index] for site, shares in TABLE_2.items()})
        rows.append(row)
    return pd.DataFrame(rows)


def table_2_setup(table: pd.DataFrame) -> list[SetupRow]:
    """Table 2 of 000 describes its traces (not available here): ours beside it, as setup."""
    ours = [column for column in table.columns if column not in TABLE_2 and column != "cores requested"]
    shares = table.set_index("cores requested")
    return [SetupRow(f"share of jobs of 2-16 cores, {trace.split('-cln')[0]}", "Table 2 of 000",
                     f"{shares[trace].iloc[0]:.2f}", f"CEA-Curie {TABLE_2['CEA-Curie'][0]:.2f}, Gaia "
                     f"{TABLE_2['Gaia'][0]:.2f}", "a description of the input trace; every range in "
                     "sweep/table2.csv") for trace in ours]


def aged(g: int, request: float, until: float) -> list[tuple[float, float]]:
    """Eq. (1) of 000 for a job of initial priority ``g`` and request ``request`` submitted at 0:
    (time, priority) at each step up to ``until``, through the PSP+AGING plugin itself."""
    plugin = PspAgingPriority(time_step=FIG_1_STEP)
    cluster = ClusterSpec.homogeneous(1, 1)
    job = SimJob(TraceJob(1, 0.0, request, 1, request), ClusterState(cluster).partitions[0], cluster.qos[0],
                 request, 1, 0.0)
    plugin.on_submit(job, 0.0)
    plugin.base[job.job_id] = g
    job.priority = float(g)
    points = [(0.0, float(g))]
    for k in range(1, int(until // FIG_1_STEP) + 1):
        plugin.recompute([job], k * FIG_1_STEP)
        points.append((k * FIG_1_STEP, job.priority))
    return points


FIG_1_AT = 6750.0
"""The instant of Fig. 1 of 000 whose priorities sec. 3 reads: j1 61, j4 58."""
FIG_1_CLAIM = Claim("Fig. 1 priority ratio at 6,750 s", "Fig. 1 of 000 and sec. 3: j1 61, j4 58 at 6,750 s",
                    "eq. (1) priority of a 1 h over a 12 h request, same group, at 6,750 s", 61 / 58,
                    factor(61 / 58, 1.25, "the size of the ratio 000 reads off its figure"))
"""Sec. 3 of 000 on Fig. 1: "the priority of small jobs increases faster than the priority of large
jobs", its j1 over j4."""


def figure_1(path: Path) -> dict[str, list[tuple[float, float]]]:
    """Fig. 1 of 000 into ``path``; the curves drawn."""
    from djsb.plotting import save

    curves = {name: aged(g, request, 7200.0) for name, (g, request) in FIG_1_JOBS.items()}
    save(figure_1_plot(curves), path)
    return curves


def figure_1_plot(curves: dict[str, list[tuple[float, float]]]) -> MplFigure:
    """The priority of four jobs submitted together, on a log scale, over 2 h, with the paper's j1 /
    j4 of :data:`FIG_1_CLAIM` as a point: our 12 h job of g10 at 6,750 s times the paper's ratio."""
    from djsb.plotting import paper_curve, plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, points in curves.items():
        ax.plot([t for t, _ in points], [p for _, p in points], label=name)
    paper_curve(ax, [FIG_1_AT], [dict(curves["g10, 12 h"])[FIG_1_AT] * FIG_1_CLAIM.paper_value], marker="D")
    ax.set_yscale("log")
    ax.set_xlabel("time since submission (s)")
    ax.set_ylabel("priority (eq. 1 of 000)")
    ax.set_title("Fig. 1 of 000 redrawn: PSP+AGING priority, 150 s step\n"
                 "(paper: j1 / j4 = 61 / 58 at 6,750 s, on our g10, 12 h)", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(title="group, request")
    fig.tight_layout()
    return fig


def figure_1_row(curves: dict[str, list[tuple[float, float]]]) -> Row:
    """:data:`FIG_1_CLAIM` against our 1 h and 12 h jobs of group g10 (eq. (1) is linear in g, so
    the ratio is the same in every group)."""
    at = {name: dict(points)[FIG_1_AT] for name, points in curves.items()}
    return Row(FIG_1_CLAIM,
               Measured.single(at["g10, 1 h"] / at["g10, 12 h"], "eq. (1) through the plugin, deterministic"),
               note="000 does not give its jobs' groups and requests; ours are 1 h and 12 h in g10")


def user_requests(sweep_dir: Path) -> dict[str, pd.DataFrame]:
    """Per trace of the sweep, its jobs as the trace recorded them (index: job id): the cores and
    the user's own request (None: none)."""
    table = pd.read_csv(sweep_dir / "sweep.csv")
    requests = {}
    for swf, limit in table[["workload.swf", "workload.limit"]].drop_duplicates().itertuples(index=False):
        path = CONFIGS / str(swf)
        jobs = read_swf(path, limit=int(limit)).jobs
        requests[path.name.split(".swf")[0]] = pd.DataFrame(
            {"cpus": [job.cpus for job in jobs], "requested": [job.requested_time for job in jobs]},
            index=[job.job_id for job in jobs])
    return requests


@PAPERS.register("000")
def reproduce_000(out_dir: Path, full: bool) -> Reproduction:
    """Run the six scenarios on the config's subsets of both traces (every job with ``full``)."""
    return run(out_dir, FULL if full else None)


def run(out_dir: Path, changes: dict[tuple[str, ...], Any] | None = None) -> Reproduction:
    """Run the six scenarios on both traces at 000's load (arrivals x2) and at the config's, with
    ``changes`` to configs/psp-scenarios.yaml (such as :data:`FULL`), write psp-report's tables and
    charts, return the rows."""
    config = changed_config(CONFIGS / "psp-scenarios.yaml", out_dir / "sweep", changes)
    sweep_dir = run_config_sweep(config, out_dir / "sweep")
    requests = user_requests(sweep_dir)
    write_psp_report(sweep_dir, {trace: dict(zip(jobs.index, jobs["requested"], strict=True))
                                 for trace, jobs in requests.items()})
    frame = scenarios(sweep_dir)
    traces = [str(trace) for trace in frame["trace"].unique()]
    loads = run_loads(config, traces, PAPER_LOAD)
    loads.to_csv(sweep_dir / "loads.csv", index=False)
    heavy, default = f"arrivals x{1 / PAPER_LOAD:g}", "default load"
    rows = []
    for trace in traces:
        note = estimate_note(sweep_dir, trace)
        rows += trace_rows(trace, loads[loads["trace"] == trace], heavy, None, note)
    for trace in traces:
        runs = frame[frame["trace"] == trace]
        rows += trace_rows(trace, runs, default, heavy,
                           f"{estimate_note(sweep_dir, trace)}; {makespan_note(sweep_dir, runs)}")
    bar_charts(frame, sweep_dir, chart_marks(rows, frame, default))  # again, with the paper's values
    table = table_2({trace: jobs["cpus"] for trace, jobs in requests.items()})
    table.to_csv(sweep_dir / "table2.csv", index=False)
    rows.append(figure_1_row(figure_1(out_dir / "fig1.png")))
    figures = [Figure(Path("fig1.png"), "Fig. 1 of 000", "eq. (1) for four jobs submitted together")]
    figures += [Figure(Path("sweep") / f"{stem}_{trace}.png", paper,
                       f"{what} per policy, {trace} ({default}; dashed: the paper's ratio to scenario 6 (4 "
                       "for the makespan) times ours)")
                for stem, paper, what in (("wait", "Figs. 3-4 of 000", "mean wait"),
                                          ("makespan", "Table 6 of 000", "makespan"))
                for trace in traces]
    sizes = ", ".join(f"{trace}: {jobs} jobs" for trace, jobs in frame.groupby("trace")["jobs"].max().items())
    return Reproduction("000", "Penalty Scheduling Policy with aging (PSP+AGING)",
                        f"The six scenarios of Table 4 of 000 ({sizes}; CEA-Curie and Gaia are not "
                        f"available) at 000's load regime ({heavy}: submit times x {PAPER_LOAD:g}, the main "
                        f"rows; sweep/loads.csv) and at the config's ({default}: the second table, each row "
                        "naming its 000-load row); tables and per-accuracy-group waits in "
                        "sweep/psp_report.md.",
                        rows, figures, table_2_setup(table))
