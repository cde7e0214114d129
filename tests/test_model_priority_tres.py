"""Multifactor's TRES term, PriorityWeightTRES (djsb/model/priority/multifactor.py), worked by hand
from Slurm 22.05's priority_multifactor.c: ``_get_tres_factors`` (a pending job's ``tres_req_cnt``
divided by its partition's ``tres_cnt``, or as it is with PriorityFlags=NO_NORMAL_TRES) and
``_get_tres_prio_weighted`` (each factor times its weight, summed into the priority)."""

from __future__ import annotations

from typing import Any

import pytest

from djsb.model import ClusterSpec, SchedulerConfig, Simulation
from djsb.model.cluster_spec import NodeSpec, PartitionSpec
from djsb.model.cluster_state import ClusterState
from djsb.model.job import SimJob
from djsb.model.priority.base import PriorityContext
from djsb.model.priority.multifactor import MultifactorPriority, MultifactorWeights
from djsb.slurmsite.slurm_conf import parse_slurm_conf
from djsb.slurmsite.slurm_config import priority_plugin
from djsb.workloads.gpus import GpuRequest
from djsb.workloads.job import TraceJob

CLUSTER = ClusterSpec((NodeSpec("n0", 8, 1000.0), NodeSpec("n1", 8, 1000.0, gpus=(("gpu", 4),))),
                      (PartitionSpec("big"), PartitionSpec("small", nodes=("n0",))))
"""Partition big: 16 CPUs, 2000 MB, 2 nodes, 4 GPUs; small: 8 CPUs, 1000 MB, 1 node, no GPU."""


def priority(plugin: MultifactorPriority, partition: int, cpus: int, **more: Any) -> float:
    """The priority ``plugin`` gives at submission a job of ``cpus`` in partition ``partition``."""
    plugin.setup(PriorityContext(CLUSTER, (("u", "a"),)))
    part = ClusterState(CLUSTER).partitions[partition]
    trace = TraceJob(1, 0, 10, cpus, 10, user="u", account="a", **more)
    job = SimJob(trace, part, CLUSTER.qos[0], 10, cpus, 0.0)
    plugin.on_submit(job, 0.0)
    return job.priority


def test_each_tres_is_a_fraction_of_the_partition_s() -> None:
    # big: cpu 4/16 * 800 = 200, mem 500/2000 * 400 = 100, node 1/2 * 100 = 50, gres/gpu 2/4 * 1000
    # = 500: 850. In small the same job's 4 CPUs are 4/8 * 800 = 400, 500/1000 * 400 = 200, 1/1 * 100
    # = 100, and small has no GPU (no term): 700.
    weights = MultifactorWeights(tres=(("cpu", 800.0), ("mem", 400.0), ("node", 100.0),
                                       ("gres/gpu", 1000.0)))
    assert priority(MultifactorPriority(weights), 0, 4, memory_mb=500, gpus=GpuRequest(2)) == 850
    assert priority(MultifactorPriority(weights), 1, 4, memory_mb=500) == 700


def test_no_normal_tres_takes_the_tres_as_they_are() -> None:
    # PriorityFlags=NO_NORMAL_TRES: 4 CPUs * 10 + 1 node * 5 = 45, whatever the partition.
    weights = MultifactorWeights(tres=(("cpu", 10.0), ("node", 5.0)))
    assert priority(MultifactorPriority(weights, raw_tres=True), 0, 4) == 45
    assert priority(MultifactorPriority(weights, raw_tres=True), 1, 4) == 45


def test_the_tres_term_orders_the_queue() -> None:
    # One 8-CPU node, partition of 8 CPUs; job 1 holds it [0, 100). Job 2 (4 CPUs, t=1) and job 3
    # (6 CPUs, t=2) cannot run together. PriorityWeightTRES cpu=800: job 2 4/8 * 800 = 400, job 3
    # 6/8 * 800 = 600: job 3 starts at 100 and job 2 at 200. Without the weight (FIFO among equals)
    # job 2 starts first at 100, then job 3 at 200.
    jobs = [TraceJob(1, 0, 100, 8, 100), TraceJob(2, 1, 100, 4, 100), TraceJob(3, 2, 100, 6, 100)]
    cluster = ClusterSpec.homogeneous(1, 8)
    config = SchedulerConfig(backfill="none", sched_interval=0)

    def starts(weights: MultifactorWeights) -> dict[int, float]:
        result = Simulation(jobs, cluster, config, MultifactorPriority(weights)).run().jobs
        return dict(zip(result["job_id"], result["start"], strict=True))

    assert starts(MultifactorWeights(tres=(("cpu", 800.0),))) == {1: 0, 3: 100, 2: 200}
    assert starts(MultifactorWeights()) == {1: 0, 2: 100, 3: 200}


@pytest.mark.parametrize(("flags", "raw"), [("", False), ("PriorityFlags=NO_NORMAL_TRES,MAX_TRES\n", True),
                                            ("PriorityWeightTRES=(null)\n", False)])
def test_a_site_s_priority_weight_tres_is_read(flags: str, raw: bool) -> None:
    conf = parse_slurm_conf("PriorityType=priority/multifactor\n"
                            "PriorityWeightTRES=CPU=1000,Mem=2000,GRES/gpu=3000\n" + flags)
    make, notes = priority_plugin(conf.config)
    plugin = make()
    assert isinstance(plugin, MultifactorPriority)
    weighted = (("cpu", 1000.0), ("mem", 2000.0), ("gres/gpu", 3000.0)) if "(null)" not in flags else ()
    assert plugin.weights.tres == weighted  # scontrol show config prints (null) when it is unset
    assert plugin.raw_tres is raw
    assert not [note for note in notes if "TRES" in note]
