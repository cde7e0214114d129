"""Paper 000 (Rocchetti et al., PSP+AGING): the six scenarios of its Table 4 on KTH-SP2 and
LLNL-Atlas (configs/psp-scenarios.yaml: CEA-Curie and Gaia are not available), their mean waits
and makespans beside Tables 5-6, through ``djsb psp-report``'s functions.

Default: the config's subsets (the first 5,000 KTH-SP2 and 10,000 Atlas jobs), about a minute on
two cores. ``full``: the whole traces (000 does not give its subsets' sizes).

Two inputs 000 does not give are varied where our ratios differ from its: the load (000 chose
subsets "to stress the simulated infrastructure", sec. 4.2, and measured mean waits of 2,336-5,153
min; KTH-SP2's subset is rerun with its submit times compressed, :data:`LOADS`), and how its
Slurm plugin bounded a priority that eq. (1) grows geometrically once a job has waited longer than
its request. Table 2 of 000 (cores requested) is tabulated for our traces, and Fig. 1 of 000
(eq. (1) for four jobs submitted together) redrawn.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pandas as pd

from djsb.model import ClusterSpec, Simulation
from djsb.model.cluster import ClusterState
from djsb.model.job import SimJob
from djsb.model.priority.presets import preset
from djsb.model.priority.psp import CAP, PspAgingPriority
from djsb.pool.config import located
from djsb.report.psp_scenarios import (
    PAPER_MAKESPAN_DAYS,
    PAPER_WAIT_MIN,
    TABLE_4,
    WAIT_RATIOS,
    scenarios,
    write_psp_report,
)
from djsb.reproduce.checks import Check, Figure, Reproduction, SameSide, Within
from djsb.reproduce.registry import CONFIGS, PAPERS
from djsb.reproduce.sweeps import absolute_paths, run_config_sweep
from djsb.simulate import load_experiment
from djsb.workloads.job import TraceJob
from djsb.workloads.swf import read_swf
from djsb.yamlnodes import load_yaml

SITES = tuple(PAPER_WAIT_MIN)
LOAD_TRACE = "KTH-SP2-1996-2.1-cln"
"""The trace rerun at higher loads (the one with a request for every job)."""
LOADS = (0.5,)
"""Factors on KTH-SP2's submit times for the load evidence (0.5: arrivals twice as dense, FCFS's
mean wait near 000's)."""
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


def makespan_evidence(sweep_dir: Path, runs: pd.DataFrame) -> str:
    """When the makespan is the same in every scenario: how close it is to its lower bound, the last
    submitted work's end (max of submit + run time), which no policy can move."""
    gaps = []
    for point in runs["point"]:
        jobs = pd.read_csv(sweep_dir / "points" / str(point) / "jobs.csv",
                           usecols=["submit", "run_time", "end"])
        gaps.append(float(jobs["end"].max() - (jobs["submit"] + jobs["run_time"]).max()))
    if runs["makespan_days"].nunique() != 1:
        return ""
    return (f"the makespan ({runs['makespan_days'].iloc[0]:.2f} days) is in every scenario within "
            f"{max(gaps):.0f} s of its lower bound, the end of the last job run at its submission "
            f"(max submit + run time): the trace's tail, not the queue, sets it")


def estimate_evidence(sweep_dir: Path, trace: str, wait: dict[int, float]) -> str:
    """When most of a trace's jobs carry no request: that share, the share of jobs PSP puts in g10
    for want of any (Table 1's best group), and what the missing limits cost FCFS (scenario 4 / 1)
    against 000's Table 5, whose traces gave every job a group (its Table 3)."""
    table = pd.read_csv(sweep_dir / "sweep.csv")
    real = table[(table["workload.estimate"] == "requested")
                 & table["workload.swf"].astype(str).str.contains(trace.split("-cln")[0], regex=False)]
    share = float((real["no_requested_time"] / real["jobs"]).iloc[0])
    if share < 0.5:
        return ""
    groups = pd.read_csv(sweep_dir / "groups.csv")
    groups = groups[(groups["trace"] == trace) & (groups["scenario"] == 4)]
    best = float(groups[groups["group"] == 49]["jobs"].sum() / groups["jobs"].sum())
    paper = ", ".join(f"{site} {PAPER_WAIT_MIN[site][3] / PAPER_WAIT_MIN[site][0]:.2f}" for site in SITES)
    return (f"{share:.0%} of {trace}'s jobs give no request, so PSP learns no accuracy from them and "
            f"puts {best:.0%} of the jobs in g10 (000's Table 3: 4-5 %); they run with the partition's "
            f"1-day limit, and FCFS waits {wait[4] / wait[1]:.2f}x longer with real estimates than with "
            f"perfect ones (scenario 4 / 1; 000: {paper}): this trace lacks the input PSP ranks users by")


def run_loads(config: Path, trace: str) -> pd.DataFrame:
    """The config's point of ``trace`` rerun under each scenario of Table 4 of 000 with its submit
    times multiplied by each factor of :data:`LOADS`: mean wait (minutes), makespan (days), the
    share of jobs started at PSP's priority cap and of jobs that waited longer than their limit."""
    data = absolute_paths(load_yaml(config).plain(), config.parent)
    sweep = data.pop("sweep")
    zipped = sweep.get("zip", {})
    index = [Path(str(swf)).name.split(".swf")[0] for swf in zipped.get("workload.swf", [])].index(trace)
    for key, values in zipped.items():
        node = data
        *parents, last = key.split(".")
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        node[last] = values[index]
    rows = []
    for (policy, estimate), scenario in TABLE_4.items():
        data["policy"] = {"preset": policy}
        data["workload"]["estimate"] = estimate
        experiment = load_experiment(config, located(data))
        for factor in LOADS:
            jobs = [dataclasses.replace(job, submit=job.submit * factor) for job in experiment.jobs]
            priority, scheduler = preset(policy)
            result = Simulation(jobs, experiment.cluster, experiment.scheduler, priority).run().jobs
            rows.append({"trace": trace, "scenario": scenario, "load_factor": factor,
                         "mean_wait_min": float(result["wait"].mean()) / 60.0,
                         "makespan_days": float(result["end"].max()) / 86400.0,
                         "at_cap": float((result["priority_at_start"] >= CAP).mean()),
                         "waited_past_limit": float((result["wait"] > result["requested_time"]).mean())})
    return pd.DataFrame(rows)


def load_evidence(loads: pd.DataFrame, a: int, b: int, paper: float) -> str:
    """When the wait ratio a / b takes 000's direction at a load nearer 000's: the waits and ratios
    at every load (the config's and the compressed ones)."""
    heavy = loads[loads["load_factor"] == min(LOADS)]
    wait = dict(zip(heavy["scenario"], heavy["mean_wait_min"], strict=True))
    if not SameSide(1.0).holds(paper, wait[a] / wait[b]):
        return ""
    parts = []
    for factor, runs in loads.groupby("load_factor", sort=False):
        at = dict(zip(runs["scenario"], runs["mean_wait_min"], strict=True))
        parts.append(f"x{factor:g}: FCFS waits {at[4]:.0f} min, {a}/{b} = {at[a] / at[b]:.2f}")
    return ("000 stressed its machines (mean waits of 2,336-5,153 min, sec. 4.2) and does not give its "
            "subsets' load; with submit times compressed, " + "; ".join(parts)
            + ": the direction follows the load")


def gain_evidence(loads: pd.DataFrame) -> str:
    """Why PSP+AGING's gain over FCFS (4 / 6) stays below 000's at every load: the jobs started at
    the priority cap once waits pass the requests."""
    parts, heavy = [], None
    for factor, runs in loads.groupby("load_factor", sort=False):
        at = dict(zip(runs["scenario"], runs["mean_wait_min"], strict=True))
        parts.append(f"x{factor:g} (FCFS waits {at[4]:.0f} min): {at[4] / at[6]:.2f}")
        heavy = runs[runs["scenario"] == 6].iloc[0]
    assert heavy is not None
    return ("4/6 with submit times compressed: " + ", ".join(parts) + f"; at x{min(LOADS):g} "
            f"{heavy['waited_past_limit']:.0%} of the jobs wait longer than their request, where eq. (1) "
            f"grows geometrically, and {heavy['at_cap']:.0%} start at the priority cap ({CAP:g}), tied in "
            "submit order as under FCFS: the gain at 000's load depends on how its Slurm plugin bounded "
            "the priority (Slurm holds it in 32 bits), which 000 does not give")


def trace_checks(sweep_dir: Path, trace: str, runs: pd.DataFrame, loads: pd.DataFrame | None) -> list[Check]:
    """The wait ratios of sec. 5 and the makespan ratio of Table 6 for one trace; ``loads``: the
    trace rerun at higher loads (:func:`run_loads`), if it was."""
    wait = dict(zip(runs["scenario"], runs["mean_wait_min"], strict=True))
    span = dict(zip(runs["scenario"], runs["makespan_days"], strict=True))
    short = trace.split("-cln")[0]
    missing = estimate_evidence(sweep_dir, trace, wait)
    checks = []
    for a, b in WAIT_RATIOS:
        paper, sites = paper_ratio(PAPER_WAIT_MIN, a, b)
        evidence = missing or (load_evidence(loads, a, b, paper) if loads is not None else "")
        checks.append(Check(f"Table 5 of 000: mean wait {a}/{b} ({MEANING[(a, b)]}), {short}", paper,
                            wait[a] / wait[b], SameSide(1.0), detail=f"000: {sites}", evidence=evidence))
    paper, sites = paper_ratio(PAPER_WAIT_MIN, 4, 6)
    checks.append(Check(f"Table 5 of 000: how much PSP+AGING shortens FCFS's wait, real estimates (4/6), "
                        f"{short}", paper, wait[4] / wait[6], Within(1.25),
                        detail=f"the size of the gain; 000: {sites}",
                        evidence=missing or (gain_evidence(loads) if loads is not None else "")))
    paper, sites = paper_ratio(PAPER_MAKESPAN_DAYS, 6, 4)
    checks.append(Check(f"Table 6 of 000: makespan 6/4 (PSP+AGING / FCFS, real estimates), {short}", paper,
                        span[6] / span[4], SameSide(1.0), detail=f"000: {sites}",
                        evidence=makespan_evidence(sweep_dir, runs) or missing))
    return checks


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


def table_2_checks(table: pd.DataFrame) -> list[Check]:
    """Sec. 4.1 of 000 on Table 2: most jobs ask for 2-16 cores (60 % on Curie, 87 % on Gaia).
    Table 2 describes 000's traces, which are not available: where ours differ, the range most of
    their jobs fall in says how."""
    checks = []
    ours = [column for column in table.columns if column not in TABLE_2 and column != "cores requested"]
    for trace in ours:
        shares = table.set_index("cores requested")[trace]
        evidence = (f"Table 2 describes CEA-Curie and Gaia, not available here; {trace}'s jobs fall most "
                    f"often in {shares.idxmax()} cores ({shares.max():.0%})")
        checks.append(Check(f"Table 2 of 000: share of jobs of 2-16 cores, {trace.split('-cln')[0]}",
                            TABLE_2["CEA-Curie"][0], float(shares.iloc[0]), SameSide(0.5),
                            detail="most jobs are small, as on CEA-Curie (0.60) and Gaia (0.87); every "
                                   "range in sweep/table2.csv", evidence=evidence))
    return checks


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


def figure_1(path: Path) -> dict[str, list[tuple[float, float]]]:
    """Fig. 1 of 000: the priority of four jobs submitted together, on a log scale, over 2 h."""
    from djsb.plotting import plt, save

    curves = {name: aged(g, request, 7200.0) for name, (g, request) in FIG_1_JOBS.items()}
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, points in curves.items():
        ax.plot([t for t, _ in points], [p for _, p in points], label=name)
    ax.set_yscale("log")
    ax.set_xlabel("time since submission (s)")
    ax.set_ylabel("priority (eq. 1 of 000)")
    ax.set_title("Fig. 1 of 000 redrawn: PSP+AGING priority, 150 s step", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(title="group, request")
    fig.tight_layout()
    save(fig, path)
    return curves


def figure_1_checks(curves: dict[str, list[tuple[float, float]]]) -> list[Check]:
    """Sec. 3 of 000 on Fig. 1: "the priority of small jobs increases faster than the priority of
    large jobs" (g10, 1 h against 12 h requests, at 6,750 s, the instant 000 quotes; eq. (1) is
    linear in g, so the ratio is the same in every group)."""
    at = {name: dict(points)[6750.0] for name, points in curves.items()}
    ratio = at["g10, 1 h"] / at["g10, 12 h"]
    direction = SameSide(1.0).holds(61 / 58, ratio)
    return [Check("Fig. 1 of 000: priority of a 1 h over a 12 h request at 6,750 s (same group)",
                  61 / 58, ratio, Within(1.25),
                  detail="000 gives the ratio of its j1 and j4 at 6,750 s (61 / 58), not their groups and "
                         "requests",
                  evidence=f"the size of the ratio is set by the requests 000 does not give: its j4 at 58 "
                           f"after 45 steps of 150 s means aging added little (in group g10, 58 = 49 + 58 x "
                           f"6,750 / request gives a request of about "
                           f"{6750.0 * 58 / (58 - 49) / 3600.0:.1f} h); "
                           f"our 1 h job has waited {6750.0 / 3600.0:.2f} times its request "
                           f"and eq. (1) grows geometrically from there (ratio {ratio:.3g}); the statement "
                           f"of sec. 3, small requests grow faster (ratio > 1), "
                           f"{'holds' if direction else 'does not hold'}")]


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
    """Run the six scenarios on both traces, write psp-report's tables and charts, return the checks."""
    config = CONFIGS / "psp-scenarios.yaml"
    sweep_dir = run_config_sweep(config, out_dir / "sweep", FULL if full else None)
    requests = user_requests(sweep_dir)
    write_psp_report(sweep_dir, {trace: dict(zip(jobs.index, jobs["requested"], strict=True))
                                 for trace, jobs in requests.items()})
    frame = scenarios(sweep_dir)
    loads = run_loads(config, LOAD_TRACE)
    loads.to_csv(sweep_dir / "loads.csv", index=False)
    checks = [check for trace, runs in frame.groupby("trace")
              for check in trace_checks(sweep_dir, str(trace), runs,
                                        loads if trace == LOAD_TRACE and not full else None)]
    table = table_2({trace: jobs["cpus"] for trace, jobs in requests.items()})
    table.to_csv(sweep_dir / "table2.csv", index=False)
    checks += table_2_checks(table)
    checks += figure_1_checks(figure_1(out_dir / "fig1.png"))
    traces = frame["trace"].unique()
    figures = [Figure(Path("fig1.png"), "Fig. 1 of 000", "eq. (1) for four jobs submitted together")]
    figures += [Figure(Path("sweep") / f"{stem}_{trace}.png", paper, f"{what} per policy, {trace}")
                for stem, paper, what in (("wait", "Figs. 3-4 of 000", "mean wait"),
                                          ("makespan", "Table 6 of 000", "makespan"))
                for trace in traces]
    sizes = ", ".join(f"{trace}: {jobs} jobs" for trace, jobs in frame.groupby("trace")["jobs"].max().items())
    return Reproduction("000", "Penalty Scheduling Policy with aging (PSP+AGING)",
                        f"The six scenarios of Table 4 of 000 ({sizes}; CEA-Curie and Gaia are not "
                        "available); tables and per-accuracy-group waits in sweep/psp_report.md.",
                        checks, figures)
