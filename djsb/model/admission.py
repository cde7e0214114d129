"""Admission: whether a submitted job may ever run, and the time limit it runs under.

Jobs that can never run are rejected at submission and listed in ``SimulationResult.rejected``
with a reason, never left to stall the queue. Slurm refuses at submission a job that no node of
its partition could ever hold, whatever ``EnforcePartLimits`` says (sbatch prints "Requested node
configuration is not available"), and with ``EnforcePartLimits=ALL`` (or ``ANY``) also a job over
the partition's limits (CPUs outside MinCPUs/MaxCPUs, more than the partition holds, a time limit
above MaxTime, a QoS its AllowQos leaves out); with ``NO``, Slurm's default, such a job would pend
forever. The model rejects both kinds, as ``ALL`` does. "Fits no node" is decided exactly, by
allocating the job on the empty cluster with the allocation code itself
(:mod:`djsb.model.allocation`): per-node CPUs and memory of a job asking N nodes, its memory per
CPU, its GPUs, and a shaped job's tasks per node all count. A job asking a GPU type no node of its
partition has (or GPUs where there are none) is refused as sbatch refuses it ("Invalid generic
resource (gres) specification"). Slurm lets such a job wait only for nodes that do not exist yet
(a ``FUTURE`` or cloud node whose size could differ); the model has none.
"""

from __future__ import annotations

import math

from djsb.model.allocation import candidates, layout
from djsb.model.assoc_spec import AssocTree
from djsb.model.cluster_spec import ClusterSpec, QosSpec
from djsb.model.cluster_state import ClusterState, PartitionState
from djsb.model.gpus import INVALID_GRES, misfit
from djsb.model.job import SimJob
from djsb.model.qos_order import max_wall
from djsb.model.shape import JobShape
from djsb.workloads.gpus import GpuRequest
from djsb.workloads.job import TraceJob

NODE_CONFIG_UNAVAILABLE = "Requested node configuration is not available"
"""Why a job that fits no node of its partition is rejected: what sbatch prints for it."""
INVALID_QOS = "Invalid qos specification"
"""Why a job whose QoS its partition's AllowQos leaves out is rejected (ESLURM_INVALID_QOS, job_mgr.c
``_part_access_check`` calling partition_mgr.c ``part_policy_valid_qos``), what sbatch prints."""


class Admission:
    """The submission checks of one replay on ``state`` (the live cluster state, for its partitions
    and node names; capacity is judged on an empty copy of ``cluster``)."""

    def __init__(self, cluster: ClusterSpec, state: ClusterState) -> None:
        self.state = state
        self.empty = ClusterState(cluster)  # never committed to: "could this job ever start?"
        self.fits_empty: dict[tuple[int, int, int | None, float | None, GpuRequest | None, bool], bool] = {}
        self.qos = {q.name: q for q in cluster.qos}
        self.default_qos = cluster.qos[0]
        self.associations = AssocTree(cluster.associations) if cluster.associations else None

    def admit(self, trace: TraceJob, shape: JobShape | None) -> tuple[str, PartitionState, QosSpec]:
        """Why ``trace`` laid out as ``shape`` is refused ("" if it is admitted), its partition and QoS."""
        state = self.state
        parts = state.partitions
        part = state.by_name.get(trace.partition) if trace.partition else parts[0]
        qos = self.qos.get(trace.qos) if trace.qos else self.default_qos
        if part is None:
            return f"unknown partition {trace.partition!r}", parts[0], qos or self.default_qos
        if qos is None:
            return f"unknown QoS {trace.qos!r}", part, self.default_qos
        spec = part.spec
        if trace.cpus < max(1, spec.min_cpus):
            return f"{trace.cpus} CPUs below the partition minimum {spec.min_cpus}", part, qos
        if spec.max_cpus is not None and trace.cpus > spec.max_cpus:
            return f"{trace.cpus} CPUs above the partition maximum {spec.max_cpus}", part, qos
        if state.need(part, trace.cpus, trace.nodes, trace.exclusive) > part.capacity or (
                trace.cpus > part.cores):
            return f"{trace.cpus} CPUs exceed partition {spec.name}'s size", part, qos
        if spec.max_time is not None and trace.requested_time is not None \
                and trace.requested_time > spec.max_time:
            return f"time limit {trace.requested_time:g} s above MaxTime {spec.max_time:g} s", part, qos
        if spec.allow_qos and qos.name.lower() not in spec.allow_qos:
            return (f"{INVALID_QOS} (partition {spec.name} allows {','.join(spec.allow_qos)} not {qos.name})",
                    part, qos)
        if shape is not None and shape.node_list is not None:
            unknown = set(shape.node_list) - set(state.node_names)
            if unknown or not candidates(state, part, shape):
                return f"node list {','.join(shape.node_list)} not in partition {spec.name}", part, qos
        if not self._fits_empty(trace, part, shape):
            return self._unavailable(part, shape, trace), part, qos
        return "", part, qos

    def time_limit(self, trace: TraceJob, part: PartitionState, qos: QosSpec) -> float:
        """The limit an admitted job runs under: its requested time; without one, the MaxWall of its
        QoS or its partition's QoS, the first to set one, else its associations' (the least of MaxWall and
        each level's GrpWall: :meth:`AssocTree.default_wall`; acct_policy.c
        ``_set_time_limit`` from ``_validate_time_limit``, QoS first: a job without --time gets the
        limit; :mod:`djsb.model.qos_order`, :mod:`djsb.model.assoc_spec`) but never above its
        partition's MaxTime, else that MaxTime, else none. A requested time above MaxWall is kept:
        the job pends (:mod:`djsb.model.limits`)."""
        if trace.requested_time is not None and trace.requested_time > 0:
            return trace.requested_time
        limit = part.spec.max_time if part.spec.max_time is not None else math.inf
        wall = qos.max_wall if part.spec.qos is None else max_wall(qos, self.qos[part.spec.qos])
        if wall is None and self.associations is not None:
            tree = self.associations
            wall = tree.default_wall(trace.user, trace.account,
                                     tree.partition_of(trace.user, trace.account, part.spec.name))
        return min(limit, wall) if wall is not None else limit

    def _unavailable(self, part: PartitionState, shape: JobShape | None, trace: TraceJob) -> str:
        """Slurm's refusal of a job no node configuration fits, with what a shaped job's layout
        needs that its partition's largest node lacks, or the GPUs none of its nodes has."""
        if trace.gpus is not None:
            tasks, per_node = (shape.tasks, shape.tasks_per_node) if shape is not None else (
                trace.gpus.tasks(trace.cpus), None)
            want = self.empty.gpu_demand(trace.gpus, tasks, per_node, part=part)
            gpus = misfit(want, {i: self.empty.node_gpus[i] for i in part.node_ids})
            if gpus == INVALID_GRES:
                return gpus
            if gpus:
                return f"{NODE_CONFIG_UNAVAILABLE} ({gpus})"
        if shape is None:
            return NODE_CONFIG_UNAVAILABLE
        nodes = candidates(self.state, part, shape)
        memories = [self.empty.node_mem_free[i] for i in nodes]
        memory = None if None in memories else max(m for m in memories if m is not None)
        detail = shape.misfit(max(self.empty.node_cores[i] for i in nodes), memory, len(nodes),
                              part.forced or shape.oversubscribe)
        return f"{NODE_CONFIG_UNAVAILABLE} ({detail})" if detail else NODE_CONFIG_UNAVAILABLE

    def fits_idle(self, job: SimJob, unavailable: frozenset[int]) -> bool:
        """Could ``job`` start if every node but ``unavailable`` were idle? Slurm's main scheduler
        asks this of a job that does not start (``runable_avail`` in node_scheduler.c's
        _pick_best_nodes: the select plugin's test-only mode on the nodes still available); a job it
        fails fails its partition, one it passes does not (ESLURM_NODE_NOT_AVAIL)."""
        empty = self.empty.without(unavailable)
        part = empty.partitions[job.part.index]
        trace = job.trace
        if job.shape is not None:
            return layout(empty, part, job.shape, trace.gpus)[1] is not None
        return empty.allocate(part, trace.cpus, trace.nodes, trace.memory_mb, trace.gpus) is not None

    def _fits_empty(self, trace: TraceJob, part: PartitionState, shape: JobShape | None) -> bool:
        """Could the job start on the empty cluster? (Trace jobs' answers are cached by request.)"""
        empty_part = self.empty.partitions[part.index]
        if shape is not None:
            return layout(self.empty, empty_part, shape, trace.gpus)[1] is not None
        request = (part.index, trace.cpus, trace.nodes, trace.memory_mb, trace.gpus, trace.exclusive)
        fits = self.fits_empty.get(request)
        if fits is None:
            fits = self.fits_empty[request] = self.empty.allocate(
                empty_part, trace.cpus, trace.nodes, trace.memory_mb, trace.gpus, trace.exclusive) is not None
        return fits
