#!/usr/bin/env python3
"""The ground-truth tables of docs/history.md: each committed mini-cluster record
(tests/fixtures/history/) replayed offline from its files alone, as tests/test_history_ground_truth.py
replays it, beside Slurm's own difference between the two records of each history.

For each pair of records (``site``: 2,000 jobs; ``site-x4``: the first 600 of the same draw with
every duration four times longer; ``features``: the history with a reservation, a drained node,
throttled arrays and dependencies; ``gpu``: GPU and CPU jobs on nodes with two GPUs each, a GPU
partition billing GPUs, a QoS capping a user's GPUs) it prints one row for Slurm against itself
(the records paired job by job) and one per record for the model against it. Columns: the
mean waits (replayed or second record / recorded), the moving-average MAPE (2-minute window, every
30 s), the mean absolute wait error, the KS distance of the waits, the share of jobs started by
the same pass and of those held for the same reason (``reason_agreement``), and whether the row is
within Slurm's spread (the test's rule: at most Slurm's own value on the MAPE and the wait error).
Record 2 of each site pair was made right after record 1 on the same cluster,
which kept record 1's fair-share usage: it is replayed with record 1's dump before it (``djsb
history --earlier``); each features record began a fresh cluster. Then the same given each record's
slurmctld log (``djsb history --slurmctld-log``): the times to the millisecond, Slurm's own spread
measured on them too.

Usage: python3 bench/history_ground_truth.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from djsb.history.inputs import SiteFiles  # noqa: E402
from djsb.history.replay import replay_history  # noqa: E402
from djsb.report.replay_error import records_paired, summary  # noqa: E402

HISTORY = ROOT / "tests" / "fixtures" / "history"
PAIRS = {"site": ("site-1", "site-2"), "site-x4": ("site-x4-1", "site-x4-2"),
         "features": ("features", "features-2"), "gpu": ("gpu-1", "gpu-2"),
         "gpu-x4": ("gpu-x4-1", "gpu-x4-2")}
EARLIER = {"site-2": "site-1", "site-x4-2": "site-x4-1", "gpu-2": "gpu-1", "gpu-x4-2": "gpu-x4-1"}
"""The records made right after another on the same cluster (its fair-share usage kept); the
features records each began a fresh cluster."""
WINDOW, STEP = 120.0, 30.0


def replay(name: str, *, with_log: bool = False, earlier: str | None = None) -> pd.DataFrame:
    """The per-job errors of the replay of the committed record ``name`` (``with_log``: given its
    slurmctld log too, so measured against the log's starts; ``earlier``: the record made before it
    on the same cluster, whose jobs charge fair share before it starts)."""
    where = HISTORY / name
    optional = {key: where / f"{key}.txt" for key in ("events", "reservations")}
    files = SiteFiles(where / "dump.txt.gz", where / "slurm.conf", where / "assoc.txt", where / "qos.txt",
                      **{key: path for key, path in optional.items() if path.is_file()},
                      earlier=(HISTORY / earlier / "dump.txt.gz",) if earlier else (),
                      slurmctld_log=where / "slurmctld.log.gz" if with_log else None)
    return replay_history(files, window=WINDOW, step=STEP).errors


def row(compared: str, figures: dict[str, float], spread: dict[str, float] | None) -> dict[str, object]:
    measures = ("moving_average_mape", "mean_abs_start_error")
    within = "" if spread is None else ("yes" if all(figures[m] <= spread[m] for m in measures) else "no")
    return {"compared": compared,
            "mean_waits_s": f"{figures['simulated_mean_wait']:.1f} / {figures['recorded_mean_wait']:.1f}",
            "mape_pct": 100 * figures["moving_average_mape"],
            "mean_abs_error_s": figures["mean_abs_start_error"],
            "ks": figures["ks_wait"], "same_pass": figures["pass_agreement"],
            "same_reason": figures["reason_agreement"], "within_spread": within}


def main() -> int:
    if not HISTORY.is_dir():
        print(f"skipped: {HISTORY} not found", file=sys.stderr)
        return 0
    rows = []
    for with_log in (False, True):
        given = " (with slurmctld's log)" if with_log else ""
        for first, second in PAIRS.values():
            errors = {first: replay(first, with_log=with_log),
                      second: replay(second, with_log=with_log, earlier=EARLIER.get(second))}
            spread = summary(records_paired(errors[first], errors[second]), WINDOW, STEP)
            rows.append(row(f"Slurm, {second} against {first}{given}", spread, None))
            rows += [row(f"model against {name}{given}", summary(errors[name], WINDOW, STEP), spread)
                     for name in errors]
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda value: f"{value:.3g}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
