"""Slurm's main scheduling pass (sched/builtin's loop over the queue, job_scheduler.c ``schedule``).

It walks the queue in priority order and starts jobs until the first job that does not fit; that
job blocks its partition, and the pass carries on for the other partitions on the nodes of none
that failed (Slurm's main scheduler takes a failed partition's nodes from every later job:
job_scheduler.c ``failed_parts``). Jobs held by a QoS limit are skipped, not blocking
(:mod:`djsb.model.limits`: checked before placing a job and, for TRES limits, on the nodes placed).
It gives the jobs it tests Slurm's pending reasons (:mod:`djsb.model.reasons`): ``Resources`` to a
job that does not fit, ``Priority`` to the jobs of a partition it stopped at. A job's run that would
overlap an advance reservation does not use its nodes (:mod:`djsb.model.reservations`); a job asking
for a reservation runs on its nodes alone, and one that does not fit gives the later jobs of its
reservation the reason ``Priority`` instead of blocking its partition (:mod:`djsb.model.reserved_jobs`).
When it runs and how deep it looks is the caller's (:mod:`djsb.model.simulation`,
:mod:`djsb.model.pass_timing`).
"""

from __future__ import annotations

from collections.abc import Callable

from djsb.model.admission import Admission
from djsb.model.allocation import allocate
from djsb.model.cluster_state import ClusterState
from djsb.model.job import SimJob
from djsb.model.limits import RunningLimits
from djsb.model.placement import Placement
from djsb.model.queue import JobQueue
from djsb.model.reasons import NODE_NOT_AVAIL, NONE, PRIORITY, RESOURCES
from djsb.model.reserved_jobs import ReservedJobs


def main_pass(jobs: JobQueue, state: ClusterState, limits: RunningLimits, admitter: Admission,
              max_depth: float, start: Callable[[SimJob, Placement], None],
              reserved: Callable[[SimJob], frozenset[int]] | None = None,
              preempt: Callable[[SimJob, frozenset[int]], Placement | None] | None = None,
              out_of_service: frozenset[int] = frozenset(), inside: ReservedJobs | None = None,
              now: float = 0.0) -> tuple[set[int], bool]:
    """Test the queue's jobs (in priority order) against the nodes of ``state`` and ``start`` each job
    that fits, testing at most ``max_depth`` jobs of partitions not yet blocked; ``reserved`` gives
    the nodes a job may not use for an advance reservation over its run (:mod:`djsb.model.reservations`);
    ``preempt`` is called with a job that does not fit and the nodes it may not use, to preempt jobs
    for it (:mod:`djsb.model.preemption`: they end before the next pass), or to suspend them and
    return where it starts now (:mod:`djsb.model.suspension`). A job that would not fit
    even if every node but the reserved and ``out_of_service`` ones were idle waits ReqNodeNotAvail
    and fails nothing, as node_scheduler.c's ``_pick_best_nodes`` answers ESLURM_NODE_NOT_AVAIL when
    its test on the available nodes (up, not drained) fails; a job that would fit blocks its
    partition (ESLURM_NODES_BUSY). ``inside`` are the rules of the jobs asking for a reservation, tested
    first in theirs at ``now``, with those a MAGNETIC one draws (None: no job asks for one;
    :mod:`djsb.model.reserved_jobs`).
    Returns the ids of the jobs started and whether the depth left jobs untested (the periodic pass
    must see them)."""
    queue, record = jobs.jobs, jobs.record
    pre, post = limits.pre or limits.arrays, limits.post  # no limit of either kind: no call per job
    record.passes += 1
    number = record.passes
    n_parts = len({j.part.index for j in queue}) if len(state.partitions) > 1 else 1
    blocked: set[int] = set()
    failed_nodes: frozenset[int] = frozenset()
    started: set[int] = set()
    depth = 0
    if inside is not None:
        depth = _in_reservations(inside, queue, state, limits, now, max_depth, start, started, number)
    for job in queue:
        if depth >= max_depth:
            return started, True
        if inside is not None and (job.trace.reservation is not None or job.job_id in started):
            continue  # tested in its reservation
        p = job.part.index
        if p in blocked:
            reason = job.reason
            if reason is NONE or reason is RESOURCES:
                job.reason = PRIORITY
            continue
        depth += 1
        if pre and not limits.allows(job):
            continue
        members = job.part.members
        excluded = failed_nodes
        if reserved is not None and (held := reserved(job) & members):
            if members <= held or not admitter.fits_idle(job, held | out_of_service):
                job.reason = job.sacct_reason = NODE_NOT_AVAIL
                job.tested = number
                continue  # reservations leave it too little: it fails nothing (job_scheduler.c)
            excluded = failed_nodes | held
        if excluded.isdisjoint(members):
            alloc = allocate(job, state)
        elif members <= excluded or not admitter.fits_idle(job, excluded):
            job.reason, job.tested = RESOURCES, number
            continue  # the nodes failed partitions left could never hold it: it fails nothing
        else:
            alloc = allocate(job, state.without(excluded))
        if alloc is None:
            if preempt is not None and (alloc := preempt(job, excluded)) is not None:
                start(job, alloc)  # on the CPUs of the jobs it suspended (its limits checked)
                started.add(job.job_id)
                continue
            if out_of_service and not out_of_service.isdisjoint(members) \
                    and not admitter.fits_idle(job, excluded | out_of_service):
                job.reason = job.sacct_reason = NODE_NOT_AVAIL
                job.tested = number
                continue  # it fails nothing: the nodes out of service leave it too little
            job.reason, job.tested = RESOURCES, number
            blocked.add(p)
            failed_nodes |= members
            if len(blocked) >= n_parts:
                record.stopped = number  # the jobs behind get Priority when they start (PassRecord)
                break
            continue
        if post and limits.blocks(job, alloc):
            continue
        start(job, alloc)
        started.add(job.job_id)
    return started, False


def _in_reservations(inside: ReservedJobs, queue: list[SimJob], state: ClusterState, limits: RunningLimits,
                     now: float, max_depth: float, start: Callable[[SimJob, Placement], None],
                     started: set[int], number: int) -> int:
    """Test the jobs asking for a reservation, and those a MAGNETIC one draws, in it (at most
    ``max_depth``); a job that does not fit in one gives the later jobs of that reservation the
    reason ``Priority`` and blocks no partition (job_scheduler.c ``_schedule``'s ``failed_resv``).
    Returns the jobs tested."""
    pre, post = limits.pre or limits.arrays, limits.post
    failed_resv: set[str] = set()
    depth = 0
    for job, name in inside.records(queue):
        if depth >= max_depth:
            break
        if job.job_id in started:
            continue  # started in an earlier record
        depth += 1
        asked = job.trace.reservation is not None  # else drawn: its own test without one sets its reason
        if name in failed_resv:
            if asked:
                job.reason = PRIORITY
        elif (not pre or limits.allows(job)) and (tries := inside.usable(job, now, name)) is not None:
            alloc = next((found for usable in tries
                          if (found := allocate(job, state.without(job.part.members - usable)))), None)
            if alloc is None:
                if asked:
                    job.reason = RESOURCES
                failed_resv.add(name)
            elif not post or not limits.blocks(job, alloc):
                job.reservation = name
                start(job, alloc)
                started.add(job.job_id)
        if asked:
            job.tested = number
    return depth
