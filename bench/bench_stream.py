#!/usr/bin/env python3
"""Compare djsb-stream's bandwidth with McCalpin's STREAM.

Paper 001 sec. 2.3 makes STREAM the DJSB mock-up application, so our
malleable variant (djsb/apps/djsb_stream.c) must keep STREAM's performance:
triad bandwidth within 5% of McCalpin's stream.c built with ``gcc -O3
-fopenmp`` at the same array size and thread count.

What it does:
  * builds McCalpin's stream.c (bench/stream/stream.c, see bench/stream/README.md)
    with ``gcc -O3 -fopenmp -DSTREAM_ARRAY_SIZE=<elements> -DNTIMES=<ntimes>``
    into a temporary directory, and ours with ``make -C apps``;
  * for each thread count (default 2 and 1) runs both programs, interleaved,
    ``--reps`` times with OMP_NUM_THREADS set and the same element count
    (ours with ``--elements N --iterations NTIMES --threads T``);
  * takes, per kernel, the best rate over the repetitions (each program's own
    rate is already STREAM's best-of-iterations-but-the-first) and prints a
    table: threads, kernel, McCalpin MB/s, DJSB MB/s, ratio, plus the spread
    (worst/best over repetitions) as a noise indicator;
  * flags the result as noisy when a spread is below 0.9, and prints the load
    average before and after;
  * exits 1 if the triad ratio is below --min-ratio (0.95) for any thread
    count or if a run did not validate, 2 on a usage/build error.

The best-of-repetitions figure is used because the machine may be shared
(another process using the CPUs only ever lowers a measured rate).

Usage: python3 bench/bench_stream.py [--elements 80000000] [--ntimes 10]
       [--threads 2,1] [--reps 3] [--stream-src PATH] [--json FILE]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SRC = ROOT / "bench" / "stream" / "stream.c"
DJSB_BIN = ROOT / "apps" / "bin" / "djsb-stream"
KERNELS = ("copy", "scale", "add", "triad")
# sha256 of the unmodified stream.c 5.10 this comparison was made with
# (jeffhammond/STREAM, the version with the clock_gettime mysecond()).
STREAM_C_SHA256 = "fbc0de150d842d8c2fa82c2be7b1e9cf21272f7236d8d3c43736d808ce71c65b"

_RATE_RE = re.compile(r"^(Copy|Scale|Add|Triad):\s+([0-9.]+)\s", re.MULTILINE)


def parse_mccalpin(out: str) -> dict[str, float]:
    """Best rates (MB/s) from McCalpin's report; raises if it did not validate."""
    rates = {m.group(1).lower(): float(m.group(2)) for m in _RATE_RE.finditer(out)}
    if set(rates) != set(KERNELS):
        raise RuntimeError(f"cannot parse McCalpin STREAM output:\n{out}")
    if "Solution Validates" not in out:
        raise RuntimeError(f"McCalpin STREAM did not validate:\n{out}")
    return rates


def parse_djsb(out: str) -> dict[str, float]:
    lines = [ln for ln in out.splitlines() if ln.strip()]
    if len(lines) != 1:
        raise RuntimeError(f"djsb-stream printed {len(lines)} lines, expected 1:\n{out}")
    d = json.loads(lines[0])
    if not d.get("validated"):
        raise RuntimeError(f"djsb-stream did not validate: {lines[0]}")
    return {k: float(d["best_rate_MBps"][k]) for k in KERNELS}


def build(src: Path, elements: int, ntimes: int, outdir: Path) -> Path:
    exe = outdir / "stream_mccalpin"
    cmd = ["gcc", "-O3", "-fopenmp", f"-DSTREAM_ARRAY_SIZE={elements}", f"-DNTIMES={ntimes}"]
    if 3 * 8 * elements >= 2**31:  # static arrays past 2 GiB need the medium code model
        cmd.append("-mcmodel=medium")
    cmd += [str(src), "-o", str(exe)]
    print("+", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True)
    print("+ make -C apps", file=sys.stderr)
    subprocess.run(["make", "-C", str(ROOT / "apps")], check=True, stdout=sys.stderr)
    return exe


def run(cmd: list[str], threads: int) -> str:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p.stdout


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--elements", type=int, default=80_000_000)
    ap.add_argument("--ntimes", type=int, default=10)
    ap.add_argument("--threads", default="2,1", help="comma-separated thread counts")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--min-ratio", type=float, default=0.95)
    ap.add_argument("--stream-src", type=Path, default=DEFAULT_SRC)
    ap.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = ap.parse_args(argv)

    if shutil.which("gcc") is None:
        print("bench_stream: gcc not found", file=sys.stderr)
        return 2
    if not args.stream_src.is_file():
        print(f"bench_stream: McCalpin's stream.c not found at {args.stream_src} "
              "(see bench/stream/README.md)", file=sys.stderr)
        return 2
    digest = hashlib.sha256(args.stream_src.read_bytes()).hexdigest()
    if digest != STREAM_C_SHA256:
        print(f"bench_stream: warning: {args.stream_src} sha256 {digest} differs from the "
              f"reference {STREAM_C_SHA256}", file=sys.stderr)
    try:
        threads = [int(t) for t in args.threads.split(",") if t]
    except ValueError:
        print(f"bench_stream: bad --threads {args.threads!r}", file=sys.stderr)
        return 2

    load_before = os.getloadavg()[0]
    results: list[dict[str, Any]] = []
    failed = False
    with tempfile.TemporaryDirectory(prefix="bench_stream.") as tmp:
        try:
            mc_exe = build(args.stream_src, args.elements, args.ntimes, Path(tmp))
        except subprocess.CalledProcessError as e:
            print(f"bench_stream: build failed: {e}", file=sys.stderr)
            return 2
        ours = [str(DJSB_BIN), "--elements", str(args.elements), "--iterations", str(args.ntimes)]
        for t in threads:
            mc_runs, dj_runs = [], []
            for rep in range(args.reps):
                try:
                    mc_runs.append(parse_mccalpin(run([str(mc_exe)], t)))
                    dj_runs.append(parse_djsb(run(ours + ["--threads", str(t)], t)))
                except RuntimeError as e:
                    print(f"bench_stream: {e}", file=sys.stderr)
                    return 1
                print(f"  threads={t} rep={rep + 1}: McCalpin triad {mc_runs[-1]['triad']:.1f}, "
                      f"DJSB triad {dj_runs[-1]['triad']:.1f} MB/s", file=sys.stderr)
            for k in KERNELS:
                mc = [r[k] for r in mc_runs]
                dj = [r[k] for r in dj_runs]
                row = {
                    "threads": t, "kernel": k,
                    "mccalpin_MBps": max(mc), "djsb_MBps": max(dj),
                    "ratio": max(dj) / max(mc),
                    "mccalpin_spread": min(mc) / max(mc), "djsb_spread": min(dj) / max(dj),
                    "mccalpin_all": mc, "djsb_all": dj,
                }
                results.append(row)
                if k == "triad" and row["ratio"] < args.min_ratio:
                    failed = True

    load_after = os.getloadavg()[0]
    print(f"elements={args.elements} ntimes={args.ntimes} reps={args.reps} "
          f"(best of reps; spread = worst/best over reps); "
          f"load average {load_before:.2f} -> {load_after:.2f} on {os.cpu_count()} CPUs")
    print(f"{'threads':>7} {'kernel':<6} {'McCalpin MB/s':>14} {'DJSB MB/s':>12} {'ratio':>6} "
          f"{'spread McC':>10} {'spread DJSB':>11}")
    for r in results:
        print(f"{r['threads']:>7} {r['kernel']:<6} {r['mccalpin_MBps']:>14.1f} {r['djsb_MBps']:>12.1f} "
              f"{r['ratio']:>6.3f} {r['mccalpin_spread']:>10.2f} {r['djsb_spread']:>11.2f}")
    noisy = [r for r in results if min(r["mccalpin_spread"], r["djsb_spread"]) < 0.9]
    if noisy:
        print("NOTE: noisy measurements (spread < 0.9: another process used the CPUs or memory); "
              "re-run on a quiet machine or with more --reps before trusting a failed ratio")
    if args.json:
        args.json.write_text(json.dumps({"elements": args.elements, "ntimes": args.ntimes,
                                         "reps": args.reps, "loadavg": [load_before, load_after],
                                         "noisy": bool(noisy), "rows": results}, indent=1) + "\n")
    if failed:
        print(f"FAIL: triad ratio below {args.min_ratio}", file=sys.stderr)
        return 1
    print(f"OK: triad ratio >= {args.min_ratio} for every thread count")
    return 0


if __name__ == "__main__":
    sys.exit(main())
