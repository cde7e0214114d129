"""Cooperative dynamic (paper 001 sec. 4.1): the malleable simulation is told, through its control
file, to shrink by the CPUs an analytics needs before it is submitted, and to grow back when it
ends (DLB-DROM in the paper)."""

from __future__ import annotations

import math

from djsb.errors import ConfigError
from djsb.scenarios.base import Application, CellState, PlotStyle, Scenario, SimulationHandle, register


def lent_per_task(simulation: Application, analytics: Application) -> int:
    """CPUs each simulation task lends to one analytics: its CPUs spread over the simulation's tasks."""
    return math.ceil(analytics.total_cpus / simulation.total_tasks)


def threads_left(simulation: Application, analytics: Application, lending_to: int) -> int:
    """Threads per simulation task while it lends to ``lending_to`` analytics (always at least one)."""
    return max(1, simulation.cpus_per_task - lent_per_task(simulation, analytics) * lending_to)


@register
class Dynamic(Scenario):
    """The simulation shrinks to make room for each analytics and grows back after it."""

    name = "dynamic"
    aliases = ("cooperative", "cooperative_dynamic")
    style = PlotStyle(order=2, label="dynamic", colour="tab:green", marker="^")
    # The shrink happens inside the job (DLB): the scheduler still sees the simulation's CPUs allocated.
    analytics_oversubscribes = True

    def check(self, simulation: Application, analytics: Application) -> None:
        """Each simulation task must be able to lend an analytics' share and keep one CPU."""
        lent = lent_per_task(simulation, analytics)
        if lent >= simulation.cpus_per_task:
            raise ConfigError(
                f"in the dynamic scenario each simulation task must lend {lent} of its "
                f"{simulation.cpus_per_task} CPUs and keep at least one: give the simulation more "
                "cpus_per_task or the analytics fewer CPUs", key="analytics")

    def before_analytics(self, sim: SimulationHandle, cell: CellState) -> None:
        """Shrink by one more analytics' share."""
        sim.set_threads(threads_left(cell.simulation, cell.analytics, cell.running + 1))

    def after_analytics(self, sim: SimulationHandle, cell: CellState) -> None:
        """Grow back to what the analytics still running leave."""
        sim.set_threads(threads_left(cell.simulation, cell.analytics, cell.running))

    def weights(self, n_cpus_s: int, n_cpus_a: int, t_s: float, t_a: float,
                n_a: int) -> tuple[float, float]:
        """Eq. (7)-(8) of 001: the simulation is charged its CPUs minus those it lent.

        w_s = N_s T_s - N_a n_a T_a,  w_a = N_a T_a.
        """
        return (n_cpus_s * t_s - n_cpus_a * n_a * t_a, n_cpus_a * t_a)
