"""``djsb pool CONFIG``: a cycle-stealing pool under paper 002's policies (a sweep of them with
a sweep section, which ``--resume`` continues)."""

from __future__ import annotations

import argparse
from pathlib import Path

from djsb.commands import frame
from djsb.errors import InputError


def command_pool(args: argparse.Namespace) -> int:
    from djsb.sweep.pool_command import run_pool
    from djsb.validate import validate
    from djsb.yamlnodes import load_yaml

    config_path = Path(args.config)
    validate(config_path)  # every value of a sweep checked before its directory exists
    if args.resume and (not args.output or args.force or load_yaml(config_path).get("sweep") is None):
        raise InputError("--resume continues a pool sweep (a config with a sweep section) in -o DIR, "
                         "without --force", key="--resume")
    out = Path(args.output) if args.output else frame.default_out_dir(config_path)
    _, outcome = frame.into_output(args, "pool", out, lambda where: run_pool(config_path, where),
                                   resume=f"djsb pool {config_path} -o {out} --resume",
                                   reusable=frame.resumable(args.resume, "pool"), keep=frame.holds_points,
                                   in_place=True)
    frame.finish(args, outcome)
    return frame.EXIT_OK

def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config")
    frame.add_output(parser)
    parser.add_argument("--resume", action="store_true",
                        help="continue the pool sweep in -o DIR; its finished points are kept")


COMMAND = frame.Command("pool", "simulate a cycle-stealing pool under paper 002's policies", arguments,
                        command_pool)
