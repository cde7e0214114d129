"""Penalty Scheduling Policy with aging, PSP+AGING (Rocchetti et al., paper 000 sec. 3).

A user's accuracy is the mean of A = t_run / t_req (sec. 3 of 000: the job's real run time over
the time the user requested) over their last ten completed jobs; it maps to one of ten groups with
an initial priority g (Table 1 of 000: g1 (0, 0.05) -> 1 ... g10 [0.78, 1] -> 49). The accuracies
and their mean are exact fractions and the bounds the decimals of Table 1: in floating point a mean
of exactly 0.52 can come out as 0.51999... and land in g7 (40) instead of g8 (43), which moves 3 of
KTH-SP2's first 5,000 jobs. Every time step (150 s in 000) a pending job's priority ages by eq. (1):
p_{i+1} = g + p_i * t_wait / t_estimated, with p_1 = g, t_wait the time waited so far and
t_estimated the requested time. Steps fall on multiples of the time step (the plugin's
calc_period, like Slurm's priority recalculation into which 000 coded it); a recomputation
applies every step passed since the last one, so skipped passes do not change the result.

PSP without aging (scenarios 2 and 5 of Table 4 of 000) is the same plugin with ``aging=False``:
p = g for the job's whole wait, registered as ``psp``.

t_req of the accuracy is the user's own request as the trace recorded it
(``TraceJob.user_request``, kept when ``workload.estimate`` replaces the limit). A job whose
user requested nothing has no t_req: it says nothing of its user's accuracy and is left out of
the mean (the limit it runs with, the partition's MaxTime, is not the user's estimate; counting
run / MaxTime would put every such user in a low group). Paper 000 computed the groups from the
logs (its Table 3) and used them in its perfect-estimate scenarios too: PSP with perfect
estimates (scenario 2) differs from FCFS (scenario 1) in its Table 5, which it could not if the
accuracy were run / perfect estimate = 1 for everyone. t_estimated of eq. (1) is the limit the
job runs with (perfect or real).

Modelling choices the paper leaves open: a user without completed jobs that carry a request
is in g10 (no penalty without evidence); A is capped at 1 (a job that ran past
its request used all of it); an accuracy of exactly 0 (a 0 s run) is in g1; priorities are
capped at 1e300 (eq. 1 grows geometrically once a job waited longer than its estimate), equal
priorities falling back to submit order.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from fractions import Fraction

from djsb.model.job import SimJob
from djsb.model.priority.base import PriorityPlugin
from djsb.model.priority.plugins import PRIORITY_PLUGINS, NoOptions, plugin_options
from djsb.setting import setting, values
from djsb.yamlnodes import Located, as_duration

GROUP_BOUNDS = tuple(Fraction(bound) for bound in ("0.05", "0.10", "0.15", "0.20", "0.30", "0.40",
                                                    "0.52", "0.64", "0.78"))  # Table 1 of 000
GROUP_PRIORITY = (1, 10, 20, 25, 30, 35, 40, 43, 46, 49)
CAP = 1e300


def job_accuracy(run_time: float, requested: float) -> Fraction:
    """A = t_run / t_req of sec. 3 of 000, capped at 1, as the exact ratio of the two times."""
    return min(Fraction(1), Fraction(run_time) / Fraction(requested))


def mean_accuracy(accuracies: Collection[Fraction]) -> Fraction:
    """The exact mean of a user's job accuracies (at least one)."""
    return sum(accuracies, Fraction(0)) / len(accuracies)


def group_priority(accuracy: Fraction) -> int:
    """Initial priority g of Table 1 of paper 000 for a mean accuracy in [0, 1]."""
    return GROUP_PRIORITY[bisect_right(GROUP_BOUNDS, accuracy)]


@dataclass(frozen=True)
class PspAgingOptions:
    """The ``policy.priority`` keys of ``plugin: psp_aging``."""

    time_step: float = setting(150.0, lambda n: as_duration(n, unit="s", minimum=1), "s",
                               "PriorityCalcPeriod",
                               "how often a pending job's priority ages by eq. (1) of paper 000 (>= 1 s)",
                               where="policy.priority")


class PspAgingPriority(PriorityPlugin):
    """PSP+AGING: accuracy-group priority that ages with the normalised waiting time (PSP when
    ``aging`` is False: the group priority g stays the job's priority)."""

    name = "psp_aging"

    def __init__(self, time_step: float = PspAgingOptions.time_step, window: int = 10,
                 aging: bool = True) -> None:
        self.calc_period = time_step if aging else 0.0
        self.name = "psp_aging" if aging else "psp"
        self.window = window
        self.history: dict[str, deque[Fraction]] = {}
        self.base: dict[int, int] = {}
        self.aged_until: dict[int, float] = {}

    def accuracy(self, user: str) -> Fraction | None:
        """Mean accuracy of the user's last ``window`` completed jobs (None without history)."""
        history = self.history.get(user)
        return mean_accuracy(history) if history else None

    def on_submit(self, job: SimJob, now: float) -> None:
        """p_1 = g of the owner's accuracy group."""
        accuracy = self.accuracy(job.trace.user)
        g = group_priority(accuracy) if accuracy is not None else GROUP_PRIORITY[-1]
        self.base[job.job_id] = g
        self.aged_until[job.job_id] = now
        job.priority = float(g)
        job.factors = {}
        job.update_sort_key()

    def on_end(self, job: SimJob, now: float) -> None:
        """Record the accuracy t_run / t_req of a completed job whose user gave a request."""
        requested = job.trace.user_request
        if requested is not None and math.isfinite(requested) and requested > 0 and job.start is not None:
            self.history.setdefault(job.trace.user, deque(maxlen=self.window)).append(
                job_accuracy(now - job.start, requested))
        self.base.pop(job.job_id, None)
        self.aged_until.pop(job.job_id, None)

    def on_start(self, job: SimJob, now: float) -> None:
        """A started job no longer ages."""
        self.aged_until.pop(job.job_id, None)

    def recompute(self, queue: Sequence[SimJob], now: float) -> None:
        """Apply eq. (1) of 000 for every time step passed since each job last aged (PSP: none).

        A job at the cap or without a finite estimate keeps its priority, and one that passed no
        step boundary since it last aged has nothing to apply: both are left as they are (the
        boundary of the next step depends only on the step interval ``aged_until`` falls in, so
        leaving it older changes nothing)."""
        step = self.calc_period
        if step <= 0:
            return
        aged_until, base, floor, isfinite = self.aged_until, self.base, math.floor, math.isfinite
        for job in queue:
            p = job.priority
            estimate = job.limit
            if p >= CAP or not isfinite(estimate):
                continue
            trace = job.trace
            job_id = trace.job_id
            boundary = (floor(aged_until[job_id] / step) + 1) * step
            if boundary > now:
                continue
            g, submit = base[job_id], trace.submit
            while boundary <= now and p < CAP:
                p = min(CAP, g + p * (boundary - submit) / estimate)
                boundary += step
            aged_until[job_id] = now
            job.priority = p
            job.update_sort_key()


@PRIORITY_PLUGINS.register("psp_aging")
def read_psp_aging(node: Located, base: PriorityPlugin | None) -> PriorityPlugin:
    """``{plugin: psp_aging, time_step: 150}``: the aging step in seconds (150 s in paper 000)."""
    return PspAgingPriority(**values(plugin_options(node, PspAgingOptions())))


@PRIORITY_PLUGINS.register("psp")
def read_psp(node: Located, base: PriorityPlugin | None) -> PriorityPlugin:
    """``{plugin: psp}``: PSP without aging (scenarios 2 and 5 of Table 4 of 000); no options."""
    plugin_options(node, NoOptions())
    return PspAgingPriority(aging=False)
