#!/usr/bin/env python3
"""The numbers README.md quotes, recomputed by the commands it names, so they cannot drift.

Each measured number of README.md stands between ``<!-- numbers: NAME -->`` and
``<!-- /numbers -->`` (HTML comments, invisible once rendered). A block is rendered from the output
of one *source*: a command the README names, run from the repository into
``runs/readme-numbers/SOURCE/`` (with how long it took and the load around it in ``done.json``), or
for a quick one a reader of a trace in this process. Quick sources take seconds and are checked by
tests/test_readme_numbers.py in the test suite; the others take minutes and are rerun only here.

  python3 bench/readme_numbers.py             rerun every source, rewrite README.md's blocks
  python3 bench/readme_numbers.py NAME ...    only these blocks (or every block of these sources)
  python3 bench/readme_numbers.py --check     the quick blocks against README.md; exit 1 on a difference
  python3 bench/readme_numbers.py --reuse     render a source from its finished output when there is one
  python3 bench/readme_numbers.py --list      every block, its source and its command

``make readme-numbers`` runs the first; the traces are read from ../shared/data/traces, as the
configs name them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import yaml

from djsb.workloads.swf import read_swf

if TYPE_CHECKING:
    from djsb.calibrate.compare import Comparison

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
RUNS = ROOT / "runs" / "readme-numbers"
TRACES = ROOT.parent / "shared" / "data" / "traces"
DONE = "done.json"
BLOCK = re.compile(r"<!-- numbers: (?P<name>[a-z0-9-]+) -->(?P<text>.*?)<!-- /numbers -->", re.DOTALL)


@dataclass(frozen=True)
class Source:
    """A command whose output some blocks are rendered from: ``argv`` lists run in turn from the
    repository with ``{out}`` the source's output directory (none: ``compute`` reads in-process)."""

    name: str
    quick: bool
    command: str
    """As the README names it (a quick source's: how this script computes it)."""
    argvs: tuple[tuple[str, ...], ...] = ()
    prepare: Callable[[Path], None] | None = field(default=None, compare=False)
    """Writes what the commands read into the output directory first."""
    needs: tuple[str, ...] = ()
    """Trace files (in ../shared/data/traces) the source reads."""
    compute: Callable[[], dict[str, float]] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Block:
    """One run of text in README.md, rendered from its source's output directory."""

    name: str
    source: str
    render: Callable[[Path], str] = field(compare=False)


def grouped(value: float) -> str:
    """A whole number with thousands separators, as the README writes them: 17,898."""
    return f"{round(value):,}"


def lanl_overrun() -> dict[str, float]:
    """LANL-CM5's records, and those whose run time exceeds their request (SWF fields 4 and 9)."""
    jobs = read_swf(TRACES / "LANL-CM5-1994-4.1-cln.swf.gz").jobs
    over = sum(1 for job in jobs if job.requested_time is not None and job.run_time > job.requested_time)
    return {"records": float(len(jobs)), "overran": float(over)}


CALIBRATE_FIXTURES = ROOT / "tests" / "fixtures" / "calibrate"
LOADED_RUN = CALIBRATE_FIXTURES / "loaded"
PREEMPT_RUN = CALIBRATE_FIXTURES / "preempt_requeue"
LINKS_RUN = CALIBRATE_FIXTURES / "links"
GANG_RUN = CALIBRATE_FIXTURES / "gang"
RERUN_RUN = CALIBRATE_FIXTURES / "preempt_rerun"
GANG_ONE_CPU_RUN = CALIBRATE_FIXTURES / "gang_one_cpu"


def saved_replay(run: Path, config: Path, with_log: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A calibration's Slurm run 1 as saved in ``run`` (slurm_1.csv, the scheduler passes
    passes_1.csv, Slurm's answers show_*.txt, and slurmctld.log if ``with_log``) of the calibration
    file ``config``, and the model's replay of it, as ``djsb calibrate`` replays it (each job
    ``--no-requeue`` unless the file's ``slurm.requeue``; the file's arrays and dependencies)."""
    from djsb.calibrate.ctld_log import located_passes, log_instants, logged_starts, parse_ctld_log
    from djsb.calibrate.model_replay import SlurmModel, in_partitions, model_config, model_replay
    from djsb.calibrate.pass_watch import SCHEDULERS
    from djsb.calibrate.spec import load_calibration
    from djsb.jobs.scontrol import parse_show_records
    from djsb.model.priority.fifo import FifoPriority
    from djsb.slurmsite.slurm_config import cluster_spec, parse_show_config

    calibration = load_calibration(config)
    shown = {name: (run / f"show_{name}.txt").read_text() for name in ("config", "partition", "node")}
    names = calibration.partitions or (calibration.partition,)
    cluster = cluster_spec(parse_show_records(shown["partition"]), parse_show_records(shown["node"]),
                           names[0], names[1:])
    model = SlurmModel(cluster, model_config(parse_show_config(shown["config"]), {}), FifoPriority)
    slurm = pd.read_csv(run / "slurm_1.csv", index_col="job_id")
    passes = pd.read_csv(run / "passes_1.csv")
    if with_log:
        logged = parse_ctld_log((run / "slurmctld.log").read_text())
        instants = log_instants(logged, slurm)
        if instants is None:
            raise ValueError(f"{run / 'slurmctld.log'} does not align with the run's clock")
        slurm, passes = slurm.join(instants), located_passes(passes, logged_starts(logged, slurm))
    watched = {name: passes.loc[passes["scheduler"] == name, "time"].tolist() for name in SCHEDULERS}
    jobs = in_partitions(calibration.jobs, cluster)
    return slurm, model_replay(jobs, slurm, model, seed=1, passes=watched,
                               dependencies=calibration.dependencies)


def loaded_replay(with_log: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A calibration's Slurm run 1 on a loaded machine (tests/fixtures/calibrate/loaded: the run as
    saved, sdiag's pass brackets, slurmctld's log written during it, Slurm's answers) and the
    model's replay of it, with or without the log's instants."""
    return saved_replay(LOADED_RUN, CALIBRATE_FIXTURES / "calibrate.yaml", with_log)


def loaded_figures() -> dict[str, float]:
    """Tau and mean-wait error of the model against the loaded run, without and with the log."""
    from djsb.calibrate.compare import compare

    figures: dict[str, float] = {}
    for name, with_log in (("sdiag", False), ("log", True)):
        measured = compare(*loaded_replay(with_log))
        figures |= {f"{name}_tau": measured.tau, f"{name}_wait": measured.mean_wait_error}
    return figures


def against_slurm(run: Path, config: Path | None = None) -> tuple[Comparison, Comparison, pd.DataFrame,
                                                                   pd.DataFrame]:
    """The model against a saved calibration's Slurm run 1 (:func:`saved_replay` of ``run`` with its
    own calibrate.yaml unless ``config``), Slurm's own run 2 against run 1, and both replays."""
    from djsb.calibrate.compare import compare

    slurm, model = saved_replay(run, config or run / "calibrate.yaml")
    own = compare(slurm, pd.read_csv(run / "slurm_2.csv", index_col="job_id"))
    return compare(slurm, model), own, slurm, model


def saved_run_figures(run: Path) -> Callable[[], dict[str, float]]:
    """Tau, mean-wait error and largest start error of the model against a saved calibration's run 1
    (:func:`against_slurm`), and the mean-wait error of Slurm's own run 2 against it."""
    def compute() -> dict[str, float]:
        measured, own, _, _ = against_slurm(run)
        return {"tau": measured.tau, "wait": measured.mean_wait_error, "max": measured.start_error_max,
                "own_wait": own.mean_wait_error}
    return compute


def saved_run_block(run: Path, *, with_max: bool = False) -> Callable[[Path], str]:
    """:func:`saved_run_figures` of ``run`` as the README writes them, the largest start error
    if ``with_max``, Slurm's own figure beside."""
    def render(_: Path) -> str:
        figures = saved_run_figures(run)()
        largest = f", every start within {figures['max']:.1f} s" if with_max else ""
        return (f"mean wait {100 * figures['wait']:+.1f} %, tau {figures['tau']:.2f}{largest} (Slurm's own "
                f"run 2: {100 * figures['own_wait']:+.1f} %)")
    return render


def loaded_block(which: str) -> Callable[[Path], str]:
    """Tau and the mean-wait error of one of :func:`loaded_figures`' replays."""
    def render(_: Path) -> str:
        figures = loaded_figures()
        return f"mean wait {100 * figures[which + '_wait']:+.1f} %, tau {figures[which + '_tau']:.2f}"
    return render


def load_done(out: Path) -> dict[str, float]:
    return dict(json.loads((out / DONE).read_text()))


def children_cpu() -> float:
    """CPU seconds of this process's finished children (the commands and their workers)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def conditions(done: dict[str, float]) -> str:
    """The machine's state while a source ran: its load average at the start, and the commands'
    niceness when they ran niced (other work then took the CPUs first)."""
    niced = f" under nice {int(done['niceness'])}" if done.get("niceness") else ""
    return f"at load {done['load_before']:.1f}{niced}"


def run_time(out: Path) -> str:
    """The CPU seconds a source's commands used, and their wall time (which a busy machine lengthens)."""
    done = load_done(out)
    return f"{done['cpu_seconds']:.0f} s of CPU, {done['seconds']:.0f} s of wall time {conditions(done)}"


def demo_time(out: Path) -> str:
    done = load_done(out)
    return f"{done['seconds'] / 60:.1f} min on {int(done['cpus'])} cores {conditions(done)}"


def replay_summary(out: Path) -> dict[str, float]:
    """replay_stats.json of a replay (djsb replay-stats): KS D of the waits, job counts."""
    return dict(json.loads((out / "replay_stats.json").read_text()))


def replay_table(out: Path) -> pd.DataFrame:
    """replay_stats.csv of a replay: a row per statistic (mean, std, min, quartiles, max), a column
    per quantity and side (recorded, simulated)."""
    return pd.read_csv(out / "replay_stats.csv", header=[0, 1], index_col=0)


def mean_wait(side: str) -> Callable[[Path], str]:
    return lambda out: grouped(float(replay_table(out)[("queue_wait", side)]["mean"]))


def same_inputs(out: Path) -> str:
    """The replay's inputs (every quantity but the wait) against the trace's, every statistic: the
    same to 1e-6, or the largest difference."""
    table = replay_table(out)
    inputs = [q for q in table.columns.get_level_values(0).unique() if q != "queue_wait"]
    worst = max(float((table[(q, "recorded")] - table[(q, "simulated")]).abs().max()) for q in inputs)
    names = ", ".join(q.replace("_", " ") for q in inputs)
    return f"({names}) are identical" if worst < 1e-6 else f"({names}) differ by up to {worst:g}"


def ks(variant: str = "") -> Callable[[Path], str]:
    return lambda out: f"{replay_summary(out / variant)['ks_wait']:.2f}"


SHAPINGS = {"reject": {"policy": "reject"}, "factor": {"policy": "factor", "factor": 2, "partition": "cpu"},
            "target": {"policy": "target", "partition": "cpu_long"}}
"""configs/metacentrum-geometry.yaml's ``workload.shaping`` (factor) and the two others 003 compares."""


def shaping_variants(out: Path) -> None:
    """configs/metacentrum-geometry.yaml under each of SHAPINGS, as OUT/NAME.yaml (the trace by its
    absolute path, since the copies are not beside the config)."""
    config = ROOT / "configs" / "metacentrum-geometry.yaml"
    tree = yaml.safe_load(config.read_text())
    tree["workload"]["swf"] = str((config.parent / tree["workload"]["swf"]).resolve())
    out.mkdir(parents=True)
    for name, shaping in SHAPINGS.items():
        tree["workload"]["shaping"] = shaping
        (out / f"{name}.yaml").write_text(yaml.safe_dump(tree, sort_keys=False))


def shaped(variant: str, action: str) -> Callable[[Path], str]:
    """How many jobs a shaping variant's shaped.csv lists with ``action`` (shaped, rejected)."""
    return lambda out: grouped(int((pd.read_csv(out / variant / "shaped.csv")["action"] == action).sum()))


def psp_ratio(trace: str, ratio: str) -> Callable[[Path], str]:
    """One measured ratio of ratios.csv (djsb psp-report)."""
    def render(out: Path) -> str:
        ratios = pd.read_csv(out / "ratios.csv")
        row = ratios[(ratios["trace"].str.startswith(trace)) & (ratios["ratio"] == ratio)]
        return f"{float(row['measured'].iloc[0]):.2f}"
    return render


def reproduce_item(out: Path, item: str) -> pd.Series:
    """The one row of reproduce.csv (djsb reproduce) whose item contains ``item``."""
    table = pd.read_csv(out / "reproduce.csv", dtype={"paper": str})
    rows = table[table["item"].str.contains(item, regex=False)]
    if len(rows) != 1:
        raise ValueError(f"{out}/reproduce.csv: {len(rows)} items contain {item!r}")
    return rows.iloc[0]


def measured(item: str, form: Callable[[float], str]) -> Callable[[Path], str]:
    """An item's measured value, formatted."""
    return lambda out: form(float(reproduce_item(out, item)["measured"]))


def interval_of(item: str) -> Callable[[Path], str]:
    """An item's 95 % interval, low-high."""
    def render(out: Path) -> str:
        row = reproduce_item(out, item)
        return f"{float(row['low']):.2f}-{float(row['high']):.2f}"
    return render


def tally(out: Path) -> str:
    """How many of a reproduction's claims got each verdict."""
    verdicts = pd.read_csv(out / "reproduce.csv", keep_default_na=False)["verdict"].value_counts()
    return ", ".join(f"{int(verdicts.get(name, 0))} {name}" for name in
                     ("reproduced", "not reproduced", "inconclusive", "explained"))


def ecdf_crossing(wait: float) -> str:
    """Paper 003's crossing of the wait ECDFs (NaN: the after-change ECDF is never below)."""
    if math.isnan(wait):
        return "is nowhere below the before-change one, so they do not cross"
    return f"crosses the before-change one at {grouped(wait)} s"


def lanl_records(_: Path) -> str:
    counts = lanl_overrun()
    return f"{grouped(counts['overran'])} of {grouped(counts['records'])}"


def _module(*args: str) -> tuple[str, ...]:
    return (sys.executable, "-m", "djsb", *args)


KTH, ATLAS = "KTH-SP2-1996-2.1-cln.swf.gz", "LLNL-Atlas-2006-2.1-cln.swf.gz"
METACENTRUM = "MetaCentrum-wagap-2013.swf.gz"
SOURCES = {s.name: s for s in (
    Source("lanl-overrun", True, "python3 bench/readme_numbers.py lanl-overrun (read_swf of the trace)",
           needs=("LANL-CM5-1994-4.1-cln.swf.gz",), compute=lanl_overrun),
    Source("calibrate-loaded", True, "python3 bench/readme_numbers.py calibrate-loaded (the model's "
           "replays of tests/fixtures/calibrate/loaded)", compute=loaded_figures),
    Source("calibrate-preempt", True, "python3 bench/readme_numbers.py calibrate-preempt (the model's "
           "replay of tests/fixtures/calibrate/preempt_requeue)", compute=saved_run_figures(PREEMPT_RUN)),
    Source("calibrate-links", True, "python3 bench/readme_numbers.py calibrate-links (the model's "
           "replay of tests/fixtures/calibrate/links)", compute=saved_run_figures(LINKS_RUN)),
    Source("calibrate-preempt-rerun", True, "python3 bench/readme_numbers.py calibrate-preempt-rerun (the "
           "model's replay of tests/fixtures/calibrate/preempt_rerun)", compute=saved_run_figures(RERUN_RUN)),
    Source("calibrate-gang", True, "python3 bench/readme_numbers.py calibrate-gang (the model's "
           "replay of tests/fixtures/calibrate/gang)", compute=saved_run_figures(GANG_RUN)),
    Source("calibrate-gang-one-cpu", True, "python3 bench/readme_numbers.py calibrate-gang-one-cpu (the "
           "model's replay of tests/fixtures/calibrate/gang_one_cpu)",
           compute=saved_run_figures(GANG_ONE_CPU_RUN)),
    Source("demo", False, "djsb run configs/local-quick.yaml",
           (_module("run", "configs/local-quick.yaml", "-o", "{out}"),)),
    Source("metacentrum-own", False, "djsb replay-stats configs/metacentrum-own.yaml",
           (_module("replay-stats", "configs/metacentrum-own.yaml", "-o", "{out}"),), needs=(METACENTRUM,)),
    Source("metacentrum-shaping", False,
           "djsb replay-stats configs/metacentrum-geometry.yaml",
           tuple(_module("replay-stats", f"{{out}}/{name}.yaml", "-o", f"{{out}}/{name}")
                 for name in SHAPINGS),
           prepare=shaping_variants, needs=(METACENTRUM,)),
    Source("psp", False, "djsb sweep configs/psp-scenarios.yaml -o runs/psp && djsb psp-report runs/psp",
           (_module("sweep", "configs/psp-scenarios.yaml", "-o", "{out}"), _module("psp-report", "{out}")),
           needs=(KTH, ATLAS)),
    Source("paper-simulated", False, "djsb run configs/paper-simulated.yaml",
           (_module("run", "configs/paper-simulated.yaml", "-o", "{out}"),)),
    Source("kth-easy", False, "djsb simulate configs/simulate-kth-easy.yaml",
           (_module("simulate", "configs/simulate-kth-easy.yaml", "-o", "{out}"),), needs=(KTH,)),
    Source("pool-n1", False, "djsb pool configs/pool-n1-sweep.yaml",
           (_module("pool", "configs/pool-n1-sweep.yaml", "-o", "{out}"),)),
    *(Source(f"reproduce-{paper}", False, "djsb reproduce PAPER",
             (_module("reproduce", paper, "-o", "{out}"),), needs=needs)
      for paper, needs in (("000", (KTH, ATLAS)), ("001", ()), ("002", ()), ("003", (METACENTRUM,)),
                           ("004", (KTH, ATLAS)))),
)}
BLOCKS = {b.name: b for b in (
    Block("lanl-overrun", "lanl-overrun", lanl_records),
    Block("demo-time", "demo", demo_time),
    Block("calibrate-loaded-sdiag", "calibrate-loaded", loaded_block("sdiag")),
    Block("calibrate-loaded-log", "calibrate-loaded", loaded_block("log")),
    Block("calibrate-preempt-requeue", "calibrate-preempt", saved_run_block(PREEMPT_RUN)),
    Block("calibrate-links", "calibrate-links", saved_run_block(LINKS_RUN, with_max=True)),
    Block("calibrate-preempt-rerun", "calibrate-preempt-rerun", saved_run_block(RERUN_RUN, with_max=True)),
    Block("calibrate-gang", "calibrate-gang", saved_run_block(GANG_RUN)),
    Block("calibrate-gang-one-cpu", "calibrate-gang-one-cpu", saved_run_block(GANG_ONE_CPU_RUN)),
    Block("mc-own-jobs", "metacentrum-own", lambda out: grouped(replay_summary(out)["recorded_jobs"])),
    Block("mc-own-inputs", "metacentrum-own", same_inputs),
    Block("mc-own-wait-simulated", "metacentrum-own", mean_wait("simulated")),
    Block("mc-own-wait-recorded", "metacentrum-own", mean_wait("recorded")),
    Block("mc-own-ks", "metacentrum-own", ks()),
    Block("mc-own-mape", "metacentrum-own",
          lambda out: f"{replay_summary(out)['moving_average_mape']:.0%}"),
    Block("mc-own-start-error", "metacentrum-own",
          lambda out: grouped(replay_summary(out)["mean_abs_start_error"])),
    Block("mc-misfits", "metacentrum-shaping", shaped("reject", "rejected")),
    Block("mc-reject-ks", "metacentrum-shaping", ks("reject")),
    Block("mc-factor-shaped", "metacentrum-shaping", shaped("factor", "shaped")),
    Block("mc-factor-rejected", "metacentrum-shaping", shaped("factor", "rejected")),
    Block("mc-factor-ks", "metacentrum-shaping", ks("factor")),
    Block("mc-target-shaped", "metacentrum-shaping", shaped("target", "shaped")),
    Block("mc-target-rejected", "metacentrum-shaping", shaped("target", "rejected")),
    Block("mc-target-ks", "metacentrum-shaping", ks("target")),
    Block("psp-kth-4-6", "psp", psp_ratio("KTH", "wait 4/6")),
    Block("psp-atlas-4-6", "psp", psp_ratio("LLNL-Atlas", "wait 4/6")),
    Block("psp-kth-makespan", "psp", psp_ratio("KTH", "makespan 6/4")),
    Block("psp-atlas-makespan", "psp", psp_ratio("LLNL-Atlas", "makespan 6/4")),
    Block("psp-kth-4-5", "psp", psp_ratio("KTH", "wait 4/5")),
    Block("psp-atlas-4-5", "psp", psp_ratio("LLNL-Atlas", "wait 4/5")),
    Block("paper-simulated-time", "paper-simulated", run_time),
    Block("kth-easy-time", "kth-easy", run_time),
    Block("pool-n1-time", "pool-n1", run_time),
    *(Block(f"r{paper}-tally", f"reproduce-{paper}", tally) for paper in ("000", "001", "002", "003", "004")),
    *(Block(f"r000-kth-{ratio.replace('/', '-')}", "reproduce-000",
            measured(f"wait {ratio}, KTH-SP2-1996-2.1, arrivals x2", "{:.2f}".format))
      for ratio in ("5/6", "1/6", "4/6")),
    Block("r002-n2-energy", "reproduce-002", measured("energy of N2(3) C3", "{:.2f}".format)),
    Block("r002-n2-range", "reproduce-002", interval_of("energy of N2(3) C3")),
    Block("r002-n2-killed", "reproduce-002", measured("N2(3) C3: good tasks killed", "{:.1%}".format)),
    Block("r002-d-energy", "reproduce-002", measured("energy of D(2, 8, 90 h) C3", "{:.2f}".format)),
    Block("r002-d-range", "reproduce-002", interval_of("energy of D(2, 8, 90 h) C3")),
    Block("r003-reject", "reproduce-003", measured("mean wait, misfits rejected / before", "{:.2f}".format)),
    Block("r003-cpu-long", "reproduce-003",
          measured("mean wait, misfits shaped into cpu_long / before", "{:.2f}".format)),
    Block("r003-p95", "reproduce-003", measured("95th percentile wait after / before", "{:.2f}".format)),
    Block("r003-crossing", "reproduce-003", measured("ECDFs cross", ecdf_crossing)),
    Block("r004-a", "reproduce-004", measured("eq. 4.1 a", "{:.2f}".format)),
    Block("r004-b", "reproduce-004", measured("eq. 4.1 b", "{:.0f} s".format)),
    Block("r004-kth-fairshare", "reproduce-004",
          measured("worst / best fair share, KTH-SP2's most queued week", "{:.1f}x".format)),
    Block("r004-kth-longer", "reproduce-004", measured("share of instants", "{:.0%}".format)),
    Block("r004-gain", "reproduce-004",
          measured("vertical wrapping's gain in T_q at fair share 0.01", lambda v: f"{grouped(v)} s")),
    *(Block(f"reproduce-{paper}-time", f"reproduce-{paper}", run_time)
      for paper in ("000", "001", "002", "003", "004")),
)}


def readme_blocks(text: str) -> dict[str, str]:
    """The blocks of a README text by name (a name twice is refused: one place per number)."""
    found: dict[str, str] = {}
    for match in BLOCK.finditer(text):
        if match["name"] in found:
            raise ValueError(f"README.md: block {match['name']} appears twice")
        found[match["name"]] = match["text"]
    return found


def rewrite(text: str, rendered: dict[str, str]) -> str:
    """``text`` with the blocks named in ``rendered`` replaced by their new text."""
    def replace(match: re.Match[str]) -> str:
        new = rendered.get(match["name"], match["text"])
        return f"<!-- numbers: {match['name']} -->{new}<!-- /numbers -->"
    return BLOCK.sub(replace, text)


def missing_traces(source: Source) -> list[str]:
    return [name for name in source.needs if not (TRACES / name).is_file()]


def run_source(source: Source, runs: Path, reuse: bool) -> Path:
    """Run ``source``'s commands into its output directory (kept as it is with ``reuse`` when a
    finished run is there); the directory."""
    out = runs / source.name
    if source.compute is not None or (reuse and (out / DONE).is_file()):
        return out
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if source.prepare is not None:
        source.prepare(out)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    load, start, cpu = os.getloadavg()[0], time.monotonic(), children_cpu()
    for argv in source.argvs:
        command = [part.replace("{out}", str(out)) for part in argv]
        print("+", " ".join(command[2:]), file=sys.stderr)
        subprocess.run(command, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    done = {"seconds": time.monotonic() - start, "cpu_seconds": children_cpu() - cpu,
            "load_before": load, "load_after": os.getloadavg()[0], "niceness": os.nice(0),
            "cpus": float(len(os.sched_getaffinity(0))), "command": source.command}
    (out / DONE).write_text(json.dumps(done, indent=2) + "\n")
    return out


def render(names: Iterable[str], runs: Path, reuse: bool) -> dict[str, str]:
    """The new text of the named blocks, each source run once."""
    outputs: dict[str, Path] = {}
    rendered = {}
    for name in names:
        block = BLOCKS[name]
        if block.source not in outputs:
            outputs[block.source] = run_source(SOURCES[block.source], runs, reuse)
        rendered[name] = block.render(outputs[block.source])
    return rendered


def selected(names: list[str], quick_only: bool) -> list[str]:
    """Blocks named, or every block of the sources named; all (the quick ones with ``quick_only``)."""
    if not names:
        return [n for n, b in BLOCKS.items() if SOURCES[b.source].quick or not quick_only]
    unknown = [n for n in names if n not in BLOCKS and n not in SOURCES]
    if unknown:
        raise SystemExit(f"readme_numbers: unknown block or source {', '.join(unknown)} "
                         f"(--list shows them)")
    return [n for n, b in BLOCKS.items() if n in names or b.source in names]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("names", nargs="*", help="blocks or sources (default: all)")
    parser.add_argument("--check", action="store_true",
                        help="compare, do not rewrite (the quick blocks by default)")
    parser.add_argument("--reuse", action="store_true", help="render from a source's finished output")
    parser.add_argument("--list", action="store_true", help="list the blocks and their commands")
    parser.add_argument("--runs", type=Path, default=RUNS, help="where the sources' outputs go")
    args = parser.parse_args(argv)
    if args.list:
        for name, block in BLOCKS.items():
            source = SOURCES[block.source]
            print(f"{name:20} {'quick' if source.quick else 'slow ':5} {source.command}")
        return 0
    names = selected(args.names, quick_only=args.check)
    absent = sorted({t for n in names for t in missing_traces(SOURCES[BLOCKS[n].source])})
    if absent:
        print(f"readme_numbers: traces not found in {TRACES}: {', '.join(absent)}", file=sys.stderr)
        return 2
    text = README.read_text()
    current = readme_blocks(text)
    unplaced = [n for n in names if n not in current]
    if unplaced:
        print(f"readme_numbers: README.md has no block {', '.join(unplaced)}", file=sys.stderr)
        return 2
    rendered = render(names, args.runs, args.reuse)
    changed = {n: v for n, v in rendered.items() if current.get(n) != v}
    for name, value in changed.items():
        print(f"{name}: README {current.get(name)!r} -> measured {value!r}")
    if args.check:
        return 1 if changed else 0
    README.write_text(rewrite(text, rendered))
    return 0


if __name__ == "__main__":
    sys.exit(main())
