"""What a job asks for beyond a trace record: task layout, node list and oversubscription.

A trace job is only "``cpus`` CPUs, maybe on ``nodes`` nodes". A DJSB request (paper 001 sec. 2.3)
says more, in sbatch terms: ``--ntasks`` tasks of ``--cpus-per-task`` CPUs each, a number of
tasks per node (``--ntasks-per-node``), possibly the exact nodes to run on (``--nodelist``, how an
analytics lands on the simulation's nodes) and ``--oversubscribe``. The model places such a job
with :meth:`djsb.model.cluster_state.ClusterState.place`; its ``TraceJob.cpus`` must equal
``tasks * cpus_per_task``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class JobShape:
    """``tasks`` x ``cpus_per_task`` CPUs, ``tasks_per_node`` per node (None: fill each node).

    ``memory_per_task`` is in the unit of ``NodeSpec.memory_mb`` (None: no memory constraint);
    ``node_list`` restricts the job to those node names, tried in that order.
    """

    tasks: int
    cpus_per_task: int
    tasks_per_node: int | None = None
    memory_per_task: float | None = None
    node_list: tuple[str, ...] | None = None
    oversubscribe: bool = False

    def misfit(self, cores: int, memory: float | None, n_candidates: int, may_share: bool) -> str:
        """Why this job fits no ``n_candidates`` nodes of ``cores`` cores and ``memory`` each (its
        partition's largest node), for a user: the node count, memory or cores per node its layout
        needs; "" if none of them is the reason."""
        counts = self.tasks_on_nodes(cores, n_candidates)
        most = max(counts)
        if len(counts) > n_candidates:
            return f"{len(counts)} nodes ({most} tasks per node), only {n_candidates} available"
        if memory is not None and self.memory_per_task is not None and most * self.memory_per_task > memory:
            return f"{most * self.memory_per_task:g} MB of memory per node, nodes have {memory:g} MB"
        if not may_share and most * self.cpus_per_task > cores:
            return f"{most * self.cpus_per_task} cores per node, nodes have {cores}"
        return ""

    def tasks_on_nodes(self, cores_per_node: int, n_candidates: int) -> list[int]:
        """Tasks on each node: ``tasks_per_node`` per node, the last takes the remainder.

        Without ``tasks_per_node``, a job with a node list spreads evenly over its ``n_candidates``
        nodes and any other job fills nodes (``cores_per_node // cpus_per_task`` tasks each).
        """
        if self.tasks_per_node is not None:
            per_node = self.tasks_per_node
        elif self.node_list is not None:
            per_node = math.ceil(self.tasks / n_candidates)
        else:
            per_node = max(1, cores_per_node // self.cpus_per_task)
        full, rest = divmod(self.tasks, per_node)
        return [per_node] * full + ([rest] if rest else [])
