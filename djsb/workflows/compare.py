"""The outcomes of one workflow under each requested strategy, ranked (``djsb wrappers CONFIG [--json]``).

CONFIG is a ``djsb simulate`` config with a ``workflow`` section (djsb/workflows/plan.py): the machine
and its state are its cluster, policy and workload (``generator: empty`` for an empty machine, a
synthetic workload, or a trace). Each strategy runs the same workload in its own model run
(djsb.simulate.compare_strategies). Strategies are ranked by the workflow's makespan (queue plus run
time: what the thesis' conclusion weighs, 004 ch. 6), then queue time, then submissions; a strategy
whose wrappers did not all complete ranks last.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from djsb.workflows.run import WorkflowOutcome

COLUMNS = ("strategy", "submissions", "cpus_max", "runtime_s", "queue_time_s", "makespan_s", "fairshare")


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
