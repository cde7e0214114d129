"""The cells of a run, in the order the driver runs them (what the progress bar counts)."""

from __future__ import annotations

from djsb.config import GeneralConfig
from djsb.harness.driver import planned_cells


def test_calibration_then_reference_samples_then_execution_cells() -> None:
    general = GeneralConfig(num_of_samples=2, num_of_dyn_analysis=(1, 4), scenarios=("stopcont", "dynamic"))
    cells = planned_cells(general)
    # 1 calibration + 2 reference samples + 2 scenarios x 2 n_a x 2 samples = 1 + 2 + 8 = 11
    assert len(cells) == 11
    assert cells[:3] == [("calibration", "", 0, 0), ("reference", "", 0, 0), ("reference", "", 0, 1)]
    # scenario-major, then n_a, then sample, as listed in the config
    assert cells[3:7] == [("execution", "stopcont", 1, 0), ("execution", "stopcont", 1, 1),
                          ("execution", "stopcont", 4, 0), ("execution", "stopcont", 4, 1)]
    assert cells[-1] == ("execution", "dynamic", 4, 1)
