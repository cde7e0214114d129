#!/usr/bin/env python3
"""Wall time of paper 004's static experiment on the model, and its report.

Runs configs/wrappers-static-sweep.yaml as ``djsb sweep`` does (its 2,000 points, the ``workflow``
runner: numbers only) on ``--jobs`` worker processes (default: every core) into OUT (finished
points are kept: a rerun continues). ``--sample N`` runs N points drawn at random (seeded) instead
of all. Prints the wall time, seconds per point and the projection to the whole grid, the workers'
CPU seconds, writes the thesis' tables and plots (djsb/reproduce/thesis_tables.py) into OUT/report,
and prints Table 4.1 and the fit of eq. 4.1 (the thesis: a = 7.4689, b = 657.56).

Usage: python3 bench/bench_wrappers_static.py [--jobs N] [--sample N] [-o OUT]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from djsb.reproduce.thesis_tables import (  # noqa: E402
    FAIRSHARE,
    WAIT,
    correlation_table,
    static_tables,
    write_static_report,
)
from djsb.sweep.local import run_local, worker_count  # noqa: E402
from djsb.sweep.spec import read_sweep  # noqa: E402
from djsb.sweep.sweep_dir import SweepDirectory  # noqa: E402

CONFIG = ROOT / "configs/wrappers-static-sweep.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, help="worker processes (default and most: one per usable CPU)")
    parser.add_argument("--sample", type=int, help="run this many points drawn at random, not all")
    parser.add_argument("-o", "--output", type=Path, default=Path("runs/bench-wrappers-static"))
    args = parser.parse_args()
    spec = read_sweep(CONFIG)
    total = len(spec.points)
    if args.sample:
        spec = dataclasses.replace(spec, points=tuple(random.Random(0).sample(spec.points, args.sample)))
    directory = SweepDirectory(args.output)
    directory.claim(spec)
    todo = [k for k in range(len(spec.points)) if k not in directory.finished()]
    started = time.perf_counter()
    outcome = run_local(spec, directory, todo, worker_count(args.jobs), point_done=lambda k: None)
    wall = time.perf_counter() - started
    if outcome.failed or outcome.stopped_by:
        sys.exit(f"sweep did not finish: {outcome.failed or outcome.stopped_by}")
    cpu = sum(getattr(os.times(), k) for k in ("children_user", "children_system"))
    ran = max(len(todo), 1)
    print(f"{len(todo)} of {total} points on {args.jobs} processes: {wall:.1f} s "
          f"({wall / ran:.3f} s per point; the whole grid: about {wall / ran * total / 60:.1f} min); "
          f"{cpu:.1f} CPU s in the workers ({cpu / ran:.3f} per point)")
    sweep = pd.read_csv(args.output / "sweep.csv")
    report = write_static_report(args.output / "sweep.csv", args.output / "report")
    means = sweep.groupby(FAIRSHARE)[WAIT].mean()
    print("mean wait by fair share:", ", ".join(f"{fs:g}: {wait:.0f} s" for fs, wait in means.items()))
    print("eq. 4.1 fit:", (report / "fit.json").read_text().replace("\n", " "))
    print(correlation_table(static_tables(sweep)).to_string(float_format=lambda v: f"{v:.4f}"))


if __name__ == "__main__":
    main()
