"""The request of each job a run submits: its name, its output and control files, its command.

Job output and control files live in ``files_dir`` on the host that runs the jobs (the run directory
itself, or a directory on a remote login node), written and removed through the transport. The
control file holds the threads per task the application runs with; a dynamic scenario rewrites it.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import PurePath

from djsb.config import AppConfig, Config
from djsb.harness.commands import expand_command
from djsb.harness.rundir import CellKey
from djsb.jobs import CommandJobModule, JobModule, JobRequest
from djsb.transport import Transport


def job_name(key: CellKey, app: str, index: int) -> str:
    """The job's name in the scheduler and of its files: its stage (or scenario and n_a), sample,
    application and index, e.g. ``stopcont-na2-s0-ana1``."""
    stage, scenario, n_a, sample = key
    tag = stage[:3] if stage != "execution" else f"{scenario}-na{n_a}"
    return f"{tag}-s{sample}-{app[:3]}{index}"


class JobSetup:
    """Prepares each job's files and request in ``files_dir`` (``jobs/``, ``control/``)."""

    def __init__(self, config: Config, module: JobModule, transport: Transport, apps_dir: PurePath,
                 files_dir: PurePath, progress: Callable[[str], None]) -> None:
        self.config = config
        self.module = module
        self.transport = transport
        self.apps_dir = apps_dir
        self.jobs_dir = files_dir / "jobs"
        self.control_dir = files_dir / "control"
        self.progress = progress

    def app(self, name: str) -> AppConfig:
        return self.config.simulation if name == "simulation" else self.config.analytics

    def prepare(self, app: str, index: int, key: CellKey, work: list[str], *,
                colocate_with: str | None = None, oversubscribe: bool = False) -> JobRequest:
        """The request of one job of ``app`` doing ``work``, with an earlier attempt's output of the
        same name removed and its control file written."""
        name = job_name(key, app, index)
        app_config = self.app(app)
        stdout, stderr = self.jobs_dir / f"{name}.out", self.jobs_dir / f"{name}.err"
        if self.module.runs_commands:  # an earlier attempt's (a resumed cell's) output is not this job's
            remove = shlex.join(["rm", "-f", "--", str(stdout), str(stderr)])
            if isinstance(self.module, CommandJobModule):  # retried if a dropped connection cuts it short
                self.module.run(remove, check=False)
            else:
                self.transport.run(remove)
        control = self.control_dir / f"{name}.threads"
        self.transport.write_text(str(control), f"{app_config.cpus_per_task}\n")
        values = {"apps": str(self.apps_dir), "cpus_per_task": str(app_config.cpus_per_task),
                  "total_tasks": str(app_config.total_tasks),
                  "memory_per_task": str(app_config.total_memory // app_config.total_tasks),
                  "exec_time": f"{app_config.exec_time:g}", "control_file": str(control), "name": name}
        argv = expand_command(app_config.command, values, work)
        return JobRequest(
            name=name, app=app, total_tasks=app_config.total_tasks, cpus_per_task=app_config.cpus_per_task,
            total_memory=app_config.total_memory, exec_time=app_config.exec_time, argv=argv,
            stdout_path=str(stdout), stderr_path=str(stderr),
            node_host_names=app_config.node_host_names,
            colocate_with=colocate_with if app_config.same_nodes_as_sim else None,
            oversubscribe=oversubscribe, control_file=str(control))

    def set_threads(self, name: str, threads: int) -> None:
        """Tell the running job ``name`` to run ``threads`` threads per task (its control file)."""
        control = self.control_dir / f"{name}.threads"
        self.transport.write_text(str(control), f"{threads}\n")
        self.progress(f"{name}: {threads} thread(s) per task")
