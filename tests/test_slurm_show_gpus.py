"""The model's cluster read from a running Slurm with GPUs: ``scontrol show node`` / ``partition`` as
recorded on the mini-cluster started with ``DJSB_SLURM_GPUS=a100:2`` (4 nodes g1..g4, 2 CPUs and
2048 MiB each, two a100 GPUs each; a 2-node job of one GPU per node was running on g1 and g2), and
``scontrol show node`` of the same cluster started with ``DJSB_SLURM_GPUS=2`` (two GPUs of no type;
a ``--gres=gpu:1`` job ran on g1-g2 and a ``--gpus=3`` job on g3-g4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from djsb.jobs.scontrol import parse_show_records
from djsb.slurmsite.slurm_config import SlurmConfigError, cluster_spec

SHOW = Path(__file__).parent / "fixtures" / "slurm_show"


def records(name: str) -> list[dict[str, str]]:
    return parse_show_records((SHOW / name).read_text())


def test_each_node_gets_its_gres_gpus() -> None:
    cluster = cluster_spec(records("show_partition_gpus.txt"), records("show_node_gpus.txt"), "shared")
    assert [(n.name, n.cores, n.memory_mb, n.gpus) for n in cluster.nodes] == \
        [(f"g{i}", 2, 2048.0, (("a100", 2),)) for i in range(1, 5)]


def test_untyped_gpus_are_of_no_type() -> None:
    cluster = cluster_spec(records("show_partition_gpus.txt"), records("show_node_gpus_untyped.txt"), "shared")
    assert [(n.name, n.gpus) for n in cluster.nodes] == [(f"g{i}", (("", 2),)) for i in range(1, 5)]


def test_nodes_without_gres_have_no_gpus() -> None:
    # the mini-cluster without DJSB_SLURM_GPUS: Gres=(null)
    cluster = cluster_spec(records("show_partition.txt"), records("show_node.txt"), "shared")
    assert {n.gpus for n in cluster.nodes} == {()}
    # a slurm.conf node line has no Gres key at all unless it gives one
    nodes = [{"NodeName": "a", "CPUTot": "4", "RealMemory": "100"},
             {"NodeName": "b", "CPUTot": "4", "RealMemory": "100", "Gres": "gpu:2,gpu:v100:1,mps:100"}]
    partition = {"PartitionName": "p", "Nodes": "a,b"}
    assert [n.gpus for n in cluster_spec([partition], nodes, "p").nodes] == [(), (("", 2), ("v100", 1))]


def test_a_gres_slurm_would_not_write_names_the_node() -> None:
    nodes = [{"NodeName": "a", "CPUTot": "4", "RealMemory": "100", "Gres": "gpu:a:b:2"}]
    with pytest.raises(SlurmConfigError, match="node a: Gres=gpu:a:b:2"):
        cluster_spec([{"PartitionName": "p", "Nodes": "a"}], nodes, "p")
