"""Shaping policy ``target``: reshape a job toward one chosen partition (paper 003 sec. 3, Fig. 2:
"different alternatives on either the (reconfigured) cpu queue or the (original) cpu_long queue").

The job keeps its geometry and takes the core count nearest its own that the target admits: the
clamp of its cores into [min_cpus, max_cpus], raised until its time limit fits max_time. Fig. 2's
job of 360 cores x 48 h toward cpu_long (1-240 cores, 744 h) becomes 240 cores x 72 h.
"""

from __future__ import annotations

from djsb.workloads.job import TraceJob
from djsb.workloads.shaping.geometry import Limits, cores_within, geometry, reshaped
from djsb.workloads.shaping.policy import SHAPING_POLICIES, ShapingPolicy


@SHAPING_POLICIES.register("target")
def toward_target(job: TraceJob, layout: tuple[Limits, ...], policy: ShapingPolicy) -> TraceJob | str:
    """The job reshaped into ``policy.partition``, or why its geometry cannot fit there."""
    limits = next(p for p in layout if p.name == policy.partition)
    cpus = cores_within(job, limits)
    if cpus is None:
        most = f"{limits.max_cpus} x {limits.max_time:g}" if limits.max_time is not None else "its cores"
        return (f"geometry {geometry(job):g} core-s does not fit {limits.name} "
                f"({limits.min_cpus}-{limits.max_cpus} CPUs, at most {most} core-s)")
    return reshaped(job, cpus, limits.name)
