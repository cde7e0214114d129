"""What running jobs hold, as the limits count it (acct_policy.c's ``grp_used_tres``, ``used_jobs`` and
node bitmaps): a job's TRES on its placement, the fewest it may be placed with, and the usage of one
group of jobs (:mod:`djsb.model.limits` for QoS, :mod:`djsb.model.assoc_limits` for associations)."""

from __future__ import annotations

from djsb.model.allocation import job_memory
from djsb.model.job import SimJob
from djsb.model.placement import Placement
from djsb.model.tres import CPU, GPU, MEM, NODE, Tres


class Usage:
    """What the running jobs of one user, account or QoS (of one QoS) hold: jobs, TRES, and the
    jobs on each node (the node TRES counts distinct nodes)."""

    __slots__ = ("jobs", "tres", "nodes")

    def __init__(self) -> None:
        self.jobs = 0
        self.tres = [0, 0, 0, 0]
        self.nodes: dict[int, int] = {}

    def need(self, tres: Tres, alloc: Placement, distinct: bool) -> Tres:
        """The TRES a job placed on ``alloc`` adds: its nodes not held already, with ``distinct``."""
        if not distinct:
            return tres
        nodes = self.nodes
        return tres[CPU], tres[MEM], sum(1 for node, _ in alloc if node not in nodes), tres[GPU]

    def held(self) -> Tres:
        """The TRES held now."""
        tres = self.tres
        return tres[CPU], tres[MEM], tres[NODE], tres[GPU]

    def add(self, tres: Tres, alloc: Placement, sign: int) -> None:
        self.jobs += sign
        for i in (CPU, MEM, GPU):
            self.tres[i] += sign * tres[i]
        nodes = self.nodes
        for node, _ in alloc:
            count = nodes.get(node, 0) + sign
            if count:
                nodes[node] = count
            else:
                del nodes[node]
        self.tres[NODE] = len(nodes)


def held(job: SimJob, reason: str) -> bool:
    """Give ``job`` the reason a limit holds it for (the one sacct keeps too); True."""
    job.reason = job.sacct_reason = reason
    return True


def placed_tres(job: SimJob, alloc: Placement) -> Tres:
    """A job's TRES on ``alloc``: its CPUs, the memory it holds there, its nodes and GPUs."""
    memory = job_memory(job, alloc)
    gpus = sum(map(sum, alloc.gpus)) if alloc.gpus is not None else 0
    return job.trace.cpus, int(sum(memory)) if memory else 0, len(alloc), gpus


def per_node(tres: Tres) -> Tres:
    """TRES per node: each divided by the node count (_validate_tres_limits_for_qos's divisor)."""
    nodes = max(1, tres[NODE])
    return tres[CPU] // nodes, tres[MEM] // nodes, 0, tres[GPU] // nodes


def least_tres(job: SimJob) -> Tres:
    """The fewest TRES a job may be placed with: its CPUs, memory, asked node count (else one, or
    what its tasks per node need) and the GPUs that asks (per node, per task or for the job)."""
    trace, shape = job.trace, job.shape
    tasks = shape.tasks if shape is not None else trace.gpus.tasks(trace.cpus) if trace.gpus else trace.cpus
    nodes = trace.nodes or 1
    if shape is not None and shape.tasks_per_node:
        nodes = max(nodes, -(-tasks // shape.tasks_per_node))
    if shape is not None and shape.memory_per_task is not None:
        memory = shape.memory_per_task * tasks
    else:
        memory = trace.memory_mb or 0
    gpus = 0
    if trace.gpus is not None:
        request = trace.gpus
        gpus = request.count * (nodes if request.per == "node" else tasks if request.per == "task" else 1)
        if request.mem_per_gpu is not None:
            memory = gpus * request.mem_per_gpu
    return trace.cpus, int(memory), nodes, gpus
