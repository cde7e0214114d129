"""A wrapper's batch script for a real Slurm: its inner jobs as srun steps.

A wrapper (djsb/workflows/wrappers.py, paper 004 sec. 2.8) is sequential *stages*, each a set of
*chains* run in parallel, each chain inner jobs run one after the other: vertical is one chain,
horizontal one job per chain, the mixed strategies both. :func:`render_wrapper_script` writes the
script from templates/wrapper.sh.j2: each inner job is ``srun --exact --ntasks=1 --cpus-per-task=C``
(``--exact``: the step gets only its CPUs, so the parallel chains share the allocation side by
side), each chain a ``( a && b ) &`` subshell and each stage ends at ``wait``. Every inner job's exit
status is appended to a record file (``NAME STATUS`` lines); a failed job ends its chain, and the
wrapper exits 1 after the stage, naming the failed jobs on stderr. Every value is shell-quoted
(djsb.jobs.batch).

:func:`wrapper_request` is the Slurm job module's request for the wrapper's allocation, and
:func:`workflow_times` measures a submitted workflow's queue time and makespan from the scheduler's
records, wrapped or not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from djsb.jobs.api import JobRequest, JobStatus
from djsb.jobs.batch import render_batch_script

TEMPLATE = Path(__file__).with_name("templates") / "wrapper.sh.j2"
Stages = Sequence[Sequence[Sequence[str]]]
"""A wrapper's geometry as in ``Wrapper.stages``: stages of parallel chains of inner-job names."""


@dataclass(frozen=True)
class InnerJob:
    """One inner job of a wrapper: its command (one task) and the CPUs it runs on."""

    argv: tuple[str, ...]
    cpus: int


def output_path(outputs_dir: str, name: str) -> str:
    """Where inner job ``name``'s stdout goes."""
    return str(PurePosixPath(outputs_dir) / f"{name}.out")


def render_wrapper_script(strategy: str, stages: Stages, inner: Mapping[str, InnerJob],
                          outputs_dir: str) -> str:
    """The wrapper's batch script; inner jobs' outputs are ``outputs_dir/NAME.out``, the record of
    their exit statuses ``outputs_dir/record.txt`` (:func:`record_path`)."""
    missing = sorted({name for stage in stages for chain in stage for name in chain} - set(inner))
    if missing:
        raise ValueError(f"inner job(s) without a command: {', '.join(missing)}")
    words = [[[{"words": ["run_inner", name, inner[name].cpus, output_path(outputs_dir, name),
                          *inner[name].argv]}
               for name in chain] for chain in stage] for stage in stages]
    return render_batch_script(TEMPLATE, strategy=strategy, stages=words, record=record_path(outputs_dir))


def record_path(outputs_dir: str) -> str:
    """The file of ``NAME STATUS`` lines the wrapper script appends each inner job's exit status to."""
    return str(PurePosixPath(outputs_dir) / "record.txt")


def parse_record(text: str) -> dict[str, int]:
    """Inner job name -> exit status, from the record file (an inner job not run is absent)."""
    statuses = {}
    for line in text.splitlines():
        name, _, status = line.rpartition(" ")
        if name and status.lstrip("-").isdigit():
            statuses[name] = int(status)
    return statuses


def wrapper_request(name: str, stages: Stages, cpus: int, time_limit: float, memory_per_cpu: int,
                    outputs_dir: str) -> JobRequest:
    """The allocation a wrapper of ``cpus`` CPUs asks for: one task per chain of its widest stage
    (the steps it runs side by side), the CPUs shared evenly among them (``Wrapper.cpus`` is the sum
    of a stage's chains' CPUs for horizontal strategies, the largest job's for vertical ones), and
    ``time_limit`` seconds. ``memory_per_cpu`` is in bytes."""
    tasks = max(len(stage) for stage in stages)
    per_task = math.ceil(cpus / tasks)
    return JobRequest(name=name, app="wrapper", total_tasks=tasks, cpus_per_task=per_task,
                      total_memory=memory_per_cpu * per_task * tasks, exec_time=time_limit, argv=(),
                      stdout_path=str(PurePosixPath(outputs_dir) / f"{name}.wrapper.out"),
                      stderr_path=str(PurePosixPath(outputs_dir) / f"{name}.wrapper.err"))


@dataclass(frozen=True)
class WorkflowTimes:
    """A workflow's measured times over its submissions (a wrapper each, or a job each)."""

    queue_time: float
    """Sum over the submissions of start - submit (paper 004's queue time of the workflow)."""
    makespan: float
    """Last end - first submit."""


def workflow_times(records: Iterable[JobStatus]) -> WorkflowTimes:
    """Queue time and makespan of a workflow from the scheduler's record of each of its submissions
    (every one finished, with submit, start and end times)."""
    times = [(r.submit, r.start, r.end) for r in records]
    if not times:
        raise ValueError("a workflow has at least one submission")
    checked = [(submit, start, end) for submit, start, end in times
               if submit is not None and start is not None and end is not None]
    if len(checked) != len(times):
        raise ValueError("every submission needs its submit, start and end time")
    return WorkflowTimes(sum(start - submit for submit, start, _ in checked),
                         max(end for _, _, end in checked) - min(submit for submit, _, _ in checked))
