#!/usr/bin/env python3
"""Time ``djsb history`` on a large site history: a public trace written as a sacct dump.

LANL-CM5 (122,055 jobs on 1,024 processors, read in place from ../shared/data/traces) is written
``--copies`` times one after the other (each copy's submissions shifted past the previous copy's
last, job ids offset by a million) as ``sacct -a -X -P`` prints a history (docs/history.md's
format: Submit, Eligible = Submit, Start = Submit + the trace's recorded wait, End, Elapsed,
Timelimit, AllocCPUS, NNodes; every job COMPLETED, started by the main scheduler), gzip
compressed, beside a slurm.conf of 32 nodes of 32 CPUs under MareNostrum 4's policy (paper 004
Tables 3.2-3.3, as the ``marenostrum4`` preset: multifactor priority with Fair Tree, sched/backfill
with bf_resolution 1800 s, a 7-day window, 60 s intervals, defer). It then runs
``djsb history DUMP --slurm-conf CONF -o DIR -q`` pinned to one CPU (``taskset -c 0``), ``--reps``
times, and prints the wall time of each run, the best, and the peak resident memory of the command
(``ru_maxrss``). Exits 1 when the best run exceeds ``--limit`` seconds (120 by default: the target
for a 600,000-job history).

With ``--before TREE`` (another source tree, e.g. ``git archive main | tar -x -C DIR``) the two trees
run side by side instead, alternating run after run, each with its tree first on ``PYTHONPATH``
under ``nice``: each prints its best CPU time (user + system: on a shared machine wall time mostly
measures the other processes) and wall time of ``--reps`` runs, the ratio of the two, and whether
every output file (jobs.csv, errors.csv, summary.csv...) is byte for byte the same: a speed-up must
not move any start.

Usage: python3 bench/bench_history.py [--copies 5] [--reps 1] [--limit 120] [--keep DIR] [--before TREE]
"""

from __future__ import annotations

import argparse
import filecmp
import gzip
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from djsb.outdir import MARKER  # noqa: E402
from djsb.report.replay_stats import recorded_waits  # noqa: E402
from djsb.workloads.swf import read_swf  # noqa: E402

TRACE = ROOT.parent / "shared" / "data" / "traces" / "LANL-CM5-1994-4.1-cln.swf.gz"
EPOCH = datetime(2024, 1, 1, tzinfo=timezone.utc)
HEADER = ("JobIDRaw|JobID|User|Account|Partition|QOS|Submit|Eligible|Start|End|Elapsed|Timelimit|ReqCPUS|"
          "AllocCPUS|NNodes|State|Reason|Flags")
SLURM_CONF = """\
# MareNostrum 4's policy (paper 004 Tables 3.2-3.3) on LANL-CM5's 1,024 processors (32 x 32)
ClusterName=bench
SchedulerType=sched/backfill
SchedulerParameters=default_queue_depth=10000,defer,sched_interval=60,bf_interval=60,bf_resolution=1800,\\
bf_window=10080,bf_continue
SelectType=select/cons_tres
PriorityType=priority/multifactor
PriorityWeightAge=100000
PriorityWeightFairShare=100000
PriorityWeightJobSize=10000
PriorityMaxAge=10-0
NodeName=cm[01-32] CPUs=32 RealMemory=32768
PartitionName=cm5 Nodes=ALL Default=YES MaxTime=8:20:00 State=UP
"""


def stamp(seconds: float) -> str:
    return (EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S")


def clock(seconds: float) -> str:
    whole = int(round(seconds))
    days, rest = divmod(whole, 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def write_dump(path: Path, copies: int) -> int:
    """The trace ``copies`` times as a sacct dump; returns the number of jobs written."""
    workload = read_swf(TRACE)
    waits = recorded_waits(TRACE)
    jobs = [job for job in workload.jobs if job.job_id in waits]
    span = max(job.submit for job in jobs) + 86400.0
    written = 0
    with gzip.open(path, "wt") as out:
        out.write(HEADER + "\n")
        for copy in range(copies):
            shift = copy * span
            for job in jobs:
                job_id = copy * 1_000_000 + job.job_id
                submit = job.submit + shift
                start = submit + waits[job.job_id]
                limit = clock(job.requested_time) if job.requested_time else "UNLIMITED"
                out.write(f"{job_id}|{job_id}|{job.user}|{job.account}|cm5|normal|{stamp(submit)}|{stamp(submit)}|"
                          f"{stamp(start)}|{stamp(start + job.run_time)}|{clock(job.run_time)}|{limit}|"
                          f"{job.cpus}|{job.cpus}|{max(1, job.cpus // 32)}|COMPLETED|None|SchedMain\n")
                written += 1
    return written


def timed(command: list[str], env: dict[str, str] | None = None,
          cwd: Path | None = None) -> tuple[float, float, str]:
    """Run ``command`` (exit 2 on failure) in ``cwd``; its wall and CPU seconds and its standard output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env, cwd=cwd)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        raise SystemExit(2)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, done.stdout


def side_by_side(command: list[str], work: Path, before: Path, reps: int) -> None:
    """Time ``command`` (without its output directory) with ``before`` and this tree first on the
    path, alternating, and compare their output files."""
    trees = {"before": before.resolve(), "after": ROOT}
    best: dict[str, tuple[float, float]] = {}
    for rep in range(reps):
        for label, tree in trees.items():
            # run in ``work``: ``python -m`` puts the working directory first on the path, and a
            # checkout's would shadow PYTHONPATH's tree
            wall, cpu, _ = timed(["nice", *command, "-o", str(work / label), "--force"],
                                 {**os.environ, "PYTHONPATH": str(tree)}, cwd=work)
            print(f"{label} run {rep + 1}: {cpu:.1f} s CPU, {wall:.1f} s wall; load average "
                  f"{os.getloadavg()[0]:.2f}", flush=True)
            cpu_best, wall_best = best.get(label, (cpu, wall))
            best[label] = (min(cpu, cpu_best), min(wall, wall_best))
    # the output marker records when each command ran: it differs by construction
    names = sorted(path.name for path in (work / "before").iterdir()
                   if path.is_file() and path.name != MARKER)
    differ = [name for name in names if not filecmp.cmp(work / "before" / name, work / "after" / name,
                                                        shallow=False)]
    print(f"best of {reps}: before {best['before'][0]:.1f} s CPU ({best['before'][1]:.1f} s wall), after "
          f"{best['after'][0]:.1f} s CPU ({best['after'][1]:.1f} s wall): "
          f"{best['before'][0] / best['after'][0]:.2f}x CPU; outputs "
          f"{'the same' if not differ else 'DIFFERENT: ' + ', '.join(differ)} ({', '.join(names)})")
    print(f"peak memory {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MB (either tree)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=5)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--limit", type=float, default=120.0)
    parser.add_argument("--keep", type=Path, help="keep the dump, slurm.conf and output here")
    parser.add_argument("--before", type=Path, help="a source tree to run side by side with this one")
    args = parser.parse_args()
    if not TRACE.is_file():
        print(f"skipped: {TRACE} not found", file=sys.stderr)
        return 0
    work = (args.keep or Path(tempfile.mkdtemp(prefix="bench-history-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    dump, conf = work / "dump.txt.gz", work / "slurm.conf"
    began = time.perf_counter()
    jobs = write_dump(dump, args.copies)
    conf.write_text(SLURM_CONF)
    print(f"{jobs} jobs written as a sacct dump ({dump.stat().st_size / 1e6:.1f} MB gzip) in "
          f"{time.perf_counter() - began:.1f} s; load average {os.getloadavg()[0]:.2f}")
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    command = [*pin, sys.executable, "-m", "djsb", "history", str(dump), "--slurm-conf", str(conf), "-q"]
    if args.before is not None:
        side_by_side(command, work, args.before, args.reps)
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
        return 0
    times = []
    for rep in range(args.reps):
        out = work / f"out-{rep}"
        shutil.rmtree(out, ignore_errors=True)
        wall, _, stdout = timed([*command, "-o", str(out)], {**os.environ, "PYTHONPATH": str(ROOT)})
        times.append(wall)
        print(f"run {rep + 1}: {times[-1]:.1f} s wall (one CPU)")
        print(stdout.strip())
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    best = min(times)
    print(f"best {best:.1f} s for {jobs} jobs (limit {args.limit:g} s); peak memory {peak:.0f} MB; "
          f"load average {os.getloadavg()[0]:.2f}")
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if best <= args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
