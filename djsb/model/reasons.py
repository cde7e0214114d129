"""The pending reasons the model gives a waiting job, as Slurm names them (``squeue``'s REASON,
slurm_protocol_defs.c ``job_state_reason_string``).

A job carries the reason its last scheduling pass gave it (``SimJob.reason``); the one it had
when it started is the jobs table's ``reason`` column (``None``: it never waited for a pass).
Slurm's main pass (job_scheduler.c ``_schedule``) gives ``Resources`` to a job it tested that
did not fit (node_scheduler.c ``select_nodes`` sets WAIT_RESOURCES when no nodes were picked) and
``Priority`` to the jobs of a partition it stopped testing (``_failed_partition``: only jobs whose
reason is None or Resources; a QoS limit's reason stays). The QoS limits give their own reasons
(:mod:`djsb.model.limits`), cleared to None when a pass finds the limit no longer holds the job
(acct_policy.c ``acct_policy_job_runnable_pre_select``, "clear old state reason").
"""

from __future__ import annotations

NONE = "None"
PRIORITY = "Priority"
RESOURCES = "Resources"
MAX_WALL = "QOSMaxWallDurationPerJobLimit"
DEPENDENCY = "Dependency"
"""A job held until its parents end (:mod:`djsb.model.dependency`)."""
ARRAY_TASK_LIMIT = "JobArrayTaskLimit"
"""A task of a throttled job array held while as many of its tasks run (:mod:`djsb.model.limits`)."""
NODE_NOT_AVAIL = "ReqNodeNotAvail"
"""A job that could not run on the nodes a reservation leaves it, even were they idle
(:mod:`djsb.model.reservations`): WAIT_NODE_NOT_AVAIL, which sacct keeps as a limit's reason is kept."""

RESERVATION = "Reservation"
"""A job asking for a reservation none of whose windows is open (WAIT_RESERVATION:
:mod:`djsb.model.reserved_jobs`)."""


class PassRecord:
    """Which main pass last stopped at every partition, so that the jobs it never reached get their
    ``Priority`` when they start, not by a walk over the whole queue at every pass.

    Slurm's ``_schedule`` walks on to the end of the queue, giving ``Priority`` to each job of a
    failed partition whose reason is None or Resources; the model's main pass stops where every
    partition has failed. A job queued before such a pass, and not tested by it or any later one
    (``SimJob.tested``), would have got ``Priority`` from it: :meth:`JobQueue.started
    <djsb.model.queue.JobQueue.started>` gives it then, if its reason is None or Resources.
    """

    __slots__ = ("passes", "stopped")

    def __init__(self) -> None:
        self.passes = 0
        """Main passes so far (a pass's number is the count once it began)."""
        self.stopped = 0
        """The number of the last main pass that stopped at every partition (0: none)."""
