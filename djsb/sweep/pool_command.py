"""``djsb pool CONFIG [-o OUT] [--force] [--resume]``: one run, or a parameter sweep from one config.

A config with a ``sweep:`` section (``runner: pool``, ``grid:``/``zip:`` of dotted key paths, the
format of ``djsb sweep``: djsb/sweep/spec.py) is run as that sweep, on every local core
(``--resume`` continues it, its finished points kept): ``OUT/points/<k>/``, ``OUT/sweep.csv``,
plus ``OUT/policy_sweep.png`` (figs. 5-11 of paper 002). Without it the single run goes straight
into ``OUT``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd

from djsb.errors import RunError
from djsb.outcome import Outcome, headlines
from djsb.pool.config import read_experiment
from djsb.pool.metrics import UNITS
from djsb.pool.plots import plot_sweep
from djsb.pool.runner import run_experiment
from djsb.sweep.run import SweepRequest, run_sweep
from djsb.sweep.spec import sweep_from_tree
from djsb.yamlnodes import load_yaml


def run_pool(config_path: Path, out_dir: Path) -> Outcome:
    """Run the config (one point or its sweep) into ``out_dir``; return its end: a run's headline
    metrics of paper 002 sec. VI, or a sweep's points."""
    root = load_yaml(config_path)
    if root.get("sweep") is None:
        metrics = run_experiment(read_experiment(root, config_path.parent), out_dir)
        return Outcome("pool", f"{config_path}: one pool run", out_dir, headlines(metrics, UNITS, (
            "energy_kwh", "good_tasks_completed", "good_tasks_killed", "mean_overhead_minutes",
            "bad_task_hours_wasted")))
    spec = sweep_from_tree(root)
    section = root.mapping()["sweep"]
    if spec.runner != "pool":
        raise (section.get("runner") or section).error(
            f"djsb pool runs the pool runner (runner: pool); run {spec.runner!r} with djsb sweep")
    if spec.slurm is not None:
        raise spec.slurm.error("points run on Slurm through `djsb sweep --executor slurm`, not `djsb pool`")
    status, end = run_sweep(SweepRequest(config_path, out_dir), out_dir)
    if status:
        raise RunError(f"pool sweep ended with status {status}: see the messages above ({out_dir})")
    table = pd.read_csv(out_dir / "sweep.csv")
    plot_sweep(table, list(spec.keys), out_dir / "policy_sweep.png", run=out_dir.name)
    return dataclasses.replace(end, command="pool")
