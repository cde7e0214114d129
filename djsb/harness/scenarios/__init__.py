"""The scenarios of the execution stage (paper 001 sec. 4.1), one file each, found by name."""

from djsb.harness.scenarios.base import (
    SCENARIOS,
    CellState,
    PlotStyle,
    Scenario,
    SimulationHandle,
    register,
    scenario,
    scenario_names,
)

__all__ = ["SCENARIOS", "CellState", "PlotStyle", "Scenario", "SimulationHandle", "register", "scenario",
           "scenario_names"]
