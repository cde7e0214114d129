"""Test support shared by the job-module tests: a scripted transport and a request factory; for
the config tests, the check that a bad experiment file fails with its file, line and key; and for
tests on real processes, polls with a timeout (a condition waited for, never a fixed sleep).

The scripted transport replays canned command output (for LSF, which cannot run here: output in
IBM's documented formats, tests/fixtures/lsf) and records every command and every file a module
wrote through it, so a test can check the exact command lines and batch scripts.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from djsb.calibrate.spec import load_calibration
from djsb.errors import ConfigError
from djsb.jobs import JobRequest
from djsb.model import ClusterSpec, InvariantChecker, SchedulerConfig, Simulation
from djsb.model.allocation import allocate
from djsb.model.backfill import BackfillView
from djsb.model.job import SimJob
from djsb.model.result import SimulationResult
from djsb.registry import Registry
from djsb.transport import CommandResult
from djsb.workloads.job import TraceJob

MIB = 1 << 20
GIB = 1 << 30
T = TypeVar("T")

Answer = Callable[[str], CommandResult | Exception]

FIVE_JOBS = """\
seed: 1
workload: {generator: poisson_exponential, params: {n_jobs: 5, arrival_rate: 0.1, service_rate: 0.1}}
"""
"""The first two lines of the simulate configs the per-section settings tests write: five Poisson jobs,
for a section's keys (from line 3 on) to be read and blamed at their lines."""


class ScriptedTransport:
    """Answers each command with the first rule whose text occurs in it; records every command run
    and every file written (path -> text); an unexpected command fails the test."""

    def __init__(self, rules: list[tuple[str, Answer]]) -> None:
        self.rules = rules
        self.commands: list[str] = []
        self.files: dict[str, str] = {}

    def run(self, command: str, timeout: float = 60.0) -> CommandResult:
        self.commands.append(command)
        for text, answer in self.rules:
            if text in command:
                result = answer(command)
                if isinstance(result, Exception):
                    raise result
                return result
        raise AssertionError(f"unexpected command {command}")

    def write_text(self, path: str, text: str) -> None:
        self.files[path] = text

    def read_text(self, path: str) -> str | None:
        return self.files.get(path)

    def close(self) -> None:
        return None


def ok(stdout: str = "") -> Answer:
    """A command that exits 0 printing ``stdout``."""
    return lambda command: CommandResult(command, 0, stdout, "")


def fail(stderr: str, code: int = 1) -> Answer:
    """A command that exits ``code`` printing ``stderr``."""
    return lambda command: CommandResult(command, code, "", stderr)


def sequence(*answers: Answer) -> Answer:
    """Each call takes the next answer; the last one repeats."""
    queue = list(answers)
    return lambda command: (queue.pop(0) if len(queue) > 1 else queue[0])(command)


def sim_request(**extra: object) -> JobRequest:
    """A simulation of 2 tasks x 2 CPUs, 512 MiB, 30 s, with paths and an environment value that need
    quoting (a space, a comma); ``extra`` overrides any field."""
    values: dict[str, object] = dict(
        name="exec-s0-sim0", app="simulation", total_tasks=2, cpus_per_task=2, total_memory=512 * MIB,
        exec_time=30, argv=("/apps/djsb-stream", "--control", "/runs/a b/ctl"),
        stdout_path="/runs/a b/sim.out", stderr_path="/runs/a b/sim.err", env={"DJSB_X": "1,2 3"})
    values.update(extra)
    return JobRequest(**values)  # type: ignore[arg-type]


def assert_experiment_error(path: Path, line: int, key: str, needle: str) -> None:
    """``djsb simulate``'s reading of ``path`` fails at ``line`` and ``key``, the message holding ``needle``."""
    from djsb.simulate import load_experiment

    with pytest.raises(ConfigError) as info:
        load_experiment(path)
    assert (info.value.source, info.value.line, info.value.key) == (str(path), line, key)
    assert needle in info.value.message


def assert_edited_experiment_error(tmp_path: Path, text: str, old: str, new: str, line: int, key: str,
                                   needle: str) -> None:
    """``text`` with ``old`` replaced by ``new`` fails ``djsb simulate``'s reading at ``line`` and
    ``key`` (see :func:`assert_experiment_error`)."""
    assert old in text
    path = tmp_path / "sim.yaml"
    path.write_text(text.replace(old, new))
    assert_experiment_error(path, line, key, needle)


def exact_job(job_id: int, submit: float, cpus: int, run: float) -> TraceJob:
    """A trace job that runs exactly its time limit (the planner's view is the truth)."""
    return TraceJob(job_id, submit, run, cpus, requested_time=run)


def user_job(job_id: int, submit: float, cpus: int, run: float, user: str) -> TraceJob:
    """A job of ``user`` asking ``cpus`` CPUs for exactly the ``run`` seconds it runs."""
    return TraceJob(job_id, submit, run, cpus, requested_time=run, user=user)


def model_starts(jobs: list[TraceJob], cluster: ClusterSpec, config: SchedulerConfig,
                 checker: InvariantChecker | None = None) -> dict[int, float]:
    """Each job's start on the model, by job id."""
    result = Simulation(jobs, cluster, config, checker=checker).run()
    return dict(zip(result.jobs["job_id"], result.jobs["start"], strict=True))


TraceFile = Callable[[str], Path]
"""The ``trace`` fixture of tests/conftest.py: a real trace's file name -> its path (or the test skips)."""


def wait_until(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.05) -> T:
    """Poll ``predicate`` until it returns a true value, and return that value; fail the test naming
    ``what`` was awaited if ``timeout`` seconds pass first. A test waits for the condition it needs,
    so it is as fast as the machine allows and does not flake when the machine is loaded."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time used so far by every thread of process ``pid`` (proc(5) stat fields
    14 and 15, in clock ticks): it advances only while the process runs, whatever the machine's load."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def registered(registry: Registry[T], name: str, entry: T) -> Iterator[str]:
    """``entry`` registered in ``registry`` as ``name`` (a plugin defined in a test file) for the
    ``with`` block only, so no other test finds it; yields the name."""
    registry.register(name)(entry)
    try:
        yield name
    finally:
        del registry.entries[name]


def start_what_fits(view: BackfillView, jobs: Iterable[SimJob]) -> None:
    """Start each of ``jobs`` not started yet that fits now, whatever is reserved: the pass of the
    tests' reservation-blind backfill planners."""
    for queued in jobs:
        alloc = None if queued.start is not None else allocate(queued, view.state)
        if alloc is not None:
            view.start(queued, alloc)


def starts(result: SimulationResult) -> dict[int, float]:
    """Each started job's start (a model run's jobs table)."""
    return dict(zip(result.jobs["job_id"], result.jobs["start"], strict=True))


def reasons(result: SimulationResult) -> dict[int, str]:
    """Each started job's last pending reason."""
    return dict(zip(result.jobs["job_id"], result.jobs["reason"], strict=True))


def never(result: SimulationResult) -> dict[int, str]:
    """Each job refused at submission, with why."""
    return dict(zip(result.rejected["job_id"], result.rejected["reason"], strict=True))


def assert_calibration_error(path: Path, needle: str) -> None:
    """A bad calibration file fails its reading with one line holding ``needle``."""
    with pytest.raises(ConfigError) as raised:
        load_calibration(path)
    assert needle in str(raised.value) and "\n" not in str(raised.value)


def cluster_list_error(tmp_path: Path, key: str, items: list[str], match: str) -> ConfigError:
    """The error reading a config's ``cluster`` section whose list ``key`` holds ``items`` (flow
    mappings) raises, checked against ``match``."""
    from djsb.model.sections import read_cluster
    from djsb.yamlnodes import load_yaml

    config = tmp_path / "c.yaml"
    config.write_text(f"cluster:\n  nodes: [{{cores: 2}}]\n  {key}:\n" + "".join(f"    - {i}\n" for i in items))
    cluster = load_yaml(config).get("cluster")
    assert cluster is not None
    with pytest.raises(ConfigError, match=match) as err:
        read_cluster(cluster)
    return err.value
