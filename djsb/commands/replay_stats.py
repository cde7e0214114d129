"""``djsb replay-stats CONFIG``: a trace replayed on the model and compared with the trace (paper
003 Tables 2-6, wait ECDFs, KS)."""

from __future__ import annotations

import argparse
from pathlib import Path

from djsb.commands.frame import (
    EXIT_OK,
    Command,
    add_output,
    default_out_dir,
    finish,
    into_output,
    replay_outcome,
)


def command_replay_stats(args: argparse.Namespace) -> int:
    from djsb.simulate.replay_stats import replay_and_compare

    config_path = Path(args.config)
    out, _ = into_output(args, "replay-stats", default_out_dir(config_path),
                         lambda scratch: replay_and_compare(config_path, scratch))
    finish(args, replay_outcome("replay-stats", f"{config_path} replayed and compared with its trace", out))
    return EXIT_OK


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config")
    add_output(parser)


COMMAND = Command("replay-stats", "simulate a trace replay and compare it with the trace (paper 003 "
                                  "Tables 2-6, "
                  "wait ECDFs, KS)", arguments, command_replay_stats)
