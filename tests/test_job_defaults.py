"""A site's job defaults and AccountingStorageEnforce=safe, worked out by hand on small clusters and
read from a site's files.

Each rule names the Slurm 22.05 function it follows:

* DefMemPerNode: src/slurmctld/job_mgr.c ``_validate_job_desc`` gives a job asking no memory
  ``part_ptr->def_mem_per_cpu``, else ``slurm_conf.def_mem_per_cpu``: one field holding
  DefMemPerCPU (flagged MEM_PER_CPU) or DefMemPerNode, which src/common/read_config.c reads first,
  ignoring a DefMemPerCPU beside it (``_validate_and_set_defaults``, ``_parse_partitionname``).
* DefCpuPerGPU: src/plugins/select/cons_common/job_test.c ``_set_gpu_defaults`` gives a job asking
  GPUs without --cpus-per-task the partition's DefCpuPerGPU, else slurm.conf's
  (``common_get_def_cpu_per_gpu``), as its ``def_cpus_per_gres`` (gres_select_util.c
  ``gres_select_util_job_set_defs``), which stands where the job set no --cpus-per-gpu.
* AccountingStorageEnforce: read_config.c ``_validate_accounting_storage_enforce`` (``safe``, or
  ``all``, sets ACCOUNTING_ENFORCE_SAFE).

Every replay runs with the invariant checker.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from support import FIVE_JOBS
from test_cli_errors import one_line_failure
from test_model_gpu_resources import HISTORY_DUMP, two_job_history
from test_model_gpus import replay, table

from djsb import slurm_text
from djsb.errors import ConfigError
from djsb.history.inputs import what_if_settings
from djsb.jobs.scontrol import parse_show_records
from djsb.model import ClusterSpec
from djsb.model.cluster_spec import NodeSpec, PartitionSpec
from djsb.model.job_memory import PartitionMemory
from djsb.model.scheduler import SchedulerConfig, reference
from djsb.simulate import load_experiment
from djsb.slurmsite.slurm_conf import read_slurm_conf
from djsb.slurmsite.slurm_config import SlurmConfigError, cluster_spec, parse_show_config, scheduler_config
from djsb.workloads.gpus import GpuRequest
from djsb.workloads.job import TraceJob
from djsb.workloads.sacct import parse_sacct_parsable2


def site(tmp_path: Path, text: str) -> tuple[SchedulerConfig, tuple[PartitionSpec, ...]]:
    """The scheduler options and partitions p, q of the slurm.conf ``text`` (nodes n[1-2] added)."""
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"NodeName=n[1-2] CPUs=4 RealMemory=8000\n{text}")
    read = read_slurm_conf(conf)
    return scheduler_config(read.config), cluster_spec(read.partitions, read.nodes, "p", ("q",)).partitions


# ---------------------------------------------------------------- AccountingStorageEnforce=safe
@pytest.mark.parametrize(("text", "safe"), [
    ("associations,limits,safe", True), ("associations,limits,qos", False), ("Safe", True),
    ("all", True),  # 0xffff but nojobs and nosteps: the SAFE bit (1 << 4) with the rest
    ("limits", False), ("none", False), ("", False)])
def test_accounting_storage_enforce_is_safe_with_safe_or_all(text: str, safe: bool) -> None:
    # _validate_accounting_storage_enforce: each comma-separated word compared in any case; "none" is
    # how scontrol prints an empty one (slurm_protocol_defs.c)
    assert slurm_text.accounting_safe(text) is safe


def test_enforce_safe_is_read_from_a_site_s_slurm_conf_and_from_scontrol(tmp_path: Path) -> None:
    config, _ = site(tmp_path, "AccountingStorageEnforce=associations,limits,safe\nPartitionName=p Nodes=ALL\n"
                               "PartitionName=q Nodes=ALL\n")
    assert config.enforce_safe is True
    config, _ = site(tmp_path, "accountingstorageenforce=associations,limits,qos\nPartitionName=p Nodes=ALL\n"
                               "PartitionName=q Nodes=ALL\n")
    assert config.enforce_safe is False
    shown = parse_show_config("AccountingStorageEnforce = associations,limits,qos,safe\n"
                              "AccountingStorageHost   = localhost\n")
    assert scheduler_config(shown).enforce_safe is True
    assert scheduler_config(parse_show_config("AccountingStorageEnforce = none\n")).enforce_safe is False
    assert scheduler_config({}).enforce_safe is False  # left out: Slurm's 0, nothing enforced


def test_a_bad_accounting_storage_enforce_is_one_line_naming_the_key() -> None:
    # slurmctld refuses a word it does not know (_validate_accounting_storage_enforce: SLURM_ERROR)
    with pytest.raises(SlurmConfigError) as caught:
        scheduler_config({"AccountingStorageEnforce": "qos,limts"})
    message = str(caught.value)
    assert message.startswith("AccountingStorageEnforce = 'qos,limts': 'limts' is none of associations,") \
        and "\n" not in message


def test_djsb_history_takes_it_as_a_what_if_and_refuses_a_bad_one(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert what_if_settings(["accountingstorageenforce=safe"]) == {"AccountingStorageEnforce": "safe"}
    (tmp_path / "dump.txt").write_text(HISTORY_DUMP.format(n1=1, j1=1, j2=1, asks="-n 1"))
    (tmp_path / "slurm.conf").write_text("NodeName=n[1-2] CPUs=8\nPartitionName=p Nodes=ALL Default=YES\n")
    out = tmp_path / "history"
    one_line_failure(capsys, ["history", str(tmp_path / "dump.txt"), "--slurm-conf", str(tmp_path / "slurm.conf"),
                              "--set", "AccountingStorageEnforce=sfae", "-o", str(out)], 2,
                     "--set AccountingStorageEnforce: AccountingStorageEnforce = 'sfae': 'sfae' is none of "
                     "associations, limits, safe, wckeys, qos, all, nojobs, nosteps (or 1, 2)", out)


def test_enforce_safe_is_in_the_reference_under_its_slurm_name() -> None:
    assert "| `enforce_safe` | false |  | AccountingStorageEnforce safe |" in reference()


# ---------------------------------------------------------------- DefMemPerNode
def test_a_job_asking_no_memory_holds_def_mem_per_node_on_its_node() -> None:
    # _validate_job_desc: pn_min_memory = the partition's DefMemPerNode, without MEM_PER_CPU: per node.
    # 2 nodes x 4 cores x 8000 MB, DefMemPerNode=5000. J1 (2 CPUs, one node) holds 5000 MB of n0
    # (per node: not 2 x 5000 = 10000, which no node holds). J2 (1 CPU) at 1: n0 has 2 free cores
    # but 8000 - 5000 = 3000 MB < 5000: n1. Without the default J2 goes on n0.
    nodes = tuple(NodeSpec(f"n{i}", 4, 8000) for i in range(2))
    jobs = [TraceJob(1, 0, 100, 2, 100, nodes=1), TraceJob(2, 1, 10, 1, 10)]
    with_default = ClusterSpec(nodes, (PartitionSpec("batch", def_mem_per_node=5000),))
    assert table(replay(jobs, with_default)) == {1: (0, "n0"), 2: (1, "n1")}
    assert table(replay(jobs, ClusterSpec(nodes, (PartitionSpec("batch"),)))) == {1: (0, "n0"), 2: (1, "n0")}
    # the cluster's, where the partition gives none: the same
    assert table(replay(jobs, ClusterSpec(nodes, (PartitionSpec("batch"),)), def_mem_per_node=5000)) == \
        {1: (0, "n0"), 2: (1, "n1")}


def test_the_partition_s_default_memory_per_node_or_per_cpu_comes_first() -> None:
    # _validate_job_desc tests part_ptr->def_mem_per_cpu (DefMemPerCPU or DefMemPerNode) before
    # slurm_conf.def_mem_per_cpu: a partition's DefMemPerCPU stands before the cluster's DefMemPerNode
    # and the other way round. A default per node counts once for each node the job asked (one when
    # it asked no count), as the model holds memory per CPU.
    parts = (PartitionSpec("a", def_mem_per_node=4000), PartitionSpec("b", def_mem_per_cpu=1000),
             PartitionSpec("c"), PartitionSpec("g", def_mem_per_gpu=3000))
    by_node = PartitionMemory(parts, SchedulerConfig(def_mem_per_node=3000)).give
    assert by_node(TraceJob(1, 0, 1, 4, nodes=2)).memory_mb == 2 * 4000
    assert by_node(TraceJob(1, 0, 1, 4)).memory_mb == 1 * 4000
    assert by_node(TraceJob(1, 0, 1, 4, partition="b")).memory_mb == 4 * 1000
    assert by_node(TraceJob(1, 0, 1, 4, nodes=3, partition="c")).memory_mb == 3 * 3000
    by_cpu = PartitionMemory(parts, SchedulerConfig(def_mem_per_cpu=500)).give
    assert by_cpu(TraceJob(1, 0, 1, 4, nodes=2)).memory_mb == 2 * 4000
    assert by_cpu(TraceJob(1, 0, 1, 4, nodes=2, partition="c")).memory_mb == 4 * 500
    # a GPU job of a partition with DefMemPerGPU holds it per GPU (_set_gpu_defaults), no other default
    gpu_job = by_node(TraceJob(1, 0, 1, 4, partition="g", gpus=GpuRequest(1, "job")))
    assert gpu_job.memory_mb is None and gpu_job.gpus == GpuRequest(1, "job", mem_per_gpu=3000)
    asked = TraceJob(1, 0, 1, 4, memory_mb=100.0, nodes=2)
    assert by_node(asked) is asked


def test_def_mem_per_node_and_def_mem_per_cpu_exclude_each_other_in_a_config(tmp_path: Path) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text(FIVE_JOBS + "cluster:\n  nodes: [{count: 2, cores: 2}]\npolicy:\n  scheduler:\n"
                    "    def_mem_per_cpu: 1000\n    def_mem_per_node: 4000\n")
    with pytest.raises(ConfigError) as caught:
        load_experiment(path)
    assert str(caught.value).startswith(f"{path}:8: policy.scheduler.def_mem_per_node: give def_mem_per_node "
                                        "or def_mem_per_cpu, not both")
    path.write_text(FIVE_JOBS + "cluster:\n  nodes: [{count: 2, cores: 2}]\n  partitions:\n    - name: p\n"
                    "      def_mem_per_node: 4000\n      def_mem_per_cpu: 1000\n")
    with pytest.raises(ConfigError) as caught:
        load_experiment(path)
    assert str(caught.value).startswith(f"{path}:7: cluster.partitions[0].def_mem_per_node: give")
    path.write_text(FIVE_JOBS + "cluster:\n  nodes: [{count: 2, cores: 2}]\n  partitions:\n    - name: p\n"
                    "      def_mem_per_node: 0\n")
    with pytest.raises(ConfigError, match=r":7: cluster.partitions\[0\].def_mem_per_node: .*> 0"):
        load_experiment(path)
    path.write_text(FIVE_JOBS + "cluster:\n  nodes: [{count: 2, cores: 2}]\n  partitions:\n    - name: p\n"
                    "      def_mem_per_node: 4000\npolicy:\n  scheduler:\n    def_mem_per_node: 2000\n")
    experiment = load_experiment(path)
    assert (experiment.cluster.partitions[0].def_mem_per_node, experiment.scheduler.def_mem_per_node) == \
        (4000, 2000)


def test_def_mem_per_node_is_read_from_a_site_and_drops_a_def_mem_per_cpu_beside_it(tmp_path: Path) -> None:
    # read_config.c: DefMemPerNode first; a DefMemPerCPU beside it is ignored ("mutually exclusive"),
    # cluster-wide and on a partition line; 2G is 2048 MB; scontrol prints an unset one UNLIMITED
    config, (p, q) = site(tmp_path, "DefMemPerNode=6000\nDefMemPerCPU=1000\n"
                                    "PartitionName=p Nodes=ALL DefMemPerNode=2G DefMemPerCPU=500\n"
                                    "PartitionName=q Nodes=ALL DefMemPerCPU=700\n")
    assert (config.def_mem_per_node, config.def_mem_per_cpu) == (6000, None)
    assert (p.def_mem_per_node, p.def_mem_per_cpu) == (2048, None)
    assert (q.def_mem_per_node, q.def_mem_per_cpu) == (None, 700)
    shown = scheduler_config(parse_show_config("DefMemPerNode           = UNLIMITED\n"))
    assert (shown.def_mem_per_node, shown.def_mem_per_cpu) == (None, None)
    shown = scheduler_config(parse_show_config("DefMemPerNode           = 4096\n"))
    assert (shown.def_mem_per_node, shown.def_mem_per_cpu) == (4096, None)


# ---------------------------------------------------------------- DefCpuPerGPU
def test_a_gpu_job_without_cpus_per_gpu_or_cpus_per_task_gets_def_cpu_per_gpu() -> None:
    # _set_gpu_defaults: DefCpuPerGPU=3 becomes the GPUs' def_cpus_per_gres, which bounds a node's
    # usable GPUs as --cpus-per-gpu does (gres_select_filter_sock_core: max_gres = avail_cpus /
    # cpus_per_gres). 2 nodes x 4 cores x 2 GPUs. J1 (2 CPUs, one node, no GPU) holds n0's cores
    # 1-2 until 100. J2 (2 CPUs, --gpus=1) at 1: n0 has 2 free cores, 2 // 3 = 0 usable GPUs: n1
    # (4 // 3 = 1 GPU). J3 (2 CPUs, --gpus=1 --cpus-per-task=2: no default) at 2: n0, whose 2 free
    # cores and GPUs serve it. Without the default J2 takes n0's last 2 cores and J3 goes on n1.
    nodes = tuple(NodeSpec(f"n{i}", 4, None, (("", 2),)) for i in range(2))
    jobs = [TraceJob(1, 0, 100, 2, 100, nodes=1), TraceJob(2, 1, 100, 2, 100, gpus=GpuRequest(1, "job")),
            TraceJob(3, 2, 100, 2, 100, gpus=GpuRequest(1, "job", cpus_per_task=2))]
    with_default = ClusterSpec(nodes, (PartitionSpec("batch", def_cpu_per_gpu=3),))
    assert table(replay(jobs, with_default)) == {1: (0, "n0"), 2: (1, "n1"), 3: (2, "n0")}
    without = ClusterSpec(nodes, (PartitionSpec("batch"),))
    assert table(replay(jobs, without)) == {1: (0, "n0"), 2: (1, "n0"), 3: (2, "n1")}
    assert table(replay(jobs, without, def_cpu_per_gpu=3)) == {1: (0, "n0"), 2: (1, "n1"), 3: (2, "n0")}


def test_the_partition_s_def_cpu_per_gpu_comes_first_and_a_job_s_own_stands() -> None:
    # _set_gpu_defaults: the partition's job_defaults_list first, else slurm.conf's; none for a job
    # with --cpus-per-task (orig_cpus_per_task set); a job's --cpus-per-gpu is its cpus_per_gres,
    # which stands before def_cpus_per_gres (gres_select_util_job_min_cpus)
    parts = (PartitionSpec("a", def_cpu_per_gpu=4), PartitionSpec("b"))
    give = PartitionMemory(parts, SchedulerConfig(def_cpu_per_gpu=2)).give
    assert give(TraceJob(1, 0, 1, 4, gpus=GpuRequest(1, "job"))).gpus == GpuRequest(1, "job", cpus_per_gpu=4)
    assert give(TraceJob(1, 0, 1, 4, partition="b", gpus=GpuRequest(2, "node"))).gpus == \
        GpuRequest(2, "node", cpus_per_gpu=2)
    own = TraceJob(1, 0, 1, 4, gpus=GpuRequest(1, "job", cpus_per_gpu=1))
    per_task = TraceJob(1, 0, 1, 4, gpus=GpuRequest(1, "job", cpus_per_task=4))
    no_gpu = TraceJob(1, 0, 1, 4)
    assert give(own) is own and give(per_task) is per_task and give(no_gpu) is no_gpu
    assert not PartitionMemory((PartitionSpec("c"),), SchedulerConfig()).any


def test_def_cpu_per_gpu_is_read_from_a_site_s_slurm_conf(tmp_path: Path) -> None:
    # slurm.conf(5) DefCpuPerGPU (read_config.c spells it DefCPUPerGPU: any case), cluster-wide and on a
    # partition line; 0 is none (select_p_reconfigure: def_cpu_per_gpu = 0)
    config, (p, q) = site(tmp_path, "DefCPUPerGPU=2\nPartitionName=p Nodes=ALL defcpupergpu=6\n"
                                    "PartitionName=q Nodes=ALL DefCpuPerGPU=0\n")
    assert (config.def_cpu_per_gpu, p.def_cpu_per_gpu, q.def_cpu_per_gpu) == (2, 6, None)
    with pytest.raises(SlurmConfigError, match="^DefCpuPerGPU = 'two': not a whole number"):
        scheduler_config({"DefCpuPerGPU": "two"})
    path = tmp_path / "sim.yaml"
    path.write_text(FIVE_JOBS + "cluster:\n  nodes: [{count: 2, cores: 2}]\n  partitions:\n    - name: p\n"
                    "      def_cpu_per_gpu: 0\n")
    with pytest.raises(ConfigError, match=r":7: cluster.partitions\[0\].def_cpu_per_gpu: must be >= 1"):
        load_experiment(path)


# scontrol 22.05's answers on the mini-cluster (tests/test_job_defaults_live.py makes them): slurm.conf's
# DefCpuPerGPU=3 and DefMemPerGPU=512 shown as show config's JobDefaults, a partition's as its own
SHOW_CONFIG_DEFAULTS = "JobDefaults             = DefCpuPerGPU=3,DefMemPerGPU=512\n"
SHOW_PARTITION_DEFAULTS = """PartitionName=jd
   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL
   Nodes=n[1-4]
   JobDefaults=DefCpuPerGPU=2,DefMemPerGPU=1024
   DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED
"""


def test_scontrol_s_job_defaults_are_read_as_the_slurm_conf_keys_they_were() -> None:
    # read_config.c job_defaults_str writes DefCpuPerGPU and DefMemPerGPU as JobDefaults=K=V,K=V, in
    # show config (config_info.c) and show partition (partition_info.c) alike; (null) is none
    config = scheduler_config(parse_show_config(SHOW_CONFIG_DEFAULTS))
    assert (config.def_cpu_per_gpu, config.def_mem_per_gpu) == (3, 512.0)
    nodes = [{"NodeName": f"n{i}", "CPUTot": "2", "RealMemory": "2048"} for i in range(1, 5)]
    (part,) = cluster_spec(parse_show_records(SHOW_PARTITION_DEFAULTS), nodes, "jd").partitions
    assert (part.def_cpu_per_gpu, part.def_mem_per_gpu) == (2, 1024.0)
    none = scheduler_config(parse_show_config("JobDefaults             = (null)\n"))
    assert (none.def_cpu_per_gpu, none.def_mem_per_gpu) == (None, None)
    # a key the site's file sets itself stands over the one shown within JobDefaults
    assert scheduler_config({"JobDefaults": "DefCpuPerGPU=3", "DefCpuPerGPU": "5"}).def_cpu_per_gpu == 5
    with pytest.raises(SlurmConfigError, match="^JobDefaults = 'DefCpuPerGPU': 'DefCpuPerGPU' is not KEY=VALUE"):
        scheduler_config({"JobDefaults": "DefCpuPerGPU"})


SACCT_HEADER = "JobIDRaw|Submit|Start|End|Elapsed|AllocCPUS|NNodes|State|ReqTRES|SubmitLine\n"
SACCT_TIMES = "2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:00:10|00:00:10"


@pytest.mark.parametrize(("submit_line", "req_tres", "gpus"), [
    # -c / --cpus-per-task beside the GPUs: kept, so that no DefCpuPerGPU is given
    ("sbatch --gpus=2 -c 4 job.sh", "cpu=8,gres/gpu=2", GpuRequest(2, "job", cpus_per_task=4)),
    ("sbatch --cpus-per-task 3 --gpus-per-node=1 job.sh", "cpu=3,gres/gpu=1", GpuRequest(1, "node", cpus_per_task=3)),
    # the GPUs of an #SBATCH line (ReqTRES's total) with the SubmitLine's --cpus-per-gpu and --mem-per-gpu
    ("sbatch --cpus-per-gpu=3 --mem-per-gpu=1G job.sh", "cpu=6,gres/gpu=2",
     GpuRequest(2, "job", None, 3, 1024.0)),
    ("sbatch -c 2 job.sh", "cpu=2", None),
])
def test_the_sacct_reader_keeps_what_decides_the_gpu_defaults(submit_line: str, req_tres: str,
                                                              gpus: GpuRequest | None) -> None:
    text = SACCT_HEADER + f"5|{SACCT_TIMES}|8|1|COMPLETED|{req_tres}|{submit_line}\n"
    assert parse_sacct_parsable2(text).jobs[0].gpus == gpus


# ---------------------------------------------------------------- djsb history, end to end
@pytest.mark.parametrize(("partition", "n1", "j1", "j2", "asks", "node"), [
    # DefMemPerNode=12000 (the dump has no ReqMem): J1 (2 CPUs on n1) holds 12000 MB of its 16000, so J2
    # (1 CPU) needs 12000 more: n2 (without the default: n1, whose 6 CPUs are free)
    ("DefMemPerNode=12000", 1, 2, 1, "-n 1", "n2"),
    # DefCpuPerGPU=4: J1 (6 CPUs on n1) leaves n1 2 CPUs and 2 GPUs; J2 (2 CPUs, --gpus=1) gets
    # 2 // 4 = 0 GPUs there: n2 (without the default: n1)
    ("DefCpuPerGPU=4", 1, 6, 2, "--gpus=1 -n 2", "n2"),
    # the same with -c 2: no default (_set_gpu_defaults), n1
    ("DefCpuPerGPU=4", 1, 6, 2, "--gpus=1 -c 2", "n1"),
], ids=["DefMemPerNode", "DefCpuPerGPU", "DefCpuPerGPU-cpus-per-task"])
def test_djsb_history_replays_the_site_s_job_defaults(tmp_path: Path, partition: str, n1: int, j1: int, j2: int,
                                                       asks: str, node: str) -> None:
    out = two_job_history(tmp_path, partition, n1, j1, j2, asks)
    jobs = pd.read_csv(out / "jobs.csv").set_index("job_id")
    assert jobs.loc[2, "nodes"] == node
    assert partition.split("=")[0] not in (out / "notes.txt").read_text()
