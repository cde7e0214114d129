"""``djsb init DIRECTORY``: the example configs copied where a user can read and edit them."""

from __future__ import annotations

import argparse
from pathlib import Path

from djsb.commands.frame import EXIT_OK, Command, add_force, finish, output_path
from djsb.outcome import Headline, Outcome
from djsb.outdir import output_directory


def command_init(args: argparse.Namespace) -> int:
    from djsb.examples import copy_examples

    out = Path(args.directory)
    with output_directory(out, kind="init", key="DIRECTORY", force=args.force) as scratch:
        names = copy_examples(scratch)
    finish(args, Outcome("init", "the example configs copied", out,
                         [Headline("configs", len(names), "files")], details=names),
           f"try: djsb run {out / 'local-quick.yaml'}")
    return EXIT_OK

def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", type=output_path, help="where to copy them (a new or empty directory)")
    add_force(parser, "directory")


COMMAND = Command("init", "copy the example configs (the checkout's configs/) into DIRECTORY", arguments,
                  command_init)
