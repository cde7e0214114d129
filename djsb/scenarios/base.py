"""What a scenario of the execution stage is (paper 001 sec. 4.1), and the registry of scenarios.

Every scenario runs the same cell: the simulation starts, then n_a analytics are submitted on its
resources one after another. A scenario owns only what differs between them:

- what happens to the simulation just before an analytics is submitted and just after analytics
  end (:meth:`Scenario.before_analytics`, :meth:`Scenario.after_analytics`);
- whether the analytics asks the scheduler to oversubscribe the simulation's CPUs;
- how the two applications are weighted in the dynamicity (:meth:`Scenario.weights`, eq. 3-8);
- what the configuration must allow for the scenario to be meaningful (:meth:`Scenario.check`);
- how it is drawn: label, colour, marker, and its place in the fixed order of tables and figures.

A new scenario is one file in this package: a subclass decorated with :func:`register`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Protocol

from djsb.registry import Registry


class Application(Protocol):
    """What a scenario reads of an application's config (djsb.config.AppConfig is one)."""

    @property
    def total_tasks(self) -> int:
        """The application's tasks."""

    @property
    def cpus_per_task(self) -> int:
        """The CPUs of each task."""

    @property
    def total_cpus(self) -> int:
        """total_tasks x cpus_per_task."""


class SimulationHandle(Protocol):
    """The running simulation of a cell, as a scenario may act on it (the driver implements it)."""

    @property
    def suspended(self) -> bool:
        """Is the simulation suspended now?"""

    def suspend(self) -> None:
        """Stop the simulation through the scheduler (scontrol suspend, bstop, qmod -sj...)."""

    def resume(self) -> None:
        """Resume a suspended simulation."""

    def set_threads(self, threads: int) -> None:
        """Tell the malleable simulation, through its control file, how many threads per task to use."""


@dataclass(frozen=True)
class CellState:
    """What a scenario knows when it acts.

    ``running`` is the number of analytics running now; before a submission it does not count the
    analytics about to be submitted.
    """

    simulation: Application
    analytics: Application
    running: int


@dataclass(frozen=True)
class PlotStyle:
    """How a scenario is drawn (matplotlib colour and marker) and its place in tables and figures."""

    order: int
    label: str
    colour: str
    marker: str


class Scenario(ABC):
    """One scenario of the execution stage; subclasses are stateless."""

    name: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    style: ClassVar[PlotStyle]
    analytics_oversubscribes: ClassVar[bool]

    def check(self, simulation: Application, analytics: Application) -> None:  # noqa: B027 - optional hook
        """Raise ConfigError(message, key=section) when the applications cannot run this scenario."""

    def before_analytics(self, sim: SimulationHandle, cell: CellState) -> None:  # noqa: B027 - optional
        """Act on the (running) simulation just before an analytics is submitted; by default nothing."""

    def after_analytics(self, sim: SimulationHandle, cell: CellState) -> None:  # noqa: B027 - optional
        """Act on the (running) simulation after analytics ended; by default nothing."""

    @abstractmethod
    def weights(self, n_cpus_s: int, n_cpus_a: int, t_s: float, t_a: float,
                n_a: int) -> tuple[float, float]:
        """(w_s, w_a) of eq. (2) of 001 for a cell: the CPU-time each application really used.

        ``t_s`` is the simulation's execution time in the scenario, ``t_a`` the mean execution time
        of its n_a analytics, ``n_cpus_*`` the CPUs each application was given.
        """


SCENARIOS: Registry[type[Scenario]] = Registry("scenario", "djsb.scenarios")


def register(cls: type[Scenario]) -> type[Scenario]:
    """Class decorator: make a scenario known by its ``name`` and ``aliases``."""
    return SCENARIOS.register(cls.name, *cls.aliases)(cls)


def scenario(name: str) -> Scenario:
    """The scenario called ``name`` or one of its aliases (UnknownName, a ValueError, if none)."""
    return SCENARIOS.get(name)()


def scenario_names() -> tuple[str, ...]:
    """Every scenario's name in the fixed order of tables and figures."""
    return tuple(sorted(SCENARIOS.names(), key=lambda name: SCENARIOS.get(name).style.order))
