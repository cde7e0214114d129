"""Table II of paper 002 on the pool's baseline setup (configs/pool-baseline.yaml: X0, 160 computers
in 8 rooms drawn from 002's statistics, 2,000 tasks over two weeks, 35 days): the usage-based
selection policies C2 and C3 beat Condor's random C1.

002 measures on the Newcastle pool (1,359 computers, 35 rooms, the 2010 logs) mean overheads of
20.03 (C1), 15.05 (C2) and 15.77 (C3) minutes and energies of 137.54, 123.58 and 117.43 mWh.
"""

from __future__ import annotations

import functools
from pathlib import Path
from tempfile import TemporaryDirectory

import pytest
import yaml

from djsb.pool.runner import run_point

BASELINE = Path(__file__).resolve().parents[1] / "configs" / "pool-baseline.yaml"


@functools.cache
def baseline(seed: int, placement: str) -> dict[str, float]:
    """The metrics of the baseline config under ``placement``, its pool and tasks drawn from ``seed``."""
    config = yaml.safe_load(BASELINE.read_text())
    config["seed"] = seed
    config["policy"]["placement"] = placement
    with TemporaryDirectory() as out:
        return run_point(config, Path(out))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_c2_and_c3_have_less_overhead_than_c1(seed: int) -> None:
    # Fewer evictions (a task on a less used computer is less often taken back by a user) make
    # completed good tasks end sooner. Measured, seed 1: C1 203.4, C2 114.4, C3 149.7 minutes;
    # seed 2: 271.5, 173.5, 186.6; seed 3: 242.8, 170.6, 149.2.
    c1, c2, c3 = (baseline(seed, p)["mean_overhead_minutes"] for p in ("C1", "C2", "C3"))
    assert c2 < c1 and c3 < c1


@pytest.mark.slow
def test_c2_and_c3_use_less_energy_than_c1_on_the_config() -> None:
    # The config's own seed (1): C1 2,904 kWh, C2 2,745, C3 2,757 added by the pool's tasks. This
    # holds for this drawn pool, not for every one: C2 and C3 rank computers by idle share alone,
    # and where the least used rooms are of the legacy type (Table I: 100-180 W active against 57 W)
    # their extra watts outweigh the evictions saved (seed 3: 2,642, 2,715, 2,819 kWh, with 7,795,
    # 9,395 and 12,197 run hours on legacy computers).
    c1, c2, c3 = (baseline(1, p)["energy_kwh"] for p in ("C1", "C2", "C3"))
    assert c2 < c1 and c3 < c1
