"""``djsb wrappers CONFIG``: wrapper strategies for a workflow ranked on the model (paper 004)."""

from __future__ import annotations

import argparse
from pathlib import Path

from djsb.commands.frame import EXIT_OK, Command, finish
from djsb.outcome import Headline, Outcome


def command_wrappers(args: argparse.Namespace) -> int:
    from djsb.simulate.wrappers import compare_strategies
    from djsb.workflows.compare import as_table

    outcomes = compare_strategies(Path(args.config))
    best = outcomes[0]
    finish(args, Outcome("wrappers", f"{args.config}: {len(outcomes)} wrapper strategies ranked, best "
                         f"{best.strategy}", None,
                         [Headline("best_makespan", best.makespan_s, "s"),
                          Headline("best_queue_time", best.queue_time_s, "s"),
                          Headline("best_submissions", best.submissions, "jobs")],
                         details=[o.as_dict() for o in outcomes]),
           as_table(outcomes))
    return EXIT_OK


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help="a simulate config with a workflow section")


COMMAND = Command("wrappers", "rank wrapper strategies for a workflow on the model",
                  arguments, command_wrappers)
