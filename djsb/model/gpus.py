"""GPUs as a generic resource of the nodes, and the rules by which a job asking some gets them.

A node has GPUs of one or more types (``NodeSpec.gpus``: ``(("a100", 4),)``; an untyped count is
the type ``""``); the cluster state keeps each node's free GPUs per type, in the order of the
cluster's types (:attr:`~djsb.model.cluster_state.ClusterState.gpu_types`). A job asks a
:class:`~djsb.workloads.gpus.GpuRequest`; :func:`demand` turns it into what placement tests, as
Slurm 22.05's select/cons_tres does:

* **which nodes can take the job** (gres_select_filter.c ``gres_select_filter_remove_unusable``):
  a node must offer at least ``min_gres`` free GPUs of the asked type: the count per node
  (``--gpus-per-node``, ``--gres``), the count per task times the tasks per node when the layout
  fixes them, else the count per task, else one (``--gpus``: a job asking GPUs per job takes at
  least one on each of its nodes). A node of an exclusive partition must have all its GPUs free
  (``whole_node``: ``min_gres = total_cnt``), and the job holds all of them.
* **how many of its CPUs a node can hold** (gres_select_filter.c ``gres_select_filter_sock_core``):
  with GPUs per task, no more tasks than its free GPUs serve (``max_tasks = cnt_avail_total /
  gres_per_task``).
* **when the job has enough** (gres_sched.c ``gres_sched_add``, ``gres_sched_test``): a count per
  job, and per task over all tasks (slurmctld sets ``gres_per_job = ntasks * gres_per_task``,
  gres.c ``_job_state_validate``), is met once the nodes taken offer that many; each node adds
  all it has free, and the job holds what it still lacks, node by node.
* **which nodes are preferred** (cons_tres job_test.c ``can_job_run_on_node``: "Favor nodes with
  more co-located GPUs"): a node's scheduling weight becomes ``0xff - near_gpus``, its free GPUs
  capped at the count per node or else per job, so a job counting GPUs per job or task goes first
  on the nodes with the most free GPUs (up to its count); one counting per node sees them all
  alike. :func:`near` is that count.

* **the CPUs and memory its GPUs bring** (``--cpus-per-gpu``, ``--mem-per-gpu``): a node's usable
  GPUs are no more than its free CPUs / ``cpus_per_gpu`` and its free memory / ``mem_per_gpu``
  (gres_select_filter.c ``gres_select_filter_sock_core``: ``max_gres = avail_cpus / cpus_per_gres``,
  ``gres_select_filter_remove_unusable``: ``max_gres = avail_mem / mem_per_gres``); with a count
  per job a node then offers those GPUs' CPUs alone (gres_sched.c ``gres_sched_add``: ``avail_cpus
  = gres_limit * cpus_per_gres``), with a count per task each task has ``count * cpus_per_gpu`` CPUs
  (gres.c ``_test_gres_cnt``), and the job holds ``mem_per_gpu`` for each GPU it holds on a node
  (gres_select_util.c ``gres_select_util_job_mem_set``; all the node's GPUs on an exclusive one).

A trace job's tasks are its CPUs (one CPU each, as SWF counts processors). Nodes are taken, each
with all the CPUs and GPUs it offers, until both cover the job (job_test.c ``_eval_nodes``: ``rem_cpus
-= avail_cpus`` until ``rem_cpus <= 0`` and ``gres_sched_test``); its CPUs are then spread one on
each node and the rest in node order (each node runs a task at least), so a job with fewer CPUs
than the nodes its GPUs need does not fit them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from djsb.workloads.gpus import GpuRequest
from djsb.yamlnodes import Located, as_int, describe

INVALID_GRES = "Invalid generic resource (gres) specification"
"""What sbatch prints for a job asking a GPU type (or GPUs) no node of the cluster has."""

GpuCounts = tuple[tuple[str, int], ...]
"""A node's GPUs: (type, count) pairs, ``""`` for GPUs of no type."""


def gpu_counts(node: Located) -> GpuCounts:
    """A node's ``gpus``: a count (``4``: GPUs of no type) or a count per type (``{a100: 4}``)."""
    if isinstance(node.value, dict):
        counts = tuple((str(key), as_int(child, 0)) for key, child in node.mapping().items())
        if not counts:
            raise node.error("expected a count per GPU type, got an empty mapping")
        return tuple((name, count) for name, count in counts if count)
    if isinstance(node.value, int) and not isinstance(node.value, bool):
        count = as_int(node, 0)
        return (("", count),) if count else ()
    raise node.error(f"expected a GPU count or a count per type ({{a100: 4}}), got {describe(node.value)}")


def gpu_types(nodes: Sequence[GpuCounts]) -> tuple[str, ...]:
    """The cluster's GPU types in the order the nodes first give them."""
    return tuple(dict.fromkeys(name for counts in nodes for name, _ in counts))


@dataclass(frozen=True, slots=True)
class GpuDemand:
    """A job's GPU request as placement tests it (see the module docstring).

    ``types``: the indices of the cluster's types it may use, in order (empty: none the cluster
    has); ``least``: free GPUs a node must offer to take the job; ``per_node`` / ``per_task``: the
    counts it holds on each node or for each task there; ``total``: the count over the job (per
    job, or per task times the tasks; None when counted per node); ``whole``: an exclusive
    partition's job, which needs and holds every GPU of its nodes; ``cpus_per_gpu`` and
    ``mem_per_gpu``: the CPUs and MiB each GPU brings (None: not asked)."""

    types: tuple[int, ...]
    least: int
    per_node: int | None = None
    per_task: int | None = None
    total: int | None = None
    whole: bool = False
    cpus_per_gpu: int | None = None
    mem_per_gpu: float | None = None

    def free(self, node_free: Sequence[int]) -> int:
        """Free GPUs this job may use on a node whose free GPUs per type are ``node_free``."""
        return sum(node_free[t] for t in self.types)

    @property
    def task_cpus(self) -> int:
        """The CPUs of each task of a trace job: one, or with GPUs per task and CPUs per GPU
        ``count * cpus_per_gpu`` (slurmctld's ``cpus_per_task = cpus_per_gres * gres_per_task``,
        gres.c ``_test_gres_cnt``)."""
        if self.per_task is not None and self.cpus_per_gpu is not None:
            return self.per_task * self.cpus_per_gpu
        return 1

    @property
    def bounded(self) -> bool:
        """Whether each GPU brings CPUs or memory, so that a node's CPUs or memory bound its usable GPUs."""
        return self.cpus_per_gpu is not None or self.mem_per_gpu is not None

    def usable(self, free: int, room: int, memory: float | None) -> int:
        """Of ``free`` GPUs, those a node offering ``room`` CPUs and ``memory`` MiB (None: memory not
        counted) can give their CPUs and memory (see the module docstring)."""
        if self.cpus_per_gpu is not None:
            free = min(free, room // self.cpus_per_gpu)
        if self.mem_per_gpu is not None and memory is not None:
            free = min(free, int(memory // self.mem_per_gpu))
        return free

    def offer(self, room: int, free: int, cpus_per_task: int = 1) -> int:
        """CPUs a node offering ``room`` CPUs and ``free`` usable GPUs holds of the job: none when
        it has fewer GPUs than :attr:`least`; with GPUs per task, no more tasks than they serve
        (of ``count * cpus_per_gpu`` CPUs each when it asks CPUs per GPU); with a count per job and
        CPUs per GPU, its GPUs' CPUs."""
        if free < self.least:
            return 0
        cpg = self.cpus_per_gpu
        if self.per_task is not None:
            return min(room, free // self.per_task * (cpus_per_task if cpg is None else self.task_cpus))
        if cpg is not None and self.per_node is None:
            return min(room, free * cpg)
        return room

    def held(self, tasks: int, free: int, lacking: int) -> int:
        """GPUs the job holds on a node where it runs ``tasks`` tasks, with ``free`` usable GPUs,
        while it still lacks ``lacking`` of its count per job."""
        if self.whole:
            return free
        if self.per_node is not None:
            return self.per_node
        if self.per_task is not None:
            return self.per_task * tasks
        return min(free, lacking)

    def near(self, free: int) -> int:
        """The node's co-located GPUs as cons_tres weighs it (``near_gpus``, capped by
        ``max_node_gres``: the count per node, else per job); a larger count is preferred."""
        cap = self.per_node if self.per_node is not None else self.total
        return min(free, cap) if cap is not None else free


def demand(request: GpuRequest, types: Sequence[str], tasks: int, tasks_per_node: int | None = None,
           *, whole: bool = False) -> GpuDemand:
    """What placement tests of ``request`` on a cluster with GPU ``types``, for a job of ``tasks``
    tasks (``tasks_per_node`` when its layout fixes them; ``whole``: an exclusive partition's)."""
    usable = tuple(i for i, name in enumerate(types) if request.type is None or name == request.type)
    count = request.count
    if request.per == "node":
        want = GpuDemand(usable, count, per_node=count, whole=whole)
    elif request.per == "task":
        least = count * (tasks_per_node or 1)
        want = GpuDemand(usable, least, per_task=count, total=count * tasks, whole=whole)
    else:
        want = GpuDemand(usable, 1, total=count, whole=whole)
    if request.cpus_per_gpu is None and request.mem_per_gpu is None:
        return want
    return replace(want, cpus_per_gpu=request.cpus_per_gpu, mem_per_gpu=request.mem_per_gpu)


def split(node_free: Sequence[int], types: Sequence[int], count: int) -> tuple[int, ...]:
    """``count`` GPUs taken from a node's free GPUs of ``types``, the first type first (Slurm picks
    a node's GPUs in gres.conf's order), as a count per cluster type."""
    taken = [0] * len(node_free)
    for t in types:
        take = min(count, node_free[t])
        taken[t] = take
        count -= take
        if not count:
            break
    return tuple(taken)


def misfit(want: GpuDemand, nodes: Mapping[int, Sequence[int]]) -> str:
    """Why a job's GPU demand fits none of ``nodes`` (index -> GPUs per type, all free), for a
    user; "" if GPUs are not the reason."""
    if not want.types:
        return INVALID_GRES
    most = max((want.free(gpus) for gpus in nodes.values()), default=0)
    if most < want.least:
        return f"{want.least} GPUs per node, nodes have {most}"
    return ""
