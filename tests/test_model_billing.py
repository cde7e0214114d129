"""A job's billing from its partition's TRESBillingWeights, and the fair share usage it charges
(djsb/model/billing.py): hand-worked from assoc_mgr.c ``assoc_mgr_tres_weighted``."""

from __future__ import annotations

import pytest

from djsb import slurm_text
from djsb.history.notes import unmodelled
from djsb.model import ClusterSpec, QosSpec, SchedulerConfig, Simulation
from djsb.model.billing import billing
from djsb.model.cluster_spec import NodeSpec, PartitionSpec
from djsb.model.priority.multifactor import MultifactorPriority, MultifactorWeights
from djsb.slurmsite.slurm_conf import parse_slurm_conf
from djsb.slurmsite.slurm_config import cluster_spec, priority_plugin
from djsb.workloads.gpus import GpuRequest
from djsb.workloads.job import TraceJob

WEIGHTS = (("cpu", 1.0), ("mem", 0.25 / 1024), ("gres/gpu", 3.0))
"""CPU=1.0,Mem=0.25G,GRES/gpu=3.0: 0.25 per GB of memory is 0.25 / 1024 per MB."""


def test_slurm_text_weights_divide_a_memory_weight_by_its_unit() -> None:
    # _tres_weight_item: the weight's unit letter divides it by the unit in the TRES's base (MB).
    assert slurm_text.tres_weights("CPU=1.0,Mem=0.25G,GRES/gpu=3.0") == WEIGHTS
    assert slurm_text.tres_weights("") == ()
    with pytest.raises(ValueError, match="not a number"):
        slurm_text.tres_weights("CPU=2G")
    with pytest.raises(ValueError, match="expected CPU="):
        slurm_text.tres_weights("license/x=1")


def cluster(weights: tuple[tuple[str, float], ...]) -> ClusterSpec:
    return ClusterSpec((NodeSpec("n0", 8, 16384, (("gpu", 4),)),), (PartitionSpec("batch", billing_weights=weights),),
                       (QosSpec("normal"),))


def started(weights: tuple[tuple[str, float], ...], max_tres: bool = False,
            priority: MultifactorPriority | None = None) -> tuple[float, Simulation]:
    sim = Simulation([], cluster(weights), SchedulerConfig(sched_interval=0.0), priority)
    job = sim.submit(TraceJob(1, 0.0, 100.0, 4, requested_time=100.0, memory_mb=8192, user="u1", account="a1",
                              gpus=GpuRequest(2)))
    return billing(job, max_tres), sim


def test_billing_sums_the_weighted_tres_or_takes_the_largest() -> None:
    # 4 CPUs x 1 + 8192 MB x 0.25/1024 (2) + 2 GPUs x 3 (6) = 12; MAX_TRES: max(4, 2, 6) = 6;
    # no weights: the CPUs, 4.
    assert started(WEIGHTS)[0] == pytest.approx(12.0)
    assert started(WEIGHTS, max_tres=True)[0] == pytest.approx(6.0)
    assert started(())[0] == 4


@pytest.mark.parametrize(("max_tres", "per_second"), [(False, 12.0), (True, 6.0)])
def test_fair_share_charges_the_billing_per_second(max_tres: bool, per_second: float) -> None:
    # _apply_new_usage charges billable_tres x seconds run: 100 s at 12 (6 under MAX_TRES), no decay.
    plugin = MultifactorPriority(MultifactorWeights(fairshare=1000.0), decay_half_life=0.0, max_tres=max_tres)
    _, sim = started(WEIGHTS, max_tres, plugin)
    sim.advance(200.0)
    assert sim.job(1).state == "COMPLETED"
    tree = plugin.tree
    assert tree.usage(tree.users[("u1", "a1")], 200.0) == pytest.approx(100.0 * per_second)


def test_a_site_s_billing_weights_and_max_tres_are_read_from_its_slurm_conf() -> None:
    # slurm.conf(5): TRESBillingWeights on a partition line (Mem per GB: 0.25G is 0.25/1024 per MB),
    # PriorityFlags=MAX_TRES; both are modelled, so neither is noted
    conf = parse_slurm_conf("PriorityType=priority/multifactor\nPriorityFlags=MAX_TRES,NO_FAIR_TREE\n"
                            "NodeName=g1 CPUs=8 RealMemory=1000 Gres=gpu:2\n"
                            "PartitionName=gpu Nodes=g1 TRESBillingWeights=CPU=1.0,Mem=0.25G,GRES/gpu=4\n")
    cluster = cluster_spec(conf.partitions, conf.nodes, "gpu")
    assert cluster.partitions[0].billing_weights == (("cpu", 1.0), ("mem", 0.25 / 1024), ("gres/gpu", 4.0))
    make, notes = priority_plugin(conf.config, None, None, ())
    plugin = make()
    assert isinstance(plugin, MultifactorPriority) and plugin.max_tres
    assert not [note for note in [*notes, *unmodelled(conf)] if "MAX_TRES" in note or "TRESBilling" in note]
