"""The scenarios of the execution stage (paper 001 sec. 4.1), one file each, found by name."""

from djsb.scenarios.base import (
    SCENARIOS,
    Application,
    CellState,
    PlotStyle,
    Scenario,
    SimulationHandle,
    register,
    scenario,
    scenario_names,
)

__all__ = ["SCENARIOS", "Application", "CellState", "PlotStyle", "Scenario", "SimulationHandle", "register",
           "scenario", "scenario_names"]
