"""The memory a job asking none is given at submission: its partition's default, else the cluster's.

Slurm 22.05 gives a job that asks no memory its partition's DefMemPerCPU, else slurm.conf's
(job_mgr.c ``_validate_job_desc``: ``pn_min_memory = part_ptr->def_mem_per_cpu``, else
``slurm_conf.def_mem_per_cpu``), so it holds that much per CPU it gets. A job asking GPUs gets
DefMemPerGPU instead where one is set, its partition's first, else slurm.conf's (cons_common
job_test.c ``_set_gpu_defaults`` sets the job's ``def_mem_per_gres``), and as the job has not set
its memory (no ``JOB_MEM_SET``), ``_job_test`` gives it ``def_mem_per_gres`` for each GPU it holds on a
node (gres_select_util.c ``gres_select_util_job_mem_set``): the model then places and holds it as a
job asking ``--mem-per-gpu`` (:mod:`djsb.model.gpus`). Not modelled: such a GPU job's node must
also hold DefMemPerCPU for its CPUs (``can_job_run_on_node`` tests both), and DefMemPerNode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from djsb.model.cluster import PartitionSpec
from djsb.model.scheduler import SchedulerConfig
from djsb.workloads.job import TraceJob


class MemoryDefaults:
    """The default memory of the jobs of each partition of ``partitions`` (the first is the
    default partition) under ``config``'s cluster-wide defaults."""

    def __init__(self, partitions: Sequence[PartitionSpec], config: SchedulerConfig) -> None:
        self.by_partition = {
            part.name: (part.def_mem_per_cpu if part.def_mem_per_cpu is not None else config.def_mem_per_cpu,
                        part.def_mem_per_gpu if part.def_mem_per_gpu is not None else config.def_mem_per_gpu)
            for part in partitions}
        self.default = partitions[0].name
        self.any = any(cpu is not None or gpu is not None for cpu, gpu in self.by_partition.values())
        """Whether any job may be given memory (else :meth:`give` is never needed)."""

    def give(self, trace: TraceJob) -> TraceJob:
        """``trace`` with the memory its partition gives it when it asks none (itself otherwise, or
        for an unknown partition, which admission refuses)."""
        gpus = trace.gpus
        if trace.memory_mb is not None or (gpus is not None and gpus.mem_per_gpu is not None):
            return trace
        per_cpu, per_gpu = self.by_partition.get(trace.partition or self.default, (None, None))
        if gpus is not None and per_gpu is not None:
            return replace(trace, gpus=replace(gpus, mem_per_gpu=per_gpu))
        if per_cpu is not None:
            return replace(trace, memory_mb=per_cpu * trace.cpus)
        return trace
