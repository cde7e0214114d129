"""``djsb simulate CONFIG``: a workload replayed on the built-in scheduler model."""

from __future__ import annotations

from pathlib import Path

from djsb.commands.frame import model_replay


def simulate(config_path: Path, out: Path) -> None:
    from djsb.simulate.command import run_simulate

    run_simulate(config_path, out)


COMMAND = model_replay("simulate", "replay a workload on the built-in scheduler model", simulate,
                       "replayed on the scheduler model")
