"""Node Weight (slurm.conf(5): "All things being equal, jobs will be allocated the nodes with the
lowest weight which satisfies their requirements"): the model places jobs on the lowest-weight nodes
first, from a config's node groups and from a site's slurm.conf."""

from __future__ import annotations

from pathlib import Path

from djsb.model import TEXTBOOK, ClusterSpec, Simulation
from djsb.model.cluster_spec import NodeSpec, PartitionSpec, by_weight
from djsb.model.sections import read_cluster
from djsb.slurmsite.slurm_conf import parse_slurm_conf
from djsb.slurmsite.slurm_config import cluster_spec
from djsb.workloads.job import TraceJob
from djsb.yamlnodes import load_yaml


def nodes_of(cluster: ClusterSpec, jobs: list[TraceJob]) -> dict[int, str]:
    frame = Simulation(jobs, cluster, TEXTBOOK).run().jobs
    return dict(zip(frame["job_id"].astype(int), frame["nodes"], strict=True))


def test_jobs_take_the_lightest_nodes_first() -> None:
    # n0 weighs 10, n1 and n2 weigh 1: the first 2-CPU job goes to n1, the second to n2, the third
    # to n0; with equal weights first fit takes n0, n1, n2
    heavy = [NodeSpec("n0", 2, weight=10), NodeSpec("n1", 2, weight=1), NodeSpec("n2", 2, weight=1)]
    jobs = [TraceJob(i, 0.0, 100.0, 2, requested_time=100.0) for i in (1, 2, 3)]
    assert nodes_of(ClusterSpec(by_weight(heavy), (PartitionSpec("batch"),)), jobs) == {1: "n1", 2: "n2", 3: "n0"}
    assert nodes_of(ClusterSpec.homogeneous(3, 2), jobs) == {1: "n0", 2: "n1", 3: "n2"}


def test_weight_from_a_config_and_from_slurm_conf(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("cluster:\n  nodes: [{count: 2, cores: 2, prefix: big, weight: 5}, {cores: 2, prefix: small}]\n")
    cluster = load_yaml(config).get("cluster")
    assert cluster is not None
    assert [(n.name, n.weight) for n in read_cluster(cluster).nodes] == [("small0", 1), ("big0", 5), ("big1", 5)]
    conf = parse_slurm_conf("NodeName=h1 CPUs=2 RealMemory=100 Weight=20\nNodeName=h[2-3] CPUs=2 RealMemory=100\n"
                            "PartitionName=p Nodes=h[1-3] Default=YES\n")
    assert [(n.name, n.weight) for n in cluster_spec(conf.partitions, conf.nodes, "p").nodes] == [
        ("h2", 1), ("h3", 1), ("h1", 20)]
