"""``djsb compare RUN_A RUN_B...``: runs side by side (Welch's t-test against the first), or replays
of one history beside the first."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from djsb.commands.frame import EXIT_OK, Command, add_output, finish, into_output
from djsb.errors import InputError
from djsb.outcome import Headline, Outcome


def command_compare(args: argparse.Namespace) -> int:
    from djsb.history.compare import is_history_output
    from djsb.report.compare import text_table, write_comparison

    histories = [is_history_output(Path(run_dir)) for run_dir in args.run_dirs]
    if any(histories):
        return compare_histories(args, histories)
    out_dir, side = into_output(args, "compare", default_compare_dir(),
                                lambda scratch: write_comparison([Path(run_dir) for run_dir in args.run_dirs],
                                                                 scratch))
    tidy = pd.read_csv(out_dir / "compare.csv")
    tested = tidy[tidy["p_value"].notna()]
    finish(args, Outcome("compare", f"{len(args.run_dirs)} runs against {side.columns[3]} (Welch's t-test, "
                         "* significant at 0.05)", out_dir,
                         [Headline("cells", len(tidy.drop_duplicates(["scenario", "n_a"])), "cells"),
                          Headline("differences_tested", len(tested), "tests"),
                          Headline("significant", int(tested["significant"].astype(bool).sum()), "tests")],
                         details=tidy.to_dict(orient="records")),
           text_table(side))
    return EXIT_OK

def default_compare_dir() -> Path:
    """runs/compare-DATE-TIME under the current directory."""
    return Path("runs") / f"compare-{time.strftime('%Y%m%d-%H%M%S')}"


def compare_histories(args: argparse.Namespace, histories: list[bool]) -> int:
    """``djsb compare`` on ``djsb history`` outputs (all of them: a history is not compared with a run)."""
    from djsb.history.compare import display, write_history_comparison
    from djsb.report.compare import text_table

    if not all(histories):
        history, other = (args.run_dirs[histories.index(flag)] for flag in (True, False))
        raise InputError(f"{history} is a djsb history output and {other} is not: compare runs with runs, "
                         "histories with histories", key="RUN_DIR")
    if len(args.run_dirs) < 2:
        raise InputError("djsb compare needs two history outputs or more", key="RUN_DIR")
    out_dir, table = into_output(args, "compare", default_compare_dir(),
                                 lambda scratch: write_history_comparison(
                                     [Path(run_dir) for run_dir in args.run_dirs], scratch))
    overall = table[table["group_by"] == "all"]
    judged = table[table["beyond_error"].notna()]
    shown = display(overall.drop(columns=["group_by", "group"]))
    finish(args, Outcome("compare", f"{len(args.run_dirs) - 1} replay(s) of one history against "
                         f"{args.run_dirs[0]}, the baseline's error against the record as uncertainty",
                         out_dir,
                         [Headline("groups", len(table.drop_duplicates(["group_by", "group"])), "groups"),
                          Headline("changes_judged", len(judged), "figures"),
                          Headline("beyond_baseline_error", int(judged["beyond_error"].astype(bool).sum()),
                                   "figures")],
                         details=table.to_dict(orient="records")),
           text_table(shown))
    return EXIT_OK


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                        help="run directories, or djsb history output directories; the first is the base")
    add_output(parser, default="runs/compare-DATE-TIME")


COMMAND = Command(
    "compare", "the cells of two or more runs side by side, with Welch's t-test of each against the first; "
    "or replays of one history (djsb history outputs) beside the first, with its error against the record as "
    "uncertainty", arguments, command_compare)
