"""A job's billing: its TRES weighted by its partition's TRESBillingWeights, what fair share
charges per second of run (``PriorityFlags=MAX_TRES`` takes the largest node TRES instead of the sum).

Slurm's ``assoc_mgr_tres_weighted`` (assoc_mgr.c): without weights a job bills its CPUs; with
weights, each TRES times its weight (a TRES not given weighs 0), summed, or under MAX_TRES the
largest of the node TRES (cpu, mem, node and gres) plus the sum of the others (none the model
counts). priority_multifactor.c ``_apply_new_usage`` charges ``billable_tres`` (calc_job_billable_tres,
the allocated TRES) times the seconds run to the job's association.
"""

from __future__ import annotations

from djsb.model.job import SimJob
from djsb.model.tres import TRES_NAMES
from djsb.model.tres_usage import placed_tres


def billing(job: SimJob, max_tres: bool = False) -> float:
    """What ``job`` (started: on ``job.alloc``) bills per second: its CPUs without weights, else its
    weighted TRES summed, or their largest under ``max_tres``."""
    weights = job.part.spec.billing_weights
    if not weights:
        return job.trace.cpus
    amounts = dict(zip(TRES_NAMES, placed_tres(job, job.alloc), strict=True))
    weighted = [amounts[name] * weight for name, weight in weights]
    return max(weighted, default=0.0) if max_tres else sum(weighted)
