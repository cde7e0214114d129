"""A whole sweep run, as ``djsb sweep CONFIG [-o OUT] [--jobs N] [--executor local|slurm] [--resume]``
asks (cli.py reads the command line into a :class:`SweepRequest`; ``djsb pool`` and the paper
reproductions build one themselves), and the two entries a Slurm array task and the Slurm
executor's client use: ``--array-task`` (run the point numbered $SLURM_ARRAY_TASK_ID) and
``--point K`` (run point K).

Without ``-o`` a sweep writes into runs/NAME-DATE-TIME; ``--resume`` without ``-o`` continues the
latest sweep of the same config there. A new sweep refuses an existing non-empty directory unless
``--force`` (djsb.outdir); ``--resume`` continues one, never rerunning a finished point. Exit
status: 0 every point finished, 1 some point failed, 2 bad input, 130/143 stopped by SIGINT/SIGTERM
(finished points kept).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from djsb.errors import InputError
from djsb.interrupts import EXIT_STATUS
from djsb.outcome import Headline, Outcome
from djsb.progress import QUIET, Progress, say
from djsb.sweep.local import run_local, worker_count
from djsb.sweep.point import run_point
from djsb.sweep.slurm_array import read_settings, run_slurm_array
from djsb.sweep.spec import SweepSpec, read_sweep
from djsb.sweep.sweep_dir import MANIFEST, PointBusy, SweepDirectory

ARRAY_TASK_ENV = "SLURM_ARRAY_TASK_ID"


@dataclass(frozen=True)
class SweepRequest:
    """What the command line asked for."""

    config: Path
    out: Path | None
    jobs: int | None = None
    executor: str = "local"
    resume: bool = False
    point: int | None = None
    array_task: bool = False


def latest_sweep(config: Path, runs: Path = Path("runs")) -> Path:
    """The newest sweep directory of ``config`` under ``runs`` (its default names sort by time)."""
    found = sorted(path.parent for path in runs.glob(f"{config.stem}-*/{MANIFEST}"))
    if not found:
        raise InputError(f"no earlier sweep of this config under {runs}/: give its directory with -o",
                         source=str(config), key="--resume")
    return found[-1]


def one_point(spec: SweepSpec, out: Path, index: int) -> Outcome:
    """Run point ``index`` (an array task's work) unless it is finished; sweep.csv is the client's.
    A point another process is writing is left to it, said on stderr (exit 0: the point is not
    this task's failure; the client reports it if that writer fails)."""
    if not 0 <= index < len(spec.points):
        raise InputError(f"no point {index}: the sweep has points 0..{len(spec.points) - 1}", key="--point")
    directory = SweepDirectory(out)
    directory.claim(spec)
    if index not in directory.finished():
        try:
            run_point(spec, out, index)
        except PointBusy as busy:
            say(f"{busy}; this task leaves it to that writer")
    return Outcome("sweep", f"point {index} of {len(spec.points)}", directory.point_dir(index),
                   [Headline("finished", int(index in directory.finished()), "points")])


def run_sweep(request: SweepRequest, default_out: Path) -> tuple[int, Outcome]:
    """Run what ``request`` asks; ``default_out`` is where a new sweep goes without ``-o``. Returns
    the exit status (0 every point finished, 1 some failed, 130/143 stopped) and the sweep's end."""
    spec = read_sweep(request.config)
    jobs = worker_count(request.jobs)
    out = request.out or (latest_sweep(request.config) if request.resume else default_out)
    if request.array_task or request.point is not None:
        index = request.point if request.point is not None else array_task_index()
        return 0, one_point(spec, out, index)
    settings = read_settings(spec.slurm) if request.executor == "slurm" else None  # checked before OUT exists
    directory = SweepDirectory(out)
    directory.claim(spec)
    finished = directory.finished()
    todo = [index for index in range(len(spec.points)) if index not in finished]
    bar = Progress("points", len(spec.points), done=len(spec.points) - len(todo), line_every=10.0)
    bar.log(f"sweep {out}: {len(spec.points)} point(s), {len(finished)} finished before, "
            f"{len(todo)} to run ({request.executor})")
    try:
        if settings is not None:
            outcome = run_slurm_array(spec, settings, directory, todo, request.config, progress=bar.update)
        else:
            outcome = run_local(spec, directory, todo, jobs,
                                point_done=lambda index: bar.advance())
    finally:
        bar.close()
    for index, reason in sorted(outcome.failed.items()):
        say(f"point {index} failed: {reason}", QUIET)
    end = Outcome("sweep", f"{request.config}: {len(spec.points)} point(s) ({request.executor})",
                  out / "sweep.csv",
                  [Headline("finished", len(directory.finished()), "points"),
                   Headline("failed", len(outcome.failed), "points"),
                   Headline("run_now", len(todo) - len(outcome.failed), "points")],
                  details={str(index): reason for index, reason in sorted(outcome.failed.items())})
    if outcome.stopped_by is not None:
        say(f"stopped by {outcome.stopped_by}; finish with: djsb sweep {request.config} -o {out} --resume",
            QUIET)
        return EXIT_STATUS.get(outcome.stopped_by, 1), end
    return (1 if outcome.failed else 0), end


def array_task_index() -> int:
    """The point of this Slurm array task: $SLURM_ARRAY_TASK_ID."""
    value = os.environ.get(ARRAY_TASK_ENV, "")
    if not value.isdigit():
        raise InputError(f"${ARRAY_TASK_ENV} is {value!r}: --array-task runs inside a Slurm array task",
                         key="--array-task")
    return int(value)
