"""``djsb reproduce PAPER``: a paper's headline experiments beside the paper's values, each with a
verdict computed from the data by a rule declared before measuring (reproduce.csv, report.html)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from djsb.commands.frame import EXIT_OK, Command, add_output, finish, into_output
from djsb.errors import InputError
from djsb.outcome import Headline, Outcome


def command_reproduce(args: argparse.Namespace) -> int:
    from djsb.registry import UnknownName
    from djsb.reproduce import PAPERS, reproduce
    from djsb.reproduce.checks import VERDICTS

    try:
        PAPERS.canonical(args.paper)
    except UnknownName as exc:
        raise InputError(f"paper {args.paper} has no reproduction yet ({exc})", key="PAPER") from exc
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out, rows = into_output(args, "reproduce", Path("runs") / f"reproduce-{args.paper}-{stamp}",
                            lambda scratch: pd.read_csv(reproduce(args.paper, scratch, full=args.full),
                                                        keep_default_na=False))
    verdicts = rows["verdict"].value_counts()
    size = " at the paper's size" if args.full else ""
    finish(args, Outcome("reproduce", f"paper {args.paper}'s headline experiments{size}", out,
                         [Headline("claims", len(rows), "claims"),
                          *(Headline(verdict.replace(" ", "_"), int(verdicts.get(verdict, 0)), "claims")
                            for verdict in VERDICTS)],
                         details=rows.to_dict(orient="records")))
    return EXIT_OK


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paper", choices=("000", "001", "002", "003", "004"))
    parser.add_argument("--full", action="store_true",
                        help="at the paper's size (long) instead of a laptop's")
    add_output(parser, default="runs/reproduce-PAPER-DATE")


COMMAND = Command("reproduce", "a paper's headline experiments beside the paper's values (reproduce.csv, "
                  "report.html)", arguments, command_reproduce)
