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

Usage: python3 bench/bench_history.py [--copies 5] [--reps 1] [--limit 120] [--keep DIR]
"""

from __future__ import annotations

import argparse
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=5)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--limit", type=float, default=120.0)
    parser.add_argument("--keep", type=Path, help="keep the dump, slurm.conf and output here")
    args = parser.parse_args()
    if not TRACE.is_file():
        print(f"skipped: {TRACE} not found", file=sys.stderr)
        return 0
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-history-"))
    work.mkdir(parents=True, exist_ok=True)
    dump, conf = work / "dump.txt.gz", work / "slurm.conf"
    began = time.perf_counter()
    jobs = write_dump(dump, args.copies)
    conf.write_text(SLURM_CONF)
    print(f"{jobs} jobs written as a sacct dump ({dump.stat().st_size / 1e6:.1f} MB gzip) in "
          f"{time.perf_counter() - began:.1f} s; load average {os.getloadavg()[0]:.2f}")
    djsb = ROOT / ".venv" / "bin" / "djsb"
    command = [str(djsb) if djsb.exists() else "djsb", "history", str(dump), "--slurm-conf", str(conf), "-q"]
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    times = []
    for rep in range(args.reps):
        out = work / f"out-{rep}"
        shutil.rmtree(out, ignore_errors=True)
        began = time.perf_counter()
        done = subprocess.run([*pin, *command, "-o", str(out)], capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - began)
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            return 2
        print(f"run {rep + 1}: {times[-1]:.1f} s wall (one CPU)")
        print(done.stdout.strip())
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    best = min(times)
    print(f"best {best:.1f} s for {jobs} jobs (limit {args.limit:g} s); peak memory {peak:.0f} MB; "
          f"load average {os.getloadavg()[0]:.2f}")
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if best <= args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
