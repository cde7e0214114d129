"""slurm.conf read offline (djsb/slurmsite/slurm_conf.py): the mini-cluster's real file, and the
grammar of slurm.conf(5) on small files worked by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from djsb.errors import ConfigError
from djsb.slurmsite.slurm_conf import (
    gres_notes,
    parse_gres_conf,
    parse_slurm_conf,
    read_gres_conf,
    read_slurm_conf,
)
from djsb.slurmsite.slurm_config import cluster_spec, scheduler_config

MINI = Path(__file__).parent / "fixtures" / "sacct" / "minicluster-slurm.conf"


def test_the_mini_clusters_file_gives_what_scontrol_shows() -> None:
    conf = read_slurm_conf(MINI)
    # NodeName=DEFAULT CPUs=2 RealMemory=2048 State=UNKNOWN, then n1..n4 one line each
    assert [node["NodeName"] for node in conf.nodes] == ["n1", "n2", "n3", "n4"]
    assert {(node["CPUTot"], node["RealMemory"], node["State"]) for node in conf.nodes} == {("2", "2048", "UNKNOWN")}
    # Nodes=ALL is every node; MaxTime=INFINITE is scontrol's UNLIMITED
    shared = conf.partitions[0]
    assert (shared["PartitionName"], shared["Nodes"], shared["MaxTime"], shared["Default"]) == \
        ("shared", "n1,n2,n3,n4", "UNLIMITED", "YES")
    assert [p["OverSubscribe"] for p in conf.partitions] == ["FORCE:4", "YES:4", "EXCLUSIVE"]
    # SchedulerParameters=batch_sched_delay=0,sched_interval=2,bf_interval=5 and KillWait=5
    scheduler = scheduler_config(conf.config)
    assert (scheduler.backfill, scheduler.sched_interval, scheduler.bf_interval, scheduler.batch_sched_delay) == \
        ("conservative", 2.0, 5.0, 0.0)
    assert scheduler.kill_wait == 5.0
    cluster = cluster_spec(conf.partitions, conf.nodes, "shared")
    assert [(n.name, n.cores, n.memory_mb) for n in cluster.nodes] == [(f"n{i}", 2, 2048.0) for i in range(1, 5)]
    assert cluster.partitions[0].max_time is None


def test_grammar_comments_continuations_case_and_quotes() -> None:
    conf = parse_slurm_conf(
        "schedulertype=sched/builtin   # the main scheduler alone\n"
        "ClusterName=a\\#b\n"
        "PriorityFlags=\"SMALL_RELATIVE_TO_TIME\"\n"
        "NodeName=c[01-03] Sockets=2 CoresPerSocket=8 \\\n"
        "   ThreadsPerCore=2 RealMemory=64000 Features=ib,gpu\n"
        "PartitionName=DEFAULT MaxTime=1-00:00:00\n"
        "PartitionName=batch Nodes=c[01-02]\n"
        "PartitionName=long Nodes=c03 MaxTime=7-00:00:00\n"
        "KillWait=10\n"
        "KillWait=20\n")
    # the last value of a setting wins, as slurmctld reads it
    assert conf.config == {"SchedulerType": "sched/builtin", "ClusterName": "a#b",
                           "PriorityFlags": "SMALL_RELATIVE_TO_TIME", "KillWait": "20"}
    # 2 sockets x 8 cores x 2 threads = 32 CPUs per node, one record per node of c[01-03]
    assert [(n["NodeName"], n["CPUTot"], n["Features"]) for n in conf.nodes] == \
        [("c01", "32", "ib,gpu"), ("c02", "32", "ib,gpu"), ("c03", "32", "ib,gpu")]
    assert [(p["PartitionName"], p["MaxTime"]) for p in conf.partitions] == \
        [("batch", "1-00:00:00"), ("long", "7-00:00:00")]


def test_a_continued_line_goes_on_where_its_backslash_stood() -> None:
    """parse_config.c ``_strip_continuation`` (22.05) overwrites the backslash with the next line: no
    space comes between, so a value split after a comma stays one value (a space read in between
    made ``bf_window=10080,bf_continue`` a key of its own, and the replay forgot both)."""
    conf = parse_slurm_conf("SchedulerParameters=defer,bf_resolution=1800,\\\nbf_window=10080,bf_continue\n")
    assert conf.config == {"SchedulerParameters": "defer,bf_resolution=1800,bf_window=10080,bf_continue"}


def test_includes_are_read_relative_to_the_including_file(tmp_path: Path) -> None:
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "10-nodes.conf").write_text("NodeName=n[1-2] CPUs=4\n")
    (tmp_path / "conf.d" / "20-parts.conf").write_text("PartitionName=p Nodes=ALL\n")
    (tmp_path / "slurm.conf").write_text("SchedulerType=sched/backfill\nInclude conf.d/*.conf\n")
    conf = read_slurm_conf(tmp_path / "slurm.conf")
    assert [n["NodeName"] for n in conf.nodes] == ["n1", "n2"]
    assert conf.partitions[0]["Nodes"] == "n1,n2"
    assert conf.sources[1:] == [str(tmp_path / "conf.d" / "10-nodes.conf"), str(tmp_path / "conf.d" / "20-parts.conf")]


def test_an_include_loop_and_a_missing_include_are_one_error_each(tmp_path: Path) -> None:
    (tmp_path / "slurm.conf").write_text("ClusterName=x\nInclude slurm.conf\n")
    with pytest.raises(ConfigError, match="includes nested more than 16 deep") as loop:
        read_slurm_conf(tmp_path / "slurm.conf")
    assert loop.value.line == 2
    (tmp_path / "slurm.conf").write_text("ClusterName=x\n\nInclude nodes.conf\n")
    with pytest.raises(ConfigError, match="cannot read .*nodes.conf") as missing:
        read_slurm_conf(tmp_path / "slurm.conf")
    assert (missing.value.source, missing.value.line) == (str(tmp_path / "slurm.conf"), 3)


def test_an_item_without_a_value_names_its_line() -> None:
    with pytest.raises(ConfigError, match="'CPUs' is not Key=Value") as bad:
        parse_slurm_conf("ClusterName=x\nNodeName=n1 CPUs\n", source="site.conf")
    assert bad.value.one_line() == "site.conf:2: 'CPUs' is not Key=Value"


GRES_CONF = """\
# Generic resources, in the forms of gres.conf(5)'s examples (Slurm 22.05)
AutoDetect=nvml
NodeName=tux[0-15]  Name=gpu File=/dev/nvidia[0-3]
NodeName=tux[16-31] Name=gpu Type=tesla File=/dev/nvidia[0-7] COREs=0,1
name=mps Count=100 File=/dev/nvidia0
"""


def test_a_gres_conf_beside_slurm_conf_is_read_and_each_resource_noted(tmp_path: Path) -> None:
    records = parse_gres_conf(GRES_CONF)
    assert records[0] == {"AutoDetect": "nvml"}
    assert records[2] == {"NodeName": "tux[16-31]", "Name": "gpu", "Type": "tesla", "File": "/dev/nvidia[0-7]",
                          "Cores": "0,1"}  # keys are case-insensitive: COREs is Cores
    assert records[3] == {"Name": "mps", "Count": "100", "File": "/dev/nvidia0"}
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\n")
    assert read_gres_conf(conf) is None  # none beside it: nothing to say
    (tmp_path / "gres.conf").write_text(GRES_CONF)
    found = read_gres_conf(conf)
    assert found is not None
    notes = gres_notes(*found)
    gres = tmp_path / "gres.conf"
    # slurmctld schedules by slurm.conf's Gres=, which the model reads: a GPU line is noted only
    # for its binding, another resource for not being placed
    assert notes == [f"{gres}: AutoDetect=nvml: the model takes each node's GPUs from slurm.conf's Gres=",
                     f"{gres}: gpu (tesla) on tux[16-31]: Cores=0,1 has no model: the model binds no GPU to "
                     "cores or to another GPU",
                     f"{gres}: mps on every node x100 has no model: only GPUs are placed, and a job's request "
                     "of it is replayed without it"]
    (tmp_path / "gres.conf").write_text("Name=gpu File\n")
    with pytest.raises(ConfigError, match=r"gres.conf:1: 'File' is not Key=Value"):
        read_gres_conf(conf)
