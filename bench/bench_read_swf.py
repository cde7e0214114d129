#!/usr/bin/env python3
"""Time reading the public SWF traces: jobs per second of ``read_swf`` on each trace.

Reads every trace of ../shared/data/traces that the tests read (KTH-SP2, LANL-CM5, LLNL-Atlas,
NASA-iPSC, MetaCentrum) ``--reps`` times in this process, and prints per trace the best wall time,
the jobs read and the rate. The figure belongs here rather than in a unit test: on a shared machine
a timed test measures its neighbours.

Usage: python3 bench/bench_read_swf.py [--reps 3] [--traces DIR]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from djsb.workloads.swf import read_swf

TRACES = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "traces"
NAMES = ("KTH-SP2", "LANL-CM5", "LLNL-Atlas", "NASA-iPSC", "MetaCentrum")


def best_read(path: Path, reps: int) -> tuple[float, int]:
    """The best wall time of ``reps`` reads of ``path`` and the number of jobs read."""
    best = float("inf")
    jobs = 0
    for _ in range(reps):
        started = time.perf_counter()
        jobs = len(read_swf(path).jobs)
        best = min(best, time.perf_counter() - started)
    return best, jobs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3, choices=range(1, 21), metavar="1..20")
    parser.add_argument("--traces", type=Path, default=TRACES)
    args = parser.parse_args()
    found = sorted(p for p in args.traces.glob("*.swf.gz") if p.name.startswith(NAMES))
    if not found:
        print(f"skipped: no trace of {', '.join(NAMES)} under {args.traces}", file=sys.stderr)
        return 0
    print(f"best of {args.reps}")
    print(f"{'trace':40} {'jobs':>8} {'seconds':>8} {'jobs/s':>9}")
    for path in found:
        seconds, jobs = best_read(path, args.reps)
        print(f"{path.name:40} {jobs:8d} {seconds:8.2f} {jobs / seconds:9.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
