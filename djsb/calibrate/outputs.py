"""What a calibration writes once its replays are done: the replay tables, jobs.csv, the comparisons
(comparison.json), usage.csv, timeline.png and report.html, and the notes and summary lines."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pandas as pd

from djsb.calibrate.compare import Comparison, compare, per_job
from djsb.calibrate.model_replay import SlurmModel
from djsb.calibrate.run_dir import CalibrationDir
from djsb.calibrate.slurm_replay import KILLED
from djsb.calibrate.watch_draws import spread_figures, spread_line
from djsb.model.priority.base import PriorityPlugin
from djsb.report.calibration import plot_timelines, write_calibration_html
from djsb.workloads.job import TraceJob


def describe(label: str, comparison: Comparison) -> str:
    """One line of a comparison's figures."""
    c = comparison
    return (f"{label}: tau {c.tau:.2f}, start error mean {c.start_error_mean:.1f} s, "
            f"median {c.start_error_median:.1f} s, max {c.start_error_max:.1f} s; mean wait "
            f"{c.mean_wait_b:.1f} s vs {c.mean_wait_a:.1f} s ({c.mean_wait_error:+.1%}); "
            f"backfilled {len(c.backfilled_b)} vs {len(c.backfilled_a)}")



def late_start_notes(jobs: list[TraceJob], model: pd.DataFrame, passes: dict[str, list[float]]) -> list[str]:
    """The jobs the model started after Slurm's last watched pass, in passes of its own (it lags
    behind Slurm there, so those passes are the configuration's, not Slurm's), and the jobs it never
    started, which the comparison leaves out. ``passes``: each scheduler's watched passes, in
    seconds from the origin like ``model``'s starts."""
    notes = []
    last = max((max(times) for times in passes.values() if times), default=None)
    if last is not None:
        late = model.index[model["start"] > last].tolist()
        if late:
            notes.append(f"the model started {len(late)} job(s) after Slurm's last watched pass "
                         f"({last:.1f} s), in passes of its own as the configuration runs them: "
                         f"job(s) {', '.join(map(str, late))}")
    missing = sorted({job.job_id for job in jobs} - set(model.index))
    if missing:
        notes.append(f"the model never started {len(missing)} of {len(jobs)} jobs; left out of the "
                     f"comparison: job(s) {', '.join(map(str, missing))}")
    return notes



def kill_note(jobs: list[TraceJob], replay: pd.DataFrame) -> list[str]:
    """How many jobs Slurm killed at their limits in ``replay``, and how long after their limits
    (its time-limit check runs every 30 s: slurmctld.h PERIODIC_TIMEOUT)."""
    killed = replay[replay["state"] == KILLED] if "state" in replay else replay.iloc[:0]
    if killed.empty:
        return []
    limits = pd.Series({job.job_id: job.requested_time for job in jobs}).reindex(killed.index)
    late = killed["end"] - killed["start"] - limits
    return [f"Slurm killed {len(killed)} job(s) at their limits, {late.min():.0f}-{late.max():.0f} s after "
            f"them (mean {late.mean():.1f} s); the model's runs of those end where Slurm's did"]



def write_outputs(run_dir: CalibrationDir, replays: dict[str, pd.DataFrame], slurm: SlurmModel,
                  priority: PriorityPlugin, notes: list[str], passes: pd.DataFrame,
                  observed: dict[str, list[float]], usage: pd.DataFrame | None,
                  draws: list[pd.DataFrame]) -> str:
    """The model's and Slurm's tables, the comparisons, the timelines and report.html; the summary
    lines. ``draws``: the model's replays with drawn pass instants, whose range goes in a note."""
    out_dir = run_dir.path
    for name, replay in replays.items():
        replay.to_csv(out_dir / f"{name}.csv")
    jobs = per_job(replays)
    jobs.to_csv(out_dir / "jobs.csv")
    comparisons = {f"{name} vs slurm_1": compare(replays["slurm_1"], replay)
                   for name, replay in replays.items() if name != "slurm_1"}
    others = [name for name in replays if name not in ("slurm_1", "model")]
    comparisons.update({f"model vs {name}": compare(replays[name], replays["model"]) for name in others})
    drawn = [compare(replays["slurm_1"], replay) for replay in draws]
    if drawn:
        notes = [*notes, spread_line("model vs slurm_1 with its passes drawn", drawn)]
    first = passes[passes["run"] == 1]
    lines = [*notes, *(f"the model's {name} passes: the {len(times)} Slurm ran in run 1 (within "
                       f"{first.loc[first['scheduler'] == name, 'uncertainty'].max():.2f} s)"
                       for name, times in observed.items() if times),
             *(describe(label, c) for label, c in comparisons.items())]
    summary: dict[str, Any] = {"scheduler": dataclasses.asdict(slurm.scheduler), "priority": priority.name,
                               "notes": notes, **{label: c.as_dict() for label, c in comparisons.items()}}
    if drawn:
        summary["model vs slurm_1, passes drawn"] = spread_figures(drawn)
    if usage is not None:
        usage.to_csv(out_dir / "usage.csv", index=False)
        accrued = float(usage["slurm_accrued"].sum())
        summary["usage"] = {"slurm_accrued": accrued, "model_accrued": float(usage["model_accrued"].sum()),
                            "max_difference": float(usage["difference"].abs().max()) if len(usage) else 0.0}
        lines.append(f"fair-share usage accrued in run 1: Slurm {accrued:.0f} CPU-s, model "
                     f"{summary['usage']['model_accrued']:.0f} CPU-s (largest difference of one association "
                     f"{summary['usage']['max_difference']:.0f})")
    (out_dir / "comparison.json").write_text(json.dumps(summary, indent=2, default=str))
    plot_timelines(replays, out_dir / "timeline.png")
    write_calibration_html(out_dir, comparisons={label: c.as_dict() for label, c in comparisons.items()},
                           jobs=jobs, usage=usage, notes=notes, slurm_texts=run_dir.slurm_texts(),
                           scheduler=dataclasses.asdict(slurm.scheduler), priority=priority.name)
    return "\n".join([*lines, f"results in {out_dir}"])

