"""Job arrays and dependencies in a calibration's workload, so that Slurm and the model are compared
on throttled arrays and dependency chains too. The file::

    workload:
      arrays:                 # optional: round(share x jobs) jobs, picked at random, each made a job
        share: 0.1            # array of one of tasks' counts (uniformly) of copies of itself (its
        tasks: [2, 4]         # CPUs, run time, limit), at most one of throttle's counts (uniformly)
        throttle: [1, 2]      # running at once (sbatch --array=0-N%K; without throttle: no limit)
      dependencies:           # optional: round(share x jobs) jobs but the first, picked at random,
        share: 0.2            # each waiting, one of kinds' ways (uniformly), for the job submitted
        kinds: [afterok, afterany]  # just before it (sbatch --dependency=KIND:ID; a job array: all
                              # its tasks, as Slurm takes an array's id), so neighbours picked
                              # together make chains

Both are drawn from the file's seed, each from a stream of its own, so one file always gives the
same arrays and dependencies, whatever else it draws. An array's tasks are the picked job (task 0,
its id the array's, as Slurm's array job id is one of its tasks') and copies numbered after the
window's last job id. Of Slurm's ways of waiting, those a calibration's jobs can satisfy:
``after`` (the parent started), ``afterok`` (it completed), ``afterany`` (it ended); ``afternotok``
would wait for a failure that never comes, and ``afterok`` is refused with ``at_time_limit: kill``
(a parent Slurm kills fails it).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence

from djsb.model.dependency import Dependency
from djsb.workloads.job import TraceJob
from djsb.yamlnodes import Located, as_int, as_number, one_of, read_fields

KINDS = ("after", "afterok", "afterany")
"""The ways of waiting a calibration's dependencies may use (see the module docstring)."""
MAX_TASKS = 100
"""The most tasks an array of ``workload.arrays.tasks`` may have: a bound on what a typo submits."""


def _counts(node: Located, what: str) -> tuple[int, ...]:
    if not isinstance(node.value, list) or not node.value:
        raise node.error(f"expected a non-empty list of {what}")
    counts = tuple(as_int(item, 1) for item in node.value)
    if max(counts) > MAX_TASKS:
        raise node.error(f"{what} above {MAX_TASKS}: {max(counts)}")
    return counts


def _kinds(node: Located) -> tuple[str, ...]:
    read = one_of(*KINDS)
    if not isinstance(node.value, list) or not node.value:
        raise node.error(f"expected a non-empty list of {', '.join(KINDS)}")
    return tuple(read(item) for item in node.value)


def _share(node: Located) -> float:
    share = as_number(node, 0, strict=True)
    if share > 1:
        raise node.error(f"must be at most 1 (all the jobs), got {share:g}")
    return share


def with_arrays(jobs: Sequence[TraceJob], node: Located, seed: int) -> list[TraceJob]:
    """``jobs`` with ``workload.arrays``'s picks made job arrays (see the module docstring): each
    picked job followed by its copies, every one with ``array_task`` (array id, index) and, throttled,
    ``array`` (array id, throttle)."""
    fields = read_fields(node, {"share": _share, "tasks": lambda n: _counts(n, "task counts"),
                                "throttle": lambda n: _counts(n, "throttles")}, ("share", "tasks"))
    draw = random.Random(f"{seed}:arrays")
    picked = sorted(draw.sample(range(len(jobs)), round(fields["share"] * len(jobs))))
    throttles = fields.get("throttle")
    shapes = {k: (draw.choice(fields["tasks"]), draw.choice(throttles) if throttles else None)
              for k in picked}
    next_id = max(job.job_id for job in jobs) + 1
    out: list[TraceJob] = []
    for k, job in enumerate(jobs):
        if k not in shapes:
            out.append(job)
            continue
        count, throttle = shapes[k]
        for index in range(count):
            task_id = job.job_id
            if index > 0:
                task_id, next_id = next_id, next_id + 1
            out.append(dataclasses.replace(job, job_id=task_id, array_task=(job.job_id, index),
                                           array=None if throttle is None else (job.job_id, throttle)))
    return out


def drawn_dependencies(jobs: Sequence[TraceJob], node: Located, seed: int,
                       kill: bool = False) -> dict[int, Dependency]:
    """``workload.dependencies``'s picks (see the module docstring), by job id: each picked job (every
    task of a picked array) waits for the job (or array) submitted just before it; ``kill``: the
    workload's jobs past their limits are killed, which an ``afterok`` cannot take."""
    fields = read_fields(node, {"share": _share, "kinds": _kinds}, ("share",))
    kinds = fields.get("kinds", ("afterok",))
    if kill and "afterok" in kinds:
        raise node.mapping()["kinds" if "kinds" in fields else "share"].error(
            "afterok with at_time_limit: kill: a parent Slurm kills at its limit never lets its child run")
    units = submission_units(jobs)
    draw = random.Random(f"{seed}:dependencies")
    count = min(len(units) - 1, round(fields["share"] * len(units)))
    picked = sorted(draw.sample(range(1, len(units)), count))
    dependencies = {}
    for k in picked:
        kind = draw.choice(kinds)
        parent = units[k - 1][0]
        for job in units[k]:
            dependencies[job.job_id] = Dependency((unit_id(parent),), kinds=(kind,))
    return dependencies


def unit_id(job: TraceJob) -> int:
    """The id a dependency names ``job`` by: its array's (the whole array) or its own."""
    return job.array_task[0] if job.array_task is not None else job.job_id


def submission_units(jobs: Sequence[TraceJob]) -> list[list[TraceJob]]:
    """The jobs as sbatch submits them, in submission order (submit time, then id): one job, or every
    task of one array, its first task first."""
    units: dict[int, list[TraceJob]] = {}
    for job in sorted(jobs, key=lambda j: (j.submit, unit_id(j), j.array_task[1] if j.array_task else 0)):
        units.setdefault(unit_id(job), []).append(job)
    return list(units.values())


def array_indices(tasks: Sequence[TraceJob]) -> str | None:
    """sbatch --array's value for a unit of :func:`submission_units` (None: a plain job)."""
    first = tasks[0]
    if first.array_task is None:
        return None
    indices = f"0-{len(tasks) - 1}"  # with_arrays numbers an array's tasks from 0
    return indices if first.array is None else f"{indices}%{first.array[1]}"


def sbatch_dependency(dependency: Dependency | None, slurm_ids: Mapping[int, str]) -> str | None:
    """sbatch --dependency's value for ``dependency``, its parents named by their Slurm ids (an
    array's: its array job id); None without one."""
    if dependency is None:
        return None
    return ",".join(f"{kind}:{slurm_ids[parent]}" for parent, kind in dependency.edges())
