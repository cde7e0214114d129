#!/usr/bin/env python3
"""Paper 001's experiment on a busy cluster under three scheduling policies.

Runs ``djsb run`` on configs/paper-simulated-busy.yaml (or ``--config``) once per policy, the
file's ``job_module.options.policy`` replaced by each of ``--policies`` (default: fifo, easy,
marenostrum4), and prints per policy and scenario the dynamicity (paper 001 eq. (4)), the
analytics' slowdown and their mean wait in the queue, each averaged over the n_a cells, plus the
wall seconds of the run. Run it from the checkout's root (the config's trace path is relative).

Usage: python3 bench/bench_simulated_busy.py [--config PATH] [--policies fifo easy marenostrum4]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.bench_simulated import djsb_command  # noqa: E402


def run(config_text: str, policy: str, tmp: Path) -> tuple[float, Path]:
    """Wall seconds of one ``djsb run`` under ``policy``, and its run directory."""
    config = tmp / f"{policy}.yaml"
    config.write_text(config_text.replace("    policy: fifo\n", f"    policy: {policy}\n"))
    out = tmp / policy
    start = time.perf_counter()
    subprocess.run([*djsb_command(), "run", str(config), "-o", str(out)], cwd=ROOT, check=True,
                   capture_output=True, text=True)
    return time.perf_counter() - start, out


def table(out: Path) -> dict[str, tuple[float, float, float]]:
    """Per scenario: mean dynamicity and analytics slowdown over the cells, mean analytics wait."""
    cells: dict[str, list[tuple[float, float]]] = defaultdict(list)
    with (out / "summary.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            cells[row["scenario"]].append((float(row["dynamicity"]), float(row["slowdown_a"])))
    waits: dict[str, list[float]] = defaultdict(list)
    with (out / "jobs.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["app"] == "analytics" and row["scenario"]:
                waits[row["scenario"]].append(float(row["wait"]))
    return {scenario: (statistics.fmean(d for d, _ in rows), statistics.fmean(s for _, s in rows),
                       statistics.fmean(waits[scenario])) for scenario, rows in cells.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "paper-simulated-busy.yaml")
    parser.add_argument("--policies", nargs="+", default=["fifo", "easy", "marenostrum4"])
    args = parser.parse_args()
    text = args.config.read_text()
    if "    policy: fifo\n" not in text:
        sys.exit(f"{args.config}: expected a 'policy: fifo' line under job_module.options")
    print(f"{'policy':13} {'scenario':17} {'dynamicity':>10} {'slowdown_a':>10} {'wait_a (s)':>10} "
          f"{'wall s':>7}")
    with tempfile.TemporaryDirectory(prefix="djsb-busy-") as tmp:
        for policy in args.policies:
            wall, out = run(text, policy, Path(tmp))
            for scenario, (dyn, slow, wait) in sorted(table(out).items()):
                print(f"{policy:13} {scenario:17} {dyn:10.3f} {slow:10.3f} {wait:10.1f} {wall:7.2f}")


if __name__ == "__main__":
    main()
