"""Synthetic workloads: Poisson/exponential jobs for M/M/c checks, and paper 004's static LUMI workload.

Every generator is deterministic for a given ``seed`` and draws each attribute from its own random stream
(``random.Random`` seeded with a string derived from the seed and the attribute), so changing one
parameter (say the service rate) leaves the other attributes (the arrival times) unchanged: experiments
that differ in one knob see common random numbers.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from statistics import NormalDist

from djsb.errors import InputError
from djsb.machine import JOB_BYTES, too_many
from djsb.workloads.job import TraceJob

_STD_NORMAL = NormalDist()


def _stream(seed: int, name: str) -> random.Random:
    return random.Random(f"djsb:{seed}:{name}")


def _require(condition: bool, key: str, message: str) -> None:
    if not condition:
        raise InputError(message, key=key)


def _require_n_jobs(n_jobs: int) -> None:
    """A number of jobs to generate: a whole number >= 0 whose jobs this machine can replay."""
    _require(isinstance(n_jobs, int) and not isinstance(n_jobs, bool) and n_jobs >= 0, "n_jobs",
             f"must be an integer >= 0, got {n_jobs!r}")
    problem = too_many(n_jobs, JOB_BYTES, "jobs")
    _require(problem is None, "n_jobs", problem or "")


# ------------------------------------------------------------------------------------- M/M/c workload


def poisson_exponential(n_jobs: int, arrival_rate: float, service_rate: float, *, cpus: int = 1,
                        seed: int, exact_requested_time: bool = True, first_job_id: int = 1,
                        user: str = "u0", account: str = "a0") -> list[TraceJob]:
    """``n_jobs`` jobs of a Poisson arrival process with exponential service times (an M/M/c workload).

    - interarrival times ~ Exp(``arrival_rate``) (mean 1/lambda), starting from time 0: the first job
      arrives at the first interarrival time, job k at the sum of the first k;
    - run times ~ Exp(``service_rate``) (mean 1/mu), independent of the arrivals;
    - every job asks for ``cpus`` CPUs (1 for the classical M/M/c model: c servers = c CPUs);
    - ``requested_time`` = ``run_time`` when ``exact_requested_time`` (the default), so the model never
      kills a job at its limit (an exponential run time has no upper bound, a partition maximum would
      truncate the tail and break the M/M/c formulas); with single-CPU jobs backfill cannot reorder
      anything either (the head of the queue fits whenever any CPU is free). ``False`` gives None.

    Times are floats in seconds (rates per second). Job ids are consecutive from ``first_job_id``; all
    jobs belong to ``user`` / ``account`` so that fair share cannot reorder the FIFO queue.
    """
    _require_n_jobs(n_jobs)
    _require(arrival_rate > 0 and math.isfinite(arrival_rate), "arrival_rate",
             f"must be > 0 (jobs per second), got {arrival_rate!r}")
    _require(service_rate > 0 and math.isfinite(service_rate), "service_rate",
             f"must be > 0 (jobs per second per server), got {service_rate!r}")
    _require(isinstance(cpus, int) and cpus >= 1, "cpus", f"must be an integer >= 1, got {cpus!r}")
    arrivals = _stream(seed, "arrivals")
    services = _stream(seed, "services")
    jobs = []
    t = 0.0
    for k in range(n_jobs):
        t += arrivals.expovariate(arrival_rate)
        run = services.expovariate(service_rate)
        jobs.append(TraceJob(first_job_id + k, t, run, cpus, run if exact_requested_time else None,
                             None, None, user, account))
    return jobs


# ------------------------------------------------------------------------------ paper 004, static LUMI


@dataclass(frozen=True)
class LognormalFit:
    """A lognormal in SciPy's parametrisation (``scipy.stats.lognorm(s, loc, scale)``, eq. 3.1 of 004).

    ``X = loc + scale * exp(s * Z)`` with ``Z ~ N(0, 1)``: cdf ``F(x) = Phi(ln((x - loc) / scale) / s)`` for
    ``x > loc`` (0 below), median ``loc + scale``.
    """

    s: float
    loc: float
    scale: float

    def cdf(self, x: float) -> float:
        if x <= self.loc:
            return 0.0
        if math.isinf(x):
            return 1.0
        return _STD_NORMAL.cdf(math.log((x - self.loc) / self.scale) / self.s)

    def ppf(self, p: float) -> float:
        """Inverse cdf for 0 < p < 1."""
        return self.loc + self.scale * math.exp(self.s * _STD_NORMAL.inv_cdf(p))


#: Table 3.10 of paper 004: lognormal fit of LUMI's allocated CPUs (s, loc, scale).
LUMI_CPUS_LOGNORM = LognormalFit(s=1.7195, loc=-9.8930e-1, scale=1.9930e2)
#: Table 3.11 of paper 004: lognormal fit of LUMI's job run times in seconds (s, loc, scale).
LUMI_RUNTIME_LOGNORM = LognormalFit(s=2.6766, loc=9.5007e-1, scale=1.6506e2)
#: Table 3.5 of paper 004: min and max allocated CPUs observed on LUMI (the bounds of the generator).
LUMI_CPUS_BOUNDS = (1.0, 325120.0)
#: Table 3.6 of paper 004: min and max run time observed on LUMI, in seconds.
LUMI_RUNTIME_BOUNDS = (0.0, 4604100.0)


def bounded_lognormal(fit: LognormalFit, low: float, high: float, n: int, rng: random.Random) -> list[float]:
    """``n`` draws of ``fit`` truncated to [low, high] by inverse transform sampling (paper 004 sec. 3.3.1).

    ``U ~ Uniform(F(low), F(high))`` and ``X = F^-1(U)``: the result has the density of the fit restricted
    to [low, high] and renormalised, i.e. it is still a probability distribution, as the paper requires
    ("we do the inverse transform method which ensures us that we still have a probability distribution",
    following Feitelson's modelling book). No draw is rejected.
    """
    _require(low < high, "bounds", f"low must be < high, got [{low}, {high}]")
    f_low, f_high = fit.cdf(low), fit.cdf(high)
    _require(f_high > f_low, "bounds", f"[{low}, {high}] has no probability under {fit}")
    tiny = math.ulp(1.0)
    lo_p, hi_p = max(f_low, tiny), min(f_high, 1.0 - tiny)
    out = []
    for _ in range(n):
        p = f_low + rng.random() * (f_high - f_low)
        x = fit.ppf(min(max(p, lo_p), hi_p))
        out.append(min(max(x, low), high))
    return out


def static_lognormal_004(n_jobs: int, *, seed: int, n_users: int = 100, n_groups: int = 100,
                         cpus_fit: LognormalFit = LUMI_CPUS_LOGNORM,
                         cpus_bounds: tuple[float, float] = LUMI_CPUS_BOUNDS,
                         runtime_fit: LognormalFit = LUMI_RUNTIME_LOGNORM,
                         runtime_bounds: tuple[float, float] = LUMI_RUNTIME_BOUNDS,
                         submit: float = 0.0, requested_time_factor: float | None = 1.0,
                         first_job_id: int = 1) -> list[TraceJob]:
    """Paper 004's static LUMI-fitted workload (sec. 3.3.1, "Workload Generator"; Tables 3.5-3.14).

    - allocated CPUs ~ lognormal of Table 3.10 (s = 1.7195, loc = -0.98930, scale = 199.30) and run time
      ~ lognormal of Table 3.11 (s = 2.6766, loc = 0.95007, scale = 165.06), each bounded by inverse
      transform sampling (:func:`bounded_lognormal`) between the min and max LUMI values of Tables 3.5
      (1..325120 CPUs) and 3.6 (0..4604100 s), then "casted to integer" (truncated, as NumPy's astype(int)
      does; CPUs at least 1). The paper says it bounds CPUs "to the maximum number of CPUs in the system";
      Table 3.4 gives 354048 cores (720896 hardware threads): pass ``cpus_bounds`` to use those instead.
      The generated statistics to expect are the paper's Tables 3.12 (CPUs: median 199, quartiles 63 and
      650) and 3.13 (run time: median 155 s, quartiles 25 and 940.25 s) over 10 x 1000 jobs.
    - each job goes to a user drawn uniformly at random from ``n_users`` (100; ``u0``..``u99``); a user
      without a group when it first gets a job is given one drawn uniformly from ``n_groups`` (100;
      ``g0``..``g99``), kept for all its jobs.
    - a static workload: every job is submitted at ``submit`` (0.0) (the paper's sec. 2.5.1: a snapshot
      with no inter-arrival times). Paper 004 generates 1000 jobs per workload (10 workloads).
    - ``requested_time``: the paper does not say; by default the run time rounded up to whole minutes, at
      least one minute (Slurm's granularity), times ``requested_time_factor``; None gives None
      (the partition's maximum).
    """
    _require_n_jobs(n_jobs)
    _require(n_users >= 1, "n_users", f"must be >= 1, got {n_users!r}")
    _require(n_groups >= 1, "n_groups", f"must be >= 1, got {n_groups!r}")
    _require(requested_time_factor is None or requested_time_factor >= 1.0, "requested_time_factor",
             f"must be >= 1 (a lower limit kills the job) or None, got {requested_time_factor!r}")
    cpus = bounded_lognormal(cpus_fit, *cpus_bounds, n_jobs, _stream(seed, "004-cpus"))
    runs = bounded_lognormal(runtime_fit, *runtime_bounds, n_jobs, _stream(seed, "004-runtime"))
    user_rng = _stream(seed, "004-users")
    group_rng = _stream(seed, "004-groups")
    group_of: dict[int, int] = {}
    jobs = []
    for k in range(n_jobs):
        u = user_rng.randrange(n_users)
        if u not in group_of:
            group_of[u] = group_rng.randrange(n_groups)
        run = float(int(runs[k]))
        if requested_time_factor is None:
            limit = None
        else:
            limit = max(60.0, math.ceil(run * requested_time_factor / 60.0) * 60.0)
        jobs.append(TraceJob(first_job_id + k, submit, run, max(1, int(cpus[k])), limit, None, None,
                             f"u{u}", f"g{group_of[u]}"))
    return jobs
