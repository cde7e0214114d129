"""DefCpuPerGPU and DefMemPerGPU as the mini-cluster's scontrol shows them: slurm.conf's own keys come
back as ``show config``'s ``JobDefaults``, a partition's as its ``JobDefaults`` line, and the model
read from those answers (as ``djsb calibrate`` builds it) has them; the answers are the ones
tests/test_job_defaults.py reads offline."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from slurm_plugin import SlurmCluster, slurm_settings
from test_job_defaults import SHOW_CONFIG_DEFAULTS, SHOW_PARTITION_DEFAULTS

from djsb.jobs.scontrol import parse_show_records
from djsb.slurmsite.slurm_config import cluster_spec, parse_show_config, scheduler_config

PARTITION = ["PartitionName=jd", "Nodes=ALL", "JobDefaults=DefCpuPerGPU=2,DefMemPerGPU=1024"]


def scontrol(*args: str) -> str:
    return subprocess.run(["scontrol", *args], capture_output=True, text=True, check=True, timeout=60).stdout


@pytest.fixture
def defaults_partition(slurm_cluster: SlurmCluster) -> Iterator[None]:
    """Partition jd with job defaults of its own, under slurm.conf's DefCpuPerGPU=3 and DefMemPerGPU=512."""
    with slurm_settings(slurm_cluster, {"DefCpuPerGPU": "3", "DefMemPerGPU": "512"}):
        scontrol("create", *PARTITION)
        try:
            yield
        finally:
            subprocess.run(["scontrol", "delete", PARTITION[0]], capture_output=True, timeout=60, check=False)


@pytest.mark.slurm
def test_the_model_built_from_scontrol_has_the_job_defaults(defaults_partition: None) -> None:
    shown_config, shown_partition = scontrol("show", "config"), scontrol("show", "partition", "jd")
    assert SHOW_CONFIG_DEFAULTS.strip() in shown_config
    assert SHOW_PARTITION_DEFAULTS.splitlines()[3] in shown_partition.splitlines()
    config = scheduler_config(parse_show_config(shown_config))
    assert (config.def_cpu_per_gpu, config.def_mem_per_gpu) == (3, 512.0)
    (part,) = cluster_spec(parse_show_records(shown_partition), parse_show_records(scontrol("show", "node")),
                           "jd").partitions
    assert (part.def_cpu_per_gpu, part.def_mem_per_gpu) == (2, 1024.0)
