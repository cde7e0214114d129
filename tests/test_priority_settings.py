"""The model's ``policy.priority`` section, one declaration per key (djsb/model/priority/: each
plugin's options record): the reference page is generated from the declarations, each key is read
by its declared reader and blamed at its own line, and the plugins' defaults are Slurm's and the
papers'."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import FIVE_JOBS, assert_edited_experiment_error

from djsb.model.priority import MultifactorPriority, MultifactorWeights, PspAgingPriority
from djsb.model.priority.accounts import AccountSpec
from djsb.model.priority.multifactor import MultifactorOptions
from djsb.model.priority.plugins import PRIORITY_PLUGINS
from djsb.model.priority.psp import PspAgingOptions
from djsb.model.priority.reference import reference
from djsb.setting import declared, required
from djsb.simulate.experiment import load_experiment

ROOT = Path(__file__).resolve().parents[1]
DAY = 86400.0
SIMULATE = FIVE_JOBS + """\
cluster:
  nodes: [{count: 2, cores: 4}]
policy:
  preset: marenostrum4
  priority:
    weights: {age: 5, qos: 2}
    decay_half_life: "1-00:00:00"
    calc_period: "10:00"
    accounts:
      phys: {shares: 3}
      hep: {parent: phys}
    user_shares: {bob: 2}
"""
"""A simulate config refining the marenostrum4 preset; its priority keys sit on lines 8-14."""


def test_the_reference_page_is_the_declarations() -> None:
    page = (ROOT / "docs" / "reference" / "priority.md").read_text()
    assert page == reference(), "docs/reference/priority.md is stale: run make reference"


def test_the_reference_lists_every_plugin_and_key_with_its_default() -> None:
    page = reference()
    for name in PRIORITY_PLUGINS.names():
        assert f"## `plugin: {name}`" in page
    for record in (MultifactorOptions, MultifactorWeights, AccountSpec, PspAgingOptions):
        assert declared(record), record
        assert required(record) == ()
        for name in declared(record):
            assert f"| `{name}` |" in page
    assert "| `max_age` | 604800.0 | s | PriorityMaxAge |" in page  # Slurm's default: 7 days
    assert "| `decay_half_life` | 604800.0 | s | PriorityDecayHalfLife |" in page  # 7 days
    assert "| `calc_period` | 300.0 | s | PriorityCalcPeriod |" in page  # 5 minutes
    assert "| `age` | 0.0 |  | PriorityWeightAge |" in page
    assert "| `fairshare` | 0.0 |  | PriorityWeightFairShare |" in page
    assert "| `time_step` | 150.0 | s | PriorityCalcPeriod |" in page  # paper 000's step


def test_the_plugins_defaults_are_the_declared_ones() -> None:
    plugin = MultifactorPriority(MultifactorWeights())
    assert (plugin.max_age, plugin.decay_half_life, plugin.calc_period) == (7 * DAY, 7 * DAY, 300.0)
    assert (plugin.favor_small, plugin.fairshare) == (False, "fair_tree")
    assert PspAgingPriority().calc_period == 150.0


def test_the_declared_readers_refine_the_preset(tmp_path: Path) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text(SIMULATE)
    priority = load_experiment(path).priority
    assert isinstance(priority, MultifactorPriority)
    # weights given replace the preset's whole set (004 Table 3.2's age 100000 etc. are gone)
    assert priority.weights == MultifactorWeights(age=5, qos=2)
    assert (priority.decay_half_life, priority.calc_period) == (DAY, 600.0)
    assert priority.max_age == 10 * DAY  # not given: the preset's (004 Table 3.3)
    assert priority.accounts == {"phys": AccountSpec("root", 3.0), "hep": AccountSpec("phys", 1.0)}
    assert priority.user_shares == {"bob": 2.0}


@pytest.mark.parametrize(("old", "new", "line", "key", "needle"), [
    ("qos: 2", "qos: high", 8, "policy.priority.weights.qos", "expected a number"),
    ("{age: 5,", "{ages: 5,", 8, "policy.priority.weights.ages", "unknown key"),
    ('"1-00:00:00"', "-1", 9, "policy.priority.decay_half_life", ">= 0"),
    ('"10:00"', "0", 10, "policy.priority.calc_period", ">= 1"),
    ("{shares: 3}", "{shares: lots}", 12, "policy.priority.accounts.phys.shares", "expected a number"),
    ("{parent: phys}", "{parnt: phys}", 13, "policy.priority.accounts.hep.parnt", "unknown key"),
    ("{bob: 2}", "{bob: many}", 14, "policy.priority.user_shares.bob", "expected a number"),
])
def test_a_bad_key_is_blamed_at_its_own_line(tmp_path: Path, old: str, new: str, line: int, key: str,
                                             needle: str) -> None:
    assert_edited_experiment_error(tmp_path, SIMULATE, old, new, line, key, needle)
