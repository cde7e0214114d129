"""Oversubscription (paper 001 sec. 4.1): the analytics shares the simulation's CPUs and the OS
arbitrates; nothing is done to the simulation."""

from __future__ import annotations

from djsb.scenarios.base import PlotStyle, Scenario, register


@register
class Oversubscription(Scenario):
    """Both applications run at once on the same CPUs."""

    name = "oversubscription"
    aliases = ("oversubscribe",)
    style = PlotStyle(order=0, label="oversubscription", colour="tab:red", marker="o")
    analytics_oversubscribes = True

    def weights(self, n_cpus_s: int, n_cpus_a: int, t_s: float, t_a: float,
                n_a: int) -> tuple[float, float]:
        """Eq. (3)-(4) of 001: each application is charged half of the CPUs they share.

        w_s = N_s T_s - 1/2 N_a n_a T_a,  w_a = 1/2 N_a T_a.
        """
        return (n_cpus_s * t_s - 0.5 * n_cpus_a * n_a * t_a, 0.5 * n_cpus_a * t_a)
