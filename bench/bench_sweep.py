#!/usr/bin/env python3
"""Speed-up of ``djsb sweep`` with worker processes.

Writes a sweep of ``--points`` small ``djsb simulate`` points (a Poisson workload of ``--n-jobs``
jobs on 4 nodes of 4 cores, one seed per point), runs it with ``--jobs 1`` and with ``--jobs 2``
(``--reps`` times each, alternating, the best kept) into fresh directories (the user's command as
a subprocess, CLI start-up and every point's report included), and prints each wall time, the
speed-up (t1 / t2), the load average before and after (the machine may be shared: other load only
lengthens a run; the CPU seconds per wall second say how many CPUs the sweep really got), and
checks that both runs' sweep.csv are equal (the same points, whatever the number of workers).

Usage: python3 bench/bench_sweep.py [--points 8] [--n-jobs 1000] [--reps 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent

CONFIG = """\
seed: 1
workload:
  generator: poisson_exponential
  params: {{n_jobs: {n_jobs}, arrival_rate: 0.05, service_rate: 0.005, cpus: 2}}
cluster:
  nodes: [{{count: 4, cores: 4}}]
policy:
  preset: marenostrum4
sweep:
  grid:
    seed: {seeds}
"""


def djsb_command() -> list[str]:
    """The djsb entry point of this checkout's venv, else ``python -m djsb.cli`` with this Python."""
    script = ROOT / ".venv" / "bin" / "djsb"
    return [str(script)] if script.exists() else [sys.executable, "-m", "djsb.cli"]


def timed_sweep(config: Path, out: Path, jobs: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of it and its workers) of one ``djsb sweep --jobs JOBS`` (exits
    on failure, with its stderr)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([*djsb_command(), "sweep", str(config), "-o", str(out), "--jobs", str(jobs)],
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"djsb sweep --jobs {jobs} failed ({done.returncode}): {done.stderr.strip()[-800:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=8)
    parser.add_argument("--n-jobs", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=2, help="runs of each, alternating; the best counts")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="djsb-bench-sweep-") as tmp:
        config = Path(tmp) / "sweep.yaml"
        config.write_text(CONFIG.format(n_jobs=args.n_jobs, seeds=list(range(1, args.points + 1))))
        load_before = os.getloadavg()
        runs: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
        for rep in range(args.reps):  # alternating, so a change of the machine's load hits both
            for jobs in ((1, 2) if rep % 2 == 0 else (2, 1)):
                runs[jobs].append(timed_sweep(config, Path(tmp) / f"jobs{jobs}-{rep}", jobs))
        load_after = os.getloadavg()
        (one, one_cpu), (two, two_cpu) = min(runs[1]), min(runs[2])
        tables = [pd.read_csv(Path(tmp) / out / "sweep.csv") for out in ("jobs1-0", "jobs2-0")]
        same = tables[0].equals(tables[1])
    print(f"{args.points} points of {args.n_jobs} jobs, {os.cpu_count()} CPU(s)")
    print(f"best of {args.reps} run(s) each")
    print(f"--jobs 1: {one:.1f} s wall, {one_cpu:.1f} CPU s (busy CPUs: {one_cpu / one:.2f})")
    print(f"--jobs 2: {two:.1f} s wall, {two_cpu:.1f} CPU s (busy CPUs: {two_cpu / two:.2f})")
    print(f"speed-up: {one / two:.2f}x")
    print(f"load average (1 min) before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    print(f"sweep.csv equal for --jobs 1 and 2: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
