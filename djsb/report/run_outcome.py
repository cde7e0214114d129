"""The end of a run as ``djsb run`` and ``djsb report`` print it: the summary block's headline
numbers and summary.csv as a text table."""

from __future__ import annotations

import pandas as pd

from djsb.harness.rundir import RunDirectory
from djsb.outcome import DIMENSIONLESS, Headline, Outcome


def run_outcome(command: str, run: RunDirectory, summary: pd.DataFrame) -> Outcome:
    """A run's end (``djsb run``, ``djsb report``): its cells, failed and in outages, and each
    scenario's slowdowns and dynamicity at its largest number of analytics (figs. 3-5 of 001)."""
    rows = run.cell_rows()
    failed = sum(1 for row in rows if row.get("status") == "failed")
    outage = sum(1 for row in rows if row.get("outage") == "True")
    numbers = [Headline("cells", len(rows) - failed, "cells"), Headline("failed_cells", failed, "cells"),
               Headline("outage_cells", outage, "cells")]
    for scenario, rows_of in summary.groupby("scenario", sort=False):
        last = rows_of.sort_values("n_a").iloc[-1]
        numbers += [Headline(f"{name}[{scenario}, n_a={int(last['n_a'])}]", float(last[name]), DIMENSIONLESS)
                    for name in ("slowdown_s", "slowdown_a", "dynamicity")]
    config = run.meta().get("config_file", run.path.name)
    return Outcome(command, f"{config}: {len(rows)} cell(s) of its stages", run.path, numbers,
                   details=summary.to_dict(orient="records"))


def summary_text(summary: pd.DataFrame) -> str:
    """summary.csv's numbers as a text table (its warnings column aside: they go to stderr)."""
    if summary.empty:
        return "no complete execution cell"
    return summary.drop(columns="warnings").to_string(index=False, float_format=lambda v: f"{v:.3f}",
                                                      na_rep="-")
