"""A calibration's output directory, and what ``djsb calibrate --resume`` continues from it.

A calibration replays its workload ``runs`` times on Slurm, each replay minutes long and timed
from its own first submission, so a replay cut short cannot be continued: the jobs it submitted
ran or waited beside a queue that no longer matches the workload's. The unit of a resume is
therefore the replay: a finished one is kept (``slurm_N.csv``, written last, marks it finished;
``passes_N.csv``, under fair share ``sshare_N.csv``, the usage before and after it, and where
slurmctld's log could be read ``slurmctld_N.log``, its lines the replay's instants came from, beside),
one cut short is done again from its first job.

What a replay cut short left behind is found and cancelled as ``djsb run --resume`` finds its
jobs: every submission is in the write-ahead ledger ``ledger.csv`` (djsb.harness.ledger: a
``submitting`` row with the job's token, in its sbatch --comment, fsync'd before sbatch runs,
and a ``submitted`` row with its id after), so a client killed outright (SIGKILL, a lost login
node) leaves nothing the next one cannot find (djsb.harness.resume.cancel_live). SIGINT and
SIGTERM cancel the replay's jobs themselves (djsb.calibrate.slurm_replay).

A replay's machine changes (reservations, drained nodes) are recorded in ``machine_left.json`` before
each is made, and what a record holds is undone before a continued calibration goes on
(:mod:`djsb.calibrate.machine_left`), as the jobs left are cancelled.

The directory also keeps Slurm's answers the model was built from (``slurm/*.txt``: scontrol show
config / partition / node, sshare, sacctmgr), read once when the calibration starts: the model
of a resumed calibration is the one its first replays ran under, and the report shows them.
``calibration.json`` names the calibration file (absolute), the number of replays and a digest
of the jobs, so a resume with a changed file is refused.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from djsb.calibrate.ctld_log import submitted_ids
from djsb.calibrate.machine_left import NOTHING_LEFT, MachineLeft, MachineRecord, Run, Show, undo_left
from djsb.errors import InputError
from djsb.harness.ledger import (
    CANCELLED,
    SUBMITTED,
    SUBMITTING,
    LedgerEntry,
    Submission,
    append_entry,
    next_attempt,
    outstanding,
    read_entries,
)
from djsb.harness.resume import cancel_live
from djsb.harness.runlock import RunLock
from djsb.jobs.api import JobModule
from djsb.workloads.job import TraceJob

META_FILE = "calibration.json"
LEDGER_FILE = "ledger.csv"
SLURM_DIR = "slurm"


def jobs_digest(jobs: list[TraceJob]) -> str:
    """A digest of the workload's jobs (ids, submissions, run and requested times, CPUs, users,
    accounts): equal for the same replay."""
    text = "\n".join(f"{j.job_id},{j.submit!r},{j.run_time!r},{j.requested_time!r},{j.cpus},{j.user},"
                     f"{j.account}" for j in jobs)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def ledger_name(run: int, job_id: int) -> str:
    """The ledger's name of workload job ``job_id`` in replay ``run``."""
    return f"run{run}/cal{job_id}"


def submitted_any(path: Path) -> bool:
    """Whether the directory holds a calibration that submitted jobs (a resume continues it)."""
    return (path / META_FILE).is_file() and bool(read_entries(path / LEDGER_FILE))


class CalibrationDir:
    """The output directory of one calibration, locked for the process that writes it."""

    def __init__(self, path: Path, lock: RunLock) -> None:
        self.path = path
        self.lock = lock
        self.ledger = path / LEDGER_FILE
        self.attempt = next_attempt(read_entries(self.ledger))
        self.meta: dict[str, object] = json.loads((path / META_FILE).read_text())
        self.machine_record = MachineRecord(path)

    @classmethod
    def create(cls, path: Path, config: Path, runs: int, jobs: list[TraceJob],
               left: MachineLeft = NOTHING_LEFT) -> CalibrationDir:
        """A new calibration's directory (made if missing; refused if it holds a calibration), with
        ``left``, what a calibration killed in the directory it replaces left, as its machine record."""
        path.mkdir(parents=True, exist_ok=True)
        if (path / META_FILE).exists():
            raise InputError(f"{path} already holds a calibration: continue it with djsb calibrate --resume "
                             f"{path}, or choose another -o", key="-o")
        lock = RunLock.acquire(path, key="-o")
        (path / META_FILE).write_text(json.dumps({"config": str(config.resolve()), "runs": runs,
                                                  "jobs": jobs_digest(jobs)}, indent=2) + "\n")
        made = cls(path, lock)
        if left:
            made.machine_record.write(left)
        return made

    @classmethod
    def resume(cls, path: Path) -> CalibrationDir:
        """An interrupted calibration's directory, locked for the attempt that continues it."""
        if not (path / META_FILE).is_file():
            raise InputError(f"{path} is not a calibration directory (no {META_FILE})", key="RUN_DIR")
        return cls(path, RunLock.acquire(path, key="RUN_DIR"))

    @property
    def config(self) -> Path:
        return Path(str(self.meta["config"]))

    @property
    def runs(self) -> int:
        return int(str(self.meta["runs"]))

    def check_jobs(self, jobs: list[TraceJob]) -> None:
        """Refuse to continue with other jobs than the first replays ran (the file was edited)."""
        if jobs_digest(jobs) != self.meta["jobs"]:
            raise InputError(f"{self.config} gives other jobs than when the calibration in {self.path} "
                             "started: start a new calibration", key="RUN_DIR")

    def release(self) -> None:
        self.lock.release()

    # -- the ledger ------------------------------------------------------------------------------

    def submitting(self, token: str, name: str) -> None:
        """Record, durably, that the job of ``token`` is about to be submitted."""
        append_entry(self.ledger, LedgerEntry(self.attempt, SUBMITTING, token, name=name, time=time.time()))

    def submitted(self, token: str, name: str, job_id: str) -> None:
        """Record, durably, the id Slurm gave the job of ``token``."""
        append_entry(self.ledger, LedgerEntry(self.attempt, SUBMITTED, token, name=name, job_id=job_id,
                                              time=time.time()))

    def cancel_left_behind(self, module: JobModule) -> list[Submission]:
        """Cancel the jobs of earlier attempts' unfinished replays that are still queued or running
        (each noted ``cancelled`` in the ledger); the jobs of finished replays have all ended."""
        finished = {(ledger_name(run, int(str(job_id))), str(slurm_id))
                    for run, replay in self.finished_runs().items()
                    for job_id, slurm_id in submitted_ids(replay).items()}
        pending = outstanding(read_entries(self.ledger), finished)

        def record(submission: Submission, job_id: str) -> None:
            append_entry(self.ledger, LedgerEntry(self.attempt, CANCELLED, submission.token,
                                                  name=submission.name, job_id=job_id, time=time.time()))

        return cancel_live(module, pending, record)

    def undo_machine_left(self, run: Run, show: Show) -> list[str]:
        """Undo what the machine record says an earlier attempt left on Slurm (a reservation still
        there deleted, a node it took out of service resumed), then clear the record; what was done."""
        done = undo_left(self.machine_record.left, run, show)
        self.machine_record.clear()
        return done

    # -- replays ---------------------------------------------------------------------------------

    def finished_runs(self) -> dict[int, pd.DataFrame]:
        """The replays on Slurm that ended, by number (their tables, index job_id)."""
        return {run: pd.read_csv(path, index_col="job_id")
                for run in range(1, self.runs + 1) if (path := self.path / f"slurm_{run}.csv").is_file()}

    def save_run(self, run: int, replay: pd.DataFrame, tables: dict[str, pd.DataFrame],
                 ctld_log: str | None = None) -> None:
        """Replay ``run``'s outputs: its other tables (``passes``, ``sshare``) first as
        ``NAME_RUN.csv``, and the lines of slurmctld's log read for it (``ctld_log``, so that its
        instants can be read again), then its own table last (its presence marks the replay
        finished)."""
        for name, table in tables.items():
            table.to_csv(self.path / f"{name}_{run}.csv", index=False)
        if ctld_log:
            (self.path / f"slurmctld_{run}.log").write_text(ctld_log)
        scratch = self.path / f".slurm_{run}.csv"
        replay.to_csv(scratch)
        scratch.replace(self.path / f"slurm_{run}.csv")

    def run_table(self, run: int, name: str) -> pd.DataFrame:
        """Table ``name`` of finished replay ``run``."""
        return pd.read_csv(self.path / f"{name}_{run}.csv")

    # -- Slurm's configuration -------------------------------------------------------------------

    def slurm_text(self, name: str, ask: Callable[[], str]) -> str:
        """Slurm's answer ``name`` (``show_config`` ...): as saved when the calibration started,
        else ``ask``'s, saved."""
        path = self.path / SLURM_DIR / f"{name}.txt"
        if path.is_file():
            return path.read_text()
        text = ask()
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        return text

    def slurm_texts(self) -> dict[str, str]:
        """Every saved answer of Slurm's, by name."""
        return {path.stem: path.read_text() for path in sorted((self.path / SLURM_DIR).glob("*.txt"))}
