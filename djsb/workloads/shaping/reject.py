"""Shaping policy ``reject``: a job that fits no partition is not replayed (paper 003 sec. 5.3,
"BC workload into AC configuration" without shaping)."""

from __future__ import annotations

from djsb.workloads.job import TraceJob
from djsb.workloads.shaping.geometry import Limits
from djsb.workloads.shaping.policy import SHAPING_POLICIES, ShapingPolicy


@SHAPING_POLICIES.register("reject")
def reject(job: TraceJob, layout: tuple[Limits, ...], policy: ShapingPolicy) -> TraceJob | str:
    """Never reshape: the job is rejected."""
    return "not shaped (policy reject)"
