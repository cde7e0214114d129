"""A node's measured footprint parameters: what bench/bench_footprint.py fitted from djsb-stream runs.

The file is a CSV with ``#`` comment lines (its provenance: machine, date, command) and the columns
``name,footprint_bytes,value,cv,samples``. The rate model (djsb/appmodel.py) reads three fitted
parameters from it, never from a paper's figures:

- ``cache_gain`` rows: one thread's STREAM bandwidth at ``footprint_bytes`` over its bandwidth at
  the largest footprint measured, with ``llc_bytes`` (the measuring machine's last-level cache):
  the working-set curve of appmodel point 6, as (footprint / cache, gain) points;
- ``timeslice_efficiency``: the progress a job keeps on an oversubscribed node over what processor
  sharing predicts (appmodel point 4), measured on footprints far beyond the cache;
- ``work_cv``: the run-to-run coefficient of variation of a job's time alone, the spread the
  simulated cluster draws each job's work from (djsb/noise.py, :class:`~djsb.noise.WorkNoise`).

Other rows (the medians and spreads behind the fits, e.g. ``slowdown_ana_oversub`` at each
footprint) are the record of the measurement: :meth:`FootprintParameters.measured` returns them,
for reports that cite the measurement as evidence.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

from djsb.errors import InputError, read_input

COLUMNS = ("name", "footprint_bytes", "value", "cv", "samples")
"""The columns of a footprint file, in order."""


@dataclass(frozen=True)
class FootprintParameters:
    """The fitted parameters of one measured machine (see the module docstring)."""

    llc_bytes: float
    cache_curve: tuple[tuple[float, float], ...]
    timeslice_efficiency: float
    work_cv: float
    rows: tuple[tuple[str, float, float, float], ...] = ()
    """Every row as (name, footprint_bytes, value, cv), in file order."""

    def measured(self, name: str) -> dict[float, tuple[float, float]]:
        """The rows called ``name``: footprint_bytes -> (value, cv)."""
        return {footprint: (value, cv) for row_name, footprint, value, cv in self.rows if row_name == name}


def parse_footprint(text: str, source: str) -> FootprintParameters:
    """The fitted parameters of a footprint file's ``text`` (``source`` names it in errors)."""
    numbered = [(n, line) for n, line in enumerate(text.splitlines(), 1)
                if line.strip() and not line.startswith("#")]
    if not numbered or tuple(numbered[0][1].strip().split(",")) != COLUMNS:
        raise InputError(f"expected the header {','.join(COLUMNS)}", source=source,
                         line=numbered[0][0] if numbered else None)
    values: dict[str, float] = {}
    curve: list[tuple[float, float]] = []
    rows: list[tuple[str, float, float, float]] = []
    for (number, _), row in zip(numbered[1:], csv.DictReader(line for _, line in numbered), strict=True):
        try:
            value, footprint, cv = float(row["value"]), float(row["footprint_bytes"]), float(row["cv"])
        except (TypeError, ValueError):
            numbers = f"{row['footprint_bytes']!r}, {row['value']!r}, {row['cv']!r}"
            raise InputError(f"not a number among {numbers}", source=source,
                             line=number, key=row["name"]) from None
        if not math.isfinite(value) or value < 0:
            raise InputError(f"expected a finite value >= 0, got {row['value']}", source=source, line=number,
                             key=row["name"])
        rows.append((row["name"], footprint, value, cv))
        if row["name"] == "cache_gain":
            curve.append((footprint, value))
        else:
            values.setdefault(row["name"], value)
    for name in ("llc_bytes", "timeslice_efficiency", "work_cv"):
        if name not in values:
            raise InputError("missing row", source=source, key=name)
    llc = values["llc_bytes"]
    if llc <= 0 or not curve:
        raise InputError("needs llc_bytes > 0 and cache_gain rows", source=source, key="cache_gain")
    efficiency = values["timeslice_efficiency"]
    if not 0 < efficiency <= 1:
        raise InputError(f"must be in (0, 1], got {efficiency:g}", source=source, key="timeslice_efficiency")
    curve_points = tuple(sorted((f / llc, g) for f, g in curve))
    return FootprintParameters(llc, curve_points, efficiency, values["work_cv"], tuple(rows))


def read_footprint(path: Path) -> FootprintParameters:
    """The fitted parameters of the footprint file at ``path``."""
    return parse_footprint(read_input(path), str(path))
