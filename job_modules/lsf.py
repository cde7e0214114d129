"""The IBM Spectrum LSF job module: bsub/bjobs/bstop/bresume/bkill through a transport (paper 001
sec. 2.2; the paper names LSF as one of the schedulers a job module serves).

Table-driven like the Slurm module: the request maps to bsub options (:meth:`bsub_arguments`),
LSF's states map to the harness's through djsb.lsf_parsers.STATE_TABLE, and bjobs' output is read
by pure parsers. Written from IBM's LSF 10.1 documentation; no LSF runs on the project's machines,
so it is tested on canned output in the documented formats (tests/test_lsf.py).

- Submit: ``bsub -J -o -e -n TASKS -R "affinity[core(CPUS_PER_TASK)]"`` (each task gets its own
  cores; ``affinity: false`` leaves binding to the site), ``-R "span[ptile=N]"`` with
  ``tasks_per_node``, ``-M`` one task's memory in MB (LSF's -M is a per-process limit by default,
  and each task is one process), ``-W`` minutes, ``-m "hosts"`` (node_host_names, or the
  simulation's hosts for a colocated analytics), ``-q``/``-P`` and extra options. The job runs
  its tasks with ``blaunch`` (one per slot) when there are several, each with OMP_NUM_THREADS.
- Poll: one ``bjobs -a -noheader -o "jobid stat submit_time ... delimiter='|'"`` for all jobs,
  under TZ=UTC. bjobs prints times to the minute only, so by default the module leaves them out
  and the harness stamps the times with its own clock; ``minute_times: true`` keeps LSF's.
- Suspend/resume/cancel: ``bstop`` (SIGSTOP to the job's processes; the job keeps its slots),
  ``bresume``, ``bkill``. Commands retry while mbatchd is down, as the Slurm module's.
"""

from __future__ import annotations

import math
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from djsb.lsf_parsers import (
    BJOBS_FORMAT,
    JOB_NOT_FOUND,
    STATE_TABLE,
    is_transient,
    parse_bjobs,
    parse_bsub,
)
from djsb.scheduler_common import SchedulerModule, job_shell_words, option_error, tasks_per_node_for
from djsb.transport import CommandResult, Transport
from job_modules.slurm import task_memory_mib, time_limit_minutes
from job_modules.template import JobRequest, JobStatus

FINISHED_STATES = tuple(name for name, state in STATE_TABLE.items() if state.finished)

OPTIONS: dict[str, str] = {
    **SchedulerModule.COMMON_OPTIONS,
    "tasks_per_node": "span[ptile=N]: a number, or a mapping app -> number",
    "affinity": "bind each task to cpus_per_task cores with affinity[core(N)] (default true)",
    "minute_times": "use bjobs' times (minutes only) instead of the harness's clock (default false)",
}


class LsfJobModule(SchedulerModule):
    """Runs the harness's jobs on an LSF cluster (options: see ``OPTIONS``)."""

    name = "lsf"
    OPTIONS = OPTIONS

    def __init__(self, options: Mapping[str, Any], transport: Transport, *,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__(options, transport, sleep=sleep)
        for key in ("affinity", "minute_times"):
            if not isinstance(self.options.get(key, False), bool):
                raise option_error(key, f"expected true or false, got {self.options[key]!r}")
        self.affinity = self.options.get("affinity", True)
        self.minute_times = self.options.get("minute_times", False)
        self.tasks_per_node = self.options.get("tasks_per_node", {})

    def bsub_arguments(self, request: JobRequest, hosts: Sequence[str]) -> list[str]:
        """The bsub options for ``request`` placed on ``hosts`` (empty: anywhere)."""
        args = ["-J", request.name, "-o", request.stdout_path, "-e", request.stderr_path,
                "-n", str(request.total_tasks)]
        if self.affinity:
            args += ["-R", f"affinity[core({request.cpus_per_task})]"]
        per_node = tasks_per_node_for(self.tasks_per_node, request.app)
        if per_node:
            args += ["-R", f"span[ptile={per_node}]"]
        args += ["-M", f"{math.ceil(task_memory_mib(request, self.memory_margin))}MB",
                 "-W", str(time_limit_minutes(request.exec_time, self.time_factor, self.time_margin))]
        if hosts:
            args += ["-m", " ".join(hosts)]
        queue = self.queue_for(request)
        if queue:
            args += ["-q", queue]
        if self.project:
            args += ["-P", self.project]
        return args + list(self.submit_options)

    def job_command(self, request: JobRequest) -> list[str]:
        """The job's command: its tasks (with blaunch, one per slot, when several), each with
        OMP_NUM_THREADS and the request's environment."""
        env = {"OMP_NUM_THREADS": str(request.cpus_per_task), **request.env}
        launcher = ["blaunch"] if request.total_tasks > 1 else []
        return ["env", *(f"{k}={v}" for k, v in env.items()), *launcher, *request.argv]

    # -- the paper's command-returning methods -----------------------------------------------

    def get_submit_command(self, request: JobRequest) -> str:
        return shlex.join(["bsub", *self.bsub_arguments(request, self.placement(request)),
                           *job_shell_words(self.job_command(request))])

    def parse_job_id(self, submit_stdout: str, submit_stderr: str) -> str:
        return parse_bsub(submit_stdout)[0]

    def get_poll_completion_command(self, submit_stdout: str, submit_stderr: str) -> str:
        job_id = parse_bsub(submit_stdout)[0]
        return (shlex.join(["bjobs", "-a", "-noheader", "-o", "stat", job_id])
                + " | " + shlex.join(["grep", "-qxE", "|".join(FINISHED_STATES)]))

    def get_suspend_command(self, job_id: str) -> str:
        return shlex.join(["bstop", job_id])

    def get_resume_command(self, job_id: str) -> str:
        return shlex.join(["bresume", job_id])

    def get_cancel_command(self, job_id: str) -> str:
        return shlex.join(["bkill", job_id])

    def get_status_command(self, job_ids: Sequence[str]) -> str:
        return shlex.join(["env", "TZ=UTC", "bjobs", "-a", "-noheader", "-o", BJOBS_FORMAT, *job_ids])

    def parse_status(self, stdout: str) -> dict[str, JobStatus]:
        return {job_id: record.status(minute_times=self.minute_times)
                for job_id, record in parse_bjobs(stdout, time.time()).items()}

    # -- scheduler specifics -------------------------------------------------------------------

    def is_transient(self, stderr: str) -> bool:
        return is_transient(stderr)

    def status_failed(self, result: CommandResult) -> bool:
        """bjobs exits non-zero when some job is not found; that is an answer, not a failure."""
        return result.returncode != 0 and not JOB_NOT_FOUND.search(result.stderr)


MODULE = LsfJobModule
