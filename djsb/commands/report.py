"""``djsb report RUN_DIR``: a run's summary.csv, figures and report.html recomputed from its jobs.csv."""

from __future__ import annotations

import argparse
from pathlib import Path

from djsb.commands.frame import EXIT_OK, Command, finish
from djsb.harness.rundir import RunDirectory
from djsb.progress import QUIET, say
from djsb.report import summary_warnings, write_report
from djsb.report.run_outcome import run_outcome, summary_text


def command_report(args: argparse.Namespace) -> int:
    run = RunDirectory.open(Path(args.run_dir))
    summary = write_report(run.path, include_outages=args.include_outages)
    for warning in summary_warnings(summary):
        say(f"warning: {warning}", QUIET)
    finish(args, run_outcome("report", run, summary), summary_text(summary))
    return EXIT_OK

def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir")
    parser.add_argument("--include-outages", action="store_true",
                        help="keep cells that overlapped a scheduler outage in summary.csv")


COMMAND = Command("report", "recompute summary.csv and the figures from a run's jobs.csv", arguments,
                  command_report)
