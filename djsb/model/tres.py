"""Trackable resources (TRES) as QoS limits count them: a job's CPUs, memory, nodes and GPUs.

Slurm keeps a job's TRES in an array in a fixed order, ``cpu``, ``mem``, ``energy``, ``node``,
``billing``, then the dynamic ones such as ``gres/gpu`` (slurmdb.h ``TRES_ARRAY_*``), and
acct_policy.c checks a limit TRES by TRES in that order, reporting the first one over it. The model
counts the four a scheduler places: ``cpu``, ``mem`` (MB), ``node`` and ``gres/gpu``, in that order.

A limit is written in a config as a mapping (``{cpu: 64, gres/gpu: 4, mem: 16G}``) or as Slurm's
own text (``cpu=64,gres/gpu=4``, what sacctmgr prints), read by :func:`djsb.slurm_text.tres`.
"""

from __future__ import annotations

import math

from djsb import slurm_text
from djsb.yamlnodes import Located, as_number, describe

TRES_NAMES = ("cpu", "mem", "node", "gres/gpu")
"""The TRES the model's QoS limits count, in Slurm's TRES array order."""
CPU, MEM, NODE, GPU = range(4)

TresLimits = tuple[tuple[str, int], ...]
"""A limit per TRES, ``(name, amount)`` in :data:`TRES_NAMES` order; a TRES left out is unlimited."""
Tres = tuple[int, int, int, int]
"""A job's (or a usage's) ``cpu``, ``mem``, ``node`` and ``gres/gpu`` amounts."""


def read_tres_limits(node: Located, *, per_node: bool = False) -> TresLimits:
    """A TRES limit: a mapping of TRES to whole amounts or Slurm's ``cpu=64,gres/gpu=4`` text
    (memory may carry a K, M, G or T suffix; it is counted in MB). ``per_node``: a limit per node,
    where ``node`` means nothing (Slurm has no reason for it, acct_policy.c ``_get_tres_state_reason``)."""
    value = node.value
    if isinstance(value, dict):
        items = [(str(name), sub.value) for name, sub in value.items()]
    elif isinstance(value, str):
        items = [(name, text) for name, _, text in (item.partition("=") for item in value.split(",") if item)]
    else:
        raise node.error(f"expected a mapping of TRES to amounts or Slurm's 'cpu=64,gres/gpu=4' text, "
                         f"got {describe(value)}")
    allowed = TRES_NAMES if not per_node else tuple(n for n in TRES_NAMES if n != "node")
    limits: dict[str, int] = {}
    for name, amount in items:
        if name not in allowed:
            raise node.error(f"unknown TRES {name!r}: use {', '.join(allowed)}")
        if isinstance(amount, bool) or not isinstance(amount, (int, float, str)):
            raise node.error(f"TRES {name}: expected an amount, got {describe(amount)}")
        try:
            parsed = slurm_text.tres(f"{name}={amount}")[name]
        except ValueError as exc:
            raise node.error(str(exc)) from None
        if parsed != math.floor(parsed):
            raise node.error(f"TRES {name}: expected a whole amount, got {amount}")
        limits[name] = int(parsed)
    return tuple((name, limits[name]) for name in TRES_NAMES if name in limits)


TresWeights = tuple[tuple[str, float], ...]
"""A weight per TRES (a partition's TRESBillingWeights), ``(name, weight)``; memory's per MB."""


def read_billing_weights(node: Located) -> TresWeights:
    """TRESBillingWeights as a mapping (``{cpu: 1.0, gres/gpu: 2.0, mem: 0.25}``, memory per MB) or as
    Slurm's text (``CPU=1.0,Mem=0.25G,GRES/gpu=2.0``, :func:`djsb.slurm_text.tres_weights`)."""
    if isinstance(node.value, str):
        try:
            return slurm_text.tres_weights(node.value)
        except ValueError as exc:
            raise node.error(str(exc)) from None
    if not isinstance(node.value, dict):
        raise node.error(f"expected a mapping of TRES to weights or Slurm's 'CPU=1.0,GRES/gpu=2.0' text, "
                         f"got {describe(node.value)}")
    weights = []
    for name, weight in node.value.items():
        if str(name).lower() not in TRES_NAMES:
            raise node.error(f"unknown TRES {name!r}: use {', '.join(TRES_NAMES)}")
        weights.append((str(name).lower(), as_number(weight)))
    return tuple(weights)


def vector(limits: TresLimits) -> tuple[float, float, float, float]:
    """A limit as one amount per TRES of :data:`TRES_NAMES` (inf: unlimited)."""
    given = dict(limits)
    return (given.get("cpu", math.inf), given.get("mem", math.inf), given.get("node", math.inf),
            given.get("gres/gpu", math.inf))


_KIND = ("Cpu", "Mem", "Node", "GRES")

REASONS = {
    # Slurm's job_state_reason_string (slurm_protocol_defs.c) of the reason acct_policy.c's
    # _get_tres_state_reason maps each kind of limit and TRES to, by kind of limit and TRES index.
    "grp": ("QOSGrpCpuLimit", "QOSGrpMemLimit", "QOSGrpNodeLimit", "QOSGrpGRES"),
    "per_job": ("QOSMaxCpuPerJobLimit", "QOSMaxMemoryPerJob", "QOSMaxNodePerJobLimit", "QOSMaxGRESPerJob"),
    "per_node": ("QOSMaxCpuPerNode", "QOSMaxMemoryPerNode", "QOSMaxUnknownPerNode", "QOSMaxGRESPerNode"),
    "per_account": ("MaxCpuPerAccount", "MaxMemoryPerAccount", "MaxNodePerAccount", "MaxGRESPerAccount"),
    "per_user": ("QOSMaxCpuPerUserLimit", "QOSMaxMemoryPerUser", "QOSMaxNodePerUserLimit",
                 "QOSMaxGRESPerUser"),
}
"""The pending reason of a job over a TRES limit, by limit kind and TRES index."""


def over(amounts: Tres, used: Tres | None, limit: tuple[float, float, float, float]) -> int:
    """The index of the first TRES whose ``amounts`` (plus ``used``) exceed ``limit``, or -1
    (acct_policy.c ``_validate_tres_usage_limits``: the request alone, then with the usage)."""
    for i in range(4):
        total = amounts[i] + used[i] if used is not None else amounts[i]
        if total > limit[i]:
            return i
    return -1
