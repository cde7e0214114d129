"""Preemption as Slurm 22.05 does it with ``PreemptType=preempt/partition_prio`` (slurm.conf(5)):
a job of a partition of higher PriorityTier that does not fit may take the nodes of running jobs of
lower-tier partitions sharing its nodes; with ``preempt/qos``, of the QoS its own QoS lists in its
``Preempt`` (taken by QoS priority, each running on for its QoS's GraceTime).

* Candidates (src/slurmctld/preempt.c ``_add_preemptable_job``): running jobs on the preemptor's
  partition's nodes, of a partition of lower PriorityTier (preempt_partition_prio.c
  ``preempt_p_preemptable``), that have run at least ``PreemptExemptTime``. They are taken in the
  plugin's order, ``_gen_job_prio``: PriorityTier, then node count, lowest first (``_sort_by_prio``).
* The select plugin removes candidates in that order until the job fits, and the job preempts the
  removed ones its placement overlaps (cons_tres ``_run_now``).
* ``PreemptMode``: CANCEL ends a preempted job (PREEMPTED), REQUEUE sends it back to the queue, as a
  failed node's job is (eligible again cred_expire + 1 s later). A preempted job keeps running for
  its partition's ``GraceTime`` first; the preemptor waits for it.

Under preempt/qos a QoS's own PreemptMode, unless ``cluster``, says what its jobs do once preempted
(preempt_qos.c ``_job_preempt_mode``), and OFF keeps them from being preempted at all (cons_common
job_test.c ``_build_cr_job_list``: a candidate of mode OFF is not removed); with WITHIN, the cluster's
or the preemptor's QoS's, a job may preempt one of its own QoS of lower priority
(``preempt_p_preemptable``).

Under preempt/partition_prio a partition's own PreemptMode does the same for its jobs
(preempt_partition_prio.c ``_job_preempt_mode``).

The queue puts a job ahead of those it may preempt (job_scheduler.c ``sort_job_queue2``,
``preempt_g_job_preempt_check``): under partition_prio the queue's PriorityTier order does; under
qos :func:`preempt_ranks` ranks each QoS above those it preempts. The main pass so reaches a
preemptor before the jobs it preempted, requeued, could take their nodes back (without it a
REQUEUE replay where only the backfill pass reaches the preemptor preempts the same jobs forever).

``PreemptMode=SUSPEND,GANG`` (``suspend``; a partition's or QoS's own SUSPEND under it) suspends
the lower-tier jobs instead, which resume when their preemptors end: :mod:`djsb.model.suspension`.

The backfill pass preempts too, and plans a preemptor over the jobs it may preempt, with the
will-run planner (:mod:`djsb.model.backfill.will_run_planner`) and with the model's own profile
planner (:mod:`djsb.model.backfill.profile_planner`).

GANG's time-slicing of the jobs of a partition sharing cores (OverSubscribe rows, SchedulerTimeSlice)
and its shadows are :mod:`djsb.model.gang`'s (which cancels or requeues a job of mode CANCEL or
REQUEUE it takes out of its row while a higher tier's job runs).

Not modelled: a partition's or QoS's own SUSPEND under a cluster mode other than SUSPEND,GANG spares
its jobs (without GANG nothing would resume them; under CANCEL,GANG or REQUEUE,GANG Slurm would
suspend them), what :mod:`djsb.model.suspension` lists, the second Slurm takes to
kill a preempted job (the preemptor here starts at the instant of the preemption, when there is no
grace time).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from djsb.model.allocation import shares_cores
from djsb.model.cluster_spec import QosSpec
from djsb.model.cluster_state import ClusterState
from djsb.model.job import SimJob
from djsb.model.placement import Placement

PREEMPT_TYPES = ("none", "partition_prio", "qos")
"""The PreemptType plugins the model has (without the ``preempt/`` prefix)."""
PREEMPT_MODES = ("off", "cancel", "requeue", "suspend")
"""The PreemptMode values the model has."""
STOPS = ("cancel", "requeue")
"""The PreemptModes that stop a preempted job (the others leave it running)."""
NODE_FAIL, PREEMPTED = "NODE_FAIL", "PREEMPTED"
"""Why a job ended early (``SimJob.ended_by``), as sacct names the state."""


def preemptable(preemptor: SimJob, candidate: SimJob, now: float, exempt: float,
                by_qos: bool = False, mode: str = "cancel", within: bool = False) -> bool:
    """Whether ``candidate``, running, may be preempted for ``preemptor`` now: of a lower
    PriorityTier partition, or ``by_qos`` of a QoS the preemptor's QoS lists in its Preempt, or of
    the preemptor's own QoS at a lower priority when ``within`` (the cluster's PreemptMode) or the
    QoS's own says WITHIN (preempt_qos.c ``preempt_p_preemptable``); and a job that a preemption
    stops (:func:`preempt_mode` of the cluster's ``mode``)."""
    if by_qos:
        same = candidate.qos.name == preemptor.qos.name
        outranked = (within or preemptor.qos.preempt_within) and preemptor.priority > candidate.priority \
            if same else candidate.qos.name in preemptor.qos.preempt
    else:
        outranked = candidate.part.spec.priority_tier < preemptor.part.spec.priority_tier
    return (outranked and preempt_mode(candidate, mode, by_qos) in STOPS and candidate.suspended_since is None
            and candidate.start is not None and now - candidate.start >= exempt
            and any(node in preemptor.part.members for node, _ in candidate.alloc))


def preempt_mode(job: SimJob, mode: str, by_qos: bool = False) -> str:
    """What ``job`` does once preempted: its QoS's PreemptMode (``by_qos``, preempt_qos.c
    ``_job_preempt_mode``) or its partition's (preempt_partition_prio.c ``_job_preempt_mode``) unless
    ``cluster``, else the cluster's ``mode``."""
    own = job.qos.preempt_mode if by_qos else job.part.spec.preempt_mode
    return mode if own == "cluster" else own


def preemption_order(job: SimJob, by_qos: bool = False) -> tuple[int, int, int]:
    """The order candidates are removed in: ``_gen_job_prio``'s PriorityTier (``by_qos``: the QoS
    priority) then node count, then job id (Slurm's list order)."""
    return job.qos.priority if by_qos else job.part.spec.priority_tier, len(job.alloc), job.job_id


def grace_time(job: SimJob, by_qos: bool = False) -> float:
    """How long ``job`` runs on once preempted: its partition's GraceTime, or ``by_qos`` its QoS's."""
    return job.qos.grace_time if by_qos else job.part.spec.grace_time


def preempt_ranks(qos: Iterable[QosSpec]) -> dict[str, int]:
    """Under preempt/qos, how far ahead of the queue each QoS's jobs sort: job_scheduler.c
    ``sort_job_queue2`` puts a job ahead of one it may preempt (``preempt_g_job_preempt_check``,
    preempt_qos.c ``preempt_p_job_preempt_check``: its QoS lists the other's in Preempt) before any
    other rule, so a preemptor's main pass reaches it before the jobs it preempted, requeued, take the
    nodes back. Slurm's pairwise test is not an order; the model ranks a QoS one above the highest
    QoS it preempts (0: preempts none), which also orders two QoS neither of which preempts the other
    when their ranks differ."""
    preempts = {spec.name: spec.preempt for spec in qos}
    ranks: dict[str, int] = {}

    def rank(name: str, seen: frozenset[str]) -> int:
        if name not in ranks:
            below = [rank(other, seen | {name}) for other in preempts.get(name, ())
                     if other in preempts and other not in seen and other != name]
            ranks[name] = 1 + max(below) if below else (1 if preempts.get(name) else 0)
        return ranks[name]

    for name in preempts:
        rank(name, frozenset())
    return ranks


Choice = tuple[Placement, list[SimJob]]
"""Where the preemptor goes, and the jobs it preempts."""


def choose_preemptees(state: ClusterState, candidates: Iterable[SimJob], draining: Iterable[SimJob],
                      place: Callable[[ClusterState], Placement | None],
                      by_qos: bool = False, cpus_only: bool = False) -> Choice | None:
    """Where ``place`` puts the preemptor once jobs are preempted, and the jobs to preempt: the
    ``draining`` jobs (preempted already, in their grace time) count as gone first, then the
    ``candidates`` in :func:`preemption_order` (``by_qos``: preempt/qos's) until ``place`` finds
    nodes on ``state``; the jobs to preempt are the candidates removed whose nodes the placement
    overlaps (none when the draining ones are enough: the preemptor waits for them). None if no set
    of candidates makes room. ``cpus_only``: a removed candidate gives back its CPUs alone, as one
    suspended keeps its memory and GPUs (:mod:`djsb.model.suspension`). ``state`` is left as it was."""
    removed: list[SimJob] = []

    def remove(job: SimJob) -> Placement | None:
        state.commit(job.alloc, job.cpus, None if cpus_only else job.memory, sign=-1, part=job.part,
                     shares=shares_cores(job))
        if not cpus_only:
            state.commit_gpus(job.alloc, sign=-1)
        removed.append(job)
        return place(state)

    try:
        alloc = None
        for job in draining:
            alloc = remove(job)
        if alloc is not None:
            return alloc, []
        before = len(removed)
        for job in sorted(candidates, key=lambda job: preemption_order(job, by_qos)):
            alloc = remove(job)
            if alloc is not None:
                on = {node for node, _ in alloc}
                return alloc, [job for job in removed[before:] if any(node in on for node, _ in job.alloc)]
        return None
    finally:
        for job in removed:
            state.commit(job.alloc, job.cpus, None if cpus_only else job.memory, part=job.part,
                         shares=shares_cores(job))
            if not cpus_only:
                state.commit_gpus(job.alloc)
