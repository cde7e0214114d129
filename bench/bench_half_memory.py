"""Paper 001's fig. 4 condition on this machine: the simulation holding more than half of the node's memory.

Fig. 3 of 001 gives the simulation 4 GiB of a 32 GiB node (with the analytics "less than 15% of the
total node memory", sec. 4.4), fig. 4 gives it 16 GiB ("more than 50%"). This bench runs
bench/bench_footprint.py's round (one node of 001 in miniature: a 2-thread djsb-stream simulation, a
1-thread 100 MiB analytics; the simulation alone, shrunk, oversubscribed; the analytics alone,
oversubscribed, beside the stopped simulation, beside the shrunk one) at a small footprint (fig. 3's
fraction, ``--small``) and at footprints above half of this machine's memory (``--large``), every
round taking them in a new random order so that the other workers' load falls on all of them
alike; each round is one sample of every footprint, and a comparison of two footprints pairs the
runs of the same round.

Bounded before anything is allocated: no footprint above 16 GiB or above ``--headroom`` (5 GiB) less
than the memory available (checked again before every round; a round that does not fit waits up to a
minute, then the bench stops with the rounds it has). A round is not started when the time used so
far plus the longest round would pass ``--budget`` minutes, once ``--rounds-min`` rounds are done.

A timed simulation runs ``--sim-iterations`` STREAM iterations (2: each one moves 3.3 x its
footprint, seconds at 12 GiB; the pilot of bench_footprint.py would cost three more). Writes
``--out``: one row per round and footprint with every time (seconds per iteration), the node's
memory and the 1-minute load average before and after the round; the provenance (machine, date,
memory, the load average over the run, the command) in its comment lines. djsb/reproduce/paper_001.py
reads it for fig. 4's rows.

    make -C apps && nice python3 bench/bench_half_memory.py --large 12G --rounds 4 --rounds-min 3 \
        --budget 30 --out configs/half-memory-epyc-2core.csv
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import random
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_footprint import (  # noqa: E402 - the footprint bench's round, found beside this file
    ANALYTICS,
    STREAM,
    l3_bytes,
    one_round,
    parse_size,
    pilot,
    stop_on_sigterm,
)

from djsb.reproduce.half_memory import COLUMNS, TIMES  # noqa: E402 - the file's format, read by paper_001

GIB = 2**30
MAX_FOOTPRINT = 16 * GIB
"""No simulation footprint above this, whatever the machine has."""


def meminfo(key: str) -> int:
    """A /proc/meminfo field in bytes (MemTotal, MemAvailable)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        name, _, value = line.partition(":")
        if name == key:
            return int(value.split()[0]) * 1024
    raise KeyError(key)


def fits(footprint: int, headroom: int) -> bool:
    """Whether the simulation and the analytics fit the memory available now, ``headroom`` left over."""
    return footprint + ANALYTICS + headroom <= meminfo("MemAvailable")


def wait_until_fits(footprint: int, headroom: int, timeout: float = 60.0) -> bool:
    """Poll the available memory until ``footprint`` fits, for at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not fits(footprint, headroom):
        if time.monotonic() > deadline:
            return False
        time.sleep(2.0)
    return True


def write_results(path: Path, rows: Sequence[dict[str, float | str]], argv: Sequence[str],
                  n_sim: int, n_ana: int, started: str, loads: Sequence[float]) -> None:
    """The results file: provenance comments, then one row per round and footprint."""
    llc = l3_bytes()
    with path.open("w", newline="") as handle:
        handle.write(f"# djsb-stream at paper 001's fig. 3 and fig. 4 memory fractions "
                     f"(bench/bench_half_memory.py). machine: {platform.node()} {platform.machine()}, "
                     f"{os.cpu_count()} CPUs, L3 {llc // 2**20} MiB, MemTotal "
                     f"{meminfo('MemTotal') / GIB:.2f} GiB, swap {meminfo('SwapTotal') / GIB:.2f} GiB\n")
        handle.write(f"# date: {started} to {time.strftime('%Y-%m-%dT%H:%M:%S%z')}; 1-minute load average "
                     f"over the run (before and after each round): min {min(loads):.2f}, mean "
                     f"{statistics.fmean(loads):.2f}, max {max(loads):.2f}\n")
        handle.write(f"# command: nice python3 bench/bench_half_memory.py {' '.join(argv)}\n")
        handle.write(f"# simulation 2 threads, {n_sim} iterations per timed run; analytics "
                     f"{ANALYTICS // 2**20} MiB, 1 thread, {n_ana} iterations; times in seconds per "
                     "iteration; load_before/after: 1-minute load average\n")
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})


def main(argv: Sequence[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", default="3G", help="fig. 3's footprint (1/8 of the node in 001)")
    parser.add_argument("--large", default="12G",
                        help="footprints above half of the node, comma-separated")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rounds-min", type=int, default=3)
    parser.add_argument("--budget", type=float, default=32.0, help="minutes")
    parser.add_argument("--sim-iterations", type=int, default=2)
    parser.add_argument("--work", type=float, default=0.6, help="seconds of a timed analytics alone")
    parser.add_argument("--headroom", default="5G", help="memory left to the machine")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("half-memory.csv"))
    args = parser.parse_args(argv)
    argv = sys.argv[1:] if argv is None else list(argv)
    footprints = [parse_size(args.small), *(parse_size(s) for s in args.large.split(","))]
    headroom = parse_size(args.headroom)
    node = meminfo("MemTotal")
    if any(f <= 0 or f > MAX_FOOTPRINT for f in footprints):
        print(f"--small/--large: footprints must be in (0, {MAX_FOOTPRINT // GIB} GiB]", file=sys.stderr)
        return 2
    if not all(fits(f, headroom) for f in footprints):
        print(f"--large: {max(footprints) / GIB:g} GiB + the analytics + {headroom / GIB:g} GiB headroom "
              f"exceeds the {meminfo('MemAvailable') / GIB:.1f} GiB available", file=sys.stderr)
        return 2
    if not 1 <= args.rounds_min <= args.rounds or not 1 <= args.sim_iterations <= 20:
        print("--rounds-min must be in 1..--rounds, --sim-iterations in 1..20", file=sys.stderr)
        return 2
    if not STREAM.exists():
        print(f"{STREAM} missing: run make -C apps", file=sys.stderr)
        return 2
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    begin = time.monotonic()
    rng = random.Random(args.seed)
    n_ana = pilot(ANALYTICS, 1, args.work)
    rows: list[dict[str, float | str]] = []
    loads: list[float] = []
    longest = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        control = Path(tmp) / "threads"
        for r in range(args.rounds):
            used = time.monotonic() - begin
            if r >= args.rounds_min and used + longest > args.budget * 60:
                print(f"stopping after {r} rounds: {used / 60:.1f} min used, a round takes "
                      f"{longest / 60:.1f}", flush=True)
                break
            round_start = time.monotonic()
            order = footprints[:]
            rng.shuffle(order)
            for footprint in order:
                if not wait_until_fits(footprint, headroom):
                    print(f"round {r}: {footprint / GIB:g} GiB no longer fits; stopping", file=sys.stderr)
                    break
                before = os.getloadavg()[0]
                stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
                times = one_round(footprint, args.sim_iterations, n_ana, control)
                after = os.getloadavg()[0]
                loads += [before, after]
                rows.append({"round": r, "footprint_bytes": footprint, "node_bytes": node, **times,
                             "load_before": before, "load_after": after, "started": stamp})
                print(f"round {r} F={footprint / GIB:g} GiB ({footprint / node:.0%} of the node), load "
                      f"{before:.1f}-{after:.1f}: " + " ".join(f"{k}={times[k]:.3f}" for k in TIMES),
                      flush=True)
            else:
                longest = max(longest, time.monotonic() - round_start)
                continue
            break
    complete = {int(row["round"]) for row in rows
                if sum(1 for other in rows if other["round"] == row["round"]) == len(footprints)}
    rows = [row for row in rows if int(row["round"]) in complete]
    if len(complete) < args.rounds_min:
        print(f"only {len(complete)} complete rounds; nothing written", file=sys.stderr)
        return 1
    write_results(args.out, rows, argv, args.sim_iterations, n_ana, started, loads)
    print(f"wrote {args.out}: {len(complete)} rounds in {(time.monotonic() - begin) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
