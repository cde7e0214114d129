"""When a site's Slurm recomputed its priorities, read from the priorities its accounting recorded.

Under priority/multifactor a job's priority is set when it is submitted and again each time the
decay thread runs while it pends (priority_multifactor.c, ``_decay_thread``: every
PriorityCalcPeriod from the thread's own start), and its fair-share factor changes only at those
runs. sacct's Priority is the last value set. So two jobs of one association asking the same
resources (partition, QOS, CPUs, nodes: every other factor the same, no age), each started within
moments of its submission, carry the fair-share factor of their submissions; if their priorities
differ, the decay thread ran between the first one's submission and the second one's start. Those
brackets, folded onto PriorityCalcPeriod (:func:`djsb.slurmsite.recompute_watch.calc_phase`, as a
calibration folds the runs it watched), give the thread's phase, which a dump has no field for and
which decides which of two jobs placed around a recomputation goes first.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping

from djsb.workloads.job import RecordedOutcome, TraceJob

STARTED_WITHIN = 2.0
"""Seconds from submission to start under which a job's recorded priority is taken as set at its
submission (a decay run in between moves the bracket's end to the later job's start, which the
bracket already allows)."""


def decay_runs(jobs: Iterable[TraceJob], recorded: Mapping[int, RecordedOutcome],
               started_within: float = STARTED_WITHIN) -> list[tuple[float, float]]:
    """The intervals, on the jobs' clock, each holding a run of the decay thread: for the jobs
    that started within ``started_within`` s of their submission with a recorded priority, grouped
    by association and request, each change of priority from one submission to the next."""
    groups: dict[tuple[object, ...], list[tuple[float, float, int]]] = {}
    for job in jobs:
        outcome = recorded.get(job.job_id)
        if outcome is None or outcome.priority is None or outcome.start - job.submit > started_within:
            continue
        key = (job.user, job.account, job.partition, job.qos, job.cpus, job.nodes)
        groups.setdefault(key, []).append((job.submit, outcome.start, outcome.priority))
    runs = []
    for group in groups.values():
        group.sort()
        for (submit, _, before), (_, start, after) in itertools.pairwise(group):
            if after != before:
                runs.append((submit, start))
    return sorted(runs)
