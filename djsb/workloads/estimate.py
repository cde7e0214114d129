"""Which time limit a replayed job gets: the estimate the scheduler plans with.

Traces record each job's run time and, usually, the user's requested time (SWF field 9; -1 when the
machine did not record it, e.g. NASA-iPSC, OSC-Clust, SDSC-Par-1996). The choices:

* ``requested``: the trace's requested time; a job without one gets the partition's MaxTime (the
  model's fallback, Slurm's DefaultTime). The default.
* ``runtime``: the recorded run time, i.e. perfect estimates, the usual choice of the literature
  (Mu'alem & Feitelson, IEEE TPDS 12(6), 2001, sec. 4) and the only way to replay a trace with no
  requested times as anything but "every job asks for the maximum".
* ``runtime_factor``: run time x F (Mu'alem & Feitelson's f-model with a constant factor; F > 1
  gives systematic overestimates, F < 1 kills every job under ``at_time_limit: kill``).
* ``partition_max``: every job asks for its partition's MaxTime (the worst estimates).

The request the trace recorded stays in ``TraceJob.user_request`` (PSP's accuracy groups of
paper 000 are the users' own accuracy, whatever estimate the scheduler plans with).

A limit derived from the run time is at least 1 s (a 0 s job still needs a positive limit) and at
most the partition's MaxTime (a user cannot ask for more; Slurm would refuse the job).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from djsb.workloads.job import TraceJob

ESTIMATES = ("requested", "runtime", "runtime_factor", "partition_max")


def with_estimates(jobs: Sequence[TraceJob], estimate: str, factor: float,
                   max_time: Callable[[TraceJob], float | None]) -> list[TraceJob]:
    """``jobs`` with ``requested_time`` set by ``estimate`` (one of :data:`ESTIMATES`).

    ``factor`` is F of ``runtime_factor`` (ignored otherwise); ``max_time`` gives a job's
    partition MaxTime (None: unlimited).
    """
    if estimate not in ESTIMATES:
        raise ValueError(f"unknown estimate {estimate!r}")
    if estimate == "requested":
        return list(jobs)
    if estimate == "partition_max":
        return [dataclasses.replace(j, requested_time=None, user_estimate=j.user_request,
                                    estimated=True) for j in jobs]
    scale = factor if estimate == "runtime_factor" else 1.0
    return [dataclasses.replace(j, requested_time=_capped(max(j.run_time * scale, 1.0), max_time(j)),
                                user_estimate=j.user_request, estimated=True) for j in jobs]


def _capped(limit: float, maximum: float | None) -> float:
    return limit if maximum is None else min(limit, maximum)
