"""Priority plugins and presets found by name; each plugin reads its own section with file:line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import assert_experiment_error

from djsb.model.priority import FifoPriority, MultifactorPriority, PspAgingPriority
from djsb.model.priority.plugins import PRESETS, PRIORITY_PLUGINS
from djsb.simulate import load_experiment

HEAD = """\
workload:
  generator: poisson_exponential
  params: {n_jobs: 5, arrival_rate: 0.5, service_rate: 1.0}
cluster:
  nodes: [{count: 2, cores: 1}]
policy:
"""


def experiment(tmp_path: Path, policy: str) -> Path:
    path = tmp_path / "experiment.yaml"
    path.write_text(HEAD + policy)
    return path


def test_every_plugin_and_preset_is_registered() -> None:
    assert set(PRIORITY_PLUGINS.names()) == {"fifo", "multifactor", "psp", "psp_aging"}
    assert set(PRESETS.names()) == {"fcfs", "marenostrum4", "psp", "psp_aging", "textbook"}


@pytest.mark.parametrize(("policy", "kind"), [
    ("  priority: {plugin: fifo}\n", FifoPriority),
    ("  priority: {plugin: FIFO}\n", FifoPriority),
    ("  priority: {}\n", FifoPriority),
    ("  priority: {weights: {age: 1}}\n", MultifactorPriority),
    ("  priority: {plugin: psp_aging}\n", PspAgingPriority),
])
def test_the_section_picks_its_plugin(tmp_path: Path, policy: str, kind: type) -> None:
    assert isinstance(load_experiment(experiment(tmp_path, policy)).priority, kind)


def test_psp_time_step_is_its_calc_period(tmp_path: Path) -> None:
    priority = load_experiment(experiment(tmp_path, "  priority: {plugin: psp_aging, time_step: 60}\n")).priority
    assert priority.calc_period == 60


def test_a_section_refines_its_preset(tmp_path: Path) -> None:
    # marenostrum4 (paper 004 Table 3.3): PriorityMaxAge 10 days = 864000 s, Fair Tree; weights overridden
    priority = load_experiment(experiment(tmp_path, "  preset: marenostrum4\n  priority:\n    weights: {age: 5}\n")
                               ).priority
    assert isinstance(priority, MultifactorPriority)
    assert priority.weights.age == 5 and priority.weights.fairshare == 0
    assert priority.max_age == 10 * 86400 and priority.fairshare == "fair_tree"


@pytest.mark.parametrize(("policy", "line", "key", "needle"), [
    ("  priority: {plugin: gang}\n", 7, "policy.priority.plugin",
     "unknown priority plugin 'gang' (choose from"),
    ("  priority:\n    plugin: fifo\n    weights: {age: 1}\n", 9, "policy.priority.weights", "unknown key"),
    ("  priority:\n    plugin: multifactor\n    time_step: 5\n", 9, "policy.priority.time_step", "unknown key"),
    ("  priority:\n    plugin: multifactor\n    fairshare: tree\n", 9, "policy.priority.fairshare",
     "unknown fair share algorithm 'tree' (choose fair_tree or classic)"),
    ("  priority:\n    plugin: multifactor\n    max_age: 0\n", 9, "policy.priority.max_age", "must be"),
    ("  priority:\n    plugin: psp_aging\n    time_step: fast\n", 9, "policy.priority.time_step",
     "expected a number"),
    ("  preset: mn5\n", 7, "policy.preset", "unknown preset 'mn5' (choose from marenostrum4, textbook, fcfs, psp, psp_aging)"),
])
def test_bad_options_name_file_line_and_key(tmp_path: Path, policy: str, line: int, key: str,
                                            needle: str) -> None:
    assert_experiment_error(experiment(tmp_path, policy), line, key, needle)
