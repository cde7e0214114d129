"""One pool run, from a config to its outputs. ``run_point(config_mapping, out_dir)`` is the shared
sweep interface on plain data; ``run_tree(point, out_dir)`` the same on a located tree, the
signature of ``djsb sweep``'s point runners (register it there as ``pool``).

A run writes into its directory ``tasks.csv`` (one row per task: kind, submit, runtime, outcome,
end, deallocations by cause, accrued and wasted hours) and ``metrics.json`` (the scalars of
:func:`djsb.pool.metrics.pool_metrics`, plus what was run).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from djsb.outcome import units_of
from djsb.pool.computers import computers_of
from djsb.pool.config import PoolExperiment, located, read_experiment
from djsb.pool.event_loop import PoolResult, PoolSimulation, TaskRecord
from djsb.pool.interactive import draw_interruptions
from djsb.pool.metrics import UNITS, pool_metrics
from djsb.pool.placement import PLACEMENTS
from djsb.pool.tasks import DEALLOCATIONS, accrued_time, wasted_time
from djsb.pool.units import DAY, HOUR
from djsb.yamlnodes import Located


def simulate_pool(experiment: PoolExperiment) -> PoolResult:
    """Draw the interruptions of every computer, and its history (an earlier period of the same
    length, from the same rooms, on its own random stream) that C2 and C3 rank on; simulate the
    pool over its horizon."""
    computers = computers_of(experiment.pool)
    periods = []
    for stream in ("users", "history"):
        rng = random.Random(f"{experiment.seed}-{stream}")
        periods.append([draw_interruptions(experiment.pool, experiment.pool.clusters[c.cluster], rng)
                        for c in computers])
    interruptions, history = periods
    return PoolSimulation(computers, interruptions, experiment.tasks, experiment.abandon,
                          PLACEMENTS[experiment.placement], history=history, horizon=experiment.pool.horizon,
                          sleep_after=experiment.pool.sleep_after, dedicated_kind=experiment.dedicated_type,
                          seed=experiment.seed).run()


def task_rows(records: list[TaskRecord]) -> pd.DataFrame:
    """tasks.csv: one row per task."""
    rows = []
    for r in records:
        row: dict[str, Any] = {
            "task": r.task.task_id, "kind": "good" if r.task.good else "bad", "submit": r.task.submit,
            "runtime": r.task.runtime, "outcome": r.outcome, "end": r.end, "dedicated": r.dedicated,
            "runs": len(r.runs),
            "accrued_hours": accrued_time(r.runs) / HOUR,
        }
        for cause in DEALLOCATIONS:
            row[f"evicted_{cause.value}"] = sum(1 for run in r.runs if run.cause is cause)
        row["wasted_hours"] = wasted_time(r.runs) / HOUR
        rows.append(row)
    return pd.DataFrame(rows)


def run_experiment(experiment: PoolExperiment, out_dir: Path) -> dict[str, float]:
    """Simulate one point and write its tasks.csv and metrics.json; return the metrics."""
    result = simulate_pool(experiment)
    metrics = pool_metrics(result)
    out_dir.mkdir(parents=True, exist_ok=True)
    task_rows(result.records).to_csv(out_dir / "tasks.csv", index=False)
    described = {"abandon": repr(experiment.abandon), "placement": experiment.placement,
                 "computers": len(result.computers), "horizon_days": experiment.pool.horizon / DAY}
    finite = {k: v if math.isfinite(v) else None for k, v in metrics.items()}  # JSON has no NaN: null
    written = {**finite, "run": described, "units": units_of(finite, UNITS)}
    (out_dir / "metrics.json").write_text(json.dumps(written, indent=2) + "\n")
    return metrics


def run_point(config_mapping: Mapping[str, Any], out_dir: Path) -> dict[str, float]:
    """Run the pool config ``config_mapping`` (plain data; its ``sweep`` section is ignored) into
    ``out_dir``; relative paths in it are taken from the current directory."""
    root = located({k: v for k, v in config_mapping.items() if k != "sweep"})
    return run_experiment(read_experiment(root, Path.cwd()), Path(out_dir))


def run_tree(point: Located, out_dir: Path) -> dict[str, float]:
    """Run a located point config (``djsb sweep``'s point-runner signature): errors keep their file
    and line, and relative paths resolve against the config file's directory."""
    source = Path(point.source)
    base = source.resolve().parent if source.is_file() else Path.cwd()
    return run_experiment(read_experiment(point, base), Path(out_dir))
