"""The Slurm executor: a sweep's unfinished points as ONE Slurm job array.

The array is submitted through DJSB's own Slurm job module (job_modules/slurm: sbatch built with
shlex, retried, tagged with a token), on this machine or on a login node over SSH (its transport).
Array task K runs ``djsb sweep CONFIG -o OUT --array-task``, i.e. point K, into the shared sweep
directory, where it appears complete or not at all (djsb.sweep.point). The client polls the array
until no task is pending or running, gathers the points' metrics (over SSH: each point's
metrics.json copied into the local sweep directory) and writes sweep.csv. SIGINT/SIGTERM cancel the
array; finished points are kept. Every array is recorded in the sweep directory before and after
its sbatch, and a client first adopts the live tasks of earlier clients' arrays, so no point runs
twice at once (djsb.sweep.arrays). The config's ``sweep.slurm`` section::

    sweep:
      slurm:
        options: {partition: shared}   # the Slurm job module's options (job_modules/slurm OPTIONS)
        ssh: {host: login1, remote_dir: djsb-runs}   # optional: submit on a login node
        djsb: [djsb]                   # the command that runs djsb on the nodes (default: this
                                       # Python's ``-m djsb.cli`` here, ``djsb`` over SSH)
        cpus_per_task: 1
        memory: 1GiB                   # per array task
        time_per_point: 3600           # seconds; the module's time_factor and time_margin apply
        max_parallel: 4                # optional: at most this many tasks at once (--array=...%4)
        poll_interval: 2               # seconds between two squeue

Over SSH the config is copied into the remote sweep directory (``remote_dir``/OUT's name) and runs
from there: its relative paths must hold on the cluster from that directory.
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath
from typing import Any, Protocol

from djsb.config import SSHConfig, read_ssh
from djsb.errors import RunError
from djsb.jobs.api import JobRequest, JobState
from djsb.jobs.batch import render_batch_script
from djsb.jobs.loader import load_job_module, module_class
from djsb.progress import say
from djsb.remote.connect import open_remote
from djsb.sweep.arrays import ArrayLedger, plan_arrays
from djsb.sweep.local import Outcome, stop_signals
from djsb.sweep.spec import SweepSpec
from djsb.sweep.sweep_dir import METRICS, POINTS, SweepDirectory
from djsb.transport import LocalTransport, Transport
from djsb.yamlnodes import Located, as_duration, as_int, as_size, as_str, read_fields

TEMPLATE = Path(__file__).with_name("templates") / "array_task.sh.j2"
GIB = 1 << 30
MODULE = "slurm"
"""The job module that submits the array (found by name: djsb/ imports no concrete module)."""


class ArrayModule(Protocol):
    """What this executor needs of the Slurm job module (job_modules/slurm)."""

    def submit_own_script(self, request: JobRequest, script: str, *, array: str | None = None) -> str: ...

    def array_states(self, job_id: str) -> dict[int, JobState]: ...

    def live_array_tasks(self, tokens: Collection[str]) -> dict[str, dict[int, JobState]]: ...

    def cancel(self, job_id: str) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ArraySettings:
    """``sweep.slurm``, read (see the module docstring)."""

    options: Located | dict[str, Any]
    ssh: SSHConfig | None = None
    djsb: tuple[str, ...] | None = None
    cpus_per_task: int = 1
    memory: int = GIB
    time_per_point: float = 3600.0
    max_parallel: int | None = None
    poll_interval: float = 2.0

    def djsb_command(self) -> tuple[str, ...]:
        """How the array tasks start djsb: as given, else like this process here, ``djsb`` over SSH."""
        if self.djsb is not None:
            return self.djsb
        return ("djsb",) if self.ssh is not None else (sys.executable, "-m", "djsb.cli")


def read_settings(node: Located | None) -> ArraySettings:
    """The ``sweep.slurm`` section (absent: every default, the module's options empty)."""
    if node is None:
        return ArraySettings({})
    fields = read_fields(node, {
        "options": lambda n: n, "ssh": read_ssh,
        "djsb": lambda n: tuple(as_str(word) for word in (n.value if isinstance(n.value, list) else [n])),
        "cpus_per_task": lambda n: as_int(n, 1), "memory": as_size,
        "time_per_point": lambda n: as_duration(n, unit="s", strict=True),
        "max_parallel": lambda n: as_int(n, 1),
        "poll_interval": lambda n: as_duration(n, unit="s", strict=True)})
    settings = ArraySettings(**{"options": {}, **fields})
    module_class(MODULE).read_options(settings.options)  # a bad option is reported at its line now
    return settings


def array_indices(points: list[int], max_parallel: int | None = None) -> str:
    """sbatch --array's value for ``points``: runs of consecutive indices as ranges (0-3,5,7-9),
    then ``%N`` for at most N tasks at once."""
    runs: list[list[int]] = []
    for point in sorted(points):
        if runs and point == runs[-1][-1] + 1:
            runs[-1].append(point)
        else:
            runs.append([point])
    text = ",".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)
    return text + (f"%{max_parallel}" if max_parallel is not None else "")


@dataclass(frozen=True)
class Layout:
    """The sweep as the cluster sees it: the config file and the sweep directory there."""

    config: PurePath
    out: PurePath


def cluster_layout(settings: ArraySettings, directory: SweepDirectory, config: Path,
                   transport: Transport) -> Layout:
    """Here: the paths themselves, absolute. Over SSH: the sweep directory under ``remote_dir``,
    created there, with the config copied into it."""
    if settings.ssh is None:
        layout = Layout(config.resolve(), directory.path.resolve())
    else:
        out = PurePosixPath(settings.ssh.remote_dir) / directory.path.resolve().name
        layout = Layout(out / "sweep.yaml", out)
    made = transport.run(shlex.join(["mkdir", "-p", str(layout.out / POINTS), str(layout.out / "slurm")]))
    if made.returncode != 0:
        raise RunError(f"cannot create {layout.out}: {made.stderr.strip()}")
    if settings.ssh is not None:
        transport.write_text(str(layout.config), config.read_text())
    return layout


def finished_there(transport: Transport, layout: Layout) -> set[int]:
    """The finished points in the cluster's sweep directory (``points/<k>`` exists)."""
    listed = transport.run(shlex.join(["ls", "-1", "--", str(layout.out / POINTS)]))
    return {int(name) for name in listed.stdout.split() if name.isdigit()}


def gather(transport: Transport, layout: Layout, directory: SweepDirectory, points: set[int]) -> None:
    """Copy each point's metrics.json from the cluster into the local sweep directory (over SSH)."""
    for index in sorted(points - directory.finished()):
        text = transport.read_text(str(layout.out / POINTS / str(index) / METRICS))
        if text is None:
            continue
        scratch = directory.scratch(index)
        (scratch / METRICS).write_text(text)
        directory.finish(scratch, index)


def run_slurm_array(spec: SweepSpec, settings: ArraySettings, directory: SweepDirectory, todo: list[int],
                    config: Path, progress: Callable[[float], None]) -> Outcome:
    """Run the points ``todo``: wait for the live tasks of earlier arrays of this sweep, then submit
    one Slurm job array for the others and wait for it (djsb.sweep.arrays), gather; ``progress(n)``
    with the number of finished points after each poll."""
    outcome = Outcome()
    ssh = settings.ssh
    transport: Transport = LocalTransport() if ssh is None else open_remote(ssh, str(config))
    module: ArrayModule = load_job_module(MODULE, settings.options, transport)  # type: ignore[assignment]
    ledger = ArrayLedger(directory.path)
    try:
        layout = cluster_layout(settings, directory, config, transport)
        earlier = ledger.arrays()
        live = module.live_array_tasks([array.token for array in earlier]) if earlier and todo else {}
        plan = plan_arrays(todo, live)

        def polled() -> None:
            progress(len(finished_there(transport, layout)))

        if plan.wait:
            for job_id, points in plan.adopt.items():
                say(f"sweep: adopting job array {job_id} of an earlier client: waiting for its "
                    f"{len(points)} live task(s) ({array_indices(points)})")
            outcome.stopped_by = wait_for_arrays(module, plan.wait, settings.poll_interval, polled)
        if plan.submit and outcome.stopped_by is None:
            name = directory.path.resolve().name
            job_id = submit_array(module, settings, layout, plan.submit, name, ledger)
            outcome.stopped_by = wait_for_arrays(module, [job_id], settings.poll_interval, polled)
        there = finished_there(transport, layout)
        if settings.ssh is not None:
            gather(transport, layout, directory, there)
        log = layout.out / "slurm" / "points.out"
        outcome.failed = {index: f"array task {index} left no point: see {log}.{index}"
                          for index in todo if index not in there}
    finally:
        module.close()
        transport.close()
    directory.write_table(spec)
    return outcome


def submit_array(module: ArrayModule, settings: ArraySettings, layout: Layout, todo: list[int],
                 name: str, ledger: ArrayLedger) -> str:
    """sbatch the array whose task K runs point K, recorded in ``ledger`` before and after; returns
    its job id."""
    argv = [*settings.djsb_command(), "sweep", str(layout.config), "-o", str(layout.out), "--array-task"]
    request = JobRequest(name=f"djsb-sweep-{name}", app="sweep", total_tasks=1,
                         cpus_per_task=settings.cpus_per_task, total_memory=settings.memory,
                         exec_time=settings.time_per_point, argv=tuple(argv),
                         stdout_path=str(layout.out / "slurm" / "points.out"),
                         stderr_path=str(layout.out / "slurm" / "points.err"))
    script = render_batch_script(TEMPLATE, argv=argv)
    indices = array_indices(todo, settings.max_parallel)
    ledger.submitting(request.token, indices)
    job_id = module.submit_own_script(request, script, array=indices)
    ledger.submitted(request.token, job_id)
    say(f"sweep: job array {job_id} of {len(todo)} task(s) ({indices})")
    return job_id


def wait_for_arrays(module: ArrayModule, job_ids: list[str], poll_interval: float,
                    polled: Callable[[], None]) -> str | None:
    """Poll until no task of the arrays ``job_ids`` is pending or running; SIGINT/SIGTERM cancel
    them. Returns the stopping signal's name, or None."""
    with stop_signals() as received:
        while True:
            states = [state for job_id in job_ids for state in module.array_states(job_id).values()]
            polled()
            if all(state.finished for state in states):
                return None
            deadline = time.monotonic() + poll_interval
            while time.monotonic() < deadline and not received:
                time.sleep(0.1)
            if received:
                for job_id in job_ids:
                    module.cancel(job_id)
                return received[0]
