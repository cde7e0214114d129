"""Speed benchmark of the built-in scheduler model on the full LANL-CM5 trace.

Replays LANL-CM5-1994-4.1-cln (122,057 usable jobs, 1,024 processors) with

* ``easy``: FIFO priority and EASY backfilling, passes on every event (classic EASY);
* ``mn4``: the ``marenostrum4`` preset: multifactor priority with Fair Tree fair share
  (paper 004 Table 3.2) and conservative backfill with Table 3.3's options;

each on the first quarter of the trace and on all of it, every run in a fresh process so the
peak resident memory (``ru_maxrss``) belongs to that run. It prints simulated jobs per second,
simulation seconds (trace reading excluded), peak MB, and the time ratio full / quarter next to
what linear (4.0) and n log n (4 log n / log(n/4)) growth would give.

The trace's quarters differ in load (a busier period means longer queues and costlier passes), so
the full/quarter ratio mixes workload and algorithm. To isolate the algorithm the benchmark also
runs the first quarter repeated four times back to back (each copy shifted by the quarter's
span, new job ids): the same load, four times the jobs.

The CM-5 is modelled as 32 nodes of 32 processors: every LANL job asks for a multiple of 32
processors (the CM-5 allocated 32-node partitions), so a model node is one such block.
Jobs without a requested time get the trace's largest request as limit (the partition MaxTime).

Every figure is the fastest of ``--tries`` runs (default 3): the machine is shared.

With ``--accasim PYTHON`` it also times AccaSim (PyPI ``accasim``, Galleguillos et al.), its
EASYBackfilling dispatcher with FirstFit allocation on the same 32 x 32 machine, as a reference.

Usage: ``.venv/bin/python bench/bench_model.py [--trace PATH] [--configs easy mn4] [--tries N]
[--accasim PYTHON]``.
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
    """``jobs`` back to back ``times`` times, each copy shifted by the span and renumbered."""
    span = max(j.submit for j in jobs) + 1.0
    offset = max(j.job_id for j in jobs) + 1
    return [dataclasses.replace(j, job_id=j.job_id + k * offset, submit=j.submit + k * span)
            for k in range(times) for j in jobs]


def worker(trace: Path, config: str, limit: int | None, repeat: int) -> dict[str, float]:
    """Run one configuration in this process and measure it."""
    sys.path.insert(0, str(ROOT))
    from djsb.model import ClusterSpec, PartitionSpec, SchedulerConfig, Simulation
    from djsb.model.priority import FifoPriority, marenostrum4
    from djsb.model.priority.base import PriorityPlugin
    from djsb.workloads.swf import read_swf

    jobs = repeated([dataclasses.replace(j, partition=None) for j in read_swf(trace, limit=limit).jobs],
                    repeat)
    max_time = max(j.requested_time or 0.0 for j in jobs)
    cluster = ClusterSpec.homogeneous(32, 32, partition=PartitionSpec("cm5", max_time=max_time))
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
        "jobs": len(jobs), "seconds": seconds, "jobs_per_s": len(jobs) / seconds,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "mean_wait": float(result.jobs["wait"].mean()), "killed": result.killed,
        "backfilled": int(result.jobs["backfilled"].sum()),
    }


def measure(trace: Path, config: str, limit: int | None, repeat: int = 1,
            tries: int = 1) -> dict[str, float]:
    """Run :func:`worker` in fresh interpreters (clean peak-memory figure); keep the fastest try.

    The machine is shared, so the minimum over tries is the least disturbed measurement.
    """
    command = [sys.executable, __file__, "--worker", config, "--trace", str(trace), "--repeat", str(repeat)]
    if limit is not None:
        command += ["--limit", str(limit)]
    runs = []
    for _ in range(tries):
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    return min(runs, key=lambda row: row["seconds"])


ACCASIM_RUNNER = """
import sys, time
from accasim.base.allocator_class import FirstFit
from accasim.base.scheduler_class import EASYBackfilling
from accasim.base.simulator_class import Simulator
started = time.perf_counter()
Simulator(sys.argv[1], sys.argv[2], EASYBackfilling(FirstFit()), RESULTS_FOLDER_PATH=sys.argv[3],
          scheduling_output=False, statistics_output=False, show_statistics=False).start_simulation()
print(time.perf_counter() - started)
"""


def accasim(python: str, trace: Path, limit: int | None) -> float:
    """Seconds AccaSim (EASYBackfilling + FirstFit) takes on the same machine model and jobs.

    ``python`` is an interpreter with ``accasim`` installed (on Python >= 3.10 its
    ``accasim/utils/misc.py`` needs ``from collections.abc import Mapping``). AccaSim reads the
    trace while it simulates, so its time includes parsing, unlike the model's figures.
    """
    with tempfile.TemporaryDirectory() as tmp:
        swf = Path(tmp) / "trace.swf"
        with gzip.open(trace, "rt") as source, swf.open("w") as target:
            records = (line for line in source if not line.startswith(";"))
            target.writelines(itertools.islice(records, limit))
        system = Path(tmp) / "system.json"
        system.write_text(json.dumps({"groups": {"cm": {"core": 32, "mem": 10**9}}, "resources": {"cm": 32},
                                      "equivalence": {"processor": {"core": 1}}, "start_time": 0}))
        out = subprocess.run([python, "-c", ACCASIM_RUNNER, str(swf), str(system), tmp], check=True,
                             capture_output=True, text=True, cwd=tmp).stdout
    return float(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--configs", nargs="+", default=["easy", "mn4"], choices=["easy", "mn4"])
    parser.add_argument("--tries", type=int, default=3, help="runs per measurement, fastest kept")
    parser.add_argument("--accasim", metavar="PYTHON", help="also time AccaSim's EASY with this interpreter")
    parser.add_argument("--worker", choices=["easy", "mn4"], help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.trace, args.worker, args.limit, args.repeat)))
        return
    print(f"{'config':6} {'run':10} {'jobs':>7} {'seconds':>8} {'jobs/s':>8} {'peak MB':>8} "
          f"{'mean wait':>10} {'killed':>7} {'backfilled':>10}")
    for config in args.configs:
        quarter = measure(args.trace, config, TOTAL_JOBS // 4, tries=args.tries)
        full = measure(args.trace, config, None, tries=args.tries)
        stationary = measure(args.trace, config, TOTAL_JOBS // 4, repeat=4, tries=args.tries)
        for label, row in (("quarter", quarter), ("full", full), ("4x quarter", stationary)):
            print(f"{config:6} {label:10} {row['jobs']:7d} {row['seconds']:8.2f} "
                  f"{row['jobs_per_s']:8.0f} {row['peak_mb']:8.0f} {row['mean_wait']:10.0f} "
                  f"{row['killed']:7d} {row['backfilled']:10d}")
        nlogn = 4 * math.log(full["jobs"]) / math.log(full["jobs"] / 4)
        print(f"{config:6} time ratio full/quarter = {full['seconds'] / quarter['seconds']:.2f}, "
              f"4x quarter/quarter = {stationary['seconds'] / quarter['seconds']:.2f} "
              f"(linear 4.00, n log n {nlogn:.2f})")
    if args.accasim:
        quarter_s = accasim(args.accasim, args.trace, TOTAL_JOBS // 4)
        full_s = accasim(args.accasim, args.trace, None)
        print(f"AccaSim EASYBackfilling+FirstFit: quarter {quarter_s:.2f} s, full {full_s:.2f} s "
              f"({TOTAL_JOBS / full_s:.0f} jobs/s), ratio {full_s / quarter_s:.2f}")


if __name__ == "__main__":
    main()
