"""Autosubmit's wrapper strategies: how a workflow's jobs are packed into submissions (paper 004 sec. 2.8).

A :class:`Wrapper` runs sequential *stages*, each a set of parallel *chains*, each chain a sequence of
inner jobs run one after the other. Its size and time limit follow from that geometry: the CPUs of
its widest stage (a stage holds the sum over its chains of each chain's largest job) and the sum over
stages of the longest chain (a chain takes the sum of its jobs' time limits). Hence (figs. 2.6-2.8):

* ``none``: one submission per job;
* ``vertical``: a chain of jobs run in sequence: CPUs = max of the inner jobs, time = sum;
* ``horizontal``: independent jobs run in parallel: CPUs = sum, time = max;
* ``vertical-horizontal``: one stage of m parallel chains of n jobs (vertical wrappers side by side);
* ``horizontal-vertical``: n sequential stages of m parallel jobs (each stage one level of the DAG).

The mixed names follow the thesis, sec. 2.8: "vertical-horizontal and horizontal-vertical. The first
one is made up of multiple vertical wrappers joined in a single horizontal. Analogously, the latter is
build from various horizontal jobs that run sequentially in lock-step."

Packing follows the DAG: vertical wrappers take the workflow's chains (:attr:`Workflow.chains`),
horizontal ones its levels (jobs at the same depth are independent), vertical-horizontal the chains
starting at the same level, horizontal-vertical runs of consecutive levels. Autosubmit's limits
(:class:`WrapperLimits`: jobs per wrapper, the partition's MaxTime and MaxCPUs) are never exceeded: a
wrapper that would exceed one is split, greedily in DAG order, into several valid wrappers; a job that
alone exceeds the partition's limits cannot be submitted at all and is an input error. A wrapper
waits (afterok) for the wrappers holding its inner jobs' outside parents (:func:`wrapper_parents`);
the wrappers come out in an order where those parents come first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from djsb.errors import ConfigError
from djsb.workflows.dag import Workflow, WorkflowJob

STRATEGIES = ("none", "vertical", "horizontal", "vertical-horizontal", "horizontal-vertical")

Chain = tuple[str, ...]
Stage = tuple[Chain, ...]


@dataclass(frozen=True, slots=True)
class Wrapper:
    """One packed submission: what the model schedules and the batch script runs."""

    strategy: str  # none | vertical | horizontal | vertical-horizontal | horizontal-vertical
    stages: tuple[Stage, ...]  # sequential stages of parallel chains of inner-job names
    cpus: int
    time_limit: float  # seconds

    @property
    def jobs(self) -> tuple[str, ...]:
        """The inner jobs' names, stage by stage, chain by chain."""
        return tuple(name for stage in self.stages for chain in stage for name in chain)


@dataclass(frozen=True, slots=True)
class WrapperLimits:
    """Autosubmit's wrapper limits: ``max_jobs`` inner jobs (MAX_WRAPPED), the partition's
    ``max_wallclock`` (MaxTime, seconds) and ``max_cpus`` (MaxCPUs); None is unlimited."""

    max_jobs: int | None = None
    max_wallclock: float | None = None
    max_cpus: int | None = None

    def allows(self, jobs: int, cpus: int, time_limit: float) -> bool:
        """Whether a wrapper of that many inner jobs, CPUs and time limit is valid."""
        return (self.max_jobs is None or jobs <= self.max_jobs) and \
            (self.max_cpus is None or cpus <= self.max_cpus) and \
            (self.max_wallclock is None or time_limit <= self.max_wallclock)


UNLIMITED = WrapperLimits()
"""No limit at all."""


def span(stages: Sequence[Stage], value: Callable[[str], float]) -> float:
    """Duration of a stage structure: sum over stages of the longest chain, a chain being the sum of
    ``value`` of its jobs (the time limit, or the run time, of each)."""
    return sum(max(sum(value(name) for name in chain) for chain in stage) for stage in stages)


def width(stages: Sequence[Stage], cpus: Callable[[str], int]) -> int:
    """CPUs of a stage structure: its widest stage, a stage holding the sum of its chains' largest job."""
    return max(sum(max(cpus(name) for name in chain) for chain in stage) for stage in stages)


def make_wrapper(strategy: str, stages: Sequence[Stage], workflow: Workflow) -> Wrapper:
    """A wrapper of ``stages`` with the CPUs and time limit its geometry gives."""
    jobs = workflow.by_name
    return Wrapper(strategy, tuple(stages), width(stages, lambda n: jobs[n].cpus),
                   span(stages, lambda n: jobs[n].requested_time))


def run_time(wrapper: Wrapper, workflow: Workflow) -> float:
    """How long the wrapper runs when every inner job takes its run time."""
    return span(wrapper.stages, lambda n: workflow.by_name[n].run_time)


def pack(workflow: Workflow, strategy: str, limits: WrapperLimits = UNLIMITED) -> list[Wrapper]:
    """The workflow's submissions under ``strategy``, each within ``limits``, parents first."""
    if strategy not in STRATEGIES:
        raise ConfigError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}",
                          key="workflow.strategy")
    for job in workflow.jobs:
        _check_alone(job, limits)
    groups = _PACKERS[strategy](workflow, limits)
    return [make_wrapper(strategy, stages, workflow) for stages in groups]


def wrapper_parents(wrappers: Sequence[Wrapper], workflow: Workflow) -> list[tuple[int, ...]]:
    """For each wrapper, the indices of the wrappers it must wait for (they hold a parent of one of
    its inner jobs)."""
    owner = {name: i for i, wrapper in enumerate(wrappers) for name in wrapper.jobs}
    return [tuple(sorted({owner[p] for name in wrapper.jobs for p in workflow.by_name[name].after} - {i}))
            for i, wrapper in enumerate(wrappers)]


def _check_alone(job: WorkflowJob, limits: WrapperLimits) -> None:
    if limits.max_cpus is not None and job.cpus > limits.max_cpus:
        raise ConfigError(f"job {job.name!r} alone asks {job.cpus} CPUs, above the partition's "
                          f"MaxCPUs {limits.max_cpus}", key="workflow")
    if limits.max_wallclock is not None and job.requested_time > limits.max_wallclock:
        raise ConfigError(f"job {job.name!r} alone asks {job.requested_time:g} s, above the "
                          f"partition's MaxTime {limits.max_wallclock:g} s", key="workflow")


def _greedy(items: Sequence[Stage], fits: Callable[[list[Stage]], bool],
            join: Callable[[list[Stage]], list[Stage]]) -> list[list[Stage]]:
    """Cut ``items`` in order into maximal runs whose join ``fits`` (a lone item always fits: the
    caller checked each job alone)."""
    runs: list[list[Stage]] = []
    current: list[Stage] = []
    for item in items:
        if current and not fits(join([*current, item])):
            runs.append(current)
            current = []
        current.append(item)
    if current:
        runs.append(current)
    return runs


def _fits(workflow: Workflow, limits: WrapperLimits) -> Callable[[list[Stage]], bool]:
    jobs = workflow.by_name
    return lambda stages: limits.allows(sum(len(c) for s in stages for c in s),
                                        width(stages, lambda n: jobs[n].cpus),
                                        span(stages, lambda n: jobs[n].requested_time))


def _as_stages(stages: list[Stage]) -> list[Stage]:
    return stages


def _as_one_chain(stages: list[Stage]) -> list[Stage]:
    """Single-job stages read as one chain (a vertical wrapper's structure)."""
    return [(tuple(name for stage in stages for name in stage[0]),)]


def _as_one_stage(stages: list[Stage]) -> list[Stage]:
    """Stages read as parallel chains of one stage (a horizontal wrapper's structure)."""
    return [tuple(chain for stage in stages for chain in stage)]


def _levels(workflow: Workflow) -> list[list[str]]:
    by_level: dict[int, list[str]] = {}
    for job in workflow.order:
        by_level.setdefault(workflow.levels[job.name], []).append(job.name)
    return [by_level[level] for level in sorted(by_level)]


def _none(workflow: Workflow, limits: WrapperLimits) -> list[list[Stage]]:
    return [[((job.name,),)] for job in workflow.order]


def _segments(chain: Chain, fits: Callable[[list[Stage]], bool]) -> list[Chain]:
    """A chain cut, in order, into the longest pieces a vertical wrapper may hold."""
    return [_as_one_chain(run)[0][0] for run in _greedy([((name,),) for name in chain], fits, _as_one_chain)]


def _vertical(workflow: Workflow, limits: WrapperLimits) -> list[list[Stage]]:
    fits = _fits(workflow, limits)
    return [[(segment,)] for chain in workflow.chains for segment in _segments(chain, fits)]


def _horizontal_pieces(workflow: Workflow, limits: WrapperLimits) -> list[list[Stage]]:
    """Each level cut into horizontal wrappers' stages (parallel one-job chains) within the limits."""
    fits = _fits(workflow, limits)
    return [_as_one_stage(run) for level in _levels(workflow)
            for run in _greedy([((name,),) for name in level], fits, _as_one_stage)]


def _horizontal_vertical(workflow: Workflow, limits: WrapperLimits) -> list[list[Stage]]:
    """Consecutive level pieces as sequential stages, as many as the limits allow."""
    pieces = [piece[0] for piece in _horizontal_pieces(workflow, limits)]
    return _greedy(pieces, _fits(workflow, limits), _as_stages)


def _vertical_horizontal(workflow: Workflow, limits: WrapperLimits) -> list[list[Stage]]:
    """Chains starting at the same level run in parallel; a chain too long for the limits is cut into
    segments, and the k-th segments of those chains are packed together (they follow the (k-1)-th)."""
    fits = _fits(workflow, limits)
    by_head: dict[int, list[tuple[str, ...]]] = {}
    for chain in workflow.chains:
        by_head.setdefault(workflow.levels[chain[0]], []).append(chain)
    groups: list[list[Stage]] = []
    for level in sorted(by_head):
        segments = [_segments(chain, fits) for chain in by_head[level]]
        for k in range(max(len(s) for s in segments)):
            round_k: list[Stage] = [(s[k],) for s in segments if k < len(s)]
            groups += [_as_one_stage(run) for run in _greedy(round_k, fits, _as_one_stage)]
    return groups


_PACKERS: dict[str, Callable[[Workflow, WrapperLimits], list[list[Stage]]]] = {
    "none": _none, "vertical": _vertical, "horizontal": _horizontal_pieces,
    "vertical-horizontal": _vertical_horizontal, "horizontal-vertical": _horizontal_vertical,
}
