"""The Grid Engine job module: qsub/qstat/qacct/qmod/qdel through a transport (paper 001 sec. 2.2).

Table-driven like the Slurm module: the request maps to qsub options (:meth:`qsub_arguments`),
qstat's state letters map to the harness's states through djsb.sge_parsers.STATE_RULES, and every
command's output is read by a pure parser tested on a real Grid Engine 8.1.9 (Debian's packages,
set up by .ci/sge.sh).

- Submit: ``qsub -terse -b y`` with -N, -o/-e, ``-pe PE SLOTS`` (SLOTS = tasks x cpus_per_task:
  a Grid Engine slot is a CPU; the PE, ``smp`` by default, must keep a job's slots on one host,
  allocation_rule $pe_slots), ``-l h_rt=SECONDS`` and ``-l h_vmem=MiB per slot`` (the task's
  memory plus ``memory_margin``; h_vmem limits *virtual* memory, which an OpenMP program reserves
  generously, hence a margin of 512 MiB by default; ``memory_resource`` names another resource,
  or none), ``-q QUEUE@host,...`` for node_host_names and colocation (``-l hostname=...`` without
  a queue), -P, extra options. ``-b y`` makes qsub join the command words with spaces for the
  job's shell, so each word is quoted once more. Several tasks are started by a small sh loop
  (one host), each with OMP_NUM_THREADS and DJSB_TASK_ID.
- Poll: one ``qstat -xml`` (the user's jobs: pending, running, suspended, in error) for all jobs;
  for jobs no longer there, ``qacct -j ID`` (one per job, all in one command line) gives the final
  state with submit/start/end times to the second and the exit status; a job deleted before it
  ran leaves no accounting record and counts as CANCELLED when this module deleted it. Both run
  under TZ=UTC: Grid Engine prints local times without a zone.
- Suspend/resume: ``qmod -sj`` / ``qmod -usj``: the execd sends SIGSTOP/SIGCONT to the job's
  processes; a suspended job keeps its slots, so the jobs that share the simulation's CPUs go to
  ``oversubscribe_queue`` (a second queue on the same hosts). Cancel: ``qdel``.
"""

from __future__ import annotations

import math
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from djsb.scheduler_common import (
    MIB,
    SchedulerModule,
    job_shell_words,
    name_option,
    time_limit_seconds,
)
from djsb.sge_parsers import is_transient, parse_qacct, parse_qstat_xml, parse_qsub
from djsb.transport import Transport
from job_modules.template import JobRequest, JobStatus

ENV_PREFIX = ["env", "TZ=UTC"]

# Start N copies of the command given after N, each with DJSB_TASK_ID, and exit with the last
# non-zero status of any of them (sh's bare "wait" would always exit 0).
TASK_LOOP = ('n=$1; shift; i=0; pids=; while [ "$i" -lt "$n" ]; do DJSB_TASK_ID=$i "$@" & pids="$pids $!"; '
             'i=$((i + 1)); done; rc=0; for p in $pids; do wait "$p" || rc=$?; done; exit "$rc"')

OPTIONS: dict[str, str] = {
    **SchedulerModule.COMMON_OPTIONS,
    "pe": "the parallel environment of multi-slot jobs (default smp; allocation_rule $pe_slots)",
    "memory_resource": "the per-slot memory limit resource (default h_vmem; none: no memory limit)",
}


class SgeJobModule(SchedulerModule):
    """Runs the harness's jobs on a Grid Engine cell (options: see ``OPTIONS``)."""

    name = "sge"
    OPTIONS = OPTIONS
    MEMORY_MARGIN_MIB = 512.0

    def __init__(self, options: Mapping[str, Any], transport: Transport, *,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__(options, transport, sleep=sleep)
        self.pe = name_option(self.options, "pe") or "smp"
        resource = name_option(self.options, "memory_resource") or "h_vmem"
        self.memory_resource = None if resource.lower() == "none" else resource

    def qsub_arguments(self, request: JobRequest, hosts: Sequence[str]) -> list[str]:
        """The qsub options for ``request`` placed on ``hosts`` (empty: anywhere)."""
        args = ["-terse", "-N", request.name, "-o", request.stdout_path, "-e", request.stderr_path]
        if request.total_cpus > 1:
            args += ["-pe", self.pe, str(request.total_cpus)]
        args += ["-l", f"h_rt={time_limit_seconds(request.exec_time, self.time_factor, self.time_margin)}"]
        if self.memory_resource:
            slot_mib = (request.memory_per_task / MIB + self.memory_margin) / request.cpus_per_task
            args += ["-l", f"{self.memory_resource}={math.ceil(slot_mib)}M"]
        queue = self.queue_for(request)
        if hosts and queue:
            args += ["-q", ",".join(f"{queue}@{host}" for host in hosts)]
        elif queue:
            args += ["-q", queue]
        elif hosts:
            args += ["-l", "hostname=" + "|".join(hosts)]
        if self.project:
            args += ["-P", self.project]
        return args + list(self.submit_options)

    def job_command(self, request: JobRequest) -> list[str]:
        """The job's command: its tasks, each with OMP_NUM_THREADS and the request's environment."""
        env = ["env", f"OMP_NUM_THREADS={request.cpus_per_task}",
               *(f"{k}={v}" for k, v in request.env.items())]
        if request.total_tasks == 1:
            return [*env, *request.argv]
        return [*env, "sh", "-c", TASK_LOOP, "djsb-tasks", str(request.total_tasks), *request.argv]

    # -- the paper's command-returning methods -----------------------------------------------

    def get_submit_command(self, request: JobRequest) -> str:
        return shlex.join(["qsub", *self.qsub_arguments(request, self.placement(request)), "-b", "y",
                           *job_shell_words(self.job_command(request))])

    def parse_job_id(self, submit_stdout: str, submit_stderr: str) -> str:
        return parse_qsub(submit_stdout)

    def get_poll_completion_command(self, submit_stdout: str, submit_stderr: str) -> str:
        return "! " + shlex.join(["qstat", "-j", parse_qsub(submit_stdout)]) + " >/dev/null 2>&1"

    def get_suspend_command(self, job_id: str) -> str:
        return shlex.join(["qmod", "-sj", job_id])

    def get_resume_command(self, job_id: str) -> str:
        return shlex.join(["qmod", "-usj", job_id])

    def get_cancel_command(self, job_id: str) -> str:
        return shlex.join(["qdel", job_id])

    def get_status_command(self, job_ids: Sequence[str]) -> str:
        return shlex.join([*ENV_PREFIX, "qstat", "-xml"])

    def parse_status(self, stdout: str) -> dict[str, JobStatus]:
        return parse_qstat_xml(stdout)

    def get_accounting_command(self, job_ids: Sequence[str]) -> str:
        """qacct for each job (it takes one id), in one command line; unknown ids only print to stderr."""
        return "; ".join(shlex.join([*ENV_PREFIX, "qacct", "-j", job_id]) for job_id in job_ids)

    # -- scheduler specifics -------------------------------------------------------------------

    def is_transient(self, stderr: str) -> bool:
        return is_transient(stderr)

    def accounting(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        return parse_qacct(self.run(self.get_accounting_command(job_ids), check=False).stdout)


MODULE = SgeJobModule
