"""What a GPU job holds besides its GPUs: the CPUs (``--cpus-per-gpu``) and memory (``--mem-per-gpu``)
each GPU brings, worked out by hand on small clusters.

Each rule names the Slurm 22.05 function it follows: src/plugins/select/cons_common/
gres_select_filter.c (``gres_select_filter_sock_core``, ``gres_select_filter_remove_unusable``),
src/plugins/select/cons_tres/gres_sched.c (``gres_sched_add``), src/common/gres.c
(``_test_gres_cnt``) and src/plugins/select/cons_common/gres_select_util.c
(``gres_select_util_job_mem_set``); and the memory of a job asking none: src/slurmctld/job_mgr.c
(``_validate_job_desc``) and cons_common job_test.c (``_set_gpu_defaults``, ``_job_test``). Every
replay runs with the invariant checker.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from test_model_gpus import gpu_nodes, located, replay, table

from djsb.cli import main
from djsb.errors import ConfigError
from djsb.model import ClusterSpec, SimulationResult
from djsb.model.cluster_spec import NodeSpec, PartitionSpec
from djsb.model.cluster_state import ClusterState
from djsb.model.job_memory import PartitionMemory
from djsb.model.scheduler import SchedulerConfig
from djsb.model.sections import read_cluster
from djsb.slurmsite.slurm_conf import read_slurm_conf
from djsb.slurmsite.slurm_config import cluster_spec, scheduler_config
from djsb.workloads.gpus import GpuRequest
from djsb.workloads.job import TraceJob
from djsb.workloads.sacct import parse_sacct_parsable2
from djsb.workloads.submit_line import requested_gpus


def held_gpus(result: SimulationResult) -> dict[int, int]:
    jobs = result.jobs
    return {int(j): int(g) for j, g in zip(jobs["job_id"], jobs["gpus"], strict=True)}


# ---------------------------------------------------------------- --cpus-per-gpu
def test_a_node_s_free_cpus_bound_the_gpus_it_gives_a_job_asking_cpus_per_gpu() -> None:
    # gres_select_filter_sock_core: a node's usable GPUs are at most avail_cpus / cpus_per_gres;
    # gres_sched_add: with a count per job a node then offers avail_cpus = gres_limit * cpus_per_gres
    # and adds gres_limit GPUs to the job's total.
    # 2 nodes x 8 cores x 2 GPUs. J1 and J2 (5 CPUs on one node each, no GPU) take n0 and n1 at 0,
    # J2 until 50: each node keeps 3 free cores and 2 free GPUs.
    # J3 at 1: --gpus=3 --cpus-per-gpu=2, so 6 CPUs. Each node's 3 cores give 3 // 2 = 1 GPU (2 CPUs):
    # 2 GPUs and 4 CPUs over both, short of 3 and 6: it waits.
    # At 50 J2 ends: n1 has 8 cores, 8 // 2 = 4 >= its 2 GPUs: 2 GPUs, 4 CPUs (near_gpus 2, taken
    # first); n0 adds 1 GPU and 2 CPUs: 3 GPUs, 6 CPUs: J3 starts at 50 on both.
    # Without the rule J3 would start at 1 (3 + 3 cores, 2 + 2 GPUs cover 6 CPUs and 3 GPUs).
    jobs = [TraceJob(1, 0, 100, 5, 100, nodes=1), TraceJob(2, 0, 50, 5, 50, nodes=1),
            TraceJob(3, 1, 10, 6, 10, gpus=GpuRequest(3, "job", cpus_per_gpu=2))]
    result = replay(jobs, gpu_nodes(2, 2, cores=8))
    assert {job: start for job, (start, _) in table(result).items()} == {1: 0, 2: 0, 3: 50}
    assert held_gpus(result)[3] == 3


def test_a_job_asking_cpus_per_gpu_prefers_the_node_whose_cpus_serve_all_its_gpus() -> None:
    # can_job_run_on_node weighs a node by its usable GPUs (near_gpus); gres_select_filter_sock_core
    # makes them avail_cpus / cpus_per_gres at most.
    # 2 nodes x 8 cores x 2 GPUs; J1 (4 CPUs on one node, no GPU) takes 4 cores of n0.
    # J2 at 1: --gpus=2 --cpus-per-gpu=4 (8 CPUs). n0: 4 cores -> 4 // 4 = 1 usable GPU (offers 4
    # CPUs); n1: 8 cores -> 2 GPUs (8 CPUs): n1 weighs less (0xff - 2) and covers the job alone:
    # J2 on n1, its 8 CPUs and 2 GPUs there. Without the rule both nodes offer 2 GPUs (a tie, n0
    # first by index) and J2 would be spread over n0 and n1.
    jobs = [TraceJob(1, 0, 100, 4, 100, nodes=1),
            TraceJob(2, 1, 10, 8, 10, gpus=GpuRequest(2, "job", cpus_per_gpu=4))]
    assert table(replay(jobs, gpu_nodes(2, 2, cores=8))) == {1: (0, "n0"), 2: (1, "n1")}
    state = ClusterState(gpu_nodes(2, 2, cores=8))
    placed = state.allocate(state.partitions[0], 8, None, None, GpuRequest(2, "job", cpus_per_gpu=4))
    assert placed is not None and list(placed) == [(0, 8)] and placed.gpus == ((2,),)


def test_with_a_count_per_job_a_node_offers_the_cpus_of_its_gpus_alone() -> None:
    # gres_sched_add: with cpus_per_gres, avail_cpus = gres_limit * cpus_per_gres, gres_limit being
    # the node's usable GPUs. 2 nodes x 8 cores x 1 GPU; --gpus=2 --cpus-per-gpu=2 (4 CPUs): each
    # node offers 1 GPU and its 2 CPUs: 2 CPUs on each. Without the rule n0 would offer its 8 cores,
    # and the 4 CPUs be spread one on each node and the rest in order: 3 on n0, 1 on n1.
    state = ClusterState(gpu_nodes(1, 1, cores=8))
    placed = state.allocate(state.partitions[0], 4, None, None, GpuRequest(2, "job", cpus_per_gpu=2))
    assert placed is not None and list(placed) == [(0, 2), (1, 2)] and placed.gpus == ((1,), (1,))


def test_gpus_per_task_with_cpus_per_gpu_make_tasks_of_their_cpus() -> None:
    # gres.c _test_gres_cnt: cpus_per_task = cpus_per_gres * gres_per_task; a trace job of 8 CPUs
    # asking --gpus-per-task=1 --cpus-per-gpu=4 is 8 / 4 = 2 tasks, 2 GPUs.
    # gres_select_filter_sock_core: a node holds no more tasks than its usable GPUs serve.
    # 2 nodes x 8 cores x 2 GPUs, n0 with 2 cores busy (J1): n0's 6 cores give 6 // 4 = 1 GPU, one
    # task of 4 CPUs; n1 gives 2 GPUs, 2 tasks (8 CPUs). J2 goes where the most GPUs are (n1) and
    # fits there: 8 CPUs, 2 GPUs on n1.
    jobs = [TraceJob(1, 0, 100, 2, 100, nodes=1),
            TraceJob(2, 1, 10, 8, 10, gpus=GpuRequest(1, "task", cpus_per_gpu=4))]
    result = replay(jobs, gpu_nodes(2, 2, cores=8))
    assert table(result)[2] == (1, "n1") and held_gpus(result)[2] == 2
    assert GpuRequest(1, "task", cpus_per_gpu=4).tasks(8) == 2 and GpuRequest(1, "task").tasks(8) == 8
    # A node of 8 cores and 4 GPUs: 4 CPUs asking --gpus-per-task=1 --cpus-per-gpu=4 are one task,
    # which holds one GPU (not one per CPU).
    state = ClusterState(gpu_nodes(4, cores=8))
    placed = state.allocate(state.partitions[0], 4, None, None, GpuRequest(1, "task", cpus_per_gpu=4))
    assert placed is not None and list(placed) == [(0, 4)] and placed.gpus == ((1,),)


# ---------------------------------------------------------------- --mem-per-gpu
def memory_nodes() -> ClusterSpec:
    """2 nodes n0, n1 of 8 cores, 16000 MB and 2 GPUs."""
    nodes = tuple(NodeSpec(f"n{i}", 8, 16000, (("", 2),)) for i in range(2))
    return ClusterSpec(nodes, (PartitionSpec("batch"),))


def test_a_job_asking_mem_per_gpu_goes_where_the_memory_of_its_gpus_is_free_and_holds_it() -> None:
    # gres_select_filter_remove_unusable: a node's usable GPUs are at most avail_mem / mem_per_gres;
    # gres_select_util_job_mem_set: the job holds mem_per_gres times the GPUs it holds on each node.
    # J1 (1 CPU, 10000 MB, one node) takes n0 at 0 until 100: n0 keeps 6000 MB.
    # J2 at 1: --gpus-per-node=2 --mem-per-gpu=4000: n0's 6000 MB serve 6000 // 4000 = 1 GPU < 2:
    # n1, where it holds 2 x 4000 = 8000 MB until 51 (n1 keeps 8000).
    # J3 at 2: --gpus-per-node=1 --mem-per-gpu=4000: n0 serves 1 GPU: n0 (n0 keeps 2000 MB).
    # J4 at 3: --gpus=1 --mem-per-gpu=4000: n0 serves 2000 // 4000 = 0 GPUs, n1 has no free GPU:
    # it waits for J2's end at 51, then n1.
    # Without the rule J2 would go on n0 at 1 and J4 on n1 at 3.
    jobs = [TraceJob(1, 0, 100, 1, 100, memory_mb=10000, nodes=1),
            TraceJob(2, 1, 50, 2, 50, nodes=1, gpus=GpuRequest(2, "node", mem_per_gpu=4000)),
            TraceJob(3, 2, 50, 1, 50, gpus=GpuRequest(1, "node", mem_per_gpu=4000)),
            TraceJob(4, 3, 50, 1, 50, gpus=GpuRequest(1, "job", mem_per_gpu=4000))]
    result = replay(jobs, memory_nodes())
    assert table(result) == {1: (0, "n0"), 2: (1, "n1"), 3: (2, "n0"), 4: (51, "n1")}


def test_a_shaped_job_asking_mem_per_gpu_goes_where_the_memory_of_its_gpus_is() -> None:
    # gres_select_filter_remove_unusable, for a job laid out as tasks (a job module's): n0 (6000 MB)
    # serves 6000 // 4000 = 1 GPU < the 2 per node asked: the task goes on n1 (16000 MB), its 2 GPUs.
    nodes = (NodeSpec("n0", 8, 6000, (("", 2),)), NodeSpec("n1", 8, 16000, (("", 2),)))
    state = ClusterState(ClusterSpec(nodes, (PartitionSpec("batch"),)))
    part = state.partitions[0]
    want = state.gpu_demand(GpuRequest(2, "node", mem_per_gpu=4000), 1, part=part)
    placed = state.place(part, [1], 1, None, [0, 1], may_share=False, gpus=want)
    assert placed is not None and list(placed) == [(1, 1)] and placed.gpus == ((2,),)


def test_the_memory_held_is_the_gpus_held_times_mem_per_gpu() -> None:
    # gres_select_util_job_mem_set: memory_allocated[node] = mem_per_gres * gres_cnt_node_select[node].
    # J1 (--gpus=3 --mem-per-gpu=3000, 2 CPUs) on 2 empty nodes of 2 GPUs: near weights tie, n0 then
    # n1: 2 GPUs on n0 (6000 MB), 1 on n1 (3000 MB). J2 (one node, 11000 MB) at 1: n0 has 10000
    # MB left, n1 13000: n1.
    jobs = [TraceJob(1, 0, 100, 2, 100, gpus=GpuRequest(3, "job", mem_per_gpu=3000)),
            TraceJob(2, 1, 10, 1, 10, memory_mb=11000, nodes=1)]
    assert table(replay(jobs, memory_nodes())) == {1: (0, "n[0-1]"), 2: (1, "n1")}


# ---------------------------------------------------------------- read from a site's record
@pytest.mark.parametrize(("line", "expected"), [
    ("sbatch --gpus=2 --cpus-per-gpu=4 --mem-per-gpu=8G job.sh", GpuRequest(2, "job", None, 4, 8192.0)),
    ("sbatch --gpus-per-node a100:1 --cpus-per-gpu 6 job.sh", GpuRequest(1, "node", "a100", 6)),
    ("sbatch --mem-per-gpu=1000 --gres=gpu:2 job.sh", GpuRequest(2, "node", mem_per_gpu=1000.0)),
    ("sbatch --cpus-per-gpu=4 job.sh", None),
])
def test_the_submit_line_gives_the_cpus_and_memory_per_gpu(line: str, expected: GpuRequest | None) -> None:
    assert requested_gpus(line) == expected


def test_a_bad_cpus_per_gpu_is_refused_saying_which() -> None:
    with pytest.raises(ValueError, match="--cpus-per-gpu"):
        requested_gpus("sbatch --gpus=1 --cpus-per-gpu=four job.sh")
    with pytest.raises(ValueError, match="--mem-per-gpu=lots"):
        requested_gpus("sbatch --gpus=1 --mem-per-gpu=lots job.sh")
    with pytest.raises(ValueError, match="--mem-per-gpu"):
        GpuRequest(1, mem_per_gpu=0)


def test_the_sacct_reader_takes_them_from_the_submit_line_and_reqmem_no_longer_counts() -> None:
    # sacct >= 21.08 prints ReqMem as the job's mem TRES (here 2 GPUs x 8G = 16G): the job's memory is
    # per GPU, so its total is not a second request.
    text = ("JobIDRaw|Submit|Start|End|Elapsed|AllocCPUS|ReqMem|NNodes|State|SubmitLine\n"
            "5|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:00:10|00:00:10|8|16G|1|COMPLETED|"
            "sbatch --gpus=2 --cpus-per-gpu=4 --mem-per-gpu=8G job.sh\n")
    job = parse_sacct_parsable2(text).jobs[0]
    assert job.cpus == 8 and job.memory_mb is None
    assert job.gpus == GpuRequest(2, "job", None, 4, 8192.0)


# ---------------------------------------------------------------- default memory
def test_a_job_asking_no_memory_holds_its_partition_s_def_mem_per_cpu() -> None:
    # job_mgr.c _validate_job_desc: a job without memory gets its partition's DefMemPerCPU (else
    # slurm.conf's) per CPU; can_job_run_on_node then lowers a node's CPUs until their memory fits.
    # 2 nodes x 4 cores x 8000 MB, DefMemPerCPU=3000. J1 (2 CPUs, one node) holds 2 x 3000 = 6000 MB
    # of n0. J2 (1 CPU) at 1: n0 has 2 free cores but 2000 MB < 3000: n1.
    # Without the default neither job holds memory and J2 goes on n0.
    nodes = tuple(NodeSpec(f"n{i}", 4, 8000) for i in range(2))
    cluster = ClusterSpec(nodes, (PartitionSpec("batch", def_mem_per_cpu=3000),))
    jobs = [TraceJob(1, 0, 100, 2, 100, nodes=1), TraceJob(2, 1, 10, 1, 10)]
    assert table(replay(jobs, cluster)) == {1: (0, "n0"), 2: (1, "n1")}


def test_the_partition_s_default_comes_first_then_the_cluster_s() -> None:
    # _validate_job_desc: part_ptr->def_mem_per_cpu if set, else slurm_conf.def_mem_per_cpu;
    # _set_gpu_defaults: the partition's DefMemPerGPU, else slurm.conf's. A job giving memory keeps it.
    parts = (PartitionSpec("a", def_mem_per_cpu=3000), PartitionSpec("b", def_mem_per_gpu=5000))
    defaults = PartitionMemory(parts, SchedulerConfig(def_mem_per_cpu=1000, def_mem_per_gpu=2000))
    give = defaults.give
    assert give(TraceJob(1, 0, 1, 4)).memory_mb == 4 * 3000  # partition a is the default one
    assert give(TraceJob(1, 0, 1, 4, partition="b")).memory_mb == 4 * 1000
    gpus = GpuRequest(2, "job")
    assert give(TraceJob(1, 0, 1, 4, gpus=gpus)).gpus == GpuRequest(2, "job", mem_per_gpu=2000)
    assert give(TraceJob(1, 0, 1, 4, partition="b", gpus=gpus)).gpus == GpuRequest(2, "job", mem_per_gpu=5000)
    asked = TraceJob(1, 0, 1, 4, memory_mb=100.0, gpus=gpus)
    assert give(asked) is asked
    assert not PartitionMemory(parts[:1] + (PartitionSpec("c"),), SchedulerConfig()).by_partition["c"][0]


def test_a_gpu_job_asking_no_memory_holds_def_mem_per_gpu_for_each_gpu() -> None:
    # _set_gpu_defaults + _job_test: a job that did not set its memory (no JOB_MEM_SET) holds
    # def_mem_per_gres for each GPU it holds on a node (gres_select_util_job_mem_set), not
    # DefMemPerCPU. 2 nodes x 8 cores x 16000 MB x 2 GPUs; DefMemPerCPU=1000, DefMemPerGPU=6000.
    # J1 (1 CPU, --gpus-per-node=2) holds 2 x 6000 = 12000 MB of n0 until 100. J2 (5 CPUs, one node,
    # no GPU) at 1 needs 5 x 1000 = 5000 MB: n0 keeps 4000: n1.
    # Without DefMemPerGPU J1 would hold 1 x 1000 and J2 go on n0.
    nodes = tuple(NodeSpec(f"n{i}", 8, 16000, (("", 2),)) for i in range(2))
    cluster = ClusterSpec(nodes, (PartitionSpec("batch", def_mem_per_cpu=1000, def_mem_per_gpu=6000),))
    jobs = [TraceJob(1, 0, 100, 1, 100, gpus=GpuRequest(2, "node")), TraceJob(2, 1, 10, 5, 10, nodes=1)]
    assert table(replay(jobs, cluster)) == {1: (0, "n0"), 2: (1, "n1")}


def test_a_job_over_max_mem_per_cpu_gets_more_cpus() -> None:
    # job_mgr.c _valid_pn_min_mem (job_limits_check applies it to a pending job): memory per CPU over
    # MaxMemPerCPU raises the CPUs by ratio = ceil(mem_per_cpu / MaxMemPerCPU) and lowers the memory
    # per CPU to ceil(mem_per_cpu / ratio).
    # One node of 8 cores, MaxMemPerCPU=2000. J1: 2 CPUs, 10000 MB (5000 per CPU): ratio
    # ceil(5000 / 2000) = 3, so 6 CPUs of ceil(5000 / 3) = 1667 MB: 10002 MB. J2 (4 CPUs) at 1 finds 2
    # free cores: it waits for J1's end at 100. Without the rule J1 holds 2 cores and J2 starts at 1.
    cluster = ClusterSpec((NodeSpec("n0", 8, 32000),), (PartitionSpec("batch", max_mem_per_cpu=2000),))
    jobs = [TraceJob(1, 0, 100, 2, 100, memory_mb=10000), TraceJob(2, 1, 10, 4, 10)]
    result = replay(jobs, cluster)
    assert {job: start for job, (start, _) in table(result).items()} == {1: 0, 2: 100}
    given = PartitionMemory(cluster.partitions, SchedulerConfig()).give(jobs[0])
    assert (given.cpus, given.memory_mb) == (6, 6 * 1667)
    # within the limit, or asking no memory: unchanged; the cluster's limit where the partition has none
    assert PartitionMemory(cluster.partitions, SchedulerConfig()).give(jobs[1]) is jobs[1]
    wide = PartitionMemory((PartitionSpec("batch"),), SchedulerConfig(max_mem_per_cpu=4000)).give(jobs[0])
    assert (wide.cpus, wide.memory_mb) == (4, 4 * 2500)


def test_the_defaults_are_read_from_a_site_s_slurm_conf(tmp_path: Path) -> None:
    # slurm.conf(5): DefMemPerCPU and DefMemPerGPU, cluster-wide and on a partition line, in MB
    # (6G = 6144 MB); 0, Slurm's default, is none.
    conf = tmp_path / "slurm.conf"
    conf.write_text("DefMemPerCPU=1000\ndefmempergpu=0\nMaxMemPerCPU=8000\nNodeName=n[1-2] CPUs=4 RealMemory=8000\n"
                    "PartitionName=p Nodes=ALL DefMemPerCPU=3000 DefMemPerGPU=6G MaxMemPerCPU=4000\n"
                    "PartitionName=q Nodes=ALL\n")
    site = read_slurm_conf(conf)
    p, q = cluster_spec(site.partitions, site.nodes, "p", ("q",)).partitions
    assert (p.def_mem_per_cpu, p.def_mem_per_gpu, p.max_mem_per_cpu) == (3000, 6144, 4000)
    assert (q.def_mem_per_cpu, q.def_mem_per_gpu, q.max_mem_per_cpu) == (None, None, None)
    config = scheduler_config(site.config)
    assert (config.def_mem_per_cpu, config.def_mem_per_gpu, config.max_mem_per_cpu) == (1000, None, 8000)


# ---------------------------------------------------------------- MaxCPUsPerNode
def test_max_cpus_per_node_caps_what_a_partition_s_jobs_hold_on_a_node() -> None:
    # cons_common.c _allocate_sc: a node offers a job at most max_cpus_per_node less the CPUs the
    # jobs of its partition already hold there (used_cpu_count, from part_core_map).
    # 2 nodes x 8 cores, MaxCPUsPerNode=4. J1 (4 CPUs) takes n0 at 0 until 100. J2 (2 CPUs) at 0:
    # n0 has 4 idle cores but its partition holds 4 = the cap: n1. J3 (4 CPUs) at 0: n0 offers 0, n1
    # 4 - 2 = 2 < 4 although 10 cores are idle: it waits for J1 and J2 to end at 100, then n0.
    # Without the cap J2 would take n0's cores 5-6 and J3 start at 0.
    cluster = ClusterSpec(tuple(NodeSpec(f"n{i}", 8) for i in range(2)),
                          (PartitionSpec("batch", max_cpus_per_node=4),))
    jobs = [TraceJob(1, 0, 100, 4, 100), TraceJob(2, 0, 100, 2, 100), TraceJob(3, 0, 100, 4, 100)]
    assert table(replay(jobs, cluster)) == {1: (0, "n0"), 2: (0, "n1"), 3: (100, "n0")}


def test_max_cpus_per_node_keeps_cores_of_shared_nodes_for_the_other_partition() -> None:
    # The cap counts the CPUs of the partition's own jobs only (part_core_map), so a partition
    # sharing the nodes keeps the rest (slurm.conf(5) MaxCPUsPerNode: "to reserve some CPUs on each
    # node for jobs of another partition").
    # 2 nodes x 8 cores in partitions cpu (MaxCPUsPerNode=6) and gpu (no cap). J1 (cpu, 12 CPUs) at
    # 0 takes 6 on n0 and 6 on n1 until 100. J2 (gpu, 2 CPUs, one node) at 1: n0's 2 idle cores.
    # J3 (cpu, 1 CPU) at 2: n1 has 2 idle cores, but cpu holds 6 = its cap on both: it waits for
    # J1's end at 100 (n0). Without the cap J1 would take n0's 8 and n1's 4, J2 go on n1 and J3
    # start at 2 on n1.
    parts = (PartitionSpec("cpu", max_cpus_per_node=6), PartitionSpec("gpu"))
    cluster = ClusterSpec(tuple(NodeSpec(f"n{i}", 8) for i in range(2)), parts)
    jobs = [TraceJob(1, 0, 100, 12, 100, partition="cpu"), TraceJob(2, 1, 200, 2, 200, nodes=1, partition="gpu"),
            TraceJob(3, 2, 10, 1, 10, partition="cpu")]
    assert table(replay(jobs, cluster)) == {1: (0, "n[0-1]"), 2: (1, "n0"), 3: (100, "n0")}


@pytest.mark.parametrize("options", [{}, {"bf_planner": "will_run"}, {"bf_will_run": True, "node_select": "cons_tres"}],
                         ids=["profile", "will_run", "will_run-cons_tres"])
def test_a_capped_job_is_planned_for_when_its_partition_s_jobs_end(options: dict[str, object]) -> None:
    # sched/backfill plans a job on the nodes as running jobs end (_will_run_test removes them);
    # _allocate_sc then counts only the partition's jobs still there against MaxCPUsPerNode.
    # 2 nodes x 8 cores in partitions cpu (MaxCPUsPerNode=6) and other. J1 (cpu, 6 CPUs, 2 nodes)
    # holds 3 on each until 100. J3 (cpu, 12 CPUs) at 1: each node gives cpu 6 - 3 = 3 more: it
    # waits, and is planned at 100 (J1 gone: 6 + 6), holding 6 cores of each node until 200.
    # J4 (other, 10 CPUs, limit 300) at 2 would fit the 5 + 5 idle cores now, but would hold them
    # over J3's plan: it waits for J3's end, 200. Planned with the CPUs the partition holds now, J3
    # would never fit (3 + 3 forever), J4 start at 2 and J3 only at its end, 302.
    parts = (PartitionSpec("cpu", max_cpus_per_node=6), PartitionSpec("other"))
    cluster = ClusterSpec(tuple(NodeSpec(f"n{i}", 8) for i in range(2)), parts)
    jobs = [TraceJob(1, 0, 100, 6, 100, nodes=2, partition="cpu"), TraceJob(3, 1, 100, 12, 100, partition="cpu"),
            TraceJob(4, 2, 300, 10, 300, partition="other")]
    starts = {job: start for job, (start, _) in table(replay(jobs, cluster, **options)).items()}
    assert starts == {1: 0, 3: 100, 4: 200}


def test_max_cpus_per_node_is_read_from_slurm_conf_and_unlimited_is_none(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=n[1-2] CPUs=8\nPartitionName=p Nodes=ALL MaxCPUsPerNode=6\n"
                    "PartitionName=q Nodes=ALL MaxCPUsPerNode=UNLIMITED\n")
    site = read_slurm_conf(conf)
    p, q = cluster_spec(site.partitions, site.nodes, "p", ("q",)).partitions
    assert (p.max_cpus_per_node, q.max_cpus_per_node) == (6, None)


# ---------------------------------------------------------------- djsb history, end to end
HISTORY_DUMP = """\
JobIDRaw|User|Account|Partition|QOS|Submit|Eligible|Start|End|Elapsed|Timelimit|AllocCPUS|NNodes|State|Flags|SubmitLine
1|u1|a|p|normal|2026-01-01T00:00:00|2026-01-01T00:00:00|2026-01-01T00:00:00|2026-01-01T00:01:40|00:01:40|00:02:00|{j1}|{n1}|COMPLETED|SchedMain|sbatch -N {n1} -n {j1} -t 2 job.sh
2|u1|a|p|normal|2026-01-01T00:00:01|2026-01-01T00:00:01|2026-01-01T00:00:01|2026-01-01T00:00:11|00:00:10|00:01:00|{j2}|1|COMPLETED|SchedMain|sbatch {asks} -t 1 job.sh
"""  # noqa: E501


def two_job_history(tmp_path: Path, partition: str, n1: int, j1: int, j2: int, asks: str) -> Path:
    """``djsb history`` of :data:`HISTORY_DUMP` (J1 of ``j1`` CPUs on ``n1`` nodes, J2 of ``j2`` CPUs
    asking ``asks``) on two nodes of 8 CPUs, 16,000 MB and 2 GPUs, one partition with ``partition``'s
    settings; its output directory."""
    (tmp_path / "dump.txt").write_text(HISTORY_DUMP.format(n1=n1, j1=j1, j2=j2, asks=asks))
    (tmp_path / "slurm.conf").write_text(
        "SchedulerType=sched/backfill\nGresTypes=gpu\nNodeName=n[1-2] CPUs=8 RealMemory=16000 Gres=gpu:2\n"
        f"PartitionName=p Nodes=ALL Default=YES MaxTime=INFINITE {partition}\n")
    out = tmp_path / "history"
    assert main(["history", str(tmp_path / "dump.txt"), "--slurm-conf", str(tmp_path / "slurm.conf"), "-q",
                 "--window", "60", "--step", "10", "-o", str(out)]) == 0
    return out


@pytest.mark.parametrize(("site", "n1", "j1", "j2", "asks", "waits", "node"), [
    # --cpus-per-gpu from the SubmitLine: J1 (10 CPUs on 2 nodes) leaves 3 CPUs and 2 GPUs on each
    # node; J2 (--gpus=3 --cpus-per-gpu=2, 6 CPUs) gets 3 // 2 = 1 GPU of each: it waits for J1's
    # end (100 s), then takes n1's 2 GPUs (4 CPUs) and one of n2 (without the rule: at once)
    ("", 2, 10, 6, "--gpus=3 --cpus-per-gpu=2", True, "n1,n2"),
    # the partition's DefMemPerCPU from slurm.conf (the dump has no ReqMem): J1 holds 2 x 6000 MB of n1's
    # 16000, so J2 (1 CPU, 6000 MB) goes on n2 (without the default: n1, whose 6 CPUs are free)
    ("DefMemPerCPU=6000", 1, 2, 1, "-n 1", False, "n2"),
    # the partition's MaxCPUsPerNode from slurm.conf: J1's 4 CPUs are the cap of n1: J2 on n2 (without: n1)
    ("MaxCPUsPerNode=4", 1, 4, 2, "-n 2", False, "n2"),
], ids=["cpus-per-gpu", "DefMemPerCPU", "MaxCPUsPerNode"])
def test_djsb_history_replays_them_from_the_site_s_files(tmp_path: Path, site: str, n1: int, j1: int, j2: int,
                                                          asks: str, waits: bool, node: str) -> None:
    out = two_job_history(tmp_path, site, n1, j1, j2, asks)
    jobs = pd.read_csv(out / "jobs.csv").set_index("job_id")
    errors = pd.read_csv(out / "errors.csv").set_index("job_id")
    waited = errors.loc[2, "simulated_start"] - errors.loc[1, "simulated_start"]
    assert (waited >= 100 if waits else waited < 10) and jobs.loc[2, "nodes"] == node


def test_a_config_gives_them_in_its_cluster_and_policy_sections() -> None:
    cluster = read_cluster(located({"nodes": [{"cores": 8, "memory_mb": 16000, "gpus": 2}],
                                    "partitions": [{"name": "p", "def_mem_per_cpu": 1000, "def_mem_per_gpu": 4096,
                                                    "max_cpus_per_node": 6}]}))
    (part,) = cluster.partitions
    assert (part.def_mem_per_cpu, part.def_mem_per_gpu, part.max_cpus_per_node) == (1000, 4096, 6)
    with pytest.raises(ConfigError, match="> 0"):
        read_cluster(located({"nodes": [{"cores": 8}], "partitions": [{"name": "p", "def_mem_per_cpu": 0}]}))
    with pytest.raises(ConfigError, match=">= 1"):
        read_cluster(located({"nodes": [{"cores": 8}], "partitions": [{"name": "p", "max_cpus_per_node": 0}]}))
