"""What a job's partition makes of its request at submission: the default memory of a job asking
none, the default CPUs per GPU of a job asking GPUs, and the CPUs of a job asking more memory per
CPU than the partition allows.

Slurm 22.05 gives a job that asks no memory its partition's default memory, else slurm.conf's
(job_mgr.c ``_validate_job_desc``: ``pn_min_memory = part_ptr->def_mem_per_cpu``, else
``slurm_conf.def_mem_per_cpu``). That one field holds DefMemPerCPU (flagged ``MEM_PER_CPU``) or
DefMemPerNode, never both: read_config.c reads DefMemPerNode first and ignores a DefMemPerCPU beside
it ("mutually exclusive"), on a partition line as cluster-wide, and a partition giving either stands
before slurm.conf's. So the job holds DefMemPerCPU for each CPU it gets, or DefMemPerNode on each of
its nodes; as the model holds a job's memory per CPU, a default per node is multiplied out by the
nodes the job asked (one when it asked no count), as the sacct reader multiplies out a ``--mem``
(djsb/workloads/sacct_columns.py ``memory_mb``).

A job asking GPUs gets DefMemPerGPU instead where one is set, its partition's first, else
slurm.conf's (cons_common job_test.c ``_set_gpu_defaults`` sets the job's ``def_mem_per_gres``), and
as the job has not set its memory (no ``JOB_MEM_SET``), ``_job_test`` gives it ``def_mem_per_gres``
for each GPU it holds on a node (gres_select_util.c ``gres_select_util_job_mem_set``): the model then
places and holds it as a job asking ``--mem-per-gpu`` (:mod:`djsb.model.gpus`).

The same ``_set_gpu_defaults`` gives a job asking GPUs without ``--cpus-per-task``
(``orig_cpus_per_task == NO_VAL16``) its partition's DefCpuPerGPU, else slurm.conf's, as the CPUs
each of its GPUs brings (gres_select_util.c ``gres_select_util_job_set_defs``: ``def_cpus_per_gres``,
which every reader takes where the job set no ``cpus_per_gres``, e.g. ``gres_select_util_job_min_cpus``):
a job asking ``--cpus-per-gpu`` keeps its own. The model then places it as a job asking
``--cpus-per-gpu``; its CPUs stay the trace's, which for a recorded job are those Slurm gave it.

A job whose memory per CPU (the model's memory is per CPU) is above its partition's MaxMemPerCPU,
else slurm.conf's, gets more CPUs instead (job_mgr.c ``_valid_pn_min_mem``, which
``job_limits_check`` applies to every pending job): ``ratio = ceil(mem_per_cpu / MaxMemPerCPU)``,
its CPUs times ``ratio`` and ``ceil(mem_per_cpu / ratio)`` MB on each.

Not modelled: a GPU job's node must also hold DefMemPerCPU for its CPUs (``can_job_run_on_node``
tests both), and MaxMemPerNode.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple

from djsb.model.cluster_spec import PartitionSpec
from djsb.model.scheduler import SchedulerConfig
from djsb.workloads.job import TraceJob


class JobDefaults(NamedTuple):
    """What one partition's jobs get when they do not ask it, each its own or else the cluster's
    (None: nothing); the default memory is per CPU or per node, never both."""

    mem_per_cpu: float | None
    mem_per_gpu: float | None
    max_mem_per_cpu: float | None
    mem_per_node: float | None
    cpus_per_gpu: int | None


NO_DEFAULTS = JobDefaults(None, None, None, None, None)


def _first(own: float | None, cluster: float | None) -> float | None:
    """A partition's setting, else the cluster's."""
    return own if own is not None else cluster


def defaults(part: PartitionSpec, config: SchedulerConfig) -> JobDefaults:
    """The defaults of ``part``'s jobs under ``config``'s cluster-wide ones: the partition's default
    memory, per CPU or per node, if it gives one, else the cluster's (job_mgr.c ``_validate_job_desc``
    tests ``part_ptr->def_mem_per_cpu``, the field holding either); each other one the partition's,
    else the cluster's (job_test.c ``_set_gpu_defaults``)."""
    own = part.def_mem_per_cpu is not None or part.def_mem_per_node is not None
    per_cpu, per_node = (part.def_mem_per_cpu, part.def_mem_per_node) if own else \
        (config.def_mem_per_cpu, config.def_mem_per_node)
    cpus = part.def_cpu_per_gpu if part.def_cpu_per_gpu is not None else config.def_cpu_per_gpu
    return JobDefaults(per_cpu, _first(part.def_mem_per_gpu, config.def_mem_per_gpu),
                       _first(part.max_mem_per_cpu, config.max_mem_per_cpu), per_node, cpus)


class PartitionMemory:
    """The defaults and memory limit of the jobs of each partition of ``partitions`` (the first is
    the default partition) under ``config``'s cluster-wide ones: a :class:`JobDefaults` by
    partition name."""

    def __init__(self, partitions: Sequence[PartitionSpec], config: SchedulerConfig) -> None:
        self.by_partition = {part.name: defaults(part, config) for part in partitions}
        self.default = partitions[0].name
        self.any = any(value is not None for values in self.by_partition.values() for value in values)
        """Whether any job may be changed (else :meth:`give` is never needed)."""

    def give(self, trace: TraceJob) -> TraceJob:
        """``trace`` with the CPUs per GPU and the memory its partition gives it when it asks none,
        and the CPUs its memory per CPU needs under MaxMemPerCPU (itself otherwise, or for an unknown
        partition, which admission refuses)."""
        given = self.by_partition.get(trace.partition or self.default, NO_DEFAULTS)
        gpus = trace.gpus
        if gpus is not None and given.cpus_per_gpu is not None and gpus.cpus_per_gpu is None \
                and gpus.cpus_per_task is None:
            gpus = replace(gpus, cpus_per_gpu=given.cpus_per_gpu)
            trace = replace(trace, gpus=gpus)
        if trace.memory_mb is None and (gpus is None or gpus.mem_per_gpu is None):
            if gpus is not None and given.mem_per_gpu is not None:
                return replace(trace, gpus=replace(gpus, mem_per_gpu=given.mem_per_gpu))
            if given.mem_per_node is not None:
                trace = replace(trace, memory_mb=given.mem_per_node * (trace.nodes or 1))
            elif given.mem_per_cpu is not None:
                trace = replace(trace, memory_mb=given.mem_per_cpu * trace.cpus)
        most = given.max_mem_per_cpu
        if most is not None and trace.memory_mb is not None and trace.memory_mb > most * trace.cpus:
            asked = trace.memory_mb / trace.cpus
            ratio = math.ceil(asked / most)
            cpus = trace.cpus * ratio
            return replace(trace, cpus=cpus, memory_mb=math.ceil(asked / ratio) * cpus)
        return trace
