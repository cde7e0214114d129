"""The Grid Engine job module: qsub/qstat/qacct/qmod/qdel through a transport (paper 001 sec. 2.2).

Table-driven like the Slurm module: the request maps to qsub options (:meth:`qsub_arguments`),
qstat's state letters map to the harness's states through parsers.STATE_RULES, and every
command's output is read by a pure parser tested on a real Grid Engine 8.1.9 (Debian's packages,
set up by .ci/sge.sh).

- Submit: ``qsub -terse`` with -N (the job's name tagged with its submission token:
  NAME.djsb-TOKEN), ``-r n``, -o/-e, ``-pe PE SLOTS`` (SLOTS = tasks x cpus_per_task:
  a Grid Engine slot is a CPU; the PE, ``smp`` by default, must keep a job's slots on one host,
  allocation_rule $pe_slots), ``-l h_rt=SECONDS`` and ``-l h_vmem=MiB per slot`` (the task's
  memory plus ``memory_margin``; h_vmem limits *virtual* memory, which an OpenMP program reserves
  generously, hence a margin of 512 MiB by default; ``memory_resource`` names another resource,
  or none), ``-q QUEUE@host,...`` for node_host_names and colocation (``-l hostname=...`` without
  a queue), -P, extra options. The job script (batch.sh.j2 beside this file, kept beside the
  job's output as NAME.sh; ``-S /bin/sh`` runs it with sh whatever the queue's shell) starts the
  tasks on one host, each with OMP_NUM_THREADS and DJSB_TASK_ID.
- Poll: one ``qstat -xml`` (the user's jobs: pending, running, suspended, in error) for all jobs;
  for jobs no longer there, ``qacct -j ID`` (one per job, all in one command line) gives the final
  state with submit/start/end times to the second and the exit status; a job deleted before it
  ran leaves no accounting record and counts as CANCELLED when this module deleted it. Both run
  under TZ=UTC: Grid Engine prints local times without a zone.
- Suspend/resume: ``qmod -sj`` / ``qmod -usj``: the execd sends SIGSTOP/SIGCONT to the job's
  processes; a suspended job keeps its slots, so the jobs that share the simulation's CPUs go to
  ``oversubscribe_queue`` (a second queue on the same hosts). Cancel: ``qdel``.
- Not rerunnable: ``-r n`` (qsub(1)) overrides a queue's ``rerun: TRUE`` (queue_conf(5)), so a job
  whose host crashed ends instead of running again from the start: a benchmark job that runs twice
  is a different measurement. (qsub(1): a job that exits 99 is still rescheduled unless the
  qmaster has FORBID_RESCHEDULE; DJSB's applications never exit 99.)
- Lost submissions: the token is in the job's name because the name is what both qstat -xml
  (JB_name) and the accounting keep (qacct records no job context). A qsub retried after its reply
  was lost first looks for its token in ``qstat -xml``, then, for a job that already ended, with
  ``qacct -j '*.djsb-TOKEN'`` (the base's ``find_submitted``), so a job is never submitted twice;
  ``--resume`` finds the jobs of a killed harness in one ``qstat -xml`` (``find_by_token``). A job
  that ends between the two lookups is found once the qmaster flushed its accounting record
  (accounting_flush_time, one second on .ci/sge.sh's cell).
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from djsb.jobs.api import CpuCapacity, JobRequest, JobStatus
from djsb.jobs.batch import script_path
from djsb.jobs.loader import register
from djsb.jobs.names import sge_object_name
from djsb.jobs.options import Option, checked_name
from djsb.jobs.scheduler_base import (
    COMMON_OPTIONS,
    MIB,
    SchedulerModule,
    job_with_token,
    live_jobs_by_token,
    queue_options,
    tagged_name,
    time_limit_seconds,
)
from job_modules.sge.parsers import (
    is_transient,
    parse_qacct,
    parse_qacct_tokens,
    parse_qhost,
    parse_qstat_tokens,
    parse_qstat_xml,
    parse_qsub,
)

ENV_PREFIX = ["env", "TZ=UTC"]

SGE_NAME = checked_name(sge_object_name)

OPTIONS: dict[str, Option] = {
    **COMMON_OPTIONS,
    **queue_options(SGE_NAME, SGE_NAME),
    "pe": Option(SGE_NAME, "smp", "the parallel environment of multi-slot jobs (allocation_rule $pe_slots)"),
    "memory_resource": Option(SGE_NAME, "h_vmem",
                              "the per-slot memory limit resource (none: no memory limit)"),
}


@register("sge")
class SgeJobModule(SchedulerModule):
    """Runs the harness's jobs on a Grid Engine cell (options: see ``OPTIONS``)."""

    name = "sge"
    OPTIONS = OPTIONS
    MEMORY_MARGIN_MIB = 512.0
    BATCH_TEMPLATE = Path(__file__).with_name("batch.sh.j2")

    @property
    def memory_resource(self) -> str | None:
        resource: str = self.options["memory_resource"]
        return None if resource.lower() == "none" else resource

    def node_capacity(self) -> CpuCapacity | None:
        """The CPUs of the cell's execution hosts, from ``qhost``: a job's slots stay on one host
        (the PE's allocation_rule $pe_slots), so its tasks and the whole job fit in the largest
        NCPU. None when qhost does not say."""
        shown = self.run("qhost", check=False)
        cpus = parse_qhost(shown.stdout) if shown.returncode == 0 else {}
        if not cpus:
            return None
        largest = max(cpus.values())
        return CpuCapacity(largest, largest, f"the largest of the {len(cpus)} execution hosts has {largest} "
                                             "CPUs and a job's slots stay on one host (qhost)")

    def qsub_arguments(self, request: JobRequest, hosts: Sequence[str]) -> list[str]:
        """The qsub options for ``request`` placed on ``hosts`` (empty: anywhere)."""
        args = ["-terse", "-N", tagged_name(request.name, request.token), "-r", "n",
                "-o", request.stdout_path, "-e", request.stderr_path, "-S", "/bin/sh"]
        if request.total_cpus > 1:
            args += ["-pe", self.options["pe"], str(request.total_cpus)]
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
        if self.options["project"]:
            args += ["-P", self.options["project"]]
        return args + list(self.options["submit_options"])

    def batch_values(self, request: JobRequest) -> dict[str, Any]:
        env = {"OMP_NUM_THREADS": str(request.cpus_per_task), **request.env}
        return {"env": [f"{k}={v}" for k, v in env.items()],
                "tasks": request.total_tasks, "argv": request.argv}

    # -- the paper's command-returning methods -----------------------------------------------

    def get_submit_command(self, request: JobRequest) -> str:
        """qsub of the job's script (written by ``submit`` as NAME.sh beside its output)."""
        return shlex.join(["qsub", *self.qsub_arguments(request, self.placement(request)),
                           script_path(request.stdout_path)])

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

    def get_tagged_accounting_command(self, token: str) -> str:
        """qacct of the ended jobs whose name ends with ``token``'s tag (qacct -j takes a pattern)."""
        return shlex.join([*ENV_PREFIX, "qacct", "-j", tagged_name("*", token)])

    def find_submitted(self, token: str) -> str | None:
        """The job named with ``token`` (its qsub's reply was lost): in qstat while it is in the
        cell, else in the accounting once it ended (qacct exits 1 when no job has the name)."""
        listed = self.run_once(self.get_status_command([])).stdout
        found = job_with_token(parse_qstat_tokens(listed), token)
        if found is not None:
            return found
        ended = self.run_once(self.get_tagged_accounting_command(token)).stdout
        return job_with_token(parse_qacct_tokens(ended), token)

    def find_by_token(self, tokens: Collection[str]) -> dict[str, str]:
        """The jobs not yet ended whose name carries one of ``tokens``, in one qstat -xml (the
        user's jobs in the cell)."""
        return live_jobs_by_token(parse_qstat_tokens(self.run(self.get_status_command([])).stdout), tokens)


MODULE = SgeJobModule
