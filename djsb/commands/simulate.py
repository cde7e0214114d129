"""``djsb simulate CONFIG``: a workload replayed on the built-in scheduler model."""

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


def command_simulate(args: argparse.Namespace) -> int:
    from djsb.simulate.command import run_simulate

    config_path = Path(args.config)
    out, _ = into_output(args, "simulate", default_out_dir(config_path),
                         lambda scratch: run_simulate(config_path, scratch))
    finish(args, replay_outcome("simulate", f"{config_path} replayed on the scheduler model", out))
    return EXIT_OK


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config")
    add_output(parser)


COMMAND = Command("simulate", "replay a workload on the built-in scheduler model",
                  arguments, command_simulate)
