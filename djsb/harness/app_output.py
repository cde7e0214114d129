"""Read what djsb-stream printed: one JSON line per task (see djsb/apps/djsb_stream.c)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath

REPORTING_APP = "djsb-stream"
"""The bundled application (djsb/apps/djsb_stream.c, and its MPI build djsb-stream-mpi): every task of it
prints one JSON report with its iterations and validation when it ends."""


@dataclass(frozen=True)
class AppOutput:
    """The facts the harness keeps from a job's JSON lines, over all its tasks."""

    tasks_reported: int
    iterations: int | None
    threads_min: int | None
    triad_MBps: float | None
    validated: bool | None


def parse_app_output(text: str) -> AppOutput:
    """Aggregate the JSON lines in ``text``: the fewest iterations and threads, the summed triad rate.

    Lines that are not JSON objects (a user's own program, MPI chatter) are ignored; a job whose
    program printed nothing parseable yields an AppOutput of Nones.
    """
    reports = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                reports.append(value)
    if not reports:
        return AppOutput(0, None, None, None, None)
    iterations = [r["iterations"] for r in reports if isinstance(r.get("iterations"), int)]
    threads = [r["threads_min_seen"] for r in reports if isinstance(r.get("threads_min_seen"), int)]
    triads = [r["best_rate_MBps"]["triad"] for r in reports
              if isinstance(r.get("best_rate_MBps"), dict) and "triad" in r["best_rate_MBps"]]
    validated = [bool(r["validated"]) for r in reports if "validated" in r]
    return AppOutput(len(reports), min(iterations) if iterations else None, min(threads) if threads else None,
                     sum(triads) if triads else None, all(validated) if validated else None)


def reports_expected(argv: Sequence[str]) -> bool:
    """Whether a job running ``argv`` must leave a report: it runs the bundled application (directly
    or through a launcher such as mpirun). A user's own program may print nothing we can read."""
    return any(PurePath(word).name.startswith(REPORTING_APP) for word in argv)
