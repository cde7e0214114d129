"""``djsb replay-stats CONFIG``: a trace replayed on the model and compared with the trace (paper
003 Tables 2-6, wait ECDFs, KS)."""

from __future__ import annotations

from pathlib import Path

from djsb.commands.frame import model_replay


def replay_stats(config_path: Path, out: Path) -> None:
    from djsb.simulate.replay_stats import replay_and_compare

    replay_and_compare(config_path, out)


COMMAND = model_replay("replay-stats", "simulate a trace replay and compare it with the trace (paper 003 "
                       "Tables 2-6, wait ECDFs, KS)", replay_stats, "replayed and compared with its trace")
