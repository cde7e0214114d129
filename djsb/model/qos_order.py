"""Which QoS limit a job, and in which order: its own QoS and its partition's (slurm.conf ``QOS=``).

Slurm 22.05, acct_policy.c ``acct_policy_set_qos_order``: a job whose partition has a QoS is limited
by both; the partition's comes first (``qos_ptr_1``) unless the job's own QoS has the flag
OverPartQOS (``QOS_FLAG_OVER_PART_QOS``), and a QoS that is both counts once. Every check of
acct_policy.c (``_qos_policy_validate`` at submission, ``_qos_job_runnable_pre_select`` and
``_qos_job_runnable_post_select`` at each pass, ``_validate_time_limit`` for a job's default limit)
runs over the first QoS, then over the second, skipping each limit the first one set: ``qos_out_ptr``
records the limits already imposed, one by one, and TRES by TRES for the TRES limits (a GrpTRES of
``cpu=8`` in the first leaves the second's GrpTRES ``gres/gpu`` in force, not its ``cpu``). So each
limit comes from the first QoS that sets it, and is checked against that QoS's own usage:
``_adjust_limit_usage`` counts a job in both QoS (:mod:`djsb.model.limits`).

At submission (``_qos_policy_validate``, its TRES limits checked only with DenyOnLimit) a QoS's
MaxTRESPerUser and GrpTRES are checked together (``_validate_tres_limits_for_qos`` given both):
a TRES either of them sets in the first QoS leaves both unchecked for that TRES in the second.
DenyOnLimit holds if either QoS has it (``_acct_policy_validate``'s ``strict_checking``).
"""

from __future__ import annotations

import dataclasses

from djsb.model.cluster_spec import QosSpec
from djsb.model.tres import TresLimits

_SCALARS = ("grp_jobs", "max_jobs_per_account", "max_jobs_per_user", "max_submit_jobs_per_user", "max_wall")
"""The limits of one value: the second QoS's is skipped when the first sets its own."""
_TRES = ("grp_tres", "max_tres_per_job", "max_tres_per_node", "max_tres_per_account", "max_tres_per_user",
         "grp_tres_mins", "grp_tres_run_mins", "max_tres_mins_per_job")
"""The TRES limits: the second QoS's is skipped TRES by TRES where the first sets the same limit."""
_CHECKED_TOGETHER = ("grp_tres", "max_tres_per_user")
"""The two TRES limits _qos_policy_validate checks in one call at submission."""


def qos_order(own: QosSpec, partition: QosSpec | None) -> tuple[QosSpec, ...]:
    """The QoS whose limits hold a job of QoS ``own`` in a partition of QoS ``partition`` (None: the
    partition has none), first to last (``acct_policy_set_qos_order``)."""
    if partition is None or partition.name == own.name:
        return (own,)
    return (own, partition) if own.over_part_qos else (partition, own)


def job_limits(own: QosSpec, partition: QosSpec | None, *, submission: bool = False) -> tuple[QosSpec, ...]:
    """:func:`qos_order`'s QoS, the second without the limits the first sets (``submission``: as
    _qos_policy_validate skips them, MaxTRESPerUser and GrpTRES together)."""
    order = qos_order(own, partition)
    if len(order) == 1:
        return order
    first, second = order
    return first, _without(second, first, submission)


def _without(second: QosSpec, first: QosSpec, submission: bool) -> QosSpec:
    """``second`` with every limit ``first`` sets left out."""
    changes: dict[str, object] = {name: None for name in _SCALARS if getattr(first, name) is not None}
    for name in _TRES:
        kinds = _CHECKED_TOGETHER if submission and name in _CHECKED_TOGETHER else (name,)
        taken = {tres for kind in kinds for tres, _ in getattr(first, kind)}
        limits: TresLimits = getattr(second, name)
        changes[name] = tuple((tres, amount) for tres, amount in limits if tres not in taken)
    return dataclasses.replace(second, **changes)  # type: ignore[arg-type]


def max_wall(own: QosSpec, partition: QosSpec | None) -> float | None:
    """The MaxWall that holds a job: the first of its QoS to set one (None: none)."""
    return next((q.max_wall for q in qos_order(own, partition) if q.max_wall is not None), None)
