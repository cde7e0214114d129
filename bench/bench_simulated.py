#!/usr/bin/env python3
"""Time paper 001's whole experiment on the simulated cluster.

Runs ``djsb run configs/paper-simulated.yaml -o <tmp>`` as a subprocess (the user's command, CLI
start-up, reference and execution stages, report and figures included), ``--reps`` times, and
prints the wall seconds of each run, the best, the CPU seconds of the best, the load average
before and after (the machine may be shared: other load only ever lengthens a run), and the
summary table of the last run. Exits 1 when the best run exceeds ``--limit`` seconds (5 by
default: the target for the whole experiment).

Usage: python3 bench/bench_simulated.py [--config configs/paper-simulated.yaml] [--reps 3]
       [--limit 5]
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

ROOT = Path(__file__).resolve().parent.parent


def djsb_command() -> list[str]:
    """The djsb entry point of this checkout's venv, else ``python -m djsb.cli`` with this Python."""
    script = ROOT / ".venv" / "bin" / "djsb"
    return [str(script)] if script.exists() else [sys.executable, "-m", "djsb.cli"]


def timed_run(config: Path, out: Path) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the child, its stdout) of one ``djsb run``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([*djsb_command(), "run", str(config), "-o", str(out)], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"djsb run failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "paper-simulated.yaml")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--limit", type=float, default=5.0, help="seconds the best run may take")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    runs: list[tuple[float, float, str]] = []
    with tempfile.TemporaryDirectory(prefix="djsb-bench-") as tmp:
        for rep in range(args.reps):
            wall, cpu, stdout = timed_run(args.config, Path(tmp) / f"run{rep}")
            runs.append((wall, cpu, stdout))
            print(f"run {rep + 1}: {wall:.2f} s wall, {cpu:.2f} s CPU")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    best_wall, best_cpu, _ = min(runs)
    print(f"best: {best_wall:.2f} s wall ({best_cpu:.2f} s CPU), limit {args.limit:g} s")
    print(runs[-1][2], end="")
    return 0 if best_wall <= args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
