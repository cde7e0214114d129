"""What a job's partition makes of its memory at submission: the default memory of a job asking
none, and the CPUs of a job asking more memory per CPU than the partition allows.

Slurm 22.05 gives a job that asks no memory its partition's DefMemPerCPU, else slurm.conf's
(job_mgr.c ``_validate_job_desc``: ``pn_min_memory = part_ptr->def_mem_per_cpu``, else
``slurm_conf.def_mem_per_cpu``), so it holds that much per CPU it gets. A job asking GPUs gets
DefMemPerGPU instead where one is set, its partition's first, else slurm.conf's (cons_common
job_test.c ``_set_gpu_defaults`` sets the job's ``def_mem_per_gres``), and as the job has not set
its memory (no ``JOB_MEM_SET``), ``_job_test`` gives it ``def_mem_per_gres`` for each GPU it holds on a
node (gres_select_util.c ``gres_select_util_job_mem_set``): the model then places and holds it as a
job asking ``--mem-per-gpu`` (:mod:`djsb.model.gpus`).

A job whose memory per CPU (the model's memory is per CPU) is above its partition's MaxMemPerCPU,
else slurm.conf's, gets more CPUs instead (job_mgr.c ``_valid_pn_min_mem``, which
``job_limits_check`` applies to every pending job): ``ratio = ceil(mem_per_cpu / MaxMemPerCPU)``,
its CPUs times ``ratio`` and ``ceil(mem_per_cpu / ratio)`` MB on each.

Not modelled: a GPU job's node must also hold DefMemPerCPU for its CPUs (``can_job_run_on_node``
tests both), DefMemPerNode and MaxMemPerNode.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from djsb.model.cluster import PartitionSpec
from djsb.model.scheduler import SchedulerConfig
from djsb.workloads.job import TraceJob


def _first(own: float | None, cluster: float | None) -> float | None:
    """A partition's setting, else the cluster's."""
    return own if own is not None else cluster


class PartitionMemory:
    """The memory settings of the jobs of each partition of ``partitions`` (the first is the
    default partition) under ``config``'s cluster-wide ones: (DefMemPerCPU, DefMemPerGPU,
    MaxMemPerCPU) by partition name."""

    def __init__(self, partitions: Sequence[PartitionSpec], config: SchedulerConfig) -> None:
        self.by_partition = {
            part.name: (_first(part.def_mem_per_cpu, config.def_mem_per_cpu),
                        _first(part.def_mem_per_gpu, config.def_mem_per_gpu),
                        _first(part.max_mem_per_cpu, config.max_mem_per_cpu))
            for part in partitions}
        self.default = partitions[0].name
        self.any = any(value is not None for values in self.by_partition.values() for value in values)
        """Whether any job may be changed (else :meth:`give` is never needed)."""

    def give(self, trace: TraceJob) -> TraceJob:
        """``trace`` with the memory its partition gives it when it asks none, and the CPUs its
        memory per CPU needs under MaxMemPerCPU (itself otherwise, or for an unknown partition,
        which admission refuses)."""
        per_cpu, per_gpu, most = self.by_partition.get(trace.partition or self.default, (None, None, None))
        gpus = trace.gpus
        if trace.memory_mb is None and (gpus is None or gpus.mem_per_gpu is None):
            if gpus is not None and per_gpu is not None:
                return replace(trace, gpus=replace(gpus, mem_per_gpu=per_gpu))
            if per_cpu is not None:
                trace = replace(trace, memory_mb=per_cpu * trace.cpus)
        if most is not None and trace.memory_mb is not None and trace.memory_mb > most * trace.cpus:
            asked = trace.memory_mb / trace.cpus
            ratio = math.ceil(asked / most)
            cpus = trace.cpus * ratio
            return replace(trace, cpus=cpus, memory_mb=math.ceil(asked / ratio) * cpus)
        return trace
