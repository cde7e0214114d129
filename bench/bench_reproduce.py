#!/usr/bin/env python3
"""Time of ``djsb reproduce PAPER`` at its default size against the 240 s budget on 2 cores.

Runs the user's command (``python -m djsb reproduce PAPER -o DIR``, a subprocess: CLI start-up, the
sweeps' worker processes and every figure included) into a fresh directory for each paper given and
prints its wall time, the CPU seconds of the command and its workers, and the load average before
and after. On a shared machine other load only lengthens the wall time; the CPU seconds bound the
wall time on 2 free cores from above (one free core would do), so the budget is checked on them.

Usage: python3 bench/bench_reproduce.py [PAPER ...]   (default: 003 004)
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
BUDGET_S = 240.0
"""The budget for a paper's default size on 2 cores: a reproduction a laptop runs in minutes."""


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("papers", nargs="*", default=["003", "004"])
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    print(f"{'paper':>5} {'wall s':>8} {'CPU s':>8} {'budget':>7}  load before -> after")
    worst = 0.0
    for paper in args.papers:
        with tempfile.TemporaryDirectory() as out:
            load = os.getloadavg()[0]
            cpu, start = children_cpu(), time.perf_counter()
            subprocess.run([sys.executable, "-m", "djsb", "reproduce", paper, "-o", str(Path(out) / "r")],
                           check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wall, used = time.perf_counter() - start, children_cpu() - cpu
        worst = max(worst, used)
        print(f"{paper:>5} {wall:8.1f} {used:8.1f} {'ok' if used <= BUDGET_S else 'OVER':>7}  "
              f"{load:.1f} -> {os.getloadavg()[0]:.1f}")
    return 0 if worst <= BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
