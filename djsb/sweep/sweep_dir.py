"""A sweep's output directory: ``points/<k>/`` per finished point, ``sweep.json``, ``sweep.csv``.

A point is finished exactly when ``points/<k>`` exists: its runner writes into a scratch directory
``points/.<k>.partial-<id>`` that is renamed to ``points/<k>`` only once complete (a rename within
one file system is atomic), so an interrupted or failed point leaves no directory that looks
finished, and a rerun never reruns a finished point. A point is written by one process at a time:
its writer holds ``.locks/<k>`` (an flock, djsb.filelock, with the writer's Slurm job or pid in
it) from before it clears old scratch directories until it has published the point; a second
writer (a task of another array of the same sweep, a second client) finds it held and leaves the
point alone (PointBusy), rather than deleting the first one's scratch directory under it. Lock files
stay (unlinking one would let a third writer lock a new file while the second holds the old). The
point names its writer in ``points/<k>/writer.txt``. ``sweep.json`` records which sweep the
directory holds (the manifest of :meth:`SweepSpec.manifest`): a rerun into it must be the same
sweep. ``sweep.csv`` has one row per finished point: ``point``, one column per swept key path, and
every scalar of the point's metrics.json (a metric named like a swept key is ``metrics.NAME``).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import uuid
from pathlib import Path
from typing import Any

import pandas as pd

from djsb.errors import InputError, RunError
from djsb.filelock import FileLock, LockHeld
from djsb.sweep.spec import SweepSpec

POINTS = "points"
MANIFEST = "sweep.json"
TABLE = "sweep.csv"
METRICS = "metrics.json"
WRITER = "writer.txt"
LOCKS = ".locks"


class PointBusy(RunError):
    """Another live process is writing the point (its lock's holder named in the message)."""


def writer_name() -> str:
    """Who is writing a point, for the lock file and writer.txt: the Slurm array task (``ARRAY_TASK``
    and the task's own job id) or job, the host and the pid."""
    env = os.environ
    if "SLURM_ARRAY_JOB_ID" in env:
        task = f"{env['SLURM_ARRAY_JOB_ID']}_{env.get('SLURM_ARRAY_TASK_ID', '')}"
        job = f"job {task} ({env.get('SLURM_JOB_ID', '')})"
    elif "SLURM_JOB_ID" in env:
        job = f"job {env['SLURM_JOB_ID']}"
    else:
        job = "no Slurm job"
    return f"{job} on {socket.gethostname()}, pid {os.getpid()}"


def scalar_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    """The metrics that are one value each (nested mappings and lists left out)."""
    return {name: value for name, value in metrics.items() if not isinstance(value, (dict, list))}


def cell(value: Any) -> Any:
    """A swept value as a CSV cell: scalars as they are, a list or mapping as JSON."""
    return json.dumps(value) if isinstance(value, (dict, list)) else value


class SweepDirectory:
    """The output directory of one sweep (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.points = self.path / POINTS
        self.locks = self.path / LOCKS

    def claim(self, spec: SweepSpec) -> None:
        """Make the directory this sweep's, or check that it already is (InputError if another's)."""
        manifest = json.loads(json.dumps(spec.manifest(), default=str))
        existing = self.path / MANIFEST
        if existing.exists():
            if json.loads(existing.read_text()) != manifest:
                raise InputError(f"{self.path} holds another sweep (other points, runner or base config); "
                                 "give another output directory", source=spec.source, key="sweep")
            return
        self.points.mkdir(parents=True, exist_ok=True)
        temporary = existing.with_name(f".{MANIFEST}.{uuid.uuid4().hex}")
        temporary.write_text(json.dumps(manifest, indent=1) + "\n")
        os.replace(temporary, existing)

    def point_dir(self, index: int) -> Path:
        return self.points / str(index)

    def finished(self) -> set[int]:
        """The points whose directory is complete."""
        if not self.points.is_dir():
            return set()
        return {int(entry.name) for entry in self.points.iterdir() if entry.name.isdigit() and entry.is_dir()}

    def lock(self, index: int, writer: str) -> FileLock:
        """Take point ``index`` for ``writer`` (held until released or this process ends); PointBusy
        if another process holds it."""
        try:
            self.locks.mkdir(exist_ok=True)
            return FileLock.acquire(self.locks / str(index), writer)
        except LockHeld as held:
            raise PointBusy(f"point {index} is being written by {held.holder}") from None

    def scratch(self, index: int) -> Path:
        """A new, empty directory for point ``index`` to be written in; earlier attempts' are removed."""
        self.discard_scratch(index)
        path = self.points / f".{index}.partial-{uuid.uuid4().hex}"
        path.mkdir(parents=True)
        return path

    def discard_scratch(self, index: int) -> None:
        """Remove what unfinished attempts at point ``index`` left."""
        for stale in self.points.glob(f".{index}.partial-*"):
            shutil.rmtree(stale, ignore_errors=True)

    def finish(self, scratch: Path, index: int) -> None:
        """Publish a complete point; if another attempt finished it first, keep that one."""
        try:
            os.rename(scratch, self.point_dir(index))
        except OSError:
            if not self.point_dir(index).is_dir():
                raise
            shutil.rmtree(scratch, ignore_errors=True)

    def table(self, spec: SweepSpec) -> pd.DataFrame:
        """sweep.csv's rows: one per finished point, in point order."""
        rows = []
        for index in sorted(self.finished()):
            values = {key: cell(value) for key, value in spec.point_values(index).items()}
            metrics = json.loads((self.point_dir(index) / METRICS).read_text())
            named = {(f"metrics.{name}" if name in values or name == "point" else name): value
                     for name, value in scalar_metrics(metrics).items()}
            rows.append({"point": index, **values, **named})
        return pd.DataFrame(rows, columns=None if rows else ["point", *spec.keys])

    def write_table(self, spec: SweepSpec) -> Path:
        """Write sweep.csv (whole, then renamed into place: a reader never sees half a table)."""
        path = self.path / TABLE
        temporary = path.with_name(f".{TABLE}.{uuid.uuid4().hex}")
        self.table(spec).to_csv(temporary, index=False)
        os.replace(temporary, path)
        return path
