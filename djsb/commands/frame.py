"""What every ``djsb`` subcommand shares: how it declares itself, its output directory, its end and
its errors.

A command module of this package holds one :class:`Command`: its name and help, the function that
declares its arguments and the body that runs it. djsb/cli.py builds the parser from them and
dispatches. The body ends with :func:`finish` (the summary block, or ``--json``); a command that
writes a directory does it through :func:`into_output` (djsb.outdir: the marker, the lock,
``--force``); an error or a signal is turned into one line and an exit status by :func:`failure`
and djsb/cli.py's ``main``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from djsb.errors import DjsbError, InputError, RunError, os_error_line
from djsb.outcome import Outcome, as_json, headlines, summary_block
from djsb.outdir import is_empty, output_directory, require_output
from djsb.progress import VERBOSE

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
T = TypeVar("T")


@dataclass(frozen=True)
class Command:
    """A subcommand: ``djsb NAME``, its one-line ``help`` (and longer ``description``), the
    function that adds its arguments to its parser, and its body (an exit status)."""

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str | None = None


def finish(args: argparse.Namespace, outcome: Outcome, text: str | None = None) -> None:
    """Print a command's end on stdout: ``text`` (its table, if any) then the summary block, or,
    with ``--json``, the same as one JSON object and nothing else."""
    if args.json:
        print(as_json(outcome))
        return
    if text:
        print(text)
    print(summary_block(outcome))


def default_out_dir(config_path: Path) -> Path:
    """runs/NAME-DATE-TIME under the current directory."""
    return Path("runs") / f"{config_path.stem}-{time.strftime('%Y%m%d-%H%M%S')}"


def into_output(args: argparse.Namespace, kind: str, default: Path, write: Callable[[Path], T],
                **options: Any) -> tuple[Path, T]:
    """Run ``write`` on the output directory of a command of ``kind``: ``-o`` or ``default``,
    checked, locked and replaced with ``--force`` as djsb.outdir says (``options`` are its other
    keywords). Returns the directory's path and what ``write`` returned."""
    out = Path(args.output) if args.output else default
    with output_directory(out, kind=kind, force=args.force, **options) as where:
        written = write(where)
    return out, written


def replay_outcome(command: str, ran: str, out: Path) -> Outcome:
    """A model replay's end: its metrics.json's headline numbers, in their units."""
    metrics = json.loads((out / "metrics.json").read_text())
    return Outcome(command, ran, out, headlines(metrics, metrics.get("units", {}), (
        "jobs", "rejected", "mean_wait", "p95_wait", "mean_bounded_slowdown", "utilisation", "capacity_lost",
        "makespan")))


def model_replay(name: str, help: str, work: Callable[[Path, Path], object], ran: str) -> Command:
    """A command that replays CONFIG on the model into its output directory (``work(config,
    directory)``, whole or not at all) and ends with the replay's headline numbers; ``ran`` says
    what it did to the config, for the end block."""

    def arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("config")
        add_output(parser)

    def body(args: argparse.Namespace) -> int:
        config_path = Path(args.config)
        out, _ = into_output(args, name, default_out_dir(config_path),
                             lambda scratch: work(config_path, scratch))
        finish(args, replay_outcome(name, f"{config_path} {ran}", out))
        return EXIT_OK

    return Command(name, help, arguments, body)


def resumable(resume: bool, kind: str) -> Callable[[Path], bool]:
    """Which output directories a command of ``kind`` may write into as they are: with ``--resume``
    an empty one or one a ``djsb {kind}`` wrote (any other is refused, naming what it holds: the
    command would continue what is not its own), else only an empty one."""
    if not resume:
        return is_empty

    def continues(path: Path) -> bool:
        if not is_empty(path):
            require_output(path, kind, key="--resume")
        return True
    return continues


def holds_points(path: Path) -> bool:
    """Whether a sweep directory holds a finished point (kept for --resume if the sweep fails)."""
    from djsb.sweep.sweep_dir import SweepDirectory

    return bool(SweepDirectory(path).finished())


def add_output(parser: argparse.ArgumentParser, what: str = "output directory", default: str = "") -> None:
    """``-o/--output`` and ``--force`` on a command that writes a directory."""
    parser.add_argument("-o", "--output", type=output_path,
                        help=what + (f" (default: {default})" if default else ""))
    add_force(parser, what)


def add_force(parser: argparse.ArgumentParser, what: str) -> None:
    """--force on a command that writes a directory (djsb.outdir): without it an existing non-empty
    one is refused."""
    parser.add_argument("--force", action="store_true",
                        help=f"replace an existing {what} that the same command wrote (kept as it was if "
                        "the command fails before it wrote anything); without it a non-empty one is refused")


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def output_path(text: str) -> str:
    """An argparse type: an output directory's path, not empty (``-o ""`` names no directory a
    command could write)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path names no directory")
    return text


def duration_seconds(text: str) -> float:
    """An argparse type: a number of seconds, or a Slurm time (``14-00:00:00``, ``2:00:00``...)."""
    from djsb.yamlnodes import parse_duration

    try:
        seconds = parse_duration(text, "s")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"expected a time > 0, got {text!r}")
    return seconds


def report_failure(exc: DjsbError | OSError, verbosity: int) -> int:
    """Print an error's one line on stderr (after its traceback with ``-v``); return its exit status."""
    if verbosity == VERBOSE:
        traceback.print_exception(exc)
    status, line = failure(exc)
    print(f"djsb: {line}", file=sys.stderr)
    return status


def failure(exc: DjsbError | OSError) -> tuple[int, str]:
    """An error's exit status and its one line: bad input (2) names file, line and key; a failed
    run or a refused write or connection (a full disk, a dead host) is 1."""
    if isinstance(exc, InputError):
        return EXIT_BAD_INPUT, f"error: {exc.one_line()}"
    if isinstance(exc, RunError):
        return EXIT_FAILED, f"run failed: {exc}"
    if isinstance(exc, OSError):
        return EXIT_FAILED, f"run failed: {os_error_line(exc)}"
    return EXIT_FAILED, f"error: {exc}"
