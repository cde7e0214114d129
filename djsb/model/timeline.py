"""The utilisation timeline of a replay: busy cores and the queue after every instant that changed them.

A full trace has hundreds of thousands of such instants; rows of boxed Python numbers would cost
about 100 bytes each, so the rows are kept flat in one typed array (8 bytes a value; counts of cores
and jobs are exact in a double far beyond any machine's size).
"""

from __future__ import annotations

from array import array

import numpy as np
import pandas as pd

COLUMNS = ("time", "busy_cores", "queued_jobs", "queued_cores")


class UtilisationTimeline:
    """Rows ``(time, busy_cores, queued_jobs, queued_cores)``, one per change of the last three."""

    __slots__ = ("rows", "last")

    def __init__(self) -> None:
        self.rows = array("d")
        self.last: tuple[int, int, int] | None = None

    def __len__(self) -> int:
        return len(self.rows) // len(COLUMNS)

    def record(self, now: float, busy_cores: int, queued_jobs: int, queued_cores: int) -> None:
        """Add the state at ``now`` unless it equals the last row's."""
        state = (busy_cores, queued_jobs, queued_cores)
        if state != self.last:
            self.last = state
            self.rows.extend((now, busy_cores, queued_jobs, queued_cores))

    def frame(self) -> pd.DataFrame:
        """The rows as a table with the columns time (float64), busy_cores, queued_jobs and
        queued_cores (int64)."""
        table = np.frombuffer(self.rows, dtype=np.float64).reshape(-1, len(COLUMNS))
        return pd.DataFrame({name: table[:, k].astype(np.int64) if k else table[:, k].copy()
                             for k, name in enumerate(COLUMNS)})


def with_busy_gpus(util: pd.DataFrame, jobs: pd.DataFrame) -> pd.DataFrame:
    """``util`` with a ``busy_gpus`` column: the GPUs the jobs held after each row's instant (every
    start and end at it counted; a suspended job keeps its GPUs), from the jobs' start, end and
    gpus. An instant at which only the GPUs held changed (a GPU job ending as another of as many
    CPUs starts) gets its own row, the other columns carried from the row before (none before the
    first)."""
    held = jobs[jobs["gpus"] > 0]
    starts, ends = held["start"].to_numpy(float), held["end"].to_numpy(float)
    changes = np.union1d(starts, ends)
    times = util["time"].to_numpy(float)
    extra = np.setdiff1d(changes, times)
    if len(extra):
        rows = pd.DataFrame({"time": extra})
        merged = pd.merge_ordered(util, rows, on="time", fill_method="ffill")
        util = merged.fillna(0).astype({name: np.int64 for name in COLUMNS[1:]})  # before the first row: none
        times = util["time"].to_numpy(float)
    gpus = held["gpus"].to_numpy(float)
    busy = _held_by(starts, gpus, times) - _held_by(ends, gpus, times)
    return util.assign(busy_gpus=np.rint(busy).astype(np.int64))


def _held_by(instants: np.ndarray, amounts: np.ndarray, times: np.ndarray) -> np.ndarray:
    """At each of ``times``, the sum of ``amounts`` whose instant is at or before it."""
    order = np.argsort(instants, kind="stable")
    totals = np.concatenate(([0.0], np.cumsum(amounts[order])))
    return totals[np.searchsorted(instants[order], times, side="right")]
