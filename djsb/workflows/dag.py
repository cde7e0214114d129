"""A workflow: a DAG of jobs (CPUs, run time, time limit, parents), from YAML or built in the thesis' shapes.

Paper 004 sec. 3.3.2 (figs. 3.7, 3.8, 3.10) uses two shapes: a *vertical* chain of k jobs, each
depending on the previous one (7 x 96 CPUs x 30 min), and k *horizontal* independent jobs (12 x 96
CPUs x 30 min); fig. 2.8 mixes them as a *grid* of m independent chains of n jobs. A YAML
``workflow`` section gives one of these shapes or a list of jobs::

    shape: vertical            # vertical | horizontal (count jobs) | grid (chains x length)
    count: 7
    cpus: 96
    run_time: 1800             # seconds; requested_time (the time limit) defaults to it
    # ... or
    jobs:
      - {name: ini, cpus: 1, run_time: 60}
      - {name: sim, cpus: 96, run_time: 1800, requested_time: 2400, after: [ini]}

The structure the wrapper strategies need is computed here: each job's *level* (0 without parents,
else one more than its deepest parent) and the workflow's *chains*, maximal runs of jobs where each
is the only child of the previous and the previous its only parent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from djsb.errors import ConfigError
from djsb.machine import JOB_BYTES
from djsb.yamlnodes import Located, as_duration, as_int, as_str, check_count, one_of, read_fields

SHAPES = ("vertical", "horizontal", "grid")


@dataclass(frozen=True, slots=True)
class WorkflowJob:
    """One task of a workflow: ``requested_time`` is its time limit, ``after`` its parents' names."""

    name: str
    cpus: int
    run_time: float
    requested_time: float
    after: tuple[str, ...] = ()


@dataclass(frozen=True)
class Workflow:
    """A DAG of uniquely named jobs; construction fails with a ConfigError on a bad graph."""

    jobs: tuple[WorkflowJob, ...]
    by_name: dict[str, WorkflowJob] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        problem = graph_problem(self.jobs)
        if problem is not None:
            index, key, message = problem
            raise ConfigError(message, key=f"workflow.jobs[{index}].{key}")
        object.__setattr__(self, "by_name", {job.name: job for job in self.jobs})

    @cached_property
    def levels(self) -> dict[str, int]:
        """Each job's level: 0 without parents, else 1 + its deepest parent's level."""
        level: dict[str, int] = {}
        for job in self.order:
            level[job.name] = 1 + max((level[p] for p in job.after), default=-1)
        return level

    @cached_property
    def order(self) -> tuple[WorkflowJob, ...]:
        """The jobs in a topological order (parents first; ties keep the given order)."""
        placed: dict[str, None] = {}
        remaining = list(self.jobs)
        while remaining:
            ready = [job for job in remaining if all(p in placed for p in job.after)]
            placed.update(dict.fromkeys(job.name for job in ready))
            remaining = [job for job in remaining if job.name not in placed]
        return tuple(self.by_name[name] for name in placed)

    @cached_property
    def children(self) -> dict[str, tuple[str, ...]]:
        """Each job's children, in the jobs' order."""
        kids: dict[str, list[str]] = {job.name: [] for job in self.jobs}
        for job in self.jobs:
            for parent in job.after:
                kids[parent].append(job.name)
        return {name: tuple(names) for name, names in kids.items()}

    @cached_property
    def chains(self) -> tuple[tuple[str, ...], ...]:
        """Maximal chains (a job joins its parent's chain when each is the other's only link),
        ordered by the level of their first job, then by the jobs' order."""
        chain_of: dict[str, list[str]] = {}
        chains: list[list[str]] = []
        for job in self.order:
            parent = job.after[0] if len(job.after) == 1 else None
            if parent is not None and len(self.children[parent]) == 1:
                chain = chain_of[parent]
                chain.append(job.name)
            else:
                chain = [job.name]
                chains.append(chain)
            chain_of[job.name] = chain
        chains.sort(key=lambda c: self.levels[c[0]])
        return tuple(tuple(c) for c in chains)


def graph_problem(jobs: Iterable[WorkflowJob]) -> tuple[int, str, str] | None:
    """The first defect of a job list as (job index, key, message), or None for a valid DAG."""
    jobs = tuple(jobs)
    if not jobs:
        return 0, "name", "a workflow needs at least one job"
    seen: dict[str, int] = {}
    for i, job in enumerate(jobs):
        if job.name in seen:
            return i, "name", f"duplicate job name {job.name!r} (also job {seen[job.name]})"
        seen[job.name] = i
    for i, job in enumerate(jobs):
        unknown = [p for p in job.after if p not in seen]
        if unknown:
            return i, "after", f"unknown parent {unknown[0]!r}"
        if job.name in job.after:
            return i, "after", f"job {job.name!r} depends on itself"
    done: set[str] = set()
    remaining = list(jobs)
    while remaining:
        ready = {job.name for job in remaining if all(p in done for p in job.after)}
        if not ready:
            job = remaining[0]
            return seen[job.name], "after", f"dependency cycle through {job.name!r}"
        done |= ready
        remaining = [job for job in remaining if job.name not in ready]
    return None


# ---------------------------------------------------------------------------------------- builders
def vertical(count: int, cpus: int, run_time: float, requested_time: float | None = None,
             prefix: str = "sim") -> Workflow:
    """A chain of ``count`` jobs, each after the previous one (004 fig. 3.7)."""
    return grid(1, count, cpus, run_time, requested_time, prefix)


def horizontal(count: int, cpus: int, run_time: float, requested_time: float | None = None,
               prefix: str = "sim") -> Workflow:
    """``count`` independent jobs (004 fig. 3.8)."""
    return grid(count, 1, cpus, run_time, requested_time, prefix)


def grid(chains: int, length: int, cpus: int, run_time: float, requested_time: float | None = None,
         prefix: str = "sim") -> Workflow:
    """``chains`` independent chains of ``length`` jobs each (004 fig. 2.8); job ``{prefix}{c}_{k}``
    is the k-th of chain c (a single chain or a single column drops the unused index)."""
    limit = run_time if requested_time is None else requested_time

    def name(c: int, k: int) -> str:
        return f"{prefix}{k}" if chains == 1 else f"{prefix}{c}" if length == 1 else f"{prefix}{c}_{k}"

    return Workflow(tuple(WorkflowJob(name(c, k), cpus, run_time, limit, (name(c, k - 1),) if k else ())
                          for c in range(chains) for k in range(length)))


# ---------------------------------------------------------------------------------------- YAML
DAG_KEYS = frozenset({"shape", "count", "chains", "length", "cpus", "run_time", "requested_time", "jobs"})
"""The keys of a ``workflow`` section that describe its DAG (the section holds more: see config)."""

_SHAPE_FIELDS: dict[str, Callable[[Located], Any]] = {
    "shape": one_of(*SHAPES), "count": lambda n: as_int(n, 1), "chains": lambda n: as_int(n, 1),
    "length": lambda n: as_int(n, 1), "cpus": lambda n: as_int(n, 1),
    "run_time": lambda n: as_duration(n, unit="s", strict=True),
    "requested_time": lambda n: as_duration(n, unit="s", strict=True),
}
_SHAPE_NEEDS = {"vertical": ("count",), "horizontal": ("count",), "grid": ("chains", "length")}


def read_workflow(node: Located) -> Workflow:
    """The DAG of a ``workflow`` section (only :data:`DAG_KEYS` are read; errors name file:line:key)."""
    fields = {name: child for name, child in node.items() if name in DAG_KEYS}
    if ("jobs" in fields) == ("shape" in fields):
        raise node.error("give exactly one of 'shape' (vertical, horizontal, grid) or 'jobs' (a list)")
    if "jobs" in fields:
        extra = sorted(set(fields) - {"jobs"})
        if extra:
            raise fields[extra[0]].error("goes with 'shape', not with a 'jobs' list")
        return _read_jobs(fields["jobs"])
    values = {name: _SHAPE_FIELDS[name](child) for name, child in fields.items()}
    shape = values["shape"]
    allowed = {"shape", "cpus", "run_time", "requested_time", *_SHAPE_NEEDS[shape]}
    for name in fields:
        if name not in allowed:
            raise fields[name].error(f"not a key of shape {shape} (it takes {', '.join(sorted(allowed))})")
    for name in ("cpus", "run_time", *_SHAPE_NEEDS[shape]):
        if name not in values:
            raise node.error(f"shape {shape} needs {name!r}")
    chains, length = (values["chains"], values["length"]) if shape == "grid" else \
        (values["count"], 1) if shape == "horizontal" else (1, values["count"])
    check_count(fields.get("count") or fields.get("length") or node, chains * length, JOB_BYTES,
                "workflow jobs")
    return grid(chains, length, values["cpus"], values["run_time"], values.get("requested_time"))


def _read_jobs(node: Located) -> Workflow:
    if not isinstance(node.value, list) or not node.value:
        raise node.error("expected a non-empty list of jobs")
    jobs = []
    for item in node.value:
        f = read_fields(item, {"name": as_str, "cpus": lambda n: as_int(n, 1),
                               "run_time": lambda n: as_duration(n, unit="s", strict=True),
                               "requested_time": lambda n: as_duration(n, unit="s", strict=True),
                               "after": _names}, ("name", "cpus", "run_time"))
        jobs.append(WorkflowJob(f["name"], f["cpus"], f["run_time"], f.get("requested_time", f["run_time"]),
                                f.get("after", ())))
    problem = graph_problem(jobs)
    if problem is not None:
        index, key, message = problem
        item = node.value[index]
        raise (item.get(key) or item).error(message)
    return Workflow(tuple(jobs))


def _names(node: Located) -> tuple[str, ...]:
    if isinstance(node.value, str):
        return (as_str(node),)
    if not isinstance(node.value, list):
        raise node.error("expected a job name or a list of job names")
    return tuple(as_str(item) for item in node.value)
