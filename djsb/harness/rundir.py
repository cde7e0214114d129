"""The run directory: everything a run measured, written as it is measured.

Layout::

    config.yaml     the resolved configuration
    meta.json       machine, software and run metadata
    jobs.csv        one row per finished job, appended once its final state is known (outage: it
                    overlapped one; reason: why it did not complete, e.g. a node failure)
    cells.csv       one row per finished cell (stage, scenario, n_a, sample): what --resume skips;
                    status completed or failed (with a one-line reason), outage: it overlapped one
    outages.csv     each interval the scheduler did not answer (start, end, attempts, first error)
    uncancelled.txt jobs an interrupted run could not cancel ("JOB_ID NAME" lines)
    discarded.csv   rows of cells that were interrupted or failed, and redone by --resume
    discarded_cells.csv  cells.csv rows of failed cells that --resume redid (not with --skip-failed)
    summary.csv     per scenario x n_a: slowdowns, weights, dynamicity, 95% CI (rewritten per cell)
    samples.csv     the same per sample
    ledger.csv      every submission, before and after it happens (djsb.harness.ledger)
    run.lock        locked while a run uses the directory; the holder's pid (djsb.harness.runlock)
    jobs/           each job's stdout/stderr; control/ the malleability control files
    figures/        the plots

A directory is created only once the run can start (config valid, transport connected, module
built); one that no run ever submitted a job from (empty, or left by a run that failed before its
first submission) may be given to a new run, which writes its config.yaml and meta.json over the
old ones.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from djsb.csvrows import append_row, csv_header, read_rows, rewrite_rows
from djsb.errors import InputError
from djsb.harness.ledger import LEDGER_FILE, SUBMITTING, LedgerEntry, append_entry, next_attempt, read_entries
from djsb.harness.runlock import LOCK_FILE, RunLock
from djsb.jobs.outage import Outage
from djsb.outdir import MARKER
from djsb.version import djsb_version


@dataclass(frozen=True)
class JobRecord:
    """One finished job: the row of jobs.csv (times are Unix seconds; a job that never ran has no
    start, wait, exec, response or slowdown)."""

    stage: str
    scenario: str
    n_a: int
    sample: int
    app: str
    index: int
    name: str
    job_id: str
    state: str
    submit: float
    start: float | None
    end: float
    wait: float | None
    exec: float | None
    response: float | None
    slowdown: float | None
    tasks: int
    cpus_per_task: int
    cpus: int
    nodes: str
    iterations: int | None
    threads_min: int | None
    triad_MBps: float | None
    validated: bool | None
    suspended_s: float
    shared_with_sim: bool
    times_source: str
    outage: bool = False
    reason: str = ""


JOB_COLUMNS = tuple(f.name for f in fields(JobRecord))
CELL_COLUMNS = ("stage", "scenario", "n_a", "sample")
CELL_RECORD_COLUMNS = (*CELL_COLUMNS, "status", "outage", "reason")
OUTAGE_COLUMNS = tuple(f.name for f in fields(Outage))
CELL_COMPLETED, CELL_FAILED = "completed", "failed"
class CellKey(NamedTuple):
    """A cell as cells.csv and jobs.csv number it (CELL_COLUMNS); a tuple, so it unpacks, compares
    and hashes as one."""

    stage: str
    scenario: str
    n_a: int
    sample: int


def cell_key(stage: str, scenario: str, n_a: int, sample: int) -> CellKey:
    return CellKey(stage, scenario, int(n_a), int(sample))


def describe_cell(key: CellKey) -> str:
    """A cell for people, numbered as in the CSV files: 'execution stopcont n_a=2 sample 0',
    'reference sample 1'."""
    stage, scenario, n_a, sample = key
    where = f" {scenario} n_a={n_a}" if stage == "execution" else ""
    return f"{stage}{where} sample {sample}"


def row_cell(row: Mapping[str, str]) -> CellKey:
    """The cell of a jobs.csv or cells.csv row."""
    return cell_key(row["stage"], row["scenario"], int(row["n_a"]), int(row["sample"]))


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def _os_name() -> str:
    """The distribution's PRETTY_NAME from /etc/os-release, else the kernel's name and release."""
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return f"{platform.system()} {platform.release()}"


def machine_metadata() -> dict[str, Any]:
    """What an administrator needs to know to compare two runs: machine, OS, software."""
    cpu_model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"hostname": socket.gethostname(), "os": _os_name(), "platform": platform.platform(),
            "cpu_model": cpu_model,
            "cpus_online": os.cpu_count(), "cpus_allowed": sorted(os.sched_getaffinity(0)),
            "memory_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
            "python": sys.version.split()[0], "djsb_version": djsb_version(), "djsb_commit": _git_commit()}


RUN_ENTRIES = frozenset({"config.yaml", "meta.json", LEDGER_FILE, LOCK_FILE, "jobs", "control", "figures"})
"""What a run directory holds until its first job ends."""


def never_started(path: Path) -> bool:
    """Whether a new run may take ``path``: it does not exist, is empty, or is a run directory no run
    ever submitted a job from (left by a run that failed before its first submission)."""
    if not path.is_dir():
        return not path.exists()
    names = {entry.name for entry in path.iterdir()} - {LOCK_FILE, MARKER}
    if not names:
        return True
    return "config.yaml" in names and names <= RUN_ENTRIES and not any(
        row.get("event") == SUBMITTING for row in read_rows(path / LEDGER_FILE))


def not_reusable(path: Path) -> InputError:
    return InputError(f"run directory {path} already exists and is not empty (use --resume {path} to "
                      "continue it, or choose another output.directory)", key="output.directory")


class RunDirectory:
    """Reads and writes one run's directory."""

    def __init__(self, path: Path, lock: RunLock | None = None) -> None:
        """``lock``: held by the run that writes the directory (see :meth:`create`, :meth:`resume`);
        None to read it (a report). ``attempt`` numbers that run: 1 for the first, then one more
        per resume (0 when only reading). ``durable``: fsync every row (a real run's minutes-long
        jobs make it free); a run on a virtual clock, which can be replayed in seconds, turns it off."""
        self.path = path
        self.lock = lock
        self.attempt = next_attempt(self.ledger_entries()) if lock is not None else 0
        self.durable = True
        self.jobs_dir = path / "jobs"
        self.control_dir = path / "control"
        self.figures_dir = path / "figures"

    @classmethod
    def create(cls, path: Path, config: Mapping[str, Any], meta: Mapping[str, Any]) -> RunDirectory:
        """A new run's directory, locked for it; ``path`` must be free (see :func:`never_started`)."""
        if not never_started(path):
            raise not_reusable(path)
        path.mkdir(parents=True, exist_ok=True)
        lock = RunLock.acquire(path, key="output.directory")
        if not never_started(path):  # another run took it between the check and the lock
            lock.release()
            raise not_reusable(path)
        run = cls(path, lock)
        for directory in (path, run.jobs_dir, run.control_dir, run.figures_dir):
            directory.mkdir(parents=True, exist_ok=True)
        (path / "config.yaml").write_text(yaml.safe_dump(dict(config), sort_keys=False))
        (path / "meta.json").write_text(json.dumps(dict(meta), indent=2) + "\n")
        return run

    @classmethod
    def open(cls, path: Path) -> RunDirectory:
        """An existing run's directory, to read."""
        if not (path / "config.yaml").is_file():
            raise InputError(f"{path} is not a DJSB run directory (no config.yaml)", key="RUN_DIR")
        jobs = path / "jobs.csv"
        header = csv_header(jobs) if jobs.is_file() and jobs.stat().st_size else list(JOB_COLUMNS)
        missing = [name for name in (*CELL_COLUMNS, "state") if name not in header]
        if missing:
            raise InputError(f"{path}/jobs.csv is not a run's (no {', '.join(missing)} column"
                             f"{'s' if len(missing) > 1 else ''}: a model replay's?)", key="RUN_DIR")
        return cls(path)

    @classmethod
    def resume(cls, path: Path) -> RunDirectory:
        """An existing run's directory, locked for the attempt that continues it."""
        cls.open(path)
        return cls(path, RunLock.acquire(path, key="RUN_DIR"))

    def release(self) -> None:
        """Let another run use the directory (the process's end does it too)."""
        if self.lock is not None:
            self.lock.release()

    @property
    def config_path(self) -> Path:
        return self.path / "config.yaml"

    def add_job(self, record: JobRecord) -> None:
        append_row(self.path / "jobs.csv", JOB_COLUMNS, asdict(record), self.durable)

    def finish_cell(self, key: CellKey, *, outage: bool = False, failure: str = "") -> None:
        """Record a finished cell: completed, or failed with the one-line ``failure``; ``outage``:
        it overlapped a scheduler outage."""
        row = {**dict(zip(CELL_COLUMNS, key, strict=True)), "outage": outage, "reason": failure,
               "status": CELL_FAILED if failure else CELL_COMPLETED}
        append_row(self.path / "cells.csv", CELL_RECORD_COLUMNS, row, self.durable)

    def cell_rows(self) -> list[dict[str, str]]:
        """The rows of cells.csv (a run recorded by an older DJSB lacks status, outage and reason)."""
        return read_rows(self.path / "cells.csv")

    def add_outage(self, outage: Outage) -> None:
        append_row(self.path / "outages.csv", OUTAGE_COLUMNS, asdict(outage), self.durable)

    def outages(self) -> list[Outage]:
        """Every outage this run (all its attempts) recorded."""
        return [Outage(float(r["start"]), float(r["end"]), r["scheduler"], int(r["attempts"]), r["command"],
                       r["error"]) for r in read_rows(self.path / "outages.csv")]

    def add_uncancelled(self, jobs: Mapping[str, str]) -> Path:
        """Add the job ids (-> job names) an interrupted run could not cancel to uncancelled.txt, for
        the next --resume or the user to cancel (whoever cancels them removes the file)."""
        path = self.path / "uncancelled.txt"
        known = set(self.uncancelled_jobs())
        with path.open("a") as handle:
            handle.writelines(f"{job_id} {name}\n" for job_id, name in jobs.items() if job_id not in known)
        return path

    def uncancelled_jobs(self) -> list[str]:
        """The job ids in uncancelled.txt (none when the last attempt cancelled all its jobs)."""
        path = self.path / "uncancelled.txt"
        if not path.exists():
            return []
        return [line.split()[0] for line in path.read_text().splitlines() if line.strip()]

    def finished_cells(self) -> set[CellKey]:
        """The cells recorded in cells.csv, completed or failed: what the run does not do again."""
        return {row_cell(r) for r in self.cell_rows()}

    def failed_cells(self) -> set[CellKey]:
        """The cells recorded failed (their jobs' numbers are not measurements of the benchmark)."""
        return {row_cell(r) for r in self.cell_rows() if r.get("status") == CELL_FAILED}

    def reopen_failed_cells(self) -> list[dict[str, str]]:
        """Move the rows of the failed cells from cells.csv to discarded_cells.csv, so that the run
        does them again (their jobs' rows then follow with :meth:`discard_unfinished`); returns
        the rows moved."""
        rows = self.cell_rows()
        failed = [r for r in rows if r.get("status") == CELL_FAILED]
        if failed:
            for row in failed:
                append_row(self.path / "discarded_cells.csv", CELL_RECORD_COLUMNS, row)
            rewrite_rows(self.path / "cells.csv", CELL_RECORD_COLUMNS, [r for r in rows if r not in failed])
        return failed

    def job_rows(self) -> list[dict[str, str]]:
        return read_rows(self.path / "jobs.csv")

    def write_ledger(self, event: str, token: str, *, time: float, name: str = "", job_id: str = "") -> None:
        """Append one ledger row of this attempt (djsb.harness.ledger), durably like jobs.csv."""
        append_entry(self.path / LEDGER_FILE, LedgerEntry(self.attempt, event, token, name, job_id, time),
                     self.durable)

    def ledger_entries(self) -> list[LedgerEntry]:
        return read_entries(self.path / LEDGER_FILE)

    def recorded_jobs(self) -> set[tuple[str, str]]:
        """(name, job id) of every job recorded COMPLETED, in jobs.csv or discarded.csv: the jobs that
        surely left the scheduler (a failed one may be back in its queue: requeued)."""
        rows = [*self.job_rows(), *read_rows(self.path / "discarded.csv")]
        return {(row["name"], row["job_id"]) for row in rows if row.get("state") == "COMPLETED"}

    def discard_unfinished(self) -> int:
        """Move the rows of cells that never finished to discarded.csv; returns how many moved."""
        done = self.finished_cells()
        rows = self.job_rows()
        keep = [r for r in rows if row_cell(r) in done]
        dropped = [r for r in rows if r not in keep]
        for row in dropped:
            append_row(self.path / "discarded.csv", JOB_COLUMNS, row)
        if dropped:
            rewrite_rows(self.path / "jobs.csv", JOB_COLUMNS, keep)
        return len(dropped)

    def meta(self) -> dict[str, Any]:
        """meta.json as a mapping (empty when there is none)."""
        meta_path = self.path / "meta.json"
        return json.loads(meta_path.read_text()) if meta_path.exists() else {}

    def update_meta(self, **values: Any) -> None:
        meta = self.meta()
        meta.update(values)
        (self.path / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
