"""Paper 000 (Rocchetti et al., PSP+AGING): the six scenarios of its Table 4 on KTH-SP2 and
LLNL-Atlas (configs/psp-scenarios.yaml: CEA-Curie and Gaia are not available), their mean waits
and makespans beside Tables 5-6, through ``djsb psp-report``'s functions.

Default: the config's subsets (the first 5,000 KTH-SP2 and 10,000 Atlas jobs), about a minute on
two cores. ``full``: the whole traces (000 does not give its subsets' sizes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from djsb.report.psp_scenarios import (
    PAPER_MAKESPAN_DAYS,
    PAPER_WAIT_MIN,
    WAIT_RATIOS,
    scenarios,
    write_psp_report,
)
from djsb.reproduce.checks import Check, Figure, Reproduction, SameSide, Within
from djsb.reproduce.registry import CONFIGS, PAPERS
from djsb.reproduce.sweeps import run_config_sweep
from djsb.workloads.swf import read_swf

SITES = tuple(PAPER_WAIT_MIN)
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
    """When a perfect-vs-real ratio goes the other way: the share of jobs without an estimate and
    what real estimates cost FCFS here (scenario 4 / 1) against 000's Table 5."""
    table = pd.read_csv(sweep_dir / "sweep.csv")
    real = table[(table["workload.estimate"] == "requested")
                 & table["workload.swf"].astype(str).str.contains(trace.split("-cln")[0], regex=False)]
    share = float((real["no_requested_time"] / real["jobs"]).iloc[0])
    if share < 0.5:
        return ""
    paper = ", ".join(f"{site} {PAPER_WAIT_MIN[site][3] / PAPER_WAIT_MIN[site][0]:.2f}" for site in SITES)
    return (f"{share:.0%} of {trace}'s jobs give no estimate and get the partition's 1-day limit: "
            f"FCFS waits {wait[4] / wait[1]:.2f}x longer with real estimates than with perfect ones "
            f"(scenario 4 / 1; 000: {paper}), so a perfect-vs-real ratio measures the missing estimates")


def trace_checks(sweep_dir: Path, trace: str, runs: pd.DataFrame) -> list[Check]:
    """The wait ratios of sec. 5 and the makespan ratio of Table 6 for one trace."""
    wait = dict(zip(runs["scenario"], runs["mean_wait_min"], strict=True))
    span = dict(zip(runs["scenario"], runs["makespan_days"], strict=True))
    short = trace.split("-cln")[0]
    checks = []
    for a, b in WAIT_RATIOS:
        paper, sites = paper_ratio(PAPER_WAIT_MIN, a, b)
        crosses = (a <= 3) != (b <= 3)
        checks.append(Check(f"Table 5 of 000: mean wait {a}/{b} ({MEANING[(a, b)]}), {short}", paper,
                            wait[a] / wait[b], SameSide(1.0), detail=f"000: {sites}",
                            evidence=estimate_evidence(sweep_dir, trace, wait) if crosses else ""))
    paper, sites = paper_ratio(PAPER_WAIT_MIN, 4, 6)
    checks.append(Check(f"Table 5 of 000: how much PSP+AGING shortens FCFS's wait, real estimates (4/6), "
                        f"{short}", paper, wait[4] / wait[6], Within(1.25),
                        detail=f"the size of the gain; 000: {sites}"))
    paper, sites = paper_ratio(PAPER_MAKESPAN_DAYS, 6, 4)
    checks.append(Check(f"Table 6 of 000: makespan 6/4 (PSP+AGING / FCFS, real estimates), {short}", paper,
                        span[6] / span[4], SameSide(1.0), detail=f"000: {sites}",
                        evidence=makespan_evidence(sweep_dir, runs)))
    return checks


def user_requests(sweep_dir: Path) -> dict[str, dict[int, float | None]]:
    """Per trace of the sweep, each job's own request as the trace recorded it (None: none)."""
    table = pd.read_csv(sweep_dir / "sweep.csv")
    requests = {}
    for swf, limit in table[["workload.swf", "workload.limit"]].drop_duplicates().itertuples(index=False):
        path = CONFIGS / str(swf)
        jobs = read_swf(path, limit=int(limit)).jobs
        requests[path.name.split(".swf")[0]] = {job.job_id: job.requested_time for job in jobs}
    return requests


@PAPERS.register("000")
def reproduce_000(out_dir: Path, full: bool) -> Reproduction:
    """Run the six scenarios on both traces, write psp-report's tables and charts, return the checks."""
    sweep_dir = run_config_sweep(CONFIGS / "psp-scenarios.yaml", out_dir / "sweep", FULL if full else None)
    write_psp_report(sweep_dir, user_requests(sweep_dir))
    frame = scenarios(sweep_dir)
    checks = [check for trace, runs in frame.groupby("trace")
              for check in trace_checks(sweep_dir, str(trace), runs)]
    traces = frame["trace"].unique()
    figures = [Figure(Path("sweep") / f"{stem}_{trace}.png", paper, f"{what} per policy, {trace}")
               for stem, paper, what in (("wait", "Figs. 3-4 of 000", "mean wait"),
                                         ("makespan", "Table 6 of 000", "makespan"))
               for trace in traces]
    sizes = ", ".join(f"{trace}: {jobs} jobs" for trace, jobs in frame.groupby("trace")["jobs"].max().items())
    return Reproduction("000", "Penalty Scheduling Policy with aging (PSP+AGING)",
                        f"The six scenarios of Table 4 of 000 ({sizes}; CEA-Curie and Gaia are not "
                        "available); tables and per-accuracy-group waits in sweep/psp_report.md.",
                        checks, figures)
