"""Paper 001's fig. 4 condition measured on one node: the results file of bench/bench_half_memory.py.

Fig. 3 of 001 gives the simulation 4 GiB of a 32 GiB node ("less than 15%" with the analytics,
sec. 4.4), fig. 4 gives it 16 GiB ("more than 50%"). The bench runs djsb-stream on this machine at
a footprint below 15 % of its memory and at footprints above half of it, several rounds, each round
one sample of every footprint (its rows: seconds per STREAM iteration of the simulation alone,
shrunk to one thread, oversubscribed; of the analytics alone, oversubscribed, beside the stopped
simulation, beside the shrunk one). Here each round gives one value of a metric, so a comparison
of the two fractions pairs runs of the same round, and the samples' mean and t interval are what
:class:`djsb.reproduce.checks.Measured` reports.

The node-level dynamicity puts the measured slowdowns on the paper's timeline (Table 2 of 001: a
5 min simulation, 10 s analytics on half of its CPUs, n_a of them one after another within it): an
analytics runs ``t_a x slowdown_a``, during which the simulation progresses at the rate its
scenario leaves it (oversubscription: 1 / its oversubscribed slowdown; stop&continue: 0; dynamic:
its speed on half of its cores), and eqs. (2)-(8) of 001 (djsb/metrics.py) give the dynamicity.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from djsb.benchmark_metrics import dynamicity, weights
from djsb.errors import InputError, read_input

TIMES = ("sim_alone", "sim_shrunk", "sim_oversub", "ana_alone", "ana_oversub", "ana_stopcont", "ana_dynamic")
"""Seconds per iteration measured in each round (bench/bench_footprint.py's round)."""
COLUMNS = ("round", "footprint_bytes", "node_bytes", *TIMES, "load_before", "load_after", "started")
"""The results file's header."""
FIG3_FRACTION = 0.15
"""Fig. 3's condition: the simulation and the analytics under 15 % of the node (sec. 4.4 of 001)."""
FIG4_FRACTION = 0.5
"""Fig. 4's condition: the simulation and the analytics above 50 % of the node (sec. 4.4 of 001)."""
ANALYTICS_BYTES = 100 * 2**20
"""The analytics' memory per node (Table 2 of 001: 2 tasks x 50 MiB), counted in both fractions."""
ANALYTICS_TIME = {"oversubscription": "ana_oversub", "stopcont": "ana_stopcont", "dynamic": "ana_dynamic"}
"""The analytics' time in each scenario of 001 (sec. 4.1)."""
SIMULATION_S, ANALYTICS_S = 300.0, 10.0
"""Table 2 of 001: the simulation runs 5 min, an analytics 10 s (alone)."""
N_A = (1, 2, 4, 6)
"""Table 1 of 001: analytics runs per sample."""
CPUS_S, CPUS_A = 2, 1
"""Table 2 of 001: the analytics gets 50 % of the simulation's size (only the ratio matters)."""


@dataclass(frozen=True)
class Sample:
    """One round at one footprint: its times (seconds per iteration) and the load around it."""

    round: int
    footprint: int
    node: int
    times: dict[str, float]
    load: tuple[float, float]

    @property
    def fraction(self) -> float:
        """The simulation's and the analytics' share of the node's memory."""
        return (self.footprint + ANALYTICS_BYTES) / self.node

    def slowdown_a(self, scenario: str) -> float:
        """The analytics' slowdown in ``scenario`` (eq. (1) of 001: its time over its time alone)."""
        return self.times[ANALYTICS_TIME[scenario]] / self.times["ana_alone"]

    @property
    def slowdown_s_oversub(self) -> float:
        """The simulation's slowdown while it shares its cores with the analytics."""
        return self.times["sim_oversub"] / self.times["sim_alone"]

    def sim_rate(self, scenario: str) -> float:
        """The simulation's speed while an analytics runs, as a fraction of its speed alone."""
        return {"oversubscription": 1 / self.slowdown_s_oversub, "stopcont": 0.0,
                "dynamic": self.times["sim_alone"] / self.times["sim_shrunk"]}[scenario]

    def dynamicity(self, scenario: str, n_a: int) -> float:
        """Eq. (2) of 001 for ``n_a`` analytics on the paper's timeline (module docstring)."""
        slowdown_a = self.slowdown_a(scenario)
        t_a = ANALYTICS_S * slowdown_a
        t_s = SIMULATION_S + n_a * t_a * (1 - self.sim_rate(scenario))
        w_s, w_a = weights(scenario, CPUS_S, CPUS_A, t_s, t_a, n_a)
        return dynamicity(w_s, w_a, t_s / SIMULATION_S, slowdown_a)

    def lowest_dynamicity(self, scenario: str) -> float:
        """The least dynamicity over Table 1's n_a (the paper's "as low as")."""
        return min(self.dynamicity(scenario, n_a) for n_a in N_A)


@dataclass(frozen=True)
class HalfMemory:
    """The rounds of one bench run, and its provenance (the file's comment lines)."""

    source: str
    samples: tuple[Sample, ...]
    provenance: str

    @property
    def small(self) -> int:
        """The footprint of fig. 3's condition."""
        return next(s.footprint for s in self.samples if s.fraction < FIG3_FRACTION)

    @property
    def large(self) -> tuple[int, ...]:
        """The footprints of fig. 4's condition, smallest first."""
        return tuple(sorted({s.footprint for s in self.samples if s.fraction > FIG4_FRACTION}))

    def at(self, footprint: int) -> dict[int, Sample]:
        """The samples of ``footprint`` by round."""
        return {s.round: s for s in self.samples if s.footprint == footprint}

    def values(self, footprint: int, metric: Callable[[Sample], float]) -> list[float]:
        """``metric`` of each round's sample of ``footprint``, in round order."""
        return [metric(sample) for _, sample in sorted(self.at(footprint).items())]

    def paired(self, footprint: int, metric: Callable[[Sample], float]) -> list[float]:
        """``metric`` at ``footprint`` over ``metric`` at the small footprint, round by round."""
        small = self.at(self.small)
        return [metric(sample) / metric(small[r]) for r, sample in sorted(self.at(footprint).items())]

    def loads(self) -> tuple[float, float]:
        """The least and the greatest 1-minute load average recorded around the rounds."""
        every = [x for s in self.samples for x in s.load]
        return min(every), max(every)


def parse_half_memory(text: str, source: str) -> HalfMemory:
    """The rounds of a results file's ``text`` (``source`` names it in errors); it needs one
    footprint below fig. 3's fraction and at least one above fig. 4's, each in every round."""
    lines = text.splitlines()
    numbered = [(n, line) for n, line in enumerate(lines, 1) if line.strip() and not line.startswith("#")]
    if not numbered or tuple(numbered[0][1].strip().split(",")) != COLUMNS:
        raise InputError(f"expected the header {','.join(COLUMNS)}", source=source,
                         line=numbered[0][0] if numbered else None)
    samples = []
    for (number, _), row in zip(numbered[1:], csv.DictReader(line for _, line in numbered), strict=True):
        try:
            times = {name: float(row[name]) for name in TIMES}
            load = (float(row["load_before"]), float(row["load_after"]))
            sample = Sample(int(row["round"]), int(row["footprint_bytes"]), int(row["node_bytes"]),
                            times, load)
        except (TypeError, ValueError):
            raise InputError("expected numbers in every column but started", source=source,
                             line=number) from None
        positive = all(math.isfinite(t) and t > 0 for t in times.values())
        if not positive or not 0 < sample.footprint < sample.node:
            raise InputError("expected times > 0 and 0 < footprint_bytes < node_bytes", source=source,
                             line=number)
        samples.append(sample)
    smalls = {s.footprint for s in samples if s.fraction < FIG3_FRACTION}
    larges = {s.footprint for s in samples if s.fraction > FIG4_FRACTION}
    if len(smalls) != 1 or not larges:
        raise InputError(f"needs one footprint_bytes under {FIG3_FRACTION:.0%} of node_bytes and at least "
                         f"one over {FIG4_FRACTION:.0%}", source=source, key="footprint_bytes")
    rounds = sorted({s.round for s in samples})
    for footprint in smalls | larges:
        if sorted(s.round for s in samples if s.footprint == footprint) != rounds or len(rounds) < 2:
            raise InputError(f"footprint {footprint} must have one row in every round (at least 2)",
                             source=source, key="round")
    provenance = " ".join(line.lstrip("# ").strip() for line in lines if line.startswith("#"))
    return HalfMemory(source, tuple(samples), provenance)


def read_half_memory(path: Path) -> HalfMemory:
    """The rounds of the results file at ``path``."""
    return parse_half_memory(read_input(path), str(path))
