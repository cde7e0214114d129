"""Jobs that ask for an advance reservation (``sbatch --reservation=NAME``), as Slurm 22.05 runs them
(reservation.c, job_scheduler.c, job_mgr.c):

* At submission a job naming a reservation the cluster does not have, or one its user and account
  may not use (:meth:`~djsb.model.reservations.AdvanceReservation.allows`), is refused
  (``_job_create`` calls ``validate_job_resv``: "Requested reservation is invalid", "Access denied
  to requested reservation").
* It runs only while a window of its reservation is open, on the reservation's nodes of its
  partition less the nodes of the other reservations whose windows overlap its run, unless its own
  is ``MAINT`` (``job_test_resv``). Before the window it waits with the reason ``Reservation``
  (``_get_req_features``: ``ESLURM_INVALID_TIME_VALUE`` gives WAIT_RESERVATION) and the window's
  opening runs the passes; once the reservation's last window closed it never starts
  (``job_test_resv`` holds it: priority 0). ``job_test_resv`` does not compare the job's time limit
  with the window's end, so a job may start however near the end.
* A running job is ended (TIMEOUT) once its window has been closed for ``ResvOverRun``
  (``job_time_limit``, job_mgr.c: "Reservation ended for JobId"; ``resv_over_run``); its own time
  limit holds as well. The backfill planners expect it to end then.
* In a ``FLEX`` reservation (``RESERVE_FLAG_FLEX``) a job is bound to neither its nodes nor its
  window: ``job_test_resv`` gives it every node but those of the other reservations overlapping its
  run, whenever it is tested, and ``job_time_limit`` does not end it with the window. It takes the
  reservation's nodes first (``_build_node_list``'s IN_FL node set, node_scheduler.c): the model
  places it on them if it fits there, else on all it may use.
* A ``MAGNETIC`` reservation (``RESERVE_FLAG_MAGNETIC``) draws the jobs asking for none that its
  Users/Accounts allow: the queue holds such a job once more for each, as if it had asked for it
  (job_scheduler.c ``_job_queue_append``, reservation.c ``_queue_magnetic_resv``); a job started
  there runs in it (ended with its window), one that is not is tested again as a job asking for none.
* The passes test such jobs before every other one (``sort_job_queue2``: a job with a reservation
  sorts first). A main pass in which one of them does not fit gives the later jobs of the same
  reservation the reason ``Priority`` without blocking any partition (``_schedule``'s
  ``failed_resv``).

Not modelled: the backfill passes neither start them nor draw jobs into MAGNETIC reservations (the
main passes do: at each submission and end, at the window's opening and every ``sched_interval``),
so no backfilled job of a reservation overtakes a waiting one; they preempt nobody.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import takewhile

from djsb.model.job import RESERVED_FIRST, SimJob
from djsb.model.reasons import RESERVATION
from djsb.model.reservations import AdvanceReservation, ReservationPlan
from djsb.workloads.job import TraceJob

NodeTries = tuple[frozenset[int], ...]
"""The sets of nodes a job of a reservation may run on, to try in order."""
INVALID = "Requested reservation is invalid"
"""Why a job asking for a reservation the cluster does not have is refused (ESLURM_RESERVATION_INVALID)."""
ACCESS = "Access denied to requested reservation"
"""Why a job asking for a reservation its user or account may not use is refused
(ESLURM_RESERVATION_ACCESS)."""


def needed(reservations: Sequence[AdvanceReservation], jobs: Sequence[TraceJob]) -> bool:
    """Whether a replay of ``jobs`` on a cluster with ``reservations`` needs these rules: a job asks
    for a reservation, or a MAGNETIC one may draw jobs."""
    return any("MAGNETIC" in held.flags for held in reservations) or any(job.reservation is not None
                                                                         for job in jobs)


class ReservedJobs:
    """The rules of the jobs asking for one of ``reservations`` (planned as ``plan``), which end
    ``over_run`` seconds after their window closes."""

    def __init__(self, reservations: Sequence[AdvanceReservation], plan: ReservationPlan | None,
                 over_run: float) -> None:
        self.held = {held.name: held for held in reservations}
        self.plan = plan
        self.over_run = over_run
        self.armed: set[float] = set()
        """The window openings in the core's heap."""
        self.magnetic = [held for held in reservations if "MAGNETIC" in held.flags]
        """The MAGNETIC reservations, which draw the jobs asking for none."""

    def refusal(self, trace: TraceJob) -> str:
        """Why ``trace``, which asks for a reservation, is refused at submission ("" if it is not)."""
        held = self.held.get(trace.reservation or "")
        if held is None:
            return INVALID
        return "" if held.allows(trace.user, trace.account) else ACCESS

    def records(self, queue: Sequence[SimJob]) -> list[tuple[SimJob, str]]:
        """What a pass tests first, in order, each a job and the reservation it is tested in: the
        jobs asking for one (first in ``queue``) and, per MAGNETIC reservation a job asking for none
        may use, that job (``build_job_queue``'s ``job_resv_append_magnetic``), in the queue's
        order with a reservation first (``sort_job_queue2``; the job's own test without one stays
        where it is in ``queue``)."""
        asking = [(job, job.trace.reservation or "") for job in takewhile(lambda job: job.trace.reservation
                                                                            is not None, queue)]
        if not self.magnetic:
            return asking
        drawn = [(job, held.name) for job in queue[len(asking):] for held in self.magnetic
                 if held.allows(job.trace.user, job.trace.account)]
        return sorted([*asking, *drawn], key=lambda record: _drawn_key(*record))

    def number(self, name: str) -> int:
        """The number of reservation ``name`` (its place in the plan)."""
        assert self.plan is not None
        return self.plan.numbers[name]

    def usable(self, job: SimJob, now: float, name: str) -> NodeTries | None:
        """The sets of nodes ``job`` may run on from ``now`` in reservation ``name``, to try in order
        (``job_test_resv``); None when no window of it is open (a job that asked for it gets the
        reason ``Reservation``)."""
        plan, number = self.plan, self.number(name)
        assert plan is not None
        flags = self.held[name].flags
        own = plan.kinds[number][3] & job.part.members
        if "FLEX" in flags:
            nodes = job.part.members - plan.blocked(now, now + job.limit, but=number)
            return (own & nodes, nodes) if own & nodes else (nodes,)
        if plan.window_at(number, now) is None:
            if job.trace.reservation is not None:
                job.reason = job.sacct_reason = RESERVATION
            return None
        return (own if "MAINT" in flags else own - plan.blocked(now, now + job.limit, but=number),)

    def deadline(self, job: SimJob, now: float) -> float:
        """When ``job``, running now in the window of its reservation (``job.reservation``), is ended
        for the window's close (``job_time_limit``: its end plus ResvOverRun; inf: FLEX, or no
        window is open, as for a job a replay's start finds running where the record put it)."""
        plan, name = self.plan, job.reservation or ""
        known = plan is not None and name in plan.numbers and "FLEX" not in self.held[name].flags
        window = plan.window_at(self.number(name), now) if plan is not None and known else None
        return math.inf if window is None else window[1] + self.over_run

    def opening(self, job: SimJob, now: float) -> list[float]:
        """The next opening of the window ``job`` (queued now, asking for a reservation) waits for,
        when the passes must run for it, if it is not armed yet (the core pushes it)."""
        assert self.plan is not None
        name = job.trace.reservation or ""
        if "FLEX" in self.held[name].flags:
            return []  # it waits for no window
        opens = self.plan.next_begin(self.number(name), now)
        if opens is None or opens in self.armed:
            return []
        self.armed.add(opens)
        return [opens]

    def reopen(self, queued: Sequence[SimJob], now: float) -> list[float]:
        """A window opened now: the next openings the ``queued`` jobs asking for a reservation wait
        for (a repeating reservation's next window, for a job this one may not start)."""
        self.armed.discard(now)
        return [opens for job in queued if job.trace.reservation is not None
                for opens in self.opening(job, now)]


def _drawn_key(job: SimJob, name: str) -> tuple[float, float, float, int]:
    """The sort key of ``job`` tested in reservation ``name``: a job asking for none drawn into a
    MAGNETIC one sorts as if it had asked (``sort_job_queue2``)."""
    key = job.sort_key
    return key if job.trace.reservation is not None else (key[0] - RESERVED_FIRST, *key[1:])
