"""The local executor: a sweep's points in worker processes on this machine.

Each point is an independent run in a process of a ``multiprocessing`` pool (``jobs`` workers, by
default one per CPU this process may use, never more than that nor than the points to run). The
parent collects each point as it ends, advances the progress bar and rewrites sweep.csv (at most
once a second, and at the end). SIGINT or SIGTERM stops the sweep: the workers are terminated, the
points they were running discarded, the finished ones kept (``--resume`` does only the rest). The
workers ignore SIGINT, so Ctrl-C (sent to the whole process group) reaches only the parent, which
ends them.
"""

from __future__ import annotations

import multiprocessing
import queue
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType

from djsb.errors import InputError
from djsb.machine import usable_cpus
from djsb.sweep.point import run_point
from djsb.sweep.spec import SweepSpec
from djsb.sweep.sweep_dir import SweepDirectory

TABLE_EVERY_S = 1.0
"""sweep.csv is rewritten at most this often while points finish (each rewrite reads every point)."""
WAIT_S = 0.2
"""How often the parent looks for a stop request while it waits for points."""


@dataclass
class Outcome:
    """How a sweep's execution ended: the points that failed (with why) and the stopping signal."""

    failed: dict[int, str] = field(default_factory=dict)
    stopped_by: str | None = None


def _worker_init() -> None:
    """Workers leave SIGINT to the parent and die at SIGTERM (how the pool terminates them)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextmanager
def stop_signals() -> Iterator[list[str]]:
    """While inside, SIGINT/SIGTERM append their name to the yielded list instead of killing us."""
    received: list[str] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        received.append(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _report(ended: queue.Queue[tuple[int, BaseException | None]], index: int) -> Callable[[object], None]:
    """A pool callback putting (``index``, the error or None) on ``ended``."""
    return lambda result: ended.put((index, result if isinstance(result, BaseException) else None))


def run_local(spec: SweepSpec, directory: SweepDirectory, todo: list[int], jobs: int,
              point_done: Callable[[int], None]) -> Outcome:
    """Run the points ``todo`` on ``jobs`` worker processes; ``point_done(k)`` after each finished one.

    A point whose config is bad (an InputError) stops the sweep and is raised: every point would
    likely fail alike. Any other error fails that point only.
    """
    outcome = Outcome()
    if not todo:
        directory.write_table(spec)
        return outcome
    ended: queue.Queue[tuple[int, BaseException | None]] = queue.Queue()
    last_table = time.monotonic()
    workers = min(jobs, len(todo))
    with stop_signals() as received, multiprocessing.get_context("fork").Pool(workers, _worker_init) as pool:
        for index in todo:
            pool.apply_async(run_point, (spec, directory.path, index), callback=_report(ended, index),
                             error_callback=_report(ended, index))
        running = set(todo)
        try:
            while running and not received:
                try:
                    index, error = ended.get(timeout=WAIT_S)
                except queue.Empty:
                    continue
                running.discard(index)
                if isinstance(error, InputError):
                    raise error
                if error is not None:
                    outcome.failed[index] = f"{type(error).__name__}: {error}"
                    continue
                point_done(index)
                if time.monotonic() - last_table >= TABLE_EVERY_S:
                    directory.write_table(spec)
                    last_table = time.monotonic()
        finally:
            pool.terminate()
            pool.join()
            for index in running:
                directory.discard_scratch(index)
            outcome.stopped_by = received[0] if received else None
    directory.write_table(spec)
    return outcome


def worker_count(asked: int | None) -> int:
    """The worker processes of a sweep: ``asked`` (``--jobs``), at most one per CPU this process may
    run on (more would only share those CPUs, each worker with its own memory), by default all."""
    cpus = usable_cpus()
    if asked is None:
        return cpus
    if asked > cpus:
        raise InputError(f"{asked} worker processes asked, but this process may run on {cpus} CPU(s): "
                         f"give --jobs {cpus} or fewer", key="--jobs")
    return asked
