"""``djsb validate CONFIG...``: check config files of any kind, each on its own line."""

from __future__ import annotations

import argparse
from pathlib import Path

from djsb.commands.frame import EXIT_BAD_INPUT, EXIT_OK, Command, finish, report_failure
from djsb.errors import InputError
from djsb.outcome import Headline, Outcome


def command_validate(args: argparse.Namespace) -> int:
    """Check every file given, a bad one not stopping the others: a line on stdout for each valid
    file and one error line on stderr for each invalid one; if any was, exit 2 without the summary
    block (as every command that fails)."""
    from djsb.validate import Validated, validate

    read: dict[str, Validated] = {}
    invalid = 0
    for name in args.config:
        try:
            read[name] = validate(Path(name))
        except InputError as exc:
            if exc.source != str(Path(name)):  # a trace's error: say which config led to it
                named = InputError(exc.one_line(), source=name)
                named.__cause__, exc = exc, named
            report_failure(exc, args.verbosity)
            invalid += 1
    lines = "\n".join(checked.line(Path(name)) for name, checked in read.items())
    if invalid:
        if lines and not args.json:
            print(lines)
        return EXIT_BAD_INPUT
    kinds = [checked.kind for checked in read.values()]
    finish(args, Outcome("validate", f"{len(read)} config file(s) checked, every one valid", None,
                         [Headline(f"{kind}_configs", kinds.count(kind), "files")
                          for kind in dict.fromkeys(kinds)],
                         details=[{"file": name, "kind": checked.kind, "details": checked.details}
                                  for name, checked in read.items()]),
           lines)
    return EXIT_OK


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", nargs="+")


COMMAND = Command("validate", "check config files of any kind (run, simulate, wrappers, sweep, pool, "
                  "calibrate) and exit", arguments, command_validate)
