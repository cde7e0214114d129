"""The model's cluster section, one declaration per key (djsb/model/sections.py's NodeGroup,
djsb/model/cluster_spec.py's PartitionSpec and QosSpec): the reference page is generated from the
declarations, and each key is read by its declared reader and blamed at its own line."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import FIVE_JOBS, assert_edited_experiment_error

from djsb.model.cluster_spec import PartitionSpec, QosSpec
from djsb.model.sections import NodeGroup, reference
from djsb.setting import declared, required
from djsb.simulate.experiment import load_experiment

ROOT = Path(__file__).resolve().parents[1]
SIMULATE = FIVE_JOBS + """\
cluster:
  nodes:
    - {count: 2, cores: 4, prefix: a}
    - {count: 1, cores: 8, memory_mb: 2048, prefix: a}
  partitions:
    - {name: p, max_time: "1:00:00", oversubscribe: force:2}
  qos:
    - {name: normal, max_wall: UNLIMITED, max_jobs_per_user: 3}
"""
"""A simulate config whose cluster keys sit on lines 5-10."""


def test_the_reference_page_is_the_declarations() -> None:
    page = (ROOT / "docs" / "reference" / "cluster.md").read_text()
    assert page == reference(), "docs/reference/cluster.md is stale: run make reference"


def test_the_reference_lists_every_key_with_its_default() -> None:
    page = reference()
    for record in (NodeGroup, PartitionSpec, QosSpec):
        assert declared(record), record
        for name in declared(record):
            assert f"| `{name}` |" in page
    assert "| `cores` | required | cores | CPUs |" in page
    assert "| `max_time` | none | s | MaxTime |" in page
    assert "| `oversubscribe` | NO |  | OverSubscribe |" in page
    assert required(NodeGroup) == ("cores",)
    assert required(PartitionSpec) == required(QosSpec) == ("name",)


def test_the_declared_readers_build_the_cluster(tmp_path: Path) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text(SIMULATE)
    cluster = load_experiment(path).cluster
    # the second group's names go on from the first's: a0, a1 (4 cores), then a2 (8 cores, 2048 MB)
    assert [(n.name, n.cores, n.memory_mb) for n in cluster.nodes] == \
        [("a0", 4, None), ("a1", 4, None), ("a2", 8, 2048.0)]
    (part,) = cluster.partitions
    assert (part.max_time, part.oversubscribe, part.share, part.forced) == (3600.0, "FORCE:2", 2, True)
    assert (part.min_cpus, part.priority_tier) == (1, 1)  # the declared defaults
    (qos,) = cluster.qos
    assert (qos.max_wall, qos.max_jobs_per_user, qos.priority) == (None, 3, 0)


@pytest.mark.parametrize(("old", "new", "line", "key", "needle"), [
    ("{count: 2, cores: 4, prefix: a}", "{count: 2, prefix: a}", 5, "cluster.nodes[0]", "missing key 'cores'"),
    ("cores: 8,", "cores: 0,", 6, "cluster.nodes[1].cores", "must be >= 1"),
    ("memory_mb: 2048", "memory_mb: lots", 6, "cluster.nodes[1].memory_mb", "expected a number"),
    ("max_time: \"1:00:00\"", "max_time: 0", 8, "cluster.partitions[0].max_time", ">= 1"),
    ("force:2", "sometimes", 8, "cluster.partitions[0].oversubscribe", "invalid OverSubscribe"),
    ("{name: p,", "{nam: p,", 8, "cluster.partitions[0].nam", "unknown key"),
    ("max_jobs_per_user: 3", "max_jobs_per_user: 0", 10, "cluster.qos[0].max_jobs_per_user", "must be >= 1"),
])
def test_a_bad_key_is_blamed_at_its_own_line(tmp_path: Path, old: str, new: str, line: int, key: str,
                                             needle: str) -> None:
    assert_edited_experiment_error(tmp_path, SIMULATE, old, new, line, key, needle)
