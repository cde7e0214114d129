"""Wall time and peak memory of whole ``djsb simulate`` commands, two source trees side by side.

Each command runs in a fresh interpreter (``python bench/bench_simulate.py --worker``, the tree
under test first on ``PYTHONPATH``), which reports its wall time from start to exit of the command
and its own peak resident set size (``ru_maxrss``: interpreter, pandas, the trace and the replay);
its CPU time (user + system, interpreter start included) is read from ``RUSAGE_CHILDREN``. On a
busy machine wall time mostly measures the other processes; CPU time much less so, hence both.
The trees alternate, run after run, and each figure is the fastest of ``--tries`` (default 3): on a
shared machine only runs made side by side compare. Every pair also compares the two trees'
``jobs.csv`` byte for byte: a speed-up must not move any start, end or node list.

The commands:

* ``kth-mn4-profile`` and ``kth-mn4-will_run``: KTH-SP2's first 10,000 jobs on its 100 one-processor
  nodes under the ``marenostrum4`` preset, planned by the ``profile`` and by the ``will_run``
  backfill planner (sched/backfill's pass); the will-run / profile ratio is printed per tree;
* ``lanl-mn4``: configs/simulate-lanl-mn4.yaml (all of LANL-CM5 under MareNostrum 4's policy);
* ``kth-easy``: configs/simulate-kth-easy.yaml (KTH-SP2 under textbook EASY).

With ``--accasim PYTHON`` (an interpreter with ``accasim==1.1.3``) it then times AccaSim's EASY
against the model's on the first quarter of LANL-CM5 (:func:`bench_model.side_by_side`, the
``--after`` tree's model), so one run prints every speed figure of the model with its peak memory.

Usage: ``.venv/bin/python bench/bench_simulate.py --before DIR [--after DIR] [--tries N]
[--commands NAME ...] [--accasim PYTHON [--accasim-tries N]]``; ``--before`` is a source tree,
e.g. ``git archive main | tar -x -C DIR``; ``--after`` defaults to this tree.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "data" / "traces"

KTH_MN4 = """\
seed: 1
workload: {{swf: {trace}, limit: 10000, estimate: requested, at_time_limit: run}}
cluster:
  nodes: [{{count: 100, cores: 1, prefix: sp}}]
  partitions: [{{name: batch, max_time: 216000}}]
policy: {{preset: marenostrum4, scheduler: {{bf_planner: {planner}}}}}
"""
"""KTH-SP2's first 10,000 jobs under ``marenostrum4`` with a given backfill planner."""


def configs(directory: Path) -> dict[str, Path]:
    """Every command's experiment file (the KTH pair written into ``directory``)."""
    files = {"lanl-mn4": ROOT / "configs" / "simulate-lanl-mn4.yaml",
             "kth-easy": ROOT / "configs" / "simulate-kth-easy.yaml"}
    for planner in ("profile", "will_run"):
        path = files[f"kth-mn4-{planner}"] = directory / f"kth-mn4-{planner}.yaml"
        path.write_text(KTH_MN4.format(trace=TRACES / "KTH-SP2-1996-2.1-cln.swf.gz", planner=planner))
    return files


def worker(config: Path, output: Path) -> dict[str, float]:
    """Run ``djsb simulate config -o output`` in this process and measure it."""
    from djsb.cli import main

    started = time.perf_counter()
    code = main(["simulate", str(config), "-o", str(output), "--force"])  # the same directory every try
    if code:
        raise SystemExit(code)
    return {"seconds": time.perf_counter() - started,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def run(tree: Path, config: Path, output: Path) -> dict[str, float]:
    """One command in a fresh interpreter with ``tree`` first on the path; wall time includes the
    interpreter's start."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--worker", str(config), str(output)], env=env,
                         check=True, capture_output=True, text=True).stdout
    row = dict(json.loads(out.strip().splitlines()[-1]))
    row["wall"] = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    row["cpu"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="the source tree compared against (required)")
    parser.add_argument("--after", type=Path, default=ROOT, help="the tree measured (default: this one)")
    parser.add_argument("--tries", type=int, default=3, help="runs per tree and command, fastest kept")
    parser.add_argument("--commands", nargs="*",
                        default=["kth-mn4-profile", "kth-mn4-will_run", "lanl-mn4", "kth-easy"])
    parser.add_argument("--accasim", metavar="PYTHON", help="also time AccaSim's EASY with this interpreter")
    parser.add_argument("--accasim-tries", type=int, default=1)
    parser.add_argument("--worker", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(*args.worker)))
        return
    if args.before is None:
        parser.error("--before is required")
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    best: dict[tuple[str, str], dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        files = configs(Path(tmp))
        print(f"best of {args.tries}, trees alternating; wall = the whole command in a fresh interpreter, "
              "cpu = its user + system time, peak MB = its ru_maxrss")
        print(f"{'command':18} {'before s':>9} {'after s':>9} {'speed-up':>9} {'before cpu':>11} "
              f"{'after cpu':>10} {'speed-up':>9} {'before MB':>10} {'after MB':>9} {'jobs.csv':>9}")
        for name in args.commands:
            for _ in range(args.tries):
                for label, tree in trees.items():
                    row = run(tree, files[name], Path(tmp) / label / name)
                    cpu = min(row["cpu"], best[label, name]["cpu"]) if (label, name) in best else row["cpu"]
                    if (label, name) not in best or row["wall"] < best[label, name]["wall"]:
                        best[label, name] = row
                    best[label, name]["cpu"] = cpu  # the least of the tries, as the wall time
            before, after = best["before", name], best["after", name]
            before_jobs, after_jobs = (Path(tmp) / label / name / "jobs.csv" for label in trees)
            same = filecmp.cmp(before_jobs, after_jobs, shallow=False)
            speedup = before["wall"] / after["wall"]
            cpu_speedup = before["cpu"] / after["cpu"]
            print(f"{name:18} {before['wall']:9.1f} {after['wall']:9.1f} {speedup:8.2f}x "
                  f"{before['cpu']:11.1f} {after['cpu']:10.1f} {cpu_speedup:8.2f}x "
                  f"{before['peak_mb']:10.0f} {after['peak_mb']:9.0f} {'same' if same else 'DIFFER':>9}",
                  flush=True)
    if all(("before", f"kth-mn4-{p}") in best for p in ("profile", "will_run")):
        for label in trees:
            will_run, profile = best[label, "kth-mn4-will_run"], best[label, "kth-mn4-profile"]
            print(f"KTH-SP2 10,000 jobs, marenostrum4: will_run / profile = "
                  f"{will_run['wall'] / profile['wall']:.1f}x wall, "
                  f"{will_run['cpu'] / profile['cpu']:.1f}x cpu ({label})")
    if all(("before", name) in best for name in ("lanl-mn4", "kth-easy")):
        for label in trees:
            lanl, easy = best[label, "lanl-mn4"], best[label, "kth-easy"]
            print(f"lanl-mn4 / kth-easy = {lanl['wall'] / easy['wall']:.1f}x wall, "
                  f"{lanl['cpu'] / easy['cpu']:.1f}x cpu ({label})")
    if args.accasim:
        sys.path.insert(0, str(args.after.resolve() / "bench"))
        import bench_model

        bench_model.side_by_side(args.accasim, bench_model.TRACE, "1024x1", bench_model.TOTAL_JOBS // 4,
                                 args.accasim_tries)


if __name__ == "__main__":
    main()
