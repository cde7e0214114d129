"""Speed and memory benchmark of the built-in scheduler model on the full LANL-CM5 trace.

Replays LANL-CM5-1994-4.1-cln (122,057 usable jobs, 1,024 processors) with

* ``easy``: FIFO priority and EASY backfilling, passes on every event (classic EASY);
* ``mn4``: the ``marenostrum4`` preset: multifactor priority with Fair Tree fair share
  (paper 004 Table 3.2) and conservative backfill with Table 3.3's options;

on a layout of the machine: ``1024x1`` (default), the CM-5's real 1,024 one-core nodes, or ``32x32``,
32 nodes of 32 processors (every LANL job asks for a multiple of 32 processors, the CM-5 allocating
32-node partitions, so both layouts give the same start times; the first costs more if the model's
cost grows with the node count). Jobs without a requested time get the trace's
largest request as limit (the partition MaxTime).

Each configuration runs on the first quarter of the trace's jobs and on all of them, every run in a
fresh process, so its peak memory is its own: the peak resident set size of the whole process
(``ru_maxrss``: interpreter, pandas, the trace as read and the replay). It prints simulated jobs per
second (replay only: trace reading excluded), replay seconds, peak MB and the time ratio full / quarter
next to what linear (4.0) and n log n growth would give. The trace's quarters differ in load (a busier
period means longer queues and costlier passes), so the benchmark also runs the first quarter repeated
four times back to back (each copy shifted by the quarter's span, new job ids): the same load, four
times the jobs, which isolates the algorithm's growth. Every figure is the fastest of ``--tries`` runs
(default 3): the machine is shared.

With ``--accasim PYTHON`` (an interpreter with AccaSim 1.1.3 from PyPI: ``pip install accasim==1.1.3``
into its own venv) it also times AccaSim's ``EASYBackfilling`` dispatcher with ``FirstFit`` allocation
on the same layout and jobs, alternating with the model's EASY run on the same jobs, best of
``--accasim-tries`` each (default 1: AccaSim needs about ten minutes for a quarter of the trace).
AccaSim reads the SWF while it simulates, so the ratio is taken against the model's trace reading plus
replay. ``--accasim-jobs`` sets how many of the trace's first jobs both replay (default a quarter).
Without ``--accasim`` the comparison is skipped with a message.

Usage: ``.venv/bin/python bench/bench_model.py [--trace PATH] [--layout 1024x1|32x32]
[--configs easy mn4] [--tries N] [--accasim PYTHON] [--accasim-jobs N] [--accasim-tries N]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import itertools
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "../shared/data/traces/LANL-CM5-1994-4.1-cln.swf.gz"
TOTAL_JOBS = 122_060  # records in the trace (the reader skips the few without processors)


def repeated(jobs: list, times: int) -> list:
    """``jobs`` back to back ``times`` times, each copy shifted by the span and renumbered (once:
    ``jobs`` as they are, so the model's read time is not charged for copies it does not make)."""
    if times == 1:
        return jobs
    span = max(j.submit for j in jobs) + 1.0
    offset = max(j.job_id for j in jobs) + 1
    return [dataclasses.replace(j, job_id=j.job_id + k * offset, submit=j.submit + k * span)
            for k in range(times) for j in jobs]


LAYOUTS = {"1024x1": (1024, 1), "32x32": (32, 32)}


def worker(trace: Path, config: str, layout: str, limit: int | None, repeat: int) -> dict[str, float]:
    """Run one configuration in this process and measure it."""
    sys.path.insert(0, str(ROOT))
    from djsb.model import ClusterSpec, PartitionSpec, SchedulerConfig, Simulation
    from djsb.model.priority import FifoPriority, marenostrum4
    from djsb.model.priority.base import PriorityPlugin
    from djsb.workloads.swf import read_swf

    reading = time.perf_counter()
    jobs = repeated([dataclasses.replace(j, partition=None) for j in read_swf(trace, limit=limit).jobs],
                    repeat)
    read_seconds = time.perf_counter() - reading
    max_time = max(j.requested_time or 0.0 for j in jobs)
    nodes, cores = LAYOUTS[layout]
    cluster = ClusterSpec.homogeneous(nodes, cores, partition=PartitionSpec("cm5", max_time=max_time))
    priority: PriorityPlugin
    if config == "easy":
        priority, scheduler = FifoPriority(), SchedulerConfig(backfill="easy", sched_interval=0,
                                                              bf_interval=0)
    else:
        priority, scheduler = marenostrum4()
    started = time.perf_counter()
    result = Simulation(jobs, cluster, scheduler, priority).run()
    seconds = time.perf_counter() - started
    return {
        "jobs": len(jobs), "seconds": seconds, "read_seconds": read_seconds,
        "jobs_per_s": len(jobs) / seconds,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "mean_wait": float(result.jobs["wait"].mean()), "killed": result.killed,
        "backfilled": int(result.jobs["backfilled"].sum()),
    }


def run_worker(trace: Path, config: str, layout: str, limit: int | None, repeat: int = 1) -> dict[str, float]:
    """One :func:`worker` run in a fresh interpreter (its own peak memory)."""
    command = [sys.executable, __file__, "--worker", config, "--layout", layout, "--trace", str(trace),
               "--repeat", str(repeat)]
    if limit is not None:
        command += ["--limit", str(limit)]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def measure(trace: Path, config: str, layout: str, limit: int | None, repeat: int = 1,
            tries: int = 1) -> dict[str, float]:
    """The fastest of ``tries`` fresh runs: on a shared machine the least disturbed one."""
    runs = [run_worker(trace, config, layout, limit, repeat) for _ in range(tries)]
    return min(runs, key=lambda row: row["seconds"])


ACCASIM_RUNNER = """
import collections, collections.abc, resource, sys, time
collections.Mapping = collections.abc.Mapping  # AccaSim 1.1.3 imports it from collections (Python < 3.10)
from accasim.base.allocator_class import FirstFit
from accasim.base.scheduler_class import EASYBackfilling
from accasim.base.simulator_class import Simulator
started = time.perf_counter()
Simulator(sys.argv[1], sys.argv[2], EASYBackfilling(FirstFit()), RESULTS_FOLDER_PATH=sys.argv[3],
          scheduling_output=False, statistics_output=False, show_statistics=False).start_simulation()
print(time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def accasim(python: str, trace: Path, layout: str, limit: int | None) -> tuple[float, float]:
    """Seconds AccaSim (EASYBackfilling + FirstFit) takes on the same layout and jobs, and the peak
    resident set size (MB) of its process.

    AccaSim's default SWF reader turns a job of P processors into P node requests of one core each
    (its ``equivalence`` processor -> core 1), and each node of the layout is a group of ``cores``
    cores with memory to spare. It reads the trace while it simulates, so its time includes parsing.
    """
    nodes, cores = LAYOUTS[layout]
    with tempfile.TemporaryDirectory() as tmp:
        swf = Path(tmp) / "trace.swf"
        with gzip.open(trace, "rt") as source, swf.open("w") as target:
            records = (line for line in source if not line.startswith(";"))
            target.writelines(itertools.islice(records, limit))
        system = Path(tmp) / "system.json"
        system.write_text(json.dumps({"groups": {"cm": {"core": cores, "mem": 10**9}},
                                      "resources": {"cm": nodes}, "equivalence": {"processor": {"core": 1}},
                                      "start_time": 0}))
        out = subprocess.run([python, "-c", ACCASIM_RUNNER, str(swf), str(system), tmp], check=True,
                             capture_output=True, text=True, cwd=tmp).stdout
    seconds, peak_mb = out.strip().splitlines()[-1].split()
    return float(seconds), float(peak_mb)


def side_by_side(python: str, trace: Path, layout: str, jobs: int, tries: int) -> None:
    """AccaSim and the model's EASY on the trace's first ``jobs`` jobs, alternating, best of ``tries``."""
    model_runs, accasim_runs = [], []
    for _ in range(tries):
        model_runs.append(run_worker(trace, "easy", layout, jobs))
        accasim_runs.append(accasim(python, trace, layout, jobs))
    model = min(model_runs, key=lambda row: row["seconds"])
    model_total = model["read_seconds"] + model["seconds"]
    other, other_mb = min(accasim_runs)
    print(f"AccaSim 1.1.3 EASYBackfilling+FirstFit, {layout}, first {jobs} jobs: {other:.1f} s "
          f"({jobs / other:.0f} jobs/s, peak {other_mb:.0f} MB); model EASY read+replay {model_total:.2f} s "
          f"({jobs / model_total:.0f} jobs/s, peak {model['peak_mb']:.0f} MB): model "
          f"{other / model_total:.0f}x faster (replay only {other / model['seconds']:.0f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--layout", choices=list(LAYOUTS), default="1024x1", help="nodes x cores per node")
    parser.add_argument("--configs", nargs="*", default=["easy", "mn4"], choices=["easy", "mn4"])
    parser.add_argument("--tries", type=int, default=3, help="runs per measurement, fastest kept")
    parser.add_argument("--accasim", metavar="PYTHON", help="also time AccaSim's EASY with this interpreter")
    parser.add_argument("--accasim-jobs", type=int, default=TOTAL_JOBS // 4,
                        help="first jobs of the trace both replay in the comparison")
    parser.add_argument("--accasim-tries", type=int, default=1)
    parser.add_argument("--worker", choices=["easy", "mn4"], help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.trace, args.worker, args.layout, args.limit, args.repeat)))
        return
    print(f"layout {args.layout}; best of {args.tries}; peak MB = ru_maxrss of the whole worker process")
    print(f"{'config':6} {'run':10} {'jobs':>7} {'seconds':>8} {'jobs/s':>8} {'peak MB':>8} "
          f"{'mean wait':>10} {'killed':>7} {'backfilled':>10}")
    for config in args.configs:
        quarter = measure(args.trace, config, args.layout, TOTAL_JOBS // 4, tries=args.tries)
        full = measure(args.trace, config, args.layout, None, tries=args.tries)
        stationary = measure(args.trace, config, args.layout, TOTAL_JOBS // 4, repeat=4, tries=args.tries)
        for label, row in (("quarter", quarter), ("full", full), ("4x quarter", stationary)):
            print(f"{config:6} {label:10} {row['jobs']:7d} {row['seconds']:8.2f} "
                  f"{row['jobs_per_s']:8.0f} {row['peak_mb']:8.0f} {row['mean_wait']:10.0f} "
                  f"{row['killed']:7d} {row['backfilled']:10d}")
        nlogn = 4 * math.log(full["jobs"]) / math.log(full["jobs"] / 4)
        print(f"{config:6} time ratio full/quarter = {full['seconds'] / quarter['seconds']:.2f}, "
              f"4x quarter/quarter = {stationary['seconds'] / quarter['seconds']:.2f} "
              f"(linear 4.00, n log n {nlogn:.2f})")
    if args.accasim:
        side_by_side(args.accasim, args.trace, args.layout, args.accasim_jobs, args.accasim_tries)
    else:
        print("AccaSim comparison skipped: give --accasim PYTHON, an interpreter with accasim==1.1.3")


if __name__ == "__main__":
    main()
