#!/usr/bin/env python3
"""Why the model's waits on the committed mini-cluster histories differ from Slurm's: the replays
with one cause removed at a time, beside the record's own timing read from slurmctld's log.

slurmctld's log of each record (tests/fixtures/history/*/slurmctld.log.gz) stamps every submission,
start and end to the millisecond (djsb/slurmsite/slurmctld_log.py). It shows what the sacct dump
cannot:

* the clock: Slurm's main scheduler started its jobs on its background loop's wake-ups, about once
  a second with a phase that drifts (the share of its starts a whole number of seconds apart), so a
  job that waited started a median of 0.8 s after the last end (the lag); its backfill on a 5-s
  clock of its own;
* the run times: each job held its CPUs from its start to its end in the log, sacct's Elapsed cut
  to the whole second (a sleep of N s holds them N s and about 0.1 s);
* the submissions, sacct's Submit cut to the whole second.

For each of the two site records it replays (``djsb history`` on the record's files):

* ``baseline``: the site's files as they are;
* ``clock``: SchedulerParameters plus ``defer``, the model's way of running the pass a job's end
  asks for at its next whole-second wake-up (djsb/model/pass_timing.py);
* ``clock + log run times``: that, and each job's run time its start-to-end in the log (Elapsed
  written to the millisecond in a copy of the dump);
* ``clock, phase of seed K``: the clock, its whole seconds shifted by a phase drawn from seed K
  (the model's ``pass_jitter``), which the dump's whole-second times do not give;
* ``Slurm's own timing``: ``djsb history --slurmctld-log``: the log's submissions and run times,
  and the model's passes at the instants of Slurm's (the model's ``pass_times``, as ``djsb
  calibrate`` replays a live Slurm's): its main scheduler's and its backfill's, each the instants
  at which that scheduler started jobs with the passes between them that started none put back on
  its clock (djsb/slurmsite/slurmctld_log.py, ``pass_grid``). It tells the model's policy from its
  timing: it is told when Slurm passed, never which jobs it started. Its decay thread runs at the
  phase read from the dump's priorities (djsb/history/recorded_priorities.py);
* ``Slurm's own timing, decay at P s``: the same with the decay thread's runs P s into each
  PriorityCalcPeriod instead, for each P of :data:`DECAY_PHASES`: a diagnostic of how much that
  phase moves the error, never a way to choose it.

and prints, for the record and each replay: the mean wait; the share of the CPUs busy over the
submissions' span; the share of main-pass starts on a whole-second clock; the waiting jobs' lags
since the last end (anywhere: median and third quartile; on their own nodes: median); the backfill
starts and the share of them on the main scheduler's clock; and each replay's moving-average MAPE
and mean absolute wait error against the record. Then it prints the jobs' priorities at start by
account, the record's (sacct's Priority) beside the baseline replay's. A replay is within Slurm's
spread by the rule of tests/test_history_ground_truth.py: at most Slurm's own difference between
the two records, computed here as that test computes it.

Usage: python3 bench/history_counterfactuals.py [-o OUT]
"""

from __future__ import annotations

import argparse
import bisect
import dataclasses
import gzip
import statistics
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from unittest import mock

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from djsb.history.inputs import SiteFiles  # noqa: E402
from djsb.history.replay import HistoryReplay, replay_history  # noqa: E402
from djsb.jobs.hostlist import node_names  # noqa: E402
from djsb.report.replay_error import records_paired, summary  # noqa: E402
from djsb.slurmsite.slurm_conf import read_slurm_conf  # noqa: E402
from djsb.slurmsite.slurm_config import SLURM_LIKE  # noqa: E402
from djsb.slurmsite.slurmctld_log import (  # noqa: E402
    LoggedStart,
    SchedulerLog,
    lags_since_any_end,
    on_clock_share,
    read_scheduler_log,
    reuse_lags,
)

HISTORY = ROOT / "tests" / "fixtures" / "history"
RECORDS = ("site-1", "site-2")
PHASE_SEEDS = (1, 2, 3)
DECAY_PHASES = (0.0, 10.0, 20.0, 30.0, 40.0, 50.0)
"""Phases (s into PriorityCalcPeriod) at which the diagnostic replays put the decay thread's runs."""
WINDOW, STEP = 120.0, 30.0


def elapsed(seconds: float) -> str:
    """A run time as sacct's ``MM:SS.mmm`` (the runs here are under an hour)."""
    return f"{int(seconds // 60):02d}:{seconds % 60:06.3f}"


def stamp(seconds: float) -> str:
    """An instant of the log's clock as a sacct timestamp to the millisecond."""
    instant = datetime.fromtimestamp(seconds, timezone.utc).replace(tzinfo=None)
    return instant.isoformat(timespec="milliseconds")


def with_log_times(dump: Path, log: SchedulerLog, out: Path) -> Path:
    """A copy of ``dump`` whose Elapsed is each job's start-to-end in ``log``."""
    lines = gzip.decompress(dump.read_bytes()).decode().splitlines()
    names = lines[0].split("|")
    raw, column = names.index("JobIDRaw"), names.index("Elapsed")
    rows = [lines[0]]
    for line in lines[1:]:
        fields = line.split("|")
        job = int(fields[raw])
        fields[column] = elapsed(log.ends[job] - log.starts[job].time)
        rows.append("|".join(fields))
    out.write_bytes(gzip.compress(("\n".join(rows) + "\n").encode(), mtime=0))
    return out


def utilisation(log: SchedulerLog, cpus: dict[int, int], span: tuple[float, float], total: int) -> float:
    """The share of ``total`` CPUs busy in ``log`` over ``span`` (the submissions' first and last)."""
    first, last = span
    busy = sum(cpus[job] * max(0.0, min(log.ends[job], last) - max(start.time, first))
               for job, start in log.starts.items() if job in log.ends)
    return busy / (total * (last - first))


def timing(log: SchedulerLog, submitted: dict[int, float]) -> dict[str, float]:
    """The share of main-pass starts on a whole-second clock, the median and third quartile of the
    waiting jobs' lags since the last end anywhere, the median lag since the last end on their own
    nodes (which depends on where they were put), and the backfill starts of ``log``."""
    main = [start.time for start in log.starts.values() if start.scheduler == "main"]
    since_any = lags_since_any_end(log, submitted)
    backfill = [start.time for start in log.starts.values() if start.scheduler == "backfill"]
    return {"main_starts_on_clock": on_clock_share(main), "lag_median_s": statistics.median(since_any),
            "lag_q3_s": statistics.quantiles(since_any, n=4)[2],
            "own_nodes_lag_median_s": statistics.median(reuse_lags(log, submitted)),
            "backfill_starts": len(backfill), "backfill_on_main_clock": on_main_clock(backfill, main)}


def on_main_clock(times: list[float], clock: list[float], tolerance: float = 0.05) -> float:
    """The share of ``times`` a whole number of seconds, within ``tolerance``, from the nearest
    instant of ``clock``."""
    ordered = sorted(clock)
    if not times or not ordered:
        return float("nan")

    def near(time: float) -> bool:
        index = bisect.bisect_left(ordered, time)
        offsets = ((time - instant) % 1.0 for instant in ordered[max(0, index - 3):index + 3])
        return any(offset <= tolerance or offset >= 1.0 - tolerance for offset in offsets)

    return sum(near(time) for time in times) / len(times)


def model_log(jobs: pd.DataFrame) -> SchedulerLog:
    """A replay's started jobs as a scheduler log, on the model's clock."""
    ran = jobs.dropna(subset=["start", "end"])
    ids = [int(job) for job in ran["job_id"]]
    starts = {job: LoggedStart(job, float(start), "backfill" if backfilled else "main",
                               node_names(str(nodes)))
              for job, start, backfilled, nodes in zip(ids, ran["start"], ran["backfilled"], ran["nodes"],
                                                       strict=True)}
    return SchedulerLog(starts, {job: float(end) for job, end in zip(ids, ran["end"], strict=True)})


def replays(record: str, scratch: Path) -> dict[str, HistoryReplay]:
    """The replays of ``record``: baseline, clock, clock + log run times, clock with the pass
    clock's phase drawn from each of :data:`PHASE_SEEDS`, and Slurm's own timing."""
    where = HISTORY / record
    # record 2 was made right after record 1 on the same cluster, which kept record 1's usage
    earlier = tuple(HISTORY / before / "dump.txt.gz" for before in RECORDS[:RECORDS.index(record)])
    files = SiteFiles(where / "dump.txt.gz", where / "slurm.conf", where / "assoc.txt", where / "qos.txt",
                      earlier=earlier)
    params = read_slurm_conf(where / "slurm.conf").config.get("SchedulerParameters", "")
    clock = {"SchedulerParameters": f"{params},defer" if params else "defer"}
    log = record_log(record)
    logged = with_log_times(files.sacct, log, scratch / f"{record}.txt.gz")
    runs = {"baseline": replay_history(files, window=WINDOW, step=STEP),
            "clock": replay_history(files, window=WINDOW, step=STEP, settings=clock),
            "clock + log run times": replay_history(dataclasses.replace(files, sacct=logged), window=WINDOW,
                                                    step=STEP, settings=clock)}
    with mock.patch.dict(SLURM_LIKE, pass_jitter=True):  # the model options every history replay takes
        for seed in PHASE_SEEDS:
            runs[f"clock, phase of seed {seed}"] = replay_history(files, window=WINDOW, step=STEP,
                                                                  settings=clock, seed=seed)
    own = dataclasses.replace(files, slurmctld_log=where / "slurmctld.log.gz")
    runs["Slurm's own timing"] = replay_history(own, window=WINDOW, step=STEP)
    for phase in DECAY_PHASES:  # one zero-width bracket: the decay thread's runs at that phase
        with mock.patch("djsb.history.replay.decay_runs", lambda jobs, recorded, at=phase: [(at, at)]):
            runs[f"Slurm's own timing, decay at {phase:g} s"] = replay_history(own, window=WINDOW, step=STEP)
    return runs


def record_log(record: str) -> SchedulerLog:
    return read_scheduler_log(HISTORY / record / "slurmctld.log.gz")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", type=Path, help="write the table as CSV here too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        runs = {record: replays(record, Path(scratch)) for record in RECORDS}
    spread = summary(records_paired(*(runs[record]["baseline"].errors for record in RECORDS)), WINDOW, STEP)
    print(f"history_counterfactuals: Slurm against itself: moving-average MAPE "
          f"{100 * spread['moving_average_mape']:.3g} %, mean absolute wait error "
          f"{spread['mean_abs_start_error']:.3g} s", file=sys.stderr)
    rows = []
    for record, by_name in runs.items():
        base = by_name["baseline"]
        submitted = {int(job): float(at) for job, at in zip(base.errors["job_id"], base.errors["submit"],
                                                             strict=True)}
        log = record_log(record)
        on_replay_clock = SchedulerLog({job: dataclasses.replace(start, time=start.time - base.origin)
                                        for job, start in log.starts.items()},
                                       {job: end - base.origin for job, end in log.ends.items()})
        jobs = base.result.jobs
        cpus = {int(job): int(count) for job, count in zip(jobs["job_id"], jobs["cpus"], strict=True)}
        span, total = (min(submitted.values()), max(submitted.values())), base.result.total_cores
        rows.append({"record": record, "replay": "Slurm (the record)",
                     "mean_wait_s": base.figures["recorded_mean_wait"],
                     "busy": utilisation(on_replay_clock, cpus, span, total),
                     **timing(on_replay_clock, submitted)})
        for name, replay in by_name.items():
            figures = replay.figures
            within = (figures["moving_average_mape"] <= spread["moving_average_mape"]
                      and figures["mean_abs_start_error"] <= spread["mean_abs_start_error"])
            replayed = model_log(replay.result.jobs)
            rows.append({"record": record, "replay": name, "mean_wait_s": figures["simulated_mean_wait"],
                         "busy": utilisation(replayed, cpus, span, total), **timing(replayed, submitted),
                         "mape_pct": 100 * figures["moving_average_mape"],
                         "mean_abs_error_s": figures["mean_abs_start_error"],
                         "within_spread": "yes" if within else "no"})
    table = pd.DataFrame(rows)
    print(table.to_string(index=False, na_rep="", float_format=lambda value: f"{value:.3g}"))
    if args.output:
        table.to_csv(args.output, index=False)
    print("\nPriority at start by account (mean; jobs below 1,000: a fair-share factor under 0.1):")
    print(priorities(runs).to_string(index=False, float_format=lambda value: f"{value:.0f}"))
    return 0


def priorities(runs: dict[str, dict[str, HistoryReplay]]) -> pd.DataFrame:
    """Each record's priorities at start (sacct's Priority) beside its baseline replay's, by account."""
    rows = []
    for record, by_name in runs.items():
        lines = gzip.decompress((HISTORY / record / "dump.txt.gz").read_bytes()).decode().splitlines()
        dump = pd.DataFrame([line.split("|") for line in lines[1:]], columns=lines[0].split("|"))
        model = by_name["baseline"].result.jobs
        for who, frame, account, priority in (("Slurm", dump, "Account", "Priority"),
                                              ("model", model, "account", "priority_at_start")):
            values = frame[priority].astype(float)
            for name, group in values.groupby(frame[account]):
                rows.append({"record": record, "who": who, "account": name, "mean": group.mean(),
                             "below_1000": int((group < 1000).sum())})
    return pd.DataFrame(rows).pivot_table(index=["record", "account"], columns="who",
                                          values=["mean", "below_1000"]).reset_index()


if __name__ == "__main__":
    sys.exit(main())
