"""The ``djsb`` command: its parser, built from the subcommands' own declarations (djsb.commands),
and the dispatch to them (``djsb --help`` lists them).

Exit status: 0 ok, 1 the run failed, 2 bad input (a one-line message naming file, line and key),
130/143 interrupted by SIGINT/SIGTERM (djsb.interrupts; a run's jobs cancelled, its records kept
for --resume).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from djsb.commands import (
    calibrate,
    compare,
    history,
    init,
    pool,
    psp_report,
    replay_stats,
    report,
    reproduce,
    run,
    simulate,
    sweep,
    validate,
    wrappers,
)
from djsb.commands.frame import EXIT_OK, Command, report_failure
from djsb.completion import SHELLS, subcommands
from djsb.completion import script as completion_script
from djsb.errors import DjsbError, Signalled
from djsb.interrupts import EXIT_STATUS, signals_raise
from djsb.progress import NORMAL, QUIET, VERBOSE, set_verbosity
from djsb.version import djsb_version

COMMANDS: tuple[Command, ...] = tuple(module.COMMAND for module in (
    run, validate, report, compare, psp_report, replay_stats, simulate, pool, wrappers, sweep, calibrate,
    history, reproduce, init))
"""The subcommands, in the order ``djsb --help`` lists them (``completion`` last, below)."""


def command_completion(args: argparse.Namespace) -> int:
    """``djsb completion SHELL``: the completion script of this very parser."""
    print(completion_script(build_parser(), args.shell), end="")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="djsb", description="Dynamic Job Scheduling Benchmark")
    parser.add_argument("--version", action="version", version=f"djsb {djsb_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        declared = sub.add_parser(command.name, help=command.help, description=command.description)
        command.arguments(declared)
        declared.set_defaults(func=command.run)
    completion = sub.add_parser("completion", help="print a shell completion script (source <(djsb "
                                "completion bash); zsh: the same, or save it as _djsb on $fpath)")
    completion.add_argument("shell", choices=SHELLS)
    completion.set_defaults(func=command_completion)
    add_verbosity(parser)
    add_json(parser)
    return parser


def add_json(parser: argparse.ArgumentParser) -> None:
    """--json on every subcommand that ends with a summary block (all but ``completion``, whose
    output is the script itself): the block as one JSON object on stdout (djsb.outcome)."""
    for name, sub in subcommands(parser).items():
        if name != "completion":
            sub.parser.add_argument("--json", action="store_true",
                                    help="print the end summary as one JSON object on stdout, nothing else")


def add_verbosity(parser: argparse.ArgumentParser) -> None:
    """-v/--verbose and -q/--quiet on every subcommand (djsb.progress: what each level shows)."""
    for sub in subcommands(parser).values():
        chosen = sub.parser.add_mutually_exclusive_group()
        chosen.add_argument("-v", "--verbose", dest="verbosity", action="store_const", const=VERBOSE,
                            default=NORMAL, help="every progress update as a line; a traceback with an error")
        chosen.add_argument("-q", "--quiet", dest="verbosity", action="store_const", const=QUIET,
                            help="no progress on stderr: only errors and what needs attention")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    set_verbosity(args.verbosity)
    with signals_raise():
        try:
            return int(args.func(args))
        except (DjsbError, OSError) as exc:
            return report_failure(exc, args.verbosity)
        except Signalled as stop:
            print(f"djsb: {stop.line()}", file=sys.stderr)
            return EXIT_STATUS[stop.signal_name]


if __name__ == "__main__":
    sys.exit(main())
