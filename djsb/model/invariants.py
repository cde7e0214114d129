"""An optional, independent checker of the model's four scheduling invariants.

1. No node is ever oversubscribed beyond its partition's OverSubscribe setting: the slots used on
   a node never exceed cores x share, a job that may not share (NO, or YES without
   ``--oversubscribe``) never brings a node above its core count, and a node given to an
   exclusive job holds nothing else. Nor are its GPUs: the GPUs of each type that running jobs
   (suspended ones included: they keep their GPUs) hold on a node never exceed the node's, and a
   job asking GPUs holds at least what it asked (its count on each node, or over the job). Nor
   does a partition with a MaxCPUsPerNode: its running jobs hold no more than that on a node. Nor,
   where a node is in two partitions one of which has two rows or more (OverSubscribe YES:N or
   FORCE:N, N >= 2), does a job start beside jobs it may not share the node with
   (:mod:`djsb.model.partition_rows`, cons_common ``_verify_node_state``): a job that does not
   share cores (ONE_ROW) on a node running jobs of another partition of two rows or more, a job that
   shares cores (AVAILABLE) on a node running a job that does not.
2. A backfilled job never delays the reserved start of a higher-priority job: after every
   backfill pass, each reservation made in it is still feasible at its reserved start given the
   running jobs (planned to end at start + rounded limit, or at the end of its grace time once
   being preempted) and the earlier reservations. A preemptor's reservation, planned over the jobs
   it may preempt, is not checked so, nor promised (invariant 3); it is ahead of the later ones.
3. A job that got a reservation starts no later than its reserved start, unless an event that
   may legitimately move it happened after the pass that promised it (listed below). Checked at
   every backfill pass: a reserved job still waiting at a pass at or after its reserved start,
   or given a later start by a pass, is a violation. This is what a backfilled job that takes a
   resource the reservation needs (a node's memory, a specific node) breaks, even when the
   reservation's unit count still fits (invariant 2 counts units).
4. The running jobs of a QoS keep within its limits (:mod:`djsb.model.limits`): each job within
   MaxTRESPerJob and MaxTRESPerNode, and the jobs and TRES of each user, each account and the whole
   QoS within MaxJobsPerUser, MaxTRESPerUser, MaxJobsPerAccount, MaxTRESPerAccount, GrpJobs and
   GrpTRES, counted afresh at every start (nodes counted once however many jobs share them).

The events that may move a reserved start later (each *voids* the promise; the next pass that
reserves the job promises afresh), for a reserved job H of partition P:

* a job that sorts ahead of H in the queue is submitted to P or a partition sharing P's nodes, or
  a priority recomputation changes the queue order (``on_reorder``);
* a job that sorts ahead of H starts in P or a partition sharing its nodes (it may take what H
  was planned on, e.g. a job held by a per-user limit that became eligible);
* the main pass starts a job in another partition sharing P's nodes (it blocks per partition and
  does not plan across partitions);
* the main pass starts a job of P that sorts behind H while a job sorting ahead of H waits in
  another partition sharing P's nodes: that partition failed in the pass and took its nodes from
  the jobs after it, and H, unable to run on the nodes left even were they idle, is skipped without
  failing P (Slurm's ESLURM_NODE_NOT_AVAIL, job_scheduler.c), so a later job of P may take nodes H
  was planned on (the main pass does not know backfill reservations);
* a job of H's user and QoS starts while the QoS limits running jobs per user, or a job of H's QoS
  starts while the QoS has any other limit on running jobs or TRES (H may now be held);
* a pass reserves, ahead of H, a job in P or a partition sharing its nodes at a start or on nodes
  it did not have in the pass that promised H, or a new such job;
* a running job outlives its planned end (no time limit kill, or run past the plan), a suspended
  job resumes, or a job is resized: each takes capacity the plan did not foresee;
* a node leaves service or comes back (:mod:`djsb.model.node_events`): the plan is made anew on the
  nodes in service (the checker counts every node's capacity, so it checks the rest against more
  than the planners may use);
* no backfill pass ran at H's reserved start while a job sorting ahead of H waited in P or a
  partition sharing its nodes: the main pass stops at that job, so only a backfill pass can start
  H, and with ``bf_interval`` > 0 the window planned for H may close between two passes (the
  first job in line is started by the main pass, which runs at every job end).

The checks assume the main pass reaches H (``default_queue_depth`` larger than the jobs ahead).

A job that leaves the queue (started or cancelled) has no promise left to keep.

The checker keeps its own tallies from start/end notifications and recomputes free capacity by
brute force, sharing no code with the planner (``Profile``), so tests catch planner bugs.

Over-allocation that is not a scheduling decision is legitimate: a resumed job takes its CPUs back
and a shrunk job grows back without any check (``scontrol resume`` and DLB-DROM do not ask the
scheduler), so a node may hold more slots than its capacity. The checker accepts those
notifications (and counts the nodes they push over capacity in ``overallocations``), and still
requires of every *start* that it leaves its nodes within capacity: a scheduler that starts a job
on an over-allocated node is caught. A suspended job holds memory but no CPUs, so it neither
counts on its nodes nor in the reservation check.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from djsb.errors import RunError
from djsb.model.assoc_limits import AssocPath
from djsb.model.assoc_spec import AssocTree
from djsb.model.cluster_spec import ClusterSpec, QosSpec
from djsb.model.gpus import gpu_types
from djsb.model.job import SimJob
from djsb.model.qos_order import job_limits, qos_order
from djsb.model.tres import TRES_NAMES


class InvariantViolation(RunError):
    """The model broke one of its invariants (a bug in the model, never in the input)."""


@dataclass(frozen=True, slots=True)
class Reservation:
    """Capacity the backfill pass set aside for a job that could not start."""

    job_id: int
    partition: int
    start: float
    duration: float
    need: int
    nodes: tuple[int, ...] = field(default=())
    """The nodes a node-level reservation was planned on (empty for a unit-count one)."""
    preempts: bool = False
    """Planned over running jobs its job may preempt: not checked against them (invariant 2) and
    promised nothing (its start waits for the preemption), but ahead of the later ones."""


Ahead = frozenset[tuple[int, float, tuple[int, ...]]]
"""Reservations ahead of a job: (job id, start, nodes) each."""


@dataclass(frozen=True, slots=True)
class Promise:
    """The start a pass reserved for a job, and the reservations that were ahead of it then."""

    start: float
    ahead: Ahead


class InvariantChecker:
    """Pass one to ``Simulation(checker=...)``; it raises :class:`InvariantViolation` at once."""

    def __init__(self, cluster: ClusterSpec) -> None:
        self.cores = [n.cores for n in cluster.nodes]
        index = {n.name: i for i, n in enumerate(cluster.nodes)}
        self.part_nodes = [
            [index[n] for n in p.nodes] if p.nodes is not None else list(range(len(cluster.nodes)))
            for p in cluster.partitions]
        self.part_exclusive = [p.exclusive for p in cluster.partitions]
        self.part_share = [p.share for p in cluster.partitions]
        self.part_forced = [p.forced for p in cluster.partitions]
        self.part_cap = [p.max_cpus_per_node for p in cluster.partitions]
        self.sharing = [{q for q, other in enumerate(self.part_nodes) if set(nodes) & set(other)}
                        for nodes in self.part_nodes]
        self.rows_rule = any(q != p and self.part_share[q] >= 2
                             for p, others in enumerate(self.sharing) for q in others)
        """Whether a node is in two partitions one of which has two rows or more."""
        self.used = [0] * len(cluster.nodes)
        self.exclusive_holder: dict[int, int] = {}
        self.jobs_on: list[set[int]] = [set() for _ in cluster.nodes]
        self.running: dict[int, tuple[SimJob, float]] = {}
        self.held: dict[int, list[tuple[int, int]]] = {}
        self.queued: dict[int, SimJob] = {}
        self.promises: dict[int, Promise] = {}
        self.promises_kept = 0
        self.promises_voided = 0
        self.last_pass = -math.inf
        self.starts_checked = 0
        self.overallocations = 0
        types = gpu_types([n.gpus for n in cluster.nodes])
        self.gpus = [[dict(n.gpus).get(name, 0) for name in types] for n in cluster.nodes]
        self.gpus_used = [[0] * len(types) for _ in cluster.nodes]
        by_name = {q.name: q for q in cluster.qos}
        self.partition_qos = {p.name: by_name[p.qos] for p in cluster.partitions if p.qos is not None}
        self.assoc_tree = AssocTree(cluster.associations) if cluster.associations else None

    def on_start(self, job: SimJob, now: float, planned_end: float) -> None:
        """Check the nodes a job just got."""
        p = job.part.index
        members = set(self.part_nodes[p])
        may_share = self.part_forced[p] or (job.shape is not None and job.shape.oversubscribe)
        if sum(s for _, s in job.alloc) < job.trace.cpus:
            raise InvariantViolation(f"job {job.job_id} got fewer slots than its {job.trace.cpus} CPUs")
        if self.rows_rule:
            self._check_rows(job, now)
        for node, slots in job.alloc:
            if node not in members:
                raise InvariantViolation(f"job {job.job_id} placed outside partition {p}")
            if node in self.exclusive_holder or (self.part_exclusive[p] and self.jobs_on[node]):
                raise InvariantViolation(f"node {node} shared with an exclusive job at t={now}")
            self.used[node] += slots
            self.jobs_on[node].add(job.job_id)
            if self.part_exclusive[p]:
                self.exclusive_holder[node] = job.job_id
            share = self.part_share[p] if may_share else 1
            if self.used[node] > self.cores[node] * share:
                raise InvariantViolation(
                    f"node {node} oversubscribed at t={now}: {self.used[node]} slots on "
                    f"{self.cores[node]} cores (share {share})")
        self._take_gpus(job, now)
        self.running[job.job_id] = (job, planned_end)
        if self.part_cap[p] is not None:
            self._check_cap(job, now)
        self.held[job.job_id] = list(job.alloc)
        self.starts_checked += 1
        self.queued.pop(job.job_id, None)
        if self.promises.pop(job.job_id, None) is not None:
            self.promises_kept += 1
        self._check_qos(job, now)
        if self.assoc_tree is not None:
            self._check_associations(job, now)
        array = job.trace.array
        if array is not None:
            siblings = sum(1 for j, _ in self.running.values() if j.trace.array is not None
                           and j.trace.array[0] == array[0])
            if siblings > array[1]:
                raise InvariantViolation(f"{siblings} tasks of job array {array[0]} running at t={now} over "
                                         f"its throttle %{array[1]} (job {job.job_id} started)")
        chain = self._limits(job)
        names = self._qos_names(job)
        per_user = any(qos.max_jobs_per_user is not None for qos in chain)
        limited = any(_qos_limited(dataclasses.replace(qos, max_jobs_per_user=None))  # beyond MaxJobsPerUser
                      for qos in chain)

        def moves(held: SimJob) -> bool:
            if not names.isdisjoint(self._qos_names(held)) and (
                    limited or (per_user and held.trace.user == job.trace.user)):
                return True
            if array is not None and held.trace.array is not None and held.trace.array[0] == array[0]:
                return True  # a sibling task's start may hold it at the throttle
            if self._same_association(job, held):
                return True  # its start may hold it at an association limit
            if not self._shares_nodes(p, held):
                return False
            if job.sort_key < held.sort_key:
                return True
            if job.backfilled:
                return False
            return held.part.index != p or self._waits_behind(held, other_partitions=True)

        self._void(moves)

    def _same_association(self, job: SimJob, other: SimJob) -> bool:
        """Whether an association limit may count both jobs: an account above both (``root`` when it
        is declared)."""
        tree = self.assoc_tree
        if tree is None:
            return False
        above = set(tree.ancestors(job.trace.account))
        shared = above.intersection(tree.ancestors(other.trace.account))
        return bool(shared - {"root"}) or ("root" in shared and "root" in tree.accounts)

    def _check_associations(self, job: SimJob, now: float) -> None:
        """Check that the running jobs below each association of a starting job's path keep within
        its GrpJobs and GrpTRES, and its user association's within MaxJobs, MaxTRES and MaxTRESPerNode,
        counted afresh over every running job (the limits its QoS sets left out, :class:`AssocPath`)."""
        tree = self.assoc_tree
        assert tree is not None

        def own_key(held: SimJob) -> tuple[str, ...]:
            user, account = held.trace.user, held.trace.account
            return tree.user_key(user, account, tree.partition_of(user, account, held.part.spec.name))

        path = AssocPath(tree, job.trace.user, job.trace.account,
                         qos_order(job.qos, self.partition_qos.get(job.part.spec.name)),
                         tree.partition_of(job.trace.user, job.trace.account, job.part.spec.name))
        running = [j for j, _ in self.running.values()]
        for level, (user, account, *_) in enumerate(path.keys):
            group = [j for j in running if own_key(j) == path.keys[0]] if user else \
                [j for j in running if account in tree.ancestors(j.trace.account)]
            limits = [("GrpJobs", path.grp_jobs[level])] + ([("MaxJobs", path.max_jobs)] if not level else [])
            for name, limit in limits:
                if limit is not None and len(group) > limit:
                    raise InvariantViolation(f"{len(group)} jobs of association {user}@{account} running at "
                                             f"t={now} over its {name} {limit} (job {job.job_id} started)")
            held = [sum(_job_tres(j)[tres] for j in group) for tres in TRES_NAMES]
            held[TRES_NAMES.index("node")] = len({node for j in group for node, _ in j.alloc})
            own = _job_tres(job)
            nodes = max(1, len(job.alloc))
            for i, tres in enumerate(TRES_NAMES):
                per_node = own[tres] // nodes if tres != "node" else 0
                if held[i] > path.grp_tres[level][i] or (not level and (
                        own[tres] > path.max_tres[i] or per_node > path.max_tres_pn[i])):
                    raise InvariantViolation(f"association {user}@{account} over its GrpTRES, MaxTRES or "
                                             f"MaxTRESPerNode {tres} at t={now} (job {job.job_id} started)")

    def _limits(self, job: SimJob) -> tuple[QosSpec, ...]:
        """The QoS limits that hold ``job``: its QoS's and its partition QoS's, in Slurm's order."""
        return job_limits(job.qos, self.partition_qos.get(job.part.spec.name))

    def _qos_names(self, job: SimJob) -> set[str]:
        """The QoS that count ``job`` in their usage."""
        return {qos.name for qos in qos_order(job.qos, self.partition_qos.get(job.part.spec.name))}

    def _check_qos(self, job: SimJob, now: float) -> None:
        """Check that the running jobs of each QoS holding a starting job keep within the limits it
        takes from that QoS, counted afresh over every running job: per job and per node, per user,
        per account and for the QoS."""
        for qos in self._limits(job):
            if _qos_limited(qos):
                self._check_one_qos(job, qos, now)

    def _check_one_qos(self, job: SimJob, qos: QosSpec, now: float) -> None:
        """:meth:`_check_qos` for one QoS of the job's."""
        peers = [j for j, _ in self.running.values() if qos.name in self._qos_names(j)]
        nodes = max(1, len(job.alloc))
        own = _job_tres(job)
        for name, amount in qos.max_tres_per_job:
            if own[name] > amount:
                raise InvariantViolation(f"job {job.job_id} started at t={now} with {name}={own[name]} over "
                                         f"QoS {qos.name}'s MaxTRESPerJob {amount}")
        for name, amount in qos.max_tres_per_node:
            if own[name] // nodes > amount:
                raise InvariantViolation(f"job {job.job_id} started at t={now} with {name}={own[name]} on "
                                         f"{nodes} nodes over QoS {qos.name}'s MaxTRESPerNode {amount}")
        groups = (("GrpJobs", "GrpTRES", qos.grp_jobs, qos.grp_tres, peers),
                  ("MaxJobsPerAccount", "MaxTRESPerAccount", qos.max_jobs_per_account,
                   qos.max_tres_per_account,
                   [j for j in peers if j.trace.account == job.trace.account]),
                  ("MaxJobsPerUser", "MaxTRESPerUser", qos.max_jobs_per_user, qos.max_tres_per_user,
                   [j for j in peers if j.trace.user == job.trace.user]))
        for jobs_key, tres_key, jobs_limit, tres_limit, group in groups:
            if jobs_limit is not None and len(group) > jobs_limit:
                raise InvariantViolation(f"{len(group)} jobs of QoS {qos.name} running at t={now} over its "
                                         f"{jobs_key} {jobs_limit} (job {job.job_id} started)")
            held = {"cpu": 0, "mem": 0, "gres/gpu": 0}
            for other in group:
                for name, amount in _job_tres(other).items():
                    if name != "node":
                        held[name] += amount
            held["node"] = len({node for other in group for node, _ in other.alloc})
            for name, amount in tres_limit:
                if held[name] > amount:
                    raise InvariantViolation(f"running jobs of QoS {qos.name} hold {name}={held[name]} "
                                             f"at t={now}, over its {tres_key} {amount} (job {job.job_id} "
                                             "started)")

    def _check_cap(self, job: SimJob, now: float) -> None:
        """The running jobs of a starting job's partition hold no more than its MaxCPUsPerNode on
        any of its nodes (invariant 1)."""
        p, cap = job.part.index, self.part_cap[job.part.index]
        assert cap is not None
        nodes = {node for node, _ in job.alloc}
        held = dict.fromkeys(nodes, 0)
        for other, _ in self.running.values():
            if other.part.index == p and other.suspended_since is None:
                for node, slots in other.alloc:
                    if node in held:
                        held[node] += slots
        over = {node: cpus for node, cpus in held.items() if cpus > cap}
        if over:
            raise InvariantViolation(f"partition {job.part.spec.name}'s jobs hold {over} CPUs on nodes at "
                                     f"t={now}, over its MaxCPUsPerNode {cap} (job {job.job_id} started)")

    def _shares_cores(self, job: SimJob) -> bool:
        """Whether a job shares its cores (AVAILABLE: FORCE, or ``--oversubscribe`` on YES:N)."""
        p = job.part.index
        asks = job.shape is not None and job.shape.oversubscribe
        return self.part_forced[p] or (asks and self.part_share[p] > 1)

    def _check_rows(self, job: SimJob, now: float) -> None:
        """A starting job is not beside jobs it may not share a node with (invariant 1): one that
        does not share cores beside jobs of another partition of two rows or more, one that shares
        cores beside one that does not (cons_common ``_verify_node_state``, ``_is_node_busy``)."""
        p = job.part.index
        if self.part_exclusive[p] or job.trace.exclusive:
            return  # whole idle nodes: the slot checks catch anything beside it
        shares = self._shares_cores(job)
        for node, _ in job.alloc:
            for other_id in self.jobs_on[node]:
                other = self.running[other_id][0]
                if other.suspended_since is not None or other_id == job.job_id:
                    continue
                q = other.part.index
                if not shares and q != p and self.part_share[q] >= 2:
                    raise InvariantViolation(f"job {job.job_id} (no core sharing) started at t={now} on node "
                                             f"{node} beside job {other_id} of a partition of "
                                             f"{self.part_share[q]} rows")
                if shares and not self._shares_cores(other):
                    raise InvariantViolation(f"job {job.job_id} (sharing cores) started at t={now} on node "
                                             f"{node} beside job {other_id}, which does not share")

    def _take_gpus(self, job: SimJob, now: float) -> None:
        """Check and count the GPUs a starting job holds (invariant 1)."""
        request, held = job.trace.gpus, job.alloc.gpus
        if request is None:
            if held is not None and any(map(any, held)):
                raise InvariantViolation(f"job {job.job_id} holds GPUs it did not ask")
            return
        if held is None:
            raise InvariantViolation(f"job {job.job_id} asked GPUs and holds none")
        counts = [sum(h) for h in held]
        if request.per == "node":
            short = min(counts) < request.count
        else:
            tasks = job.shape.tasks if job.shape is not None else request.tasks(job.trace.cpus)
            tasks = tasks if request.per == "task" else 1
            short = sum(counts) < request.count * tasks
        if short:
            raise InvariantViolation(f"job {job.job_id} holds GPUs {counts} short of {request}")
        for (node, _), taken in zip(job.alloc, held, strict=True):
            used = self.gpus_used[node]
            for t, count in enumerate(taken):
                used[t] += count
                if used[t] > self.gpus[node][t]:
                    raise InvariantViolation(f"node {node}'s GPUs oversubscribed at t={now}: {used} of "
                                             f"{self.gpus[node]}")

    def on_submit(self, job: SimJob, now: float) -> None:
        """A job joined the queue: it voids the promises of the jobs it sorts ahead of."""
        self.queued[job.job_id] = job
        p = job.part.index
        self._void(lambda held: self._shares_nodes(p, held) and job.sort_key < held.sort_key)

    def on_reorder(self, now: float) -> None:
        """A priority recomputation changed the queue order: every promise is void."""
        self._void(lambda held: True)

    def on_machine_change(self, now: float) -> None:
        """Nodes left or came back to service (a node event): every promise is void."""
        self._void(lambda held: True)

    def _shares_nodes(self, p: int, job: SimJob) -> bool:
        """Whether partition ``p`` shares a node with ``job``'s partition."""
        return job.part.index in self.sharing[p]

    def _void(self, moves: Callable[[SimJob], bool]) -> None:
        """Drop the promises of the reserved jobs for which ``moves`` says an event may delay them."""
        for job_id in [j for j in self.promises if moves(self.queued[j])]:
            del self.promises[job_id]
            self.promises_voided += 1

    def on_end(self, job: SimJob, now: float) -> None:
        """Give a finished job's slots back (a suspended job holds none); a job that outlived its
        planned end voids every promise."""
        if now > self.running[job.job_id][1]:
            self._void(lambda held: True)
        for node, slots in self.held.pop(job.job_id):
            self.used[node] -= slots
            self.jobs_on[node].discard(job.job_id)
            if self.exclusive_holder.get(node) == job.job_id:
                del self.exclusive_holder[node]
        if job.alloc.gpus is not None:
            for (node, _), taken in zip(job.alloc, job.alloc.gpus, strict=True):
                used = self.gpus_used[node]
                for t, count in enumerate(taken):
                    used[t] -= count
        del self.running[job.job_id]

    def on_suspend(self, job: SimJob, now: float) -> None:
        """A suspended job gives its slots back (it keeps its nodes' memory)."""
        for node, slots in self.held[job.job_id]:
            self.used[node] -= slots
        self.held[job.job_id] = []

    def on_resume(self, job: SimJob, now: float, planned_end: float) -> None:
        """A resumed job takes its slots back unchecked; note the nodes it over-allocates."""
        self._void(lambda held: True)
        self.held[job.job_id] = []
        self._take(job)
        self.running[job.job_id] = (job, planned_end)

    def on_resize(self, job: SimJob, now: float) -> None:
        """A resized job holds its new slots (a suspended one takes them at its resume)."""
        self._void(lambda held: True)
        if job.suspended_since is not None:
            return
        for node, slots in self.held[job.job_id]:
            self.used[node] -= slots
        self.held[job.job_id] = []
        self._take(job)

    def _take(self, job: SimJob) -> None:
        p = job.part.index
        for node, slots in job.alloc:
            self.used[node] += slots
            if self.used[node] > self.cores[node] * self.part_share[p]:
                self.overallocations += 1
        self.held[job.job_id] = list(job.alloc)

    def _units(self, p: int, alloc: list[tuple[int, int]]) -> int:
        members = set(self.part_nodes[p])
        if self.part_exclusive[p]:
            return sum(1 for node, _ in alloc if node in members)
        return sum(slots for node, slots in alloc if node in members)

    def _capacity(self, p: int) -> int:
        if self.part_exclusive[p]:
            return len(self.part_nodes[p])
        return sum(self.cores[n] * self.part_share[p] for n in self.part_nodes[p])

    def check_reservations(self, now: float, reservations: list[Reservation]) -> None:
        """Every reservation must still fit at its start, after all starts of the pass, and every
        earlier promise must be kept (invariant 3)."""
        self._check_capacity(now, reservations)
        self._check_promises(now, reservations)

    def _check_promises(self, now: float, reservations: list[Reservation]) -> None:
        if any(planned <= now for _, planned in self.running.values()):
            self._void(lambda held: True)  # a job outlives its planned end (ends come first at an instant)
        for job_id in [j for j in self.promises if self.queued[j].cancelled]:
            del self.promises[job_id]
        made = {r.job_id: k for k, r in enumerate(reservations)}
        for job_id, promise in list(self.promises.items()):
            job = self.queued[job_id]
            k = made.get(job_id)
            if k is not None and reservations[k].preempts:
                del self.promises[job_id]  # it may now preempt: planned anew over the jobs it may
                self.promises_voided += 1
                continue
            ahead = self._ahead(job, reservations[:k] if k is not None else [
                r for r in reservations if self.queued[r.job_id].sort_key < job.sort_key])
            if not ahead <= promise.ahead or (
                    self.last_pass < promise.start < now and self._waits_behind(job)):
                del self.promises[job_id]
                self.promises_voided += 1
            elif now >= promise.start:
                raise InvariantViolation(f"job {job_id} reserved to start at t={promise.start} still "
                                         f"waits at t={now}")
            elif k is not None and reservations[k].start > promise.start:
                raise InvariantViolation(f"job {job_id} reserved to start at t={promise.start} was "
                                         f"moved to t={reservations[k].start} at t={now}")
        for k, r in enumerate(reservations):
            if not r.preempts:
                self.promises[r.job_id] = Promise(r.start, self._ahead(self.queued[r.job_id],
                                                                       reservations[:k]))
        self.last_pass = now

    def _waits_behind(self, job: SimJob, other_partitions: bool = False) -> bool:
        """Whether a job that sorts ahead of ``job`` waits in a partition sharing its nodes (then
        the main pass stops before ``job``, and only a backfill pass can start it), or with
        ``other_partitions`` in such a partition other than ``job``'s own (one whose failure in the
        main pass may have taken nodes ``job`` needs)."""
        p = job.part.index
        sharing = self.sharing[p] - {p} if other_partitions else self.sharing[p]
        return any(other.sort_key < job.sort_key and other.part.index in sharing and not other.cancelled
                   for other in self.queued.values())

    def _ahead(self, job: SimJob, earlier: list[Reservation]) -> Ahead:
        """The reservations among ``earlier`` in partitions sharing ``job``'s nodes."""
        sharing = self.sharing[job.part.index]
        return frozenset((r.job_id, r.start, r.nodes) for r in earlier if r.partition in sharing)

    def _check_capacity(self, now: float, reservations: list[Reservation]) -> None:
        # a job being preempted ends by its grace time's end (preempt.c _job_check_grace_internal)
        ends = {job_id: min(planned, job.preempt_at) for job_id, (job, planned) in self.running.items()}
        for k, r in enumerate(reservations):
            if r.preempts:
                continue
            end = r.start + r.duration
            points = {r.start} | {e for e in ends.values() if r.start < e < end} | {
                x for q in reservations[:k] for x in (q.start, q.start + q.duration) if r.start < x < end}
            for t in points:
                busy = sum(self._units(r.partition, self.held[job_id])
                           for job_id, (job, _) in self.running.items()
                           if job.start is not None and job.start <= t < ends[job_id])
                busy += sum(q.need for q in reservations[:k]
                            if q.partition == r.partition and q.start <= t < q.start + q.duration)
                if self._capacity(r.partition) - busy < r.need:
                    raise InvariantViolation(
                        f"reservation of job {r.job_id} at t={r.start} no longer fits at t={t} "
                        f"(pass at t={now})")


def _qos_limited(qos: QosSpec) -> bool:
    """Whether a QoS limits its running jobs at all."""
    return (qos.max_jobs_per_user, qos.max_jobs_per_account, qos.grp_jobs) != (None, None, None) or any(
        (qos.max_tres_per_job, qos.max_tres_per_node, qos.max_tres_per_user, qos.max_tres_per_account,
         qos.grp_tres))


def _job_tres(job: SimJob) -> dict[str, int]:
    """A started job's TRES, by Slurm's names: its CPUs, the memory it holds, its nodes and GPUs."""
    gpus = sum(sum(held) for held in job.alloc.gpus) if job.alloc.gpus is not None else 0
    memory = sum(job.memory) if job.memory else job.trace.memory_mb or 0
    return {"cpu": job.trace.cpus, "mem": int(memory), "node": len(job.alloc), "gres/gpu": gpus}
