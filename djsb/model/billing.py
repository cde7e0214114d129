"""A job's billing: its TRES weighted by its partition's TRESBillingWeights, what fair share
charges per second of run (``PriorityFlags=MAX_TRES`` takes the largest node TRES instead of the sum).

Slurm's ``assoc_mgr_tres_weighted`` (assoc_mgr.c): without weights a job bills its CPUs; with
weights, each TRES times its weight (a TRES not given weighs 0), summed, or under MAX_TRES the
largest of the node TRES (cpu, mem, node and gres) plus the sum of the others (none the model
counts). priority_multifactor.c ``_apply_new_usage`` charges ``billable_tres`` (calc_job_billable_tres,
the allocated TRES) times the seconds run to the job's association.
"""

from __future__ import annotations

from djsb import slurm_text
from djsb.model.job import SimJob
from djsb.model.limits import placed_tres
from djsb.model.tres import TRES_NAMES
from djsb.yamlnodes import Located, as_number, describe

TresWeights = tuple[tuple[str, float], ...]
"""A weight per TRES, ``(name, weight)``; memory's per MB."""


def read_billing_weights(node: Located) -> TresWeights:
    """TRESBillingWeights as a mapping (``{cpu: 1.0, gres/gpu: 2.0, mem: 0.25}``, memory per MB) or as
    Slurm's text (``CPU=1.0,Mem=0.25G,GRES/gpu=2.0``)."""
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


def billing(job: SimJob, max_tres: bool = False) -> float:
    """What ``job`` (started: on ``job.alloc``) bills per second: its CPUs without weights, else its
    weighted TRES summed, or their largest under ``max_tres``."""
    weights = job.part.spec.billing_weights
    if not weights:
        return job.trace.cpus
    amounts = dict(zip(TRES_NAMES, placed_tres(job, job.alloc), strict=True))
    weighted = [amounts[name] * weight for name, weight in weights]
    return max(weighted, default=0.0) if max_tres else sum(weighted)
