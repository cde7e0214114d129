"""Preemption by suspension, as Slurm 22.05 does it with ``PreemptMode=SUSPEND,GANG``.

slurmctld refuses SUSPEND without GANG (read_config.c ``_validate_and_set_defaults``): only the gang
scheduler (src/slurmctld/gang.c) resumes a suspended job. The rules the model follows:

* Who suspends whom: with GANG, select/cons_tres places a job that finds no idle cores on the cores
  of jobs of partitions of a lower PriorityTier (cons_common job_test.c ``_job_test``, steps 2 and
  3, ``gang_mode``; under preempt/partition_prio not those of a partition whose PreemptMode is
  OFF), and the gang scheduler, told of its start (``gs_job_start``), casts its "shadow" on every
  partition of a lower priority (``_cast_shadow``) and suspends the jobs there whose cores it
  overlaps (``_update_active_row``). That goes by partition tiers under preempt/partition_prio and
  preempt/qos alike. The jobs suspended are those whose own PreemptMode is SUSPEND (the cluster's,
  or their partition's or QoS's: :func:`~djsb.model.preemption.preempt_mode`). The model takes the
  candidates in the order the other modes do (:func:`~djsb.model.preemption.preemption_order`),
  each removed from the CPUs only, until the job fits, and suspends those it then overlaps (the
  model knows slots, not cores: the preemptor takes a node's idle slots first, then the candidates'
  in that order; a candidate none of whose slots it takes runs on). PreemptExemptTime does not
  apply (the gang scheduler never reads it; slurm.conf(5): "only honored for REQUEUE and CANCEL"),
  nor does GraceTime: the preemptor starts at once, in the same pass (node_scheduler.c
  ``_preempt_jobs`` leaves SUSPEND jobs to the gang scheduler and counts none of them busy).
* What a suspended job keeps: its memory and its GPUs ("Suspended jobs will not release GRES",
  slurm.conf(5)): the preemptor must fit beside them (``_verify_node_state`` counts every job's
  ``alloc_memory``). Its cores stay allocated to it in the select plugin (``select_p_job_suspend``
  does nothing for a gang suspension), so no job of its tier or below takes them: those its
  preemptor does not take stay held for it, and those it takes come back to it when it ends.
* When it resumes: when the last job that suspended it ends (``gs_job_fini`` ->
  ``_update_all_active_rows`` resumes the jobs that fit the active row again), at that instant,
  before any pass.
* Its time limit: suspended time does not count. On resume job_mgr.c ``_job_suspend_op`` sets
  ``end_time = now + time_limit - pre_sus_time``, ``pre_sus_time`` being the time it ran before
  (``preempt_time`` is not set for a gang suspension, so the recomputation happens): its end moves
  by the time it spent suspended (``SimJob.suspended_total``).

Not modelled: a job that suspended others being suspended in turn (it is no candidate; Slurm's
shadows nest); a higher-tier job taking the cores a suspended job holds beyond its preemptor's
(Slurm's step 2 lets it: the model makes it wait, or suspend running jobs); under preempt/qos, a
QoS preempting jobs of its Preempt list in the same partition by time-slicing (``_run_now``'s extra
row; the preemptor waits: :mod:`djsb.model.gang` slices only the jobs a partition's own rows share),
and, for a preemptor that found no room, the gang scheduler's immediate kill of the overlapped jobs
of mode CANCEL or REQUEUE or suspension of those of mode OFF (the model preempts the former as under
those modes, with their grace time, and spares the latter; the shadows of the jobs of partitions
that share cores are :mod:`djsb.model.gang`'s). The backfill planner
does not know that a preemptor's slots go back to the jobs it suspended.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from djsb.model.job import SimJob
from djsb.model.placement import Placement
from djsb.model.preemption import preempt_mode

SUSPEND = "suspend"
"""The cluster's (and a partition's or QoS's own) PreemptMode that suspends."""


def suspendable(preemptor: SimJob, candidate: SimJob, mode: str, by_qos: bool = False) -> bool:
    """Whether ``candidate`` may be suspended for ``preemptor`` under the cluster's ``mode``: running
    and not suspended, not in its grace time, of a partition of lower PriorityTier sharing nodes with
    the preemptor's (job_test.c ``_job_test`` step 2, gang.c ``_cast_shadow``), and of PreemptMode
    SUSPEND (its QoS's with ``by_qos``, else its partition's, else ``mode``)."""
    return (candidate.part.spec.priority_tier < preemptor.part.spec.priority_tier
            and candidate.suspended_since is None and candidate.preempt_at == math.inf
            and preempt_mode(candidate, mode, by_qos) == SUSPEND
            and any(node in preemptor.part.members for node, _ in candidate.alloc))


def taken_slots(free: Sequence[int], alloc: Placement,
                victims: Sequence[SimJob]) -> list[tuple[SimJob, Placement]]:
    """The slots a preemptor placed on ``alloc`` takes from each of ``victims`` (in their order),
    the nodes' ``free`` slots taken first; the victims it takes none from are left out."""
    short: dict[int, int] = {}
    for node, slots in alloc:
        missing = slots - max(0, free[node])
        if missing > 0:
            short[node] = missing
    taken = []
    for victim in victims:
        pairs = []
        for node, slots in victim.alloc:
            missing = short.get(node, 0)
            if missing:
                take = min(missing, slots)
                short[node] = missing - take
                pairs.append((node, take))
        if pairs:
            taken.append((victim, Placement.of(pairs)))
    return taken


class Gang:
    """Who suspended whom, and the slots each preemptor took from each of its victims."""

    def __init__(self) -> None:
        self.taken: dict[int, list[tuple[SimJob, Placement]]] = {}
        """By preemptor id: each job it suspended, with the slots it took from it."""
        self.shadows: dict[int, set[int]] = {}
        """By suspended job id: the preemptors it waits for (gang.c's shadows)."""

    def suspend(self, preemptor: int, victim: SimJob, slots: Placement) -> None:
        """``preemptor`` suspended ``victim`` and took ``slots`` from it."""
        self.taken.setdefault(preemptor, []).append((victim, slots))
        self.shadows.setdefault(victim.job_id, set()).add(preemptor)

    def preemptor_ended(self, job_id: int) -> list[tuple[SimJob, Placement, bool]]:
        """A job ended: each job it had suspended, the slots it gives back to it, and whether that
        one resumes now (no other preemptor left: gang.c ``gs_job_fini``)."""
        back = []
        for victim, slots in self.taken.pop(job_id, ()):
            shadows = self.shadows[victim.job_id]
            shadows.discard(job_id)
            if not shadows:
                del self.shadows[victim.job_id]
            back.append((victim, slots, not shadows))
        return back

    def victim_ended(self, job: SimJob) -> Placement | None:
        """A job suspended here ended (cancelled, its node failed): the slots it held itself, to give
        back (those its preemptors took go back with theirs); None if no preemption suspended it."""
        shadows = self.shadows.pop(job.job_id, None)
        if shadows is None:
            return None
        lent: dict[int, int] = {}
        for preemptor in shadows:
            kept = []
            for victim, slots in self.taken[preemptor]:
                if victim is job:
                    for node, count in slots:
                        lent[node] = lent.get(node, 0) + count
                else:
                    kept.append((victim, slots))
            if kept:
                self.taken[preemptor] = kept
            else:
                del self.taken[preemptor]
        return Placement.of((node, slots - lent.get(node, 0)) for node, slots in job.alloc
                            if slots > lent.get(node, 0))
