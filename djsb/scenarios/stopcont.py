"""Stop&continue (paper 001 sec. 4.1): the simulation is suspended through the scheduler before an
analytics is submitted, and resumed when no analytics runs any more."""

from __future__ import annotations

from djsb.scenarios.base import CellState, PlotStyle, Scenario, SimulationHandle, register


@register
class StopContinue(Scenario):
    """The analytics runs alone on the CPUs of the stopped simulation."""

    name = "stopcont"
    aliases = ("stop&continue", "stop_continue")
    style = PlotStyle(order=1, label="stop&continue", colour="tab:blue", marker="s")
    # The scheduler still counts the suspended simulation's CPUs as allocated on its nodes.
    analytics_oversubscribes = True

    def before_analytics(self, sim: SimulationHandle, cell: CellState) -> None:
        """Suspend the simulation unless an earlier analytics already did."""
        if not sim.suspended:
            sim.suspend()

    def after_analytics(self, sim: SimulationHandle, cell: CellState) -> None:
        """Resume the simulation once the last running analytics ended."""
        if cell.running == 0 and sim.suspended:
            sim.resume()

    def weights(self, n_cpus_s: int, n_cpus_a: int, t_s: float, t_a: float,
                n_a: int) -> tuple[float, float]:
        """Eq. (5)-(6) of 001: the simulation is charged its CPUs minus the time it was stopped.

        w_s = N_s (T_s - n_a T_a),  w_a = N_a T_a.
        """
        return (n_cpus_s * (t_s - n_a * t_a), n_cpus_a * t_a)
