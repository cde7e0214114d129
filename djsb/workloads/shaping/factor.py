"""Shaping policy ``factor``: cores x F, time limit / F (paper 003 sec. 5.4: "doubling the
requested amount of cores and halving the time limit for the cpu queue", F = 2, and "halving the
requested amount of cores and doubling the time limit for the cpu_long queue", F = 0.5).

The new core count is round(cores x F), at least 1; the time limit and the run time are scaled by
old / new cores so cores x time is kept. The shaped job goes to ``partition`` when given, else to
the first partition of the layout where it fits.
"""

from __future__ import annotations

from djsb.workloads.job import TraceJob
from djsb.workloads.shaping.geometry import Limits, reshaped
from djsb.workloads.shaping.policy import SHAPING_POLICIES, ShapingPolicy


@SHAPING_POLICIES.register("factor")
def by_factor(job: TraceJob, layout: tuple[Limits, ...], policy: ShapingPolicy) -> TraceJob | str:
    """The job with its cores scaled by ``policy.factor``, or why the result fits nowhere."""
    assert policy.factor is not None  # checked when the config is read
    cpus = max(1, round(job.cpus * policy.factor))
    shaped = reshaped(job, cpus, job.partition or "")
    places = [p for p in layout if policy.partition in (None, p.name)]
    for limits in places:
        if limits.fits(shaped.cpus, shaped.requested_time):
            return reshaped(job, cpus, limits.name)
    return "; ".join(f"x {policy.factor:g}: {p.why_not(shaped.cpus, shaped.requested_time)}" for p in places)
