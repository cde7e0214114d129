"""The write-ahead ledger of a run's submissions (RUN_DIR/ledger.csv): what may still run.

jobs.csv only learns of a job when it ends; a harness killed (SIGKILL, a crash, a lost login node)
while jobs run would leave them to the scheduler with nobody to cancel them: a simulation it had
suspended stays SUSPENDED for ever. So before each submission the driver appends the
job's name and a fresh submission token (``submitting``), and after it the id the scheduler gave
(``submitted``), each row flushed and fsync'd like jobs.csv. Whatever moment the harness dies at,
every job it may have created is in the ledger, by id or, if the id never came back, by token: a
module that tags jobs with the token (Slurm's --comment, the local module's environment) finds
those too (``JobModule.find_by_token``). ``--resume`` cancels what is still alive and appends
``cancelled`` for each, so the next resume does not look again.

Append-only: a row is never rewritten. Each row names its attempt (1 for the run that created the
directory, one more for each ``--resume``). Besides the run directory (djsb.harness.rundir), a Slurm
sweep keeps one of its job arrays in the same form (djsb.sweep.arrays): one reader and writer here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from djsb.csvrows import append_row, read_rows

LEDGER_FILE = "ledger.csv"

SUBMITTING = "submitting"
"""Written before the submit command runs: token and job name."""
SUBMITTED = "submitted"
"""Written when the submit returned: token and job id."""
CANCELLED = "cancelled"
"""Written by a later attempt that cancelled the job (token and job id)."""


@dataclass(frozen=True)
class LedgerEntry:
    """One row of ledger.csv (``time``: Unix seconds on the run's clock)."""

    attempt: int
    event: str
    token: str
    name: str = ""
    job_id: str = ""
    time: float = 0.0

    @classmethod
    def from_row(cls, row: Mapping[str, str | None]) -> LedgerEntry | None:
        """The entry of one CSV row; None for a row cut short (a write the machine's crash tore)."""
        try:
            return cls(attempt=int(row["attempt"] or ""), event=row["event"] or "", token=row["token"] or "",
                       name=row["name"] or "", job_id=row["job_id"] or "", time=float(row["time"] or ""))
        except (KeyError, TypeError, ValueError):
            return None


LEDGER_COLUMNS = tuple(f.name for f in fields(LedgerEntry))


def append_entry(path: Path, entry: LedgerEntry, durable: bool = True) -> None:
    """Append ``entry`` to the ledger file ``path`` (flushed; ``durable``: fsync'd too)."""
    append_row(path, LEDGER_COLUMNS, asdict(entry), durable)


def read_entries(path: Path) -> list[LedgerEntry]:
    """The entries of the ledger file ``path``, rows a crash cut short left out (none: no file)."""
    return [entry for row in read_rows(path) if (entry := LedgerEntry.from_row(row)) is not None]


@dataclass(frozen=True)
class Submission:
    """A job an attempt may have created: its token and name, and its id if the submit returned."""

    attempt: int
    token: str
    name: str
    job_id: str | None

    def describe(self) -> str:
        return f"{self.name} (job {self.job_id})" if self.job_id else f"{self.name} (token {self.token})"


def submissions(entries: Iterable[LedgerEntry]) -> dict[str, Submission]:
    """Every submission the ledger knows of, by token, with its id where one was recorded."""
    found: dict[str, Submission] = {}
    for entry in entries:
        if entry.event == SUBMITTING:
            found[entry.token] = Submission(entry.attempt, entry.token, entry.name, None)
        elif entry.event == SUBMITTED and entry.token in found:
            known = found[entry.token]
            found[entry.token] = Submission(known.attempt, known.token, known.name, entry.job_id)
    return found


def outstanding(entries: Iterable[LedgerEntry], recorded: set[tuple[str, str]]) -> list[Submission]:
    """The submissions whose job may still be alive, in submission order: neither recorded as ended
    (their ``(name, job_id)`` in ``recorded``, from jobs.csv and discarded.csv) nor cancelled by a
    resume. A submission without an id counts: its submit may have created a job before the harness
    died, or after its reply was lost."""
    entries = list(entries)
    cancelled = {entry.token for entry in entries if entry.event == CANCELLED}
    return [s for s in submissions(entries).values()
            if s.token not in cancelled and (s.job_id is None or (s.name, s.job_id) not in recorded)]


def next_attempt(entries: Iterable[LedgerEntry]) -> int:
    """The number of the attempt that starts now: one more than the last in the ledger (1 if none)."""
    return max((entry.attempt for entry in entries), default=0) + 1
