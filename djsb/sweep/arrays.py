"""The job arrays a Slurm sweep submitted, and what a later client does with those still alive.

A client killed outright (SIGKILL, a lost login node) cancels nothing: its array runs on. A second
client into the same sweep directory (``--resume``, or a plain rerun) that submitted the unfinished
points again would run them twice at once into the same ``points/<k>``. So every array is recorded
in ``slurm/arrays.csv`` (the harness's write-ahead ledger, djsb.harness.ledger: a ``submitting`` row
with the array's token and its points, as sbatch --array's value, in ``name``, fsync'd before sbatch
runs; a ``submitted`` row with the array's id after it), and the sbatch carries the token in its
--comment. Before it submits anything, a client asks Slurm in one squeue for the live (pending,
running, suspended) tasks of every array in the ledger, by token: an array whose id never came back
is found too.

Those tasks are adopted, not cancelled: the client waits for them, and submits a new array only for
the points neither finished nor live in an earlier array, once the adopted arrays have ended. This
is what a cluster's administrator expects: a running task cancelled would waste the node-hours it
already used; a pending one cancelled and submitted again would lose its place and accrued age
priority in the queue, for one more sbatch on slurmctld; and one array at a time keeps the sweep
within its ``max_parallel`` (two arrays' --array %N limits would add up). An adopted array is the
client's own from then on: SIGINT/SIGTERM cancel it with the new one.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from djsb.harness import ledger
from djsb.harness.ledger import Submission

ARRAYS_FILE = "arrays.csv"
"""The ledger of a sweep's arrays, in the sweep directory's ``slurm/``."""


class ArrayLedger:
    """``slurm/arrays.csv`` of one sweep directory (see the module docstring)."""

    def __init__(self, sweep_dir: Path) -> None:
        self.path = sweep_dir / "slurm" / ARRAYS_FILE
        self.attempt = ledger.next_attempt(ledger.read_entries(self.path))

    def arrays(self) -> list[Submission]:
        """Every array the ledger knows of, in submission order: its token, its points (``name``)
        and its id (None if the client died before sbatch answered)."""
        return list(ledger.submissions(ledger.read_entries(self.path)).values())

    def submitting(self, token: str, points: str) -> None:
        """Record, durably, that the array of ``token`` is about to be submitted for ``points``."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._append(ledger.SUBMITTING, token, name=points)

    def submitted(self, token: str, job_id: str) -> None:
        """Record, durably, the id sbatch gave the array of ``token``."""
        self._append(ledger.SUBMITTED, token, job_id=job_id)

    def _append(self, event: str, token: str, name: str = "", job_id: str = "") -> None:
        """Append one row of this attempt, stamped now."""
        entry = ledger.LedgerEntry(self.attempt, event, token, name, job_id, time.time())
        ledger.append_entry(self.path, entry)


@dataclass(frozen=True)
class ArrayPlan:
    """What a client does: wait for the arrays ``wait`` (every earlier array with a live task), whose
    live tasks run the unfinished points ``adopt`` (array id -> points), then submit one array for
    ``submit``."""

    adopt: dict[str, list[int]]
    submit: list[int]
    wait: list[str]


def plan_arrays(todo: Collection[int], live: Mapping[str, Collection[int]]) -> ArrayPlan:
    """The plan for the unfinished points ``todo`` given earlier arrays' live tasks (array id -> the
    points they run or will run): adopt those, submit the rest. A live task of a finished point (its
    task still exiting) is waited for, as the client's own, but its point counts once, as finished:
    it is in no array's ``adopt``."""
    wanted = set(todo)
    adopt = {job_id: sorted(set(points) & wanted) for job_id, points in live.items()}
    running = {point for points in adopt.values() for point in points}
    return ArrayPlan(adopt={job_id: points for job_id, points in adopt.items() if points},
                     submit=sorted(point for point in wanted if point not in running),
                     wait=[job_id for job_id, points in live.items() if points])
