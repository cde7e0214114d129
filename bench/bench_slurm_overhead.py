#!/usr/bin/env python3
"""The harness's own CPU use while it waits on Slurm jobs: under 1% of a core.

Submits ``--jobs`` sleeping jobs (1 task, 1 CPU each) through job_modules/slurm/module.py on the running
mini-cluster (bash .ci/slurm.sh start), waits until they all run, then polls them with the
module every ``--interval`` seconds for ``--seconds`` seconds, as the driver does, and measures:

- the harness process's CPU time (``time.process_time``: user + system of this process, the
  module's parsing and bookkeeping) per wall second, in % of one core: the bound is 1%;
- the CPU time of the children it ran (``resource.getrusage(RUSAGE_CHILDREN)``: the squeue
  processes themselves), reported apart: it is the scheduler client's cost, not the harness's;
- the number of Slurm commands per poll, through a counting transport: one for all the jobs.

Cancels its jobs at the end whatever happens. Exits 1 when the harness exceeds ``--limit`` % or
a poll needs more than one command.

Usage: .venv/bin/python bench/bench_slurm_overhead.py [--jobs 8] [--seconds 30] [--interval 1]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from djsb.jobs import JobRequest, JobState  # noqa: E402
from djsb.transport import CommandResult, LocalTransport  # noqa: E402
from job_modules.slurm import SlurmJobModule  # noqa: E402


class CountingTransport(LocalTransport):
    """The local transport, counting the commands it runs."""

    def __init__(self) -> None:
        self.count = 0

    def run(self, command: str, timeout: float = 60.0) -> CommandResult:
        self.count += 1
        return super().run(command, timeout)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between polls")
    parser.add_argument("--limit", type=float, default=1.0, help="% of a core the harness may use")
    parser.add_argument("--partition", default="shared")
    args = parser.parse_args()

    transport = CountingTransport()
    module = SlurmJobModule({"partition": args.partition, "accounting": False}, transport)
    workdir = Path(tempfile.mkdtemp(prefix="djsb-bench-slurm-"))
    job_ids: list[str] = []
    try:
        for i in range(args.jobs):
            job_ids.append(module.submit(JobRequest(
                name=f"bench-{i}", app="simulation", total_tasks=1, cpus_per_task=1, total_memory=16 << 20,
                exec_time=args.seconds + 60, argv=("sleep", str(int(args.seconds + 60))),
                stdout_path=str(workdir / f"{i}.out"), stderr_path=str(workdir / f"{i}.err"))))
        deadline = time.monotonic() + 60
        while any(s.state is not JobState.RUNNING for s in module.poll(job_ids).values()):
            if time.monotonic() > deadline:
                print("the jobs did not all start within 60 s", file=sys.stderr)
                return 1
            time.sleep(0.5)

        commands0, cpu0, children0 = transport.count, time.process_time(), children_cpu()
        wall0 = time.monotonic()
        polls = 0
        while time.monotonic() - wall0 < args.seconds:
            statuses = module.poll(job_ids)
            polls += 1
            assert all(s.state is JobState.RUNNING for s in statuses.values())
            time.sleep(args.interval)
        wall = time.monotonic() - wall0
        harness = 100 * (time.process_time() - cpu0) / wall
        squeue = 100 * (children_cpu() - children0) / wall
        per_poll = (transport.count - commands0) / polls
    finally:
        for job_id in job_ids:
            module.cancel(job_id)

    print(f"{args.jobs} running jobs, {polls} polls every {args.interval:g} s over {wall:.1f} s")
    print(f"Slurm commands per poll: {per_poll:g}")
    print(f"harness process CPU: {harness:.3f}% of a core (limit {args.limit:g}%)")
    print(f"squeue child processes CPU: {squeue:.3f}% of a core (the Slurm client, reported apart)")
    return 0 if harness < args.limit and per_poll == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
