"""``djsb psp-report SWEEP_DIR``: Tables 5-6 of paper 000 from its six-scenario sweep."""

from __future__ import annotations

import argparse
from pathlib import Path

from djsb.commands.frame import EXIT_OK, Command, finish
from djsb.outcome import Outcome


def command_psp_report(args: argparse.Namespace) -> int:
    from djsb.report.psp_scenarios import write_psp_report

    written = write_psp_report(Path(args.sweep_dir))
    finish(args, Outcome("psp-report", f"Tables 5-6 of paper 000 from {args.sweep_dir}", written))
    return EXIT_OK

def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep_dir")


COMMAND = Command("psp-report", "Tables 5-6 of paper 000 from its six-scenario sweep", arguments,
                  command_psp_report)
