"""Where a queued job goes on a cluster state: the live state, the empty cluster (admission) or a
planning view of some future instant (the backfill planners).

A trace job asks for CPUs (and maybe a node count, memory per CPU and GPUs): the state's own allocation
rules place it (first fit or cons_tres, :mod:`djsb.model.cluster_state`). A shaped job
(:class:`~djsb.model.shape.JobShape`) is laid out as tasks per node on its candidate nodes, its node
list or its partition's nodes. The same functions serve every caller, so "could it ever start",
"can it start now" and "could it start then" are answered by one set of rules.
"""

from __future__ import annotations

from djsb.model.cluster_state import ClusterState, PartitionState
from djsb.model.job import SimJob
from djsb.model.partition_rows import node_req
from djsb.model.placement import Placement
from djsb.model.shape import JobShape
from djsb.workloads.gpus import GpuRequest


def allocate(job: SimJob, state: ClusterState) -> Placement | None:
    """Nodes for a queued job on ``state``, or None if it must wait; a shaped job's tasks per node
    are recorded on it. Where the rule between partitions applies (:mod:`djsb.model.partition_rows`),
    the nodes it keeps the job from offer nothing."""
    rows = state.rows
    if rows is not None:
        part = job.part
        req = node_req(part.exclusive, part.forced, part.spec.share, exclusive=job.trace.exclusive,
                       oversubscribe=job.shape is not None and job.shape.oversubscribe)
        blocked = rows.blocked(part.index, req, part.node_ids)
        if blocked:
            state = state.without(blocked)
    shape = job.shape
    if shape is None:
        trace = job.trace
        return state.allocate(state.partitions[job.part.index], trace.cpus, trace.nodes, trace.memory_mb,
                              trace.gpus, trace.exclusive)
    tasks, alloc = layout(state, job.part, shape, job.trace.gpus)
    if alloc is not None:
        job.tasks = tasks
    return alloc


def shares_cores(job: SimJob) -> bool:
    """Whether a job may share its cores with other jobs: every job of an ``OverSubscribe=FORCE``
    partition, and on a ``YES`` one a job that asks ``--oversubscribe`` (slurm.conf(5))."""
    return job.part.forced or (job.shape is not None and job.shape.oversubscribe)


def layout(state: ClusterState, part: PartitionState, shape: JobShape,
           gpus: GpuRequest | None = None) -> tuple[list[int], Placement | None]:
    """A shaped job's tasks per node and its nodes in ``state`` now (None if it must wait), with
    the ``gpus`` it asks."""
    nodes = candidates(state, part, shape)
    tasks = shape.tasks_on_nodes(part.cores_per_node, len(nodes))
    want = None if gpus is None else state.gpu_demand(gpus, shape.tasks, shape.tasks_per_node, part=part)
    may_share = part.forced or (shape.oversubscribe and part.spec.share > 1)
    return tasks, state.place(part, tasks, shape.cpus_per_task, shape.memory_per_task, nodes,
                              may_share=may_share, gpus=want)


def candidates(state: ClusterState, part: PartitionState, shape: JobShape) -> list[int]:
    """The nodes a shaped job may use, in order: its node list, else its partition's nodes."""
    if shape.node_list is None:
        return list(part.node_ids)
    index = {name: i for i, name in enumerate(state.node_names)}
    return [index[name] for name in shape.node_list if index[name] in part.members]


def job_memory(job: SimJob, alloc: Placement) -> list[float] | None:
    """Memory a starting job holds on each node of ``alloc`` (its tasks', per GPU with
    ``--mem-per-gpu`` (gres_select_util.c ``gres_select_util_job_mem_set``), or per CPU for a trace
    job)."""
    shape, trace = job.shape, job.trace
    if shape is not None and job.tasks is not None and shape.memory_per_task is not None:
        return [tasks * shape.memory_per_task for tasks in job.tasks]
    per_gpu = trace.gpus.mem_per_gpu if trace.gpus is not None else None
    if per_gpu is not None and alloc.gpus is not None:
        return [sum(held) * per_gpu for held in alloc.gpus]
    if trace.memory_mb and trace.exclusive:  # its memory over its whole nodes
        return [trace.memory_mb / len(alloc)] * len(alloc)
    if trace.memory_mb and trace.cpus:
        return [slots * trace.memory_mb / trace.cpus for _, slots in alloc]
    return None


def held_units(state: ClusterState, job: SimJob, own: int | None = None,
               alloc: Placement | None = None) -> list[tuple[int, int]]:
    """Units a running job holds in its partition (``own`` if known) and in each partition sharing
    its nodes, as (partition index, units): on its whole allocation, or on ``alloc``, part of it."""
    part = job.part
    alloc = job.alloc if alloc is None else alloc
    amounts = [(part.index, state.amount_in(part, alloc) if own is None else own)]
    for q in part.overlaps:
        amount = state.amount_in(state.partitions[q], alloc)
        if amount:
            amounts.append((q, amount))
    return amounts
