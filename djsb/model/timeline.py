"""The utilisation timeline of a replay: busy cores and the queue after every instant that changed them.

A full trace has hundreds of thousands of such instants; rows of boxed Python numbers would cost
about 100 bytes each, so the four columns are kept as typed arrays (8 bytes a value).
"""

from __future__ import annotations

from array import array

import pandas as pd


class UtilisationTimeline:
    """Rows ``(time, busy_cores, queued_jobs, queued_cores)``, one per change of the last three."""

    __slots__ = ("time", "busy_cores", "queued_jobs", "queued_cores")

    def __init__(self) -> None:
        self.time = array("d")
        self.busy_cores = array("q")
        self.queued_jobs = array("q")
        self.queued_cores = array("q")

    def __len__(self) -> int:
        return len(self.time)

    def record(self, now: float, busy_cores: int, queued_jobs: int, queued_cores: int) -> None:
        """Add the state at ``now`` unless it equals the last row's."""
        if self.time and busy_cores == self.busy_cores[-1] and queued_jobs == self.queued_jobs[-1] \
                and queued_cores == self.queued_cores[-1]:
            return
        self.time.append(now)
        self.busy_cores.append(busy_cores)
        self.queued_jobs.append(queued_jobs)
        self.queued_cores.append(queued_cores)

    def frame(self) -> pd.DataFrame:
        """The rows as a table with the columns time, busy_cores, queued_jobs, queued_cores."""
        return pd.DataFrame({"time": pd.Series(self.time, dtype="float64"),
                             **{name: pd.Series(getattr(self, name), dtype="int64")
                                for name in ("busy_cores", "queued_jobs", "queued_cores")}})
