"""How a job's memory footprint changes its slowdown when it shares a node: measured with djsb-stream.

Paper 001's node (sec. 4.2, Table 2) runs a simulation of 4 tasks x 4 threads and an analytics of
half its size (2 tasks x 4 threads) on 16 cores. This machine's version of that node: the
simulation is one djsb-stream process of 2 threads (all the cores), the analytics one process of
1 thread (half of it), 100 MiB (paper 001's analytics memory per node). For each simulation
footprint F, every round measures (seconds per STREAM iteration, so a slowdown is a ratio of the
same work's times):

- ``sim_alone`` / ``sim_shrunk``: the simulation alone at 2 threads / 1 thread (shrinking);
- ``ana_alone``: the analytics alone (its reference, eq. (1) of 001);
- ``ana_oversub`` / ``sim_oversub``: one of the two timed while the other runs on the same cores
  (oversubscription: 3 threads on 2 cores, shared by the OS);
- ``ana_stopcont``: the analytics while the simulation is stopped (SIGSTOP) with its F resident;
- ``ana_dynamic``: the analytics on core 1 while the simulation runs shrunk to core 0 (the
  cooperative scenario, djsb-stream's control file).

The working-set curve (djsb/appmodel.py point 6) gets its own sweep: one thread alone over
``--curve`` footprints, ``--curve-rounds`` interleaved rounds, best of them (STREAM's own rule: the
least disturbed run), normalised by the largest footprint.

A timed run does a fixed number of iterations sized from a pilot to last about ``--work`` seconds
alone; the other job, started first, runs until killed, and timing starts only once its arrays are
resident (its RSS reached its footprint, polled with a timeout). Footprints are taken in a new
random order each round (other workers share the CPUs: alternating spreads their load over all
configurations). A bandwidth is the best of the rounds (the least disturbed run, STREAM's own
rule); a slowdown is the median of the rounds' ratios of runs made close together (shared over
alone), with their spread (coefficient of variation). Bandwidths are STREAM's bytes (80 bytes per
array element per iteration: copy and scale move 16, add and triad 24) over the seconds per
iteration.

Writes ``--out``: the model's parameters (configs/footprint-*.csv, read by
djsb/model/footprint.py), each with its spread and sample count, and ``--raw``: every run. The
provenance (machine, date, command) goes into the file's comment lines.

    make -C apps && python3 bench/bench_footprint.py --rounds 3 --out configs/footprint-epyc-2core.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from djsb import appmodel  # noqa: E402 - the repository's own rate model, found from bench/

ROOT = Path(__file__).resolve().parent.parent
STREAM = ROOT / "apps" / "bin" / "djsb-stream"
MIB = 2**20
BYTES_PER_ELEMENT_ITERATION = 80
"""STREAM's accounting: copy and scale move 2 x 8 bytes per element, add and triad 3 x 8."""
ANALYTICS = 100 * MIB
"""Paper 001's analytics: 2 tasks x 50 MiB per node (Table 2, fig. 3's caption)."""
REPEATS = 3
"""Runs of the analytics in each shared configuration per round (alternated, median kept)."""
FAR_BEYOND_CACHE = 4
"""Footprints of at least this many last-level caches stream from memory: where processor sharing
alone is compared with the measured slowdowns to give the time-slicing efficiency."""
Row = tuple[str, int, float, float, int]
"""(name, footprint_bytes, value, cv, samples): one row of the footprint file."""


def parse_size(text: str) -> int:
    """16M, 4G, 512K: powers of 1024 (djsb-stream's --memory)."""
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def l3_bytes() -> int:
    """The last-level cache size (lscpu's L3), 0 if unknown."""
    for path in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        if (path / "level").read_text().strip() == "3":
            return parse_size((path / "size").read_text().strip())
    return 0


def rss(pid: int) -> int:
    """Resident bytes of a process (VmRSS), 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class Background:
    """A djsb-stream process that runs until stopped, its arrays resident before timing starts."""

    def __init__(self, memory: int, threads: int, control: Path | None = None) -> None:
        cmd = [str(STREAM), "--memory", str(memory), "--threads", str(threads), "--time", "3600"]
        if control is not None:
            cmd += ["--control", str(control)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while rss(self.proc.pid) < 0.95 * memory:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise RuntimeError(f"djsb-stream --memory {memory} never became resident")
            time.sleep(0.05)

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGCONT)
        self.proc.terminate()
        self.proc.wait(timeout=60)


def timed(memory: int, threads: int, iterations: int, cpu: int | None = None,
          control: Path | None = None) -> float:
    """Seconds per iteration of a djsb-stream run of ``iterations`` iterations (its loop only)."""
    cmd = [str(STREAM), "--memory", str(memory), "--threads", str(threads), "--iterations", str(iterations)]
    if control is not None:
        cmd += ["--control", str(control)]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu), *cmd]
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return float(out["loop_s"]) / int(out["iterations"])


def pilot(memory: int, threads: int, seconds: float) -> int:
    """Iterations that last about ``seconds`` alone (at least 3)."""
    return max(3, round(seconds / timed(memory, threads, 3)))


def one_round(footprint: int, n_sim: int, n_ana: int, control: Path) -> dict[str, float]:
    """Every measurement of one round for one simulation footprint (see the module docstring): the
    analytics' runs, short, are repeated ``REPEATS`` times in alternation (shared, stopped beside,
    shared, ...), and its time alone is the mean of one run before and one after them."""
    before = timed(ANALYTICS, 1, n_ana)
    out = {"sim_alone": timed(footprint, 2, n_sim), "sim_shrunk": timed(footprint, 1, n_sim)}
    ana = Background(ANALYTICS, 1)
    try:
        out["sim_oversub"] = timed(footprint, 2, n_sim)
    finally:
        ana.stop()
    control.write_text("2\n")
    sim = Background(footprint, 2, control=control)
    shared, stopped = [], []
    try:
        for _ in range(REPEATS):
            shared.append(timed(ANALYTICS, 1, n_ana))
            sim.signal(signal.SIGSTOP)
            stopped.append(timed(ANALYTICS, 1, n_ana))
            sim.signal(signal.SIGCONT)
        control.write_text("1\n")
        time.sleep(0.1)  # djsb-stream polls its control file every 20 ms, between kernels
        dynamic = [timed(ANALYTICS, 1, n_ana, cpu=1) for _ in range(REPEATS)]
    finally:
        sim.stop()
    after = timed(ANALYTICS, 1, n_ana)
    return {**out, "ana_alone": (before + after) / 2, "ana_oversub": statistics.median(shared),
            "ana_stopcont": statistics.median(stopped), "ana_dynamic": statistics.median(dynamic)}


def curve_sweep(footprints: Sequence[int], rounds: int, work: float,
                rng: random.Random) -> list[dict[str, float]]:
    """Seconds per iteration of one thread alone at each footprint, ``rounds`` shuffled rounds."""
    iterations = {f: pilot(f, 1, work) for f in footprints}
    runs = []
    for r in range(rounds):
        order = list(footprints)
        rng.shuffle(order)
        for footprint in order:
            seconds = timed(footprint, 1, iterations[footprint])
            runs.append({"round": r, "footprint": footprint, "one_thread": seconds})
    return runs


def median_cv(values: Sequence[float]) -> tuple[float, float]:
    """Median and coefficient of variation (0 with one value)."""
    cv = statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else 0.0
    return statistics.median(values), cv


def element_bytes(footprint: int) -> float:
    """Bytes one STREAM iteration moves over arrays totalling ``footprint`` (3 arrays of doubles)."""
    return footprint / 24 * BYTES_PER_ELEMENT_ITERATION


def fit(runs: Sequence[dict[str, float]], curve_runs: Sequence[dict[str, float]], llc: int) -> list[Row]:
    """The measured medians and spreads, and the parameters fitted from them (module docstring of
    djsb/footprint.py), printed as a table."""
    footprints = sorted({int(row["footprint"]) for row in runs})
    params: list[Row] = [("llc_bytes", 0, float(llc), 0.0, 1)]
    best: dict[tuple[str, int], float] = {}
    print(f"\nL3 {llc // MIB} MiB; bandwidths best of {len(runs) // len(footprints)} rounds, "
          "slowdowns median of the rounds' paired ratios (CV in brackets)")
    print(f"{'F MiB':>7} {'F/L3':>6} {'GB/s 2thr':>10} {'GB/s 1thr':>10} {'s_ana_ovs':>11} {'s_sim_ovs':>11} "
          f"{'s_ana_stop':>11} {'s_ana_dyn':>11} {'s_sim_shr':>11}")
    for footprint in footprints:
        mine = [row for row in runs if row["footprint"] == footprint]
        cells = []
        for name, key in (("node_bandwidth", "sim_alone"), ("core_bandwidth", "sim_shrunk")):
            best[name, footprint] = element_bytes(footprint) / min(row[key] for row in mine) / 1e9
            _, cv = median_cv([row[key] for row in mine])
            params.append((name, footprint, best[name, footprint], cv, len(mine)))
            cells.append(f"{best[name, footprint]:.3g}")
        for name, num, den in (("slowdown_ana_oversub", "ana_oversub", "ana_alone"),
                               ("slowdown_sim_oversub", "sim_oversub", "sim_alone"),
                               ("slowdown_ana_stopcont", "ana_stopcont", "ana_alone"),
                               ("slowdown_ana_dynamic", "ana_dynamic", "ana_alone"),
                               ("slowdown_sim_shrunk", "sim_shrunk", "sim_alone")):
            value, cv = median_cv([row[num] / row[den] for row in mine])
            params.append((name, footprint, value, cv, len(mine)))
            cells.append(f"{value:.3g} ({cv:.0%})")
        print(f"{footprint // MIB:>7} {footprint / llc:>6.2f} " + " ".join(f"{c:>10}" for c in cells))
    sizes = sorted({int(row["footprint"]) for row in curve_runs})
    fastest = {f: min(row["one_thread"] for row in curve_runs if row["footprint"] == f) for f in sizes}
    bandwidth = {f: element_bytes(f) / fastest[f] / 1e9 for f in sizes}
    curve = tuple((f / llc, bandwidth[f] / bandwidth[sizes[-1]]) for f in sizes)
    print("\nworking-set curve (one thread, best of the rounds): "
          + ", ".join(f"{f / MIB:g} MiB {bandwidth[f]:.3g} GB/s (x{g:.2f})"
                      for f, (_, g) in zip(sizes, curve, strict=True)))
    for f, (_, g) in zip(sizes, curve, strict=True):
        times = [row["one_thread"] for row in curve_runs if row["footprint"] == f]
        params.append(("cache_gain", f, g, median_cv(times)[1], len(times)))
    largest = footprints[-1]
    core, node = best["core_bandwidth", largest], best["node_bandwidth", largest]

    def gain(working_set: float) -> float:
        return appmodel.cache_gain(working_set, llc, curve)

    efficiencies = []
    for row in runs:
        footprint = int(row["footprint"])
        if footprint < FAR_BEYOND_CACHE * llc:
            continue
        both = gain(footprint + ANALYTICS)
        shared = appmodel.thread_speed(3, 2, core, node, both)
        ana = appmodel.thread_speed(1, 2, core, node, gain(ANALYTICS)) / shared
        sim = appmodel.thread_speed(2, 2, core, node, gain(footprint)) / shared
        efficiencies += [ana / (row["ana_oversub"] / row["ana_alone"]),
                         sim / (row["sim_oversub"] / row["sim_alone"])]
    efficiency, efficiency_cv = median_cv(efficiencies)
    print(f"\nprocessor sharing against the measured slowdowns far beyond the cache (F >= "
          f"{FAR_BEYOND_CACHE} L3): efficiency (predicted / measured slowdown) median {efficiency:.3f}, "
          f"CV {efficiency_cv:.0%}, {len(efficiencies)} paired runs; the model keeps min(1, median)")
    params.append(("timeslice_efficiency", 0, min(1.0, efficiency), efficiency_cv, len(efficiencies)))
    print_model(params, footprints, llc, curve, core, node, min(1.0, efficiency))
    spreads = [median_cv([row[key] for row in runs if row["footprint"] == f])[1]
               for f in footprints if f >= FAR_BEYOND_CACHE * llc for key in ("sim_alone", "sim_shrunk")]
    spreads.append(median_cv([row["ana_alone"] for row in runs])[1])
    work_cv = statistics.median(spreads)
    print(f"run-to-run spread of a job alone (CV of its time over the rounds): median {work_cv:.1%} "
          f"of {', '.join(f'{s:.0%}' for s in spreads)}")
    params.append(("work_cv", 0, work_cv, 0.0, len(spreads)))
    return params


def print_model(params: Sequence[Row], footprints: Sequence[int], llc: int,
                curve: tuple[tuple[float, float], ...], core: float, node: float, efficiency: float) -> None:
    """The rate model on this machine (2 cores, the bandwidths far beyond the cache, the fitted
    curve and efficiency) beside the measured slowdowns: what the fitted mechanism explains."""
    measured = {(name, footprint): value for name, footprint, value, _, _ in params}

    def speed(threads: int, working_set: float) -> float:
        return appmodel.thread_speed(threads, 2, core, node, appmodel.cache_gain(working_set, llc, curve))

    print("\nthe model on this machine (measured / predicted): analytics oversubscribed, simulation "
          "oversubscribed, analytics beside a stopped simulation, analytics beside the shrunk simulation")
    for footprint in footprints:
        both = footprint + ANALYTICS
        predicted = {"slowdown_ana_oversub": speed(1, ANALYTICS) / speed(3, both) / efficiency,
                     "slowdown_sim_oversub": speed(2, footprint) / speed(3, both) / efficiency,
                     "slowdown_ana_stopcont": 1.0,
                     "slowdown_ana_dynamic": speed(1, ANALYTICS) / speed(2, both)}
        print(f"{footprint // MIB:>7} MiB: " + "  ".join(f"{measured[name, footprint]:.2f} / {value:.2f}"
                                                       for name, value in predicted.items()))


def write_parameters(path: Path, params: Sequence[Row], llc: int, argv: Sequence[str] | None) -> None:
    """The footprint file: provenance comments, then djsb/footprint.py's columns."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**30
    command = " ".join(sys.argv[1:] if argv is None else argv)
    with path.open("w", newline="") as handle:
        handle.write(f"# djsb-stream footprint measurements (bench/bench_footprint.py). machine: "
                     f"{platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, L3 {llc // MIB} MiB, "
                     f"{memory} GiB, load average {os.getloadavg()[0]:.2f} at the end; "
                     f"date: {time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n")
        handle.write(f"# command: python3 bench/bench_footprint.py {command}\n")
        handle.write(f"# analytics {ANALYTICS // MIB} MiB, 1 thread; simulation 2 threads; bandwidths GB/s "
                     "best of the rounds; slowdowns median of paired ratios; cv over the rounds\n")
        writer = csv.writer(handle)
        writer.writerow(["name", "footprint_bytes", "value", "cv", "samples"])
        for name, footprint, value, cv, samples in params:
            writer.writerow([name, footprint, f"{value:.6g}", f"{cv:.4f}", samples])


def stop_on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so every ``finally`` stops (and resumes) its background job."""
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--footprints", default="8M,32M,128M,1G,4G",
                        help="simulation memory per node (djsb-stream --memory), comma-separated")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", type=float, default=0.6, help="seconds of a timed run alone")
    parser.add_argument("--curve", default="4M,8M,16M,32M,64M,128M,256M,1G",
                        help="footprints of the working-set curve (one thread alone)")
    parser.add_argument("--curve-rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "configs" / "footprint-measured.csv")
    parser.add_argument("--raw", type=Path, default=None,
                        help="every run (CSV); default OUT's stem + -runs.csv")
    parser.add_argument("--refit", type=Path, default=None,
                        help="fit the runs of an earlier measurement (its -runs.csv) instead of measuring")
    args = parser.parse_args(argv)
    llc = l3_bytes()
    if args.refit is not None:
        with args.refit.open() as handle:
            every = [{k: float(v) for k, v in row.items() if v} for row in csv.DictReader(handle)]
        scenarios = [r for r in every if "sim_alone" in r]
        write_parameters(args.out, fit(scenarios, [r for r in every if "one_thread" in r], llc), llc, argv)
        print(f"\nwrote {args.out}")
        return 0
    if not STREAM.exists():
        print(f"{STREAM} missing: run make -C apps", file=sys.stderr)
        return 2
    footprints = [parse_size(s) for s in args.footprints.split(",")]
    if max(footprints) < FAR_BEYOND_CACHE * llc:
        print(f"--footprints: give one of at least {FAR_BEYOND_CACHE} x the L3 "
              f"({FAR_BEYOND_CACHE * llc // MIB} MiB) to compare with processor sharing", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    curve = [parse_size(s) for s in args.curve.split(",")]
    curve_runs = curve_sweep(curve, args.curve_rounds, args.work / 2, rng)
    n_sim = {f: pilot(f, 2, args.work) for f in footprints}
    n_ana = pilot(ANALYTICS, 1, args.work)
    runs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        control = Path(tmp) / "threads"
        for r in range(args.rounds):
            order = footprints[:]
            rng.shuffle(order)
            for footprint in order:
                row = {"round": r, "footprint": footprint,
                       **one_round(footprint, n_sim[footprint], n_ana, control)}
                runs.append(row)
                times = " ".join(f"{k}={v * 1e3:.2f}ms" for k, v in row.items()
                                 if k not in ("round", "footprint"))
                print(f"round {r} F={footprint // MIB} MiB: {times}", flush=True)
    raw = args.raw or args.out.with_name(args.out.stem + "-runs.csv")
    with raw.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=[*runs[0], "one_thread"])
        writer.writeheader()
        writer.writerows([*runs, *curve_runs])

    params = fit(runs, curve_runs, llc)
    write_parameters(args.out, params, llc, argv)
    print(f"\nwrote {args.out} and {raw}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
