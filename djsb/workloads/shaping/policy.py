"""What a shaping policy is: ``workload.shaping`` of ``djsb simulate`` and the registry of policies.

A policy gets a job that fits no partition of the layout unchanged and returns the job reshaped
into one of them, or why it cannot be (the job is then rejected). Each policy is one decorated
function in a module of this package.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from djsb.registry import Registry, UnknownName
from djsb.workloads.job import TraceJob
from djsb.workloads.shaping.geometry import Limits
from djsb.yamlnodes import Located, as_number, as_str, read_fields


@dataclass(frozen=True, slots=True)
class ShapingPolicy:
    """``workload.shaping``: the policy's name, its target ``partition`` and its ``factor``.

    ``target`` needs ``partition``; ``factor`` needs ``factor`` (cores x F, time / F) and puts the
    shaped job in ``partition`` if given, else in the first partition where it fits.
    """

    policy: str = "reject"
    partition: str | None = None
    factor: float | None = None


Shaper = Callable[[TraceJob, tuple[Limits, ...], ShapingPolicy], "TraceJob | str"]
"""A policy: (misfit job, the layout's limits, options) -> the shaped job, or why it is rejected."""

SHAPING_POLICIES: Registry[Shaper] = Registry("shaping policy", "djsb.workloads.shaping")


def read_shaping(node: Located, layout: tuple[Limits, ...]) -> ShapingPolicy:
    """``workload.shaping`` checked against the layout: a known policy, its partition and factor."""
    fields = read_fields(node, {"policy": as_str, "partition": as_str,
                                "factor": lambda n: as_number(n, 0.0, strict=True)}, ("policy",))
    policy = ShapingPolicy(**fields)
    try:
        SHAPING_POLICIES.get(policy.policy)
    except UnknownName as exc:
        raise _at(node, "policy").error(str(exc)) from None
    names = [p.name for p in layout]
    if policy.partition is not None and policy.partition not in names:
        raise _at(node, "partition").error(
            f"no partition {policy.partition!r} (the layout has {', '.join(names)})")
    if policy.policy == "target" and policy.partition is None:
        raise node.error("policy target needs 'partition', the partition to shape toward")
    if (policy.policy == "factor") != (policy.factor is not None):
        raise (node.get("factor") or node).error("'factor' goes with policy factor, and only with it")
    return dataclasses.replace(policy, policy=SHAPING_POLICIES.canonical(policy.policy))


def _at(node: Located, key: str) -> Located:
    child = node.get(key)
    assert child is not None
    return child
