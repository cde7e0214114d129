#!/usr/bin/env python3
"""How many times its own size a sacct dump takes in memory while ``read_sacct`` parses it: the
factor behind ``djsb.workloads._textio.TEXT_EXPANSION`` (an input read whole is refused past the
memory a command may fill divided by it).

The committed mini-cluster dump (tests/fixtures/sacct, with SubmitLine: the longest lines a real
dump has) is repeated ``--copies`` times under fresh job ids into a temporary file; a child process
reads it with ``read_sacct`` and reports the growth of its peak resident memory (``ru_maxrss``)
over the same process before the read. Prints the dump's size, that growth and their ratio.

Usage: python3 bench/bench_read_bounds.py [--copies 5000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DUMP = ROOT / "tests" / "fixtures" / "sacct" / "minicluster-22.05-allocations.txt"
CHILD = """
import resource, sys
from djsb.workloads.sacct import read_sacct
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
workload = read_sacct(sys.argv[1])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(len(workload.jobs), (after - before) * 1024)
"""


def write_dump(path: Path, copies: int) -> int:
    """The fixture's records ``copies`` times, each copy's ids offset by a million; its size."""
    header, *records = DUMP.read_text().splitlines()
    with path.open("w") as out:
        out.write(header + "\n")
        for copy in range(copies):
            for record in records:
                job, raw, rest = record.split("|", 2)
                out.write(f"{int(job) + copy * 1_000_000}|{int(raw) + copy * 1_000_000}|{rest}\n")
    return path.stat().st_size


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--copies", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "dump.txt"
        size = write_dump(dump, args.copies)
        done = subprocess.run([sys.executable, "-c", CHILD, str(dump)], capture_output=True, text=True,
                              check=True, env={"PYTHONPATH": str(ROOT)})
    jobs, growth = (int(word) for word in done.stdout.split())
    print(f"dump: {size / 2**20:.1f} MiB, {jobs:,} jobs read")
    print(f"peak resident memory grew by {growth / 2**20:.1f} MiB: {growth / size:.1f} times the dump's size")
    return 0


if __name__ == "__main__":
    sys.exit(main())
