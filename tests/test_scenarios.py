"""The scenarios of paper 001 sec. 4.1 as objects: registry, hooks, config checks, styles."""

from __future__ import annotations

import pytest

from djsb.config import AppConfig
from djsb.errors import ConfigError
from djsb.registry import UnknownName
from djsb.scenarios import CellState, scenario, scenario_names


class RecordedSimulation:
    """A SimulationHandle that records what a scenario asked of the simulation."""

    def __init__(self) -> None:
        self.suspended = False
        self.actions: list[str] = []

    def suspend(self) -> None:
        self.suspended = True
        self.actions.append("suspend")

    def resume(self) -> None:
        self.suspended = False
        self.actions.append("resume")

    def set_threads(self, threads: int) -> None:
        self.actions.append(f"threads {threads}")


def app(tasks: int, cpus_per_task: int) -> AppConfig:
    return AppConfig(total_tasks=tasks, cpus_per_task=cpus_per_task, total_memory=2**20, exec_time=10.0)


PAPER = ("oversubscription", "stopcont", "dynamic")  # sec. 4.1 of 001


def test_the_papers_scenarios_come_first_in_their_fixed_order() -> None:
    assert scenario_names()[:3] == PAPER


@pytest.mark.parametrize(("alias", "name"), [("stop&continue", "stopcont"), ("Stop_Continue", "stopcont"),
                                             ("oversubscribe", "oversubscription"), ("cooperative", "dynamic"),
                                             ("cooperative_dynamic", "dynamic"), ("dynamic", "dynamic")])
def test_aliases_name_the_same_scenario(alias: str, name: str) -> None:
    assert scenario(alias).name == name


def test_unknown_scenario_lists_the_known_ones() -> None:
    with pytest.raises(UnknownName, match="unknown scenario 'gang'") as info:
        scenario("gang")
    assert set(PAPER) <= set(info.value.choices)


def test_styles_are_distinct() -> None:
    # Figures of different runs compare at a glance only if no two scenarios look alike.
    assert [scenario(name).style.label for name in PAPER] == ["oversubscription", "stop&continue", "dynamic"]
    styles = [scenario(name).style for name in scenario_names()]
    assert len({s.colour for s in styles}) == len({s.marker for s in styles}) == len(styles)


def test_oversubscription_leaves_the_simulation_alone() -> None:
    sim = RecordedSimulation()
    cell = CellState(app(1, 2), app(1, 1), 0)
    scenario("oversubscription").before_analytics(sim, cell)
    scenario("oversubscription").after_analytics(sim, cell)
    assert sim.actions == []


def test_stopcont_suspends_once_and_resumes_after_the_last_analytics() -> None:
    # Two overlapping analytics: the first submission suspends, the second finds it suspended;
    # the first end leaves one running (no resume), the second end resumes.
    sim, stopcont = RecordedSimulation(), scenario("stopcont")
    sim_app, ana_app = app(1, 2), app(1, 1)
    stopcont.before_analytics(sim, CellState(sim_app, ana_app, 0))
    stopcont.before_analytics(sim, CellState(sim_app, ana_app, 1))
    stopcont.after_analytics(sim, CellState(sim_app, ana_app, 1))
    assert sim.actions == ["suspend"]
    stopcont.after_analytics(sim, CellState(sim_app, ana_app, 0))
    assert sim.actions == ["suspend", "resume"]


def test_dynamic_shrinks_by_each_analytics_share_and_grows_back() -> None:
    # Simulation 2 tasks x 4 CPUs, analytics 1 task x 2 CPUs: each task lends ceil(2 / 2) = 1 CPU
    # per analytics. Two overlapping analytics: 4 - 1 = 3, 4 - 2 = 2; their ends: 4 - 1 = 3, 4 - 0 = 4.
    sim, dynamic = RecordedSimulation(), scenario("dynamic")
    sim_app, ana_app = app(2, 4), app(1, 2)
    for running in (0, 1):
        dynamic.before_analytics(sim, CellState(sim_app, ana_app, running))
    for running in (1, 0):
        dynamic.after_analytics(sim, CellState(sim_app, ana_app, running))
    assert sim.actions == ["threads 3", "threads 2", "threads 3", "threads 4"]


def test_dynamic_keeps_at_least_one_thread() -> None:
    # 1 task x 2 CPUs lending 1 CPU to each of 3 analytics: 2 - 3 = -1, floored to one thread.
    sim = RecordedSimulation()
    scenario("dynamic").before_analytics(sim, CellState(app(1, 2), app(1, 1), 2))
    assert sim.actions == ["threads 1"]


def test_dynamic_needs_cpus_to_lend() -> None:
    # 2 tasks x 2 CPUs, analytics of 3 CPUs: each task lends ceil(3 / 2) = 2 of its 2 CPUs: refused.
    with pytest.raises(ConfigError, match="must lend 2 of its 2 CPUs") as info:
        scenario("dynamic").check(app(2, 2), app(1, 3))
    assert info.value.key == "analytics"
    scenario("dynamic").check(app(2, 3), app(1, 3))  # lends 2 of 3, keeps 1
    for name in ("oversubscription", "stopcont"):
        scenario(name).check(app(2, 2), app(1, 3))


def test_every_analytics_asks_to_share_the_simulations_cpus() -> None:
    # The scheduler still counts the simulation's CPUs as allocated in all three scenarios: a
    # suspended job keeps its allocation and a shrink happens inside the job (DLB), not in the scheduler.
    assert all(scenario(name).analytics_oversubscribes for name in PAPER)
