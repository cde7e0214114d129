#!/usr/bin/env python3
"""Wall time of paper 004's static experiment on the model (issue 10 item 5), and its report.

Runs the points of configs/wrappers-static-sweep.yaml (the cartesian product of its ``sweep.grid``:
2,000 simulations) on ``--jobs`` processes (default: every core), each point as a sweep point
(the base config with the swept keys replaced) run by djsb/workflows/point.py's ``run_point``, which
keeps only the numbers (no per-point plots or HTML). ``--sample N`` runs N points
drawn at random (seeded) instead of all. Prints the wall time, seconds per point and the projection
to the whole grid, the processes' CPU seconds, writes OUT/sweep.csv and the thesis' tables and
plots (djsb/workflows/thesis_report.py) into OUT/report, and prints Table 4.1 and the fit of
eq. 4.1 (the thesis: a = 7.4689, b = 657.56).

Usage: python3 bench/bench_wrappers_static.py [--jobs N] [--sample N] [-o OUT]
"""

from __future__ import annotations

import argparse
import copy
import itertools
import multiprocessing
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from djsb.workflows.point import run_point  # noqa: E402
from djsb.workflows.thesis_report import (  # noqa: E402
    FAIRSHARE,
    WAIT,
    correlation_table,
    static_tables,
    write_static_report,
)

CONFIG = ROOT / "configs/wrappers-static-sweep.yaml"


def points(config: dict[str, Any]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, as {dotted key: value}."""
    grid = config["sweep"]["grid"]
    return [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]


def with_values(base: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """``base`` with each dotted key replaced."""
    data = copy.deepcopy(base)
    for dotted, value in values.items():
        *parents, last = dotted.split(".")
        node = data
        for part in parents:
            node = node[part]
        node[last] = value
    return data


def one_point(args: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    """The numbers of one point, run in a scratch directory."""
    base, values = args
    with tempfile.TemporaryDirectory() as tmp:
        return {**values, **run_point(with_values(base, values), Path(tmp))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--sample", type=int, help="run this many points drawn at random, not all")
    parser.add_argument("-o", "--output", type=Path, default=Path("runs/bench-wrappers-static"))
    args = parser.parse_args()
    config = yaml.safe_load(CONFIG.read_text())
    base = {k: v for k, v in config.items() if k != "sweep"}
    every = points(config)
    chosen = random.Random(0).sample(every, args.sample) if args.sample else every
    started = time.perf_counter()
    with multiprocessing.Pool(args.jobs) as pool:
        rows = pool.map(one_point, [(base, values) for values in chosen], chunksize=1)
    wall = time.perf_counter() - started
    cpu = sum(getattr(os.times(), k) for k in ("children_user", "children_system"))
    total = len(every)
    projected = wall / len(chosen) * total / 60
    print(f"{len(chosen)} of {total} points on {args.jobs} processes: {wall:.1f} s "
          f"({wall / len(chosen):.3f} s per point; the whole grid: about {projected:.1f} min); "
          f"{cpu:.1f} CPU s in the workers ({cpu / len(chosen):.3f} per point)")
    args.output.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(args.output / "sweep.csv", index=False)
    sweep = pd.DataFrame(rows)
    report = write_static_report(args.output / "sweep.csv", args.output / "report")
    means = sweep.groupby(FAIRSHARE)[WAIT].mean()
    print("mean wait by fair share:", ", ".join(f"{fs:g}: {wait:.0f} s" for fs, wait in means.items()))
    print("eq. 4.1 fit:", (report / "fit.json").read_text().replace("\n", " "))
    print(correlation_table(static_tables(sweep)).to_string(float_format=lambda v: f"{v:.4f}"))


if __name__ == "__main__":
    main()
