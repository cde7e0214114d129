#!/usr/bin/env python3
"""The slowdowns the local module measures on real processes: at least ``--min`` (0.9) each.

Runs ``djsb run`` on a small experiment (a 2 s simulation, 0.5 s analytics sharing its CPU,
oversubscription and stop&continue) with the local module, and prints each execution job's
slowdown (its response over T_ref_alone, paper 001 sec. 2.4). A job that shares its CPU cannot be
faster than alone, so a slowdown well below 1 says the reference stage ran slower than the
execution stage: the machine was busier then. On an idle machine they were 0.91-0.94 (a 0.5 s job
is timed to the poll interval, 0.1 s). This depends on the machine's speed and load, so it is a
bench, not a test. Exits 1 when a slowdown is below ``--min``.

Usage: python3 bench/bench_local_slowdown.py [--min 0.9]
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = """\
general: {num_of_samples: 1, sleep_min_time: 0.3, sleep_max_time: 0.5, num_of_ref_analysis: 1,
          num_of_dyn_analysis: [1], scenarios: [oversubscription, stopcont], poll_interval: 0.1, seed: 3}
job_module: {name: local}
simulation: {total_tasks: 1, cpus_per_task: 1, total_memory: 32MiB, exec_time: 2}
analytics: {total_tasks: 1, cpus_per_task: 1, total_memory: 16MiB, exec_time: 0.5, same_nodes_as_sim: true}
output: {plots: false}
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min", type=float, default=0.9, help="the least slowdown accepted (0.9)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "local.yaml"
        config.write_text(CONFIG)
        run_dir = Path(tmp) / "run"
        done = subprocess.run([sys.executable, "-m", "djsb.cli", "run", str(config), "-o", str(run_dir)],
                              cwd=ROOT, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            return 2
        with (run_dir / "jobs.csv").open(newline="") as handle:
            jobs = [row for row in csv.DictReader(handle) if row["stage"] == "execution"]
    low = False
    for job in jobs:
        slowdown = float(job["slowdown"])
        low = low or slowdown < args.min
        print(f"{job['scenario']:<18} {job['app']:<11} slowdown {slowdown:.3f}")
    print(f"least slowdown {min(float(j['slowdown']) for j in jobs):.3f} (bound {args.min:g})")
    return 1 if low else 0


if __name__ == "__main__":
    sys.exit(main())
