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
