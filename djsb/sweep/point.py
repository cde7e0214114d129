"""Run one sweep point into its directory: written in scratch, published complete (or not at all)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from djsb.sweep.runners import POINT_RUNNERS
from djsb.sweep.spec import SweepSpec
from djsb.sweep.sweep_dir import METRICS, WRITER, SweepDirectory, writer_name


def run_point(spec: SweepSpec, sweep_dir: Path, index: int) -> Path:
    """Run point ``index`` of ``spec`` with its runner into ``sweep_dir``/points/``index``, holding the
    point's lock (PointBusy if another process holds it); a point another writer published before
    this one got the lock is not run again.

    The runner's terminal output (a simulation's progress lines) is dropped: with many points in
    parallel it would be noise; the sweep reports progress per point. Errors propagate; the scratch
    directory of a failed point is removed.
    """
    directory = SweepDirectory(sweep_dir)
    writer = writer_name()
    lock = directory.lock(index, writer)
    try:
        if index in directory.finished():
            return directory.point_dir(index)
        scratch = directory.scratch(index)
        try:
            with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
                metrics = POINT_RUNNERS.get(spec.runner)(spec.point_tree(index), scratch)
            if not (scratch / METRICS).exists():
                (scratch / METRICS).write_text(json.dumps(dict(metrics), indent=2, default=str) + "\n")
            (scratch / WRITER).write_text(writer + "\n")
        except BaseException:
            directory.discard_scratch(index)
            raise
        directory.finish(scratch, index)
    finally:
        lock.release()
    return directory.point_dir(index)
