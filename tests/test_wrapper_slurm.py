"""Wrapper batch scripts on the real Slurm mini-cluster: a vertical wrapper runs its
inner jobs one after the other, a horizontal one side by side, as srun steps of one job; each inner
job's output and exit status are checked, a failed inner job fails the wrapper and is named; and the
workflow's queue time and makespan are measured wrapped vs unwrapped from Slurm's own records."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from slurm_plugin import SlurmCluster
from support import wait_until

from djsb.jobs import JobRequest, JobState, JobStatus
from djsb.transport import LocalTransport
from djsb.workflows.batch_script import (
    InnerJob,
    parse_record,
    record_path,
    render_wrapper_script,
    workflow_times,
    wrapper_request,
)
from job_modules.slurm import SlurmJobModule

pytestmark = pytest.mark.slurm
MIB = 1 << 20


def inner(name: str, seconds: float, value: int, status: int = 0) -> InnerJob:
    """An inner job printing its start time, NAME VALUE*7 after ``seconds``, its end time; exit ``status``."""
    return InnerJob(("sh", "-c", f"date +%s.%N; sleep {seconds}; echo {name} $(({value} * 7)); date +%s.%N; "
                                 f"exit {status}"), 1)


def outputs(directory: Path, names: Sequence[str]) -> dict[str, tuple[float, str, float]]:
    """Each inner job's (start, result line, end) from its output file."""
    found = {}
    for name in names:
        start, result, end = (directory / f"{name}.out").read_text().split("\n")[:3]
        found[name] = (float(start), result, float(end))
    return found


@pytest.fixture
def module(slurm_cluster: SlurmCluster) -> SlurmJobModule:
    return SlurmJobModule({"partition": "shared", "retry_for": 120, "time_factor": 1, "time_margin": 120},
                          LocalTransport())


def finished(module: SlurmJobModule, job_id: str, timeout: float = 120) -> JobStatus:
    def ended() -> JobStatus | None:
        status = module.poll([job_id])[job_id]
        return status if status.state.finished else None
    return wait_until(ended, timeout, f"job {job_id} to end", interval=0.5)


def run_wrapper(module: SlurmJobModule, directory: Path, strategy: str, stages: list[list[list[str]]],
                jobs: dict[str, InnerJob]) -> JobStatus:
    directory.mkdir()
    cpus = max(sum(max(jobs[n].cpus for n in chain) for chain in stage) for stage in stages)
    request = wrapper_request(f"wrap-{strategy}", stages, cpus, 120, 128 * MIB, str(directory))
    job_id = module.submit_own_script(request, render_wrapper_script(strategy, stages, jobs, str(directory)))
    return finished(module, job_id)


def test_a_vertical_wrapper_runs_its_inner_jobs_in_sequence(module: SlurmJobModule, tmp_path: Path) -> None:
    jobs = {"a": inner("a", 1, 1), "b": inner("b", 1, 2), "c": inner("c", 1, 3)}
    status = run_wrapper(module, tmp_path / "v", "vertical", [[["a", "b", "c"]]], jobs)
    assert status.state is JobState.COMPLETED, (tmp_path / "v" / "wrap-vertical.wrapper.err").read_text()
    found = outputs(tmp_path / "v", "abc")
    # 1*7, 2*7, 3*7 computed by each inner job's own shell
    assert [found[n][1] for n in "abc"] == ["a 7", "b 14", "c 21"]
    # in sequence: each starts after the one before ended
    assert found["a"][2] <= found["b"][0] and found["b"][2] <= found["c"][0]
    assert parse_record(Path(record_path(str(tmp_path / "v"))).read_text()) == {"a": 0, "b": 0, "c": 0}


def test_a_horizontal_wrapper_runs_its_inner_jobs_in_parallel(module: SlurmJobModule, tmp_path: Path) -> None:
    jobs = {"a": inner("a", 3, 4), "b": inner("b", 3, 5), "c": inner("c", 3, 6)}
    status = run_wrapper(module, tmp_path / "h", "horizontal", [[["a"], ["b"], ["c"]]], jobs)
    assert status.state is JobState.COMPLETED, (tmp_path / "h" / "wrap-horizontal.wrapper.err").read_text()
    found = outputs(tmp_path / "h", "abc")
    assert [found[n][1] for n in "abc"] == ["a 28", "b 35", "c 42"]
    # side by side: every one started before any ended (each sleeps 3 s)
    assert max(start for start, _, _ in found.values()) < min(end for _, _, end in found.values())
    assert parse_record(Path(record_path(str(tmp_path / "h"))).read_text()) == {"a": 0, "b": 0, "c": 0}


def test_a_failed_inner_job_fails_the_wrapper_and_is_named(module: SlurmJobModule, tmp_path: Path) -> None:
    jobs = {"a": inner("a", 0, 1), "b": inner("b", 0, 2, status=3), "c": inner("c", 0, 3)}
    horizontal = run_wrapper(module, tmp_path / "h", "horizontal", [[["a"], ["b"]]], jobs)
    assert horizontal.state is JobState.FAILED and horizontal.exit_code == 1
    assert parse_record(Path(record_path(str(tmp_path / "h"))).read_text()) == {"a": 0, "b": 3}
    assert "wrapper failed in stage 0: inner job(s) b (exit 3)" in \
        (tmp_path / "h" / "wrap-horizontal.wrapper.err").read_text()
    # in a chain, the jobs after a failed one never run
    vertical = run_wrapper(module, tmp_path / "v", "vertical", [[["b", "c"]]], jobs)
    assert vertical.state is JobState.FAILED
    assert parse_record(Path(record_path(str(tmp_path / "v"))).read_text()) == {"b": 3}
    assert not (tmp_path / "v" / "c.out").exists()


def test_queue_time_and_makespan_wrapped_vs_unwrapped(module: SlurmJobModule, tmp_path: Path) -> None:
    names = ("a", "b", "c")
    jobs = {name: inner(name, 2, 1) for name in names}
    wrapped = run_wrapper(module, tmp_path / "wrapped", "vertical", [[list(names)]], jobs)
    assert wrapped.state is JobState.COMPLETED
    # unwrapped, Autosubmit's way: each job submitted when its parent ended
    unwrapped = []
    for name in names:
        request = JobRequest(name=f"unwrapped-{name}", app="inner", total_tasks=1, cpus_per_task=1,
                             total_memory=128 * MIB, exec_time=60, argv=jobs[name].argv,
                             stdout_path=str(tmp_path / f"{name}.out"), stderr_path=str(tmp_path / f"{name}.err"))
        unwrapped.append(finished(module, module.submit(request)))
        assert unwrapped[-1].state is JobState.COMPLETED
    for records in ([wrapped], unwrapped):
        times = workflow_times(records)
        submits = [r.submit for r in records if r.submit is not None]
        starts = [r.start for r in records if r.start is not None]
        ends = [r.end for r in records if r.end is not None]
        assert len(submits) == len(starts) == len(ends) == len(records)
        # queue time = sum of (start - submit); makespan = last end - first submit
        assert times.queue_time == sum(start - submit for start, submit in zip(starts, submits, strict=True))
        assert times.makespan == max(ends) - min(submits)
        # the 3 inner jobs sleep 2 s each, one after the other: 6 s, less at most 1 s as Slurm's
        # records are whole seconds
        assert times.makespan >= 5 and times.queue_time >= 0
        print(f"{'wrapped' if len(records) == 1 else 'unwrapped'}: {len(records)} submission(s), "
              f"queue time {times.queue_time:g} s, makespan {times.makespan:g} s")
