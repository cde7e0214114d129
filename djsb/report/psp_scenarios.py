"""Tables 5 and 6 of paper 000 from a sweep of its six scenarios, with the paper's numbers beside.

The scenarios of Table 4 of 000 are the points of a ``djsb sweep`` over ``policy.preset`` (fcfs, psp,
psp_aging) x ``workload.estimate`` (runtime = perfect, requested = the users' real estimates),
possibly over several traces (``workload.swf``). From the sweep's ``sweep.csv`` (one row per point,
one column per swept key, the point's metrics.json scalars) and each point's jobs.csv this writes:

* ``table5_6.csv``: mean wait (minutes, Table 5) and makespan (days, Table 6) per trace and scenario;
* ``ratios.csv``: the wait ratios the paper discusses (sec. 5: scenario 1 / 6 is 1.956 on CEA Curie and
  1.800 on Gaia), measured next to the paper's, and the makespan ratio 6 / 4;
* ``groups.csv``: per trace, scenario and accuracy group of Table 1 the jobs and their mean wait;
  a job's group is its owner's mean accuracy over their previous ten jobs in submission order
  (recorded run / the user's request, from the real-estimate point), the workload property 000's
  Table 3 tabulates;
* ``wait_<trace>.png`` and ``makespan_<trace>.png``: the bar charts of Figs. 3-4 of 000 (bars per
  policy, grouped by estimate);
* ``psp_report.md``: all of the above as text.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from djsb.errors import InputError
from djsb.model.priority.psp import GROUP_PRIORITY, group_priority, job_accuracy, mean_accuracy
from djsb.plotting import mark_paper, save

if TYPE_CHECKING:
    from matplotlib.figure import Figure as MplFigure

POLICIES = ("fcfs", "psp", "psp_aging")
ESTIMATES = {"runtime": "perfect", "requested": "real"}
TABLE_4 = {(policy, estimate): 1 + i + 3 * j for j, estimate in enumerate(ESTIMATES)
           for i, policy in enumerate(POLICIES)}
"""(policy.preset, workload.estimate) -> scenario number of Table 4 of 000 (1-3 perfect, 4-6 real)."""

PAPER_WAIT_MIN: dict[str, tuple[float, ...]] = {"CEA-Curie": (4569, 3785, 2617, 4609, 3706, 2336),
                  "Gaia": (4358, 3716, 2641, 5153, 3354, 2421)}
"""Table 5 of 000: mean wait in minutes, scenarios 1-6."""
PAPER_MAKESPAN_DAYS: dict[str, tuple[float, ...]] = {"CEA-Curie": (16.19, 15.33, 17.19, 16.17, 17.04, 17.71),
                       "Gaia": (27.82, 27.62, 27.79, 27.85, 28.03, 29.08)}
"""Table 6 of 000: makespan in days, scenarios 1-6."""
WAIT_RATIOS = ((1, 6), (4, 6), (1, 2), (4, 5), (5, 6), (1, 3))
"""Pairs (a, b) whose mean-wait ratio a / b sec. 5 of 000 discusses (1/6: 1.956 and 1.800)."""

def scenarios(sweep_dir: Path) -> pd.DataFrame:
    """One row per point of the sweep: trace, scenario, policy, estimate, mean wait, makespan."""
    path = sweep_dir / "sweep.csv"
    if not path.is_file():
        raise InputError("no sweep.csv here: give the output directory of djsb sweep", source=str(sweep_dir))
    frame = pd.read_csv(path)
    missing = [key for key in ("policy.preset", "workload.estimate") if key not in frame]
    if missing:
        raise InputError(f"sweep.csv has no column {', '.join(missing)}: not a sweep of 000's scenarios",
                         source=str(path))
    frame["policy"] = frame["policy.preset"]
    frame["estimate"] = frame["workload.estimate"]
    traces = frame["workload.swf"] if "workload.swf" in frame else pd.Series("trace", index=frame.index)
    frame["trace"] = traces.map(lambda p: Path(str(p)).name.split(".swf")[0])
    frame["scenario"] = [TABLE_4[(p, e)] for p, e in zip(frame["policy"], frame["estimate"], strict=True)]
    frame["mean_wait_min"] = frame["mean_wait"] / 60.0
    frame["makespan_days"] = frame["makespan"] / 86400.0
    columns = ["trace", "scenario", "policy", "estimate", "point", "jobs", "mean_wait_min", "makespan_days"]
    return frame[columns].sort_values(["trace", "scenario"]).reset_index(drop=True)


def wait_ratios(frame: pd.DataFrame) -> pd.DataFrame:
    """Measured mean-wait ratios a / b per trace beside the paper's (Table 5), and makespan 6 / 4."""
    rows = []
    for trace, runs in frame.groupby("trace"):
        wait = dict(zip(runs["scenario"], runs["mean_wait_min"], strict=True))
        span = dict(zip(runs["scenario"], runs["makespan_days"], strict=True))
        for a, b in WAIT_RATIOS:
            rows.append(_ratio(str(trace), f"wait {a}/{b}", wait[a] / wait[b], PAPER_WAIT_MIN, a, b))
        rows.append(_ratio(str(trace), "makespan 6/4", span[6] / span[4], PAPER_MAKESPAN_DAYS, 6, 4))
    return pd.DataFrame(rows)


def _ratio(trace: str, name: str, measured: float, paper: dict[str, tuple[float, ...]], a: int,
           b: int) -> dict[str, object]:
    """One row of ratios.csv: the measured ratio and the paper's for scenarios a / b per site."""
    return {"trace": trace, "ratio": name, "measured": measured,
            **{f"paper {site}": table[a - 1] / table[b - 1] for site, table in paper.items()}}


def accuracy_groups(jobs: pd.DataFrame, window: int = 10) -> pd.Series:
    """Each job's Table 1 priority: its owner's mean accuracy over their previous ``window`` jobs.

    Accuracy = min(1, run time / requested time) of each earlier job in submission order, exact as
    in the PSP plugin; a user's first job (no history) is in g10 = 49, as there.
    """
    history: dict[str, deque[Fraction]] = {}
    groups = {}
    for job in jobs.sort_values(["submit", "job_id"]).itertuples():
        past = history.setdefault(str(job.user), deque(maxlen=window))
        groups[job.Index] = group_priority(mean_accuracy(past)) if past else GROUP_PRIORITY[-1]
        if job.requested_time > 0:  # NaN (no request) is not
            past.append(job_accuracy(float(job.run_time), float(job.requested_time)))
    return pd.Series(groups).reindex(jobs.index)


def group_breakdown(sweep_dir: Path, frame: pd.DataFrame,
                    requests: Mapping[str, Mapping[int, float | None]] | None = None) -> pd.DataFrame:
    """Jobs and mean wait (minutes) per trace, scenario and accuracy group.

    ``requests``: per trace, each job's own request as the trace recorded it (None: none), so a job
    without one counts toward no accuracy, as in the PSP plugin; without it the real-estimate
    point's limits stand in (a job without a request then counts with the partition's MaxTime).
    """
    parts = []
    for trace, runs in frame.groupby("trace"):
        real = runs[runs["scenario"] == 4]["point"].iloc[0]
        recorded = pd.read_csv(sweep_dir / "points" / str(real) / "jobs.csv")
        if requests is not None and str(trace) in requests:
            own = requests[str(trace)]
            recorded["requested_time"] = [own.get(job_id) for job_id in recorded["job_id"]]
            recorded["requested_time"] = recorded["requested_time"].astype(float)
        group = dict(zip(recorded["job_id"], accuracy_groups(recorded), strict=True))
        for run in runs.itertuples():
            jobs = pd.read_csv(sweep_dir / "points" / str(run.point) / "jobs.csv", usecols=["job_id", "wait"])
            jobs["group"] = jobs["job_id"].map(group)
            stats = jobs.groupby("group")["wait"].agg(["size", "mean"]).reset_index()
            parts.append(pd.DataFrame({"trace": trace, "scenario": run.scenario, "group": stats["group"],
                                       "jobs": stats["size"], "mean_wait_min": stats["mean"] / 60.0}))
    return pd.concat(parts, ignore_index=True)


CHARTS = (("mean_wait_min", "mean wait (minutes)", "wait"), ("makespan_days", "makespan (days)", "makespan"))
"""Figs. 3-4 of 000 and Table 6 as charts: the column of :func:`scenarios`, its label, the file's stem."""
PaperValues = Mapping[tuple[str, str], Mapping[int, float]]
"""The paper's values to draw on the charts: by (chart stem, trace), the value of each scenario."""


def bar_chart(runs: pd.DataFrame, trace: str, column: str, label: str,
              paper: Mapping[int, float] | None = None) -> MplFigure:
    """One trace's ``column`` per policy, by estimate, with ``paper``'s value of a scenario dashed on
    its bar."""
    table = runs.pivot(index="estimate", columns="policy", values=column)
    table = table.loc[list(ESTIMATES), list(POLICIES)].rename(index=ESTIMATES)
    ax = table.plot.bar(rot=0, figsize=(6, 4))
    for policy, container in zip(POLICIES, ax.containers, strict=True):
        for estimate, patch in zip(ESTIMATES, container, strict=True):
            scenario = TABLE_4[(policy, estimate)]
            if paper and scenario in paper:
                mark_paper(ax, patch.get_x() + patch.get_width() / 2, paper[scenario], patch.get_width())
    if paper:
        ax.legend(fontsize=8)
    ax.set_xlabel("job run time estimates")
    ax.set_ylabel(label)
    ax.set_title(f"{trace.split('-cln')[0]}: {label}", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.figure.tight_layout()
    return ax.figure


def bar_charts(frame: pd.DataFrame, out_dir: Path, paper: PaperValues | None = None) -> list[Path]:
    """Figs. 3-4 of 000: per trace, the mean wait (and the makespan) of each policy, by estimate;
    ``paper``: the paper's values drawn on them."""
    written = []
    for trace, runs in frame.groupby("trace"):
        for column, label, stem in CHARTS:
            path = out_dir / f"{stem}_{trace}.png"
            save(bar_chart(runs, str(trace), column, label, (paper or {}).get((stem, str(trace)))), path)
            written.append(path)
    return written


def write_psp_report(sweep_dir: Path,
                     requests: Mapping[str, Mapping[int, float | None]] | None = None) -> Path:
    """Write the tables, ratios, group breakdown and charts of a six-scenario sweep; returns the .md.
    ``requests``: the users' own requests per trace and job (see :func:`group_breakdown`)."""
    sweep_dir = Path(sweep_dir)
    frame = scenarios(sweep_dir)
    ratios = wait_ratios(frame)
    groups = group_breakdown(sweep_dir, frame, requests)
    frame.to_csv(sweep_dir / "table5_6.csv", index=False)
    ratios.to_csv(sweep_dir / "ratios.csv", index=False)
    groups.to_csv(sweep_dir / "groups.csv", index=False)
    figures = bar_charts(frame, sweep_dir)
    shares = groups[groups["scenario"] == 4].pivot(index="group", columns="trace", values="jobs")
    text = ["# Paper 000's six scenarios (Table 4)", "",
            "## Tables 5 and 6: mean wait (minutes) and makespan (days)", "",
            _block(frame, ".2f", index=False), "",
            "## Ratios, measured and in the paper (Table 5 / Table 6 of 000)", "",
            _block(ratios, ".3f", index=False), "",
            "## Jobs per accuracy group (initial priority of Table 1; Table 3 of 000 gives shares)", "",
            _block(shares / shares.sum(), ".2f"), "",
            "## Mean wait (minutes) per accuracy group and scenario", "",
            _block(groups.pivot_table(index=["trace", "group"], columns="scenario", values="mean_wait_min"),
                   ".1f"), "",
            *[f"![{p.stem}]({p.name})" for p in figures], ""]
    path = sweep_dir / "psp_report.md"
    path.write_text("\n".join(text))
    return path


def _block(table: pd.DataFrame, fmt: str, index: bool = True) -> str:
    """A table as a fixed-width text block for the Markdown report."""
    return "```\n" + table.to_string(index=index, float_format=lambda v: format(v, fmt)) + "\n```"
