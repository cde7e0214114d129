"""``djsb wrappers CONFIG [--json]``: one workflow under each requested strategy, ranked.

CONFIG is a ``djsb simulate`` config with a ``workflow`` section (djsb/workflows/plan.py): the machine
and its state are its cluster, policy and workload (``generator: empty`` for an empty machine, a
synthetic workload, or a trace). Each strategy runs the same workload in its own model run. Strategies
are ranked by the workflow's makespan (queue plus run time: what the thesis' conclusion weighs, 004
ch. 6), then queue time, then submissions; a strategy whose wrappers did not all complete ranks last.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Sequence
from pathlib import Path

from djsb.errors import ConfigError
from djsb.simulate import load_experiment
from djsb.workflows.run import WorkflowOutcome, run_workflow

COLUMNS = ("strategy", "submissions", "cpus_max", "runtime_s", "queue_time_s", "makespan_s", "fairshare")


def compare_strategies(config_path: Path) -> list[WorkflowOutcome]:
    """Run the config's workflow under each of its strategies; best first."""
    experiment = load_experiment(config_path)
    plan = experiment.workflow
    if plan is None:
        raise ConfigError("missing section 'workflow' (the workflow to evaluate)", source=str(config_path),
                          line=1, key="workflow")
    outcomes = [run_workflow(experiment.jobs, experiment.cluster, experiment.scheduler,
                             copy.deepcopy(experiment.priority), experiment.seed, plan, strategy)[1]
                for strategy in plan.strategies]
    return ranked(outcomes)


def ranked(outcomes: Sequence[WorkflowOutcome]) -> list[WorkflowOutcome]:
    """Completed first, then by makespan, queue time and number of submissions."""
    return sorted(outcomes, key=lambda o: (not o.completed, o.makespan_s, o.queue_time_s, o.submissions))


def as_json(outcomes: Sequence[WorkflowOutcome]) -> str:
    """The ``--json`` output: a list with one object per strategy, best first."""
    return json.dumps([o.as_dict() for o in outcomes], indent=2)


def as_table(outcomes: Sequence[WorkflowOutcome]) -> str:
    """A ranked text table and the recommendation in one line."""
    rows = [("rank", *COLUMNS)]
    for rank, o in enumerate(outcomes, 1):
        fairshare = "-" if o.fairshare is None else f"{o.fairshare:.3f}"
        rows.append((str(rank), o.strategy + ("" if o.completed else " (incomplete)"), str(o.submissions),
                     str(o.cpus_max), _seconds(o.runtime_s), _seconds(o.queue_time_s), _seconds(o.makespan_s),
                     fairshare))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [_line(row, widths) for row in rows]
    best = outcomes[0]
    lines.append(f"recommended: {best.strategy} (makespan {_seconds(best.makespan_s)} s, "
                 f"queue {_seconds(best.queue_time_s)} s)")
    return "\n".join(lines)


def _line(row: Sequence[str], widths: Sequence[int]) -> str:
    """A table row: the strategy column left-aligned, numbers right-aligned."""
    pairs = enumerate(zip(row, widths, strict=True))
    cells = (cell.ljust(w) if i == 1 else cell.rjust(w) for i, (cell, w) in pairs)
    return "  ".join(cells)


def _seconds(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.0f}"
