"""The LSF job module: bsub/bjobs/bstop/bresume/bkill through a transport (paper 001 sec. 2.2; the
paper names LSF as one of the schedulers a job module serves).

Table-driven like the Slurm module: the request maps to bsub options (:meth:`bsub_arguments`),
LSF's states map to the harness's through parsers.STATE_TABLE, and bjobs' output is read
by pure parsers. Two LSFs: IBM Spectrum LSF 10.1 (tested on output in its documented formats) and
OpenLava 4.0, its open-source clone (tested live on the cluster of .ci/openlava.sh, and on output
captured there). ``lsid``, run once, tells which is installed (parsers.parse_lsid); OpenLava lacks
``bjobs -o``, ``bsub -rn``, affinity, blaunch and units in ``-M``, so on it:

- Submit: ``-n`` is the job's CPUs (its slots) with ``span[hosts=1]``: one task only (no blaunch);
  ``-M`` in KB as a plain number; no ``-rn`` (OpenLava reruns a job only in a RERUNNABLE queue)
  and no affinity.
- Poll: ``bjobs -a -l`` under TZ=UTC, whose events carry seconds (parsers.parse_long); its
  run-limit and bkill exits read as TIMEOUT and CANCELLED; a job bjobs forgot (CLEAN_PERIOD) is
  read from ``bhist -l`` (:meth:`LsfJobModule.accounting`); lost submissions and ``--resume`` read
  ``bjobs -a -w -noheader`` (parsers.parse_bjobs_wide).

On IBM LSF 10:

- Submit: ``bsub -J -o -e -n TASKS -R "affinity[core(CPUS_PER_TASK)]"`` (each task gets its own
  cores; ``affinity: false`` leaves binding to the site), ``-R "span[ptile=N]"`` with
  ``tasks_per_node``, ``-M`` one task's memory in MB (LSF's -M is a per-process limit by default,
  and each task is one process), ``-W`` minutes, ``-m "hosts"`` (node_host_names, or the
  simulation's hosts for a colocated analytics), ``-q``/``-P`` and extra options. The job script
  (batch.sh.j2 beside this file, kept beside the job's output as NAME.sh and spooled by bsub from
  its standard input) runs the tasks with ``blaunch`` (one per slot) when there are several, each
  with OMP_NUM_THREADS.
- Poll: one ``bjobs -a -noheader -o "jobid stat submit_time ... delimiter='|'"`` for all jobs,
  under TZ=UTC. bjobs prints times to the minute only, so by default the module leaves them out
  and the harness stamps the times with its own clock; ``minute_times: true`` keeps LSF's.
- Suspend/resume/cancel: ``bstop`` (SIGSTOP to the job's processes; the job keeps its slots),
  ``bresume``, ``bkill``. Commands retry while mbatchd is down (djsb.jobs.scheduler_base).
- Not rerunnable: ``bsub -rn`` ("bsub -rn": the job is never re-runnable; the job-level setting
  overrides a re-runnable queue or application profile, "Re-runnable jobs"), so a job whose host
  failed ends instead of running again from the start: a benchmark job that runs twice is a
  different measurement.
- Lost submissions: the job's name (-J) is tagged with its submission token (NAME.djsb-TOKEN; a
  name may be 4094 characters long, "bsub -J"). A bsub retried after its reply was lost first
  looks for the token in ``bjobs -a -noheader -o "jobid stat job_name delimiter='|'"`` (the user's
  jobs, finished ones for CLEAN_PERIOD), so a job is never submitted twice; ``--resume`` finds the
  jobs of a killed harness with the same query (``find_by_token``).
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from djsb.errors import JobModuleError, one_line
from djsb.jobs.api import CpuCapacity, JobRequest, JobStatus
from djsb.jobs.batch import script_path
from djsb.jobs.loader import register
from djsb.jobs.names import lsf_project_name, lsf_queue_name
from djsb.jobs.options import Option, as_tasks_per_node, checked_name, tasks_per_node_for
from djsb.jobs.scheduler_base import (
    COMMON_OPTIONS,
    SchedulerModule,
    TaggedJob,
    job_with_token,
    live_jobs_by_token,
    queue_options,
    tagged_name,
    task_memory_mib,
    time_limit_minutes,
)
from djsb.transport import CommandResult
from djsb.yamlnodes import as_bool
from job_modules.lsf.parsers import (
    BJOBS_FORMAT,
    JOB_NOT_FOUND,
    NO_JOB_FOUND,
    NO_MATCHING_JOB,
    OPERATION_IN_PROGRESS,
    STATE_TABLE,
    TAGGED_FORMAT,
    Lsf,
    is_transient,
    parse_bjobs,
    parse_bjobs_wide,
    parse_bsub,
    parse_long,
    parse_lshosts,
    parse_lsid,
    parse_tagged_jobs,
)

FINISHED_STATES = tuple(name for name, state in STATE_TABLE.items() if state.finished)
TAGGED_QUERY = shlex.join(["bjobs", "-a", "-noheader", "-o", TAGGED_FORMAT])
WIDE_QUERY = shlex.join(["bjobs", "-a", "-w", "-noheader"])
"""OpenLava's TAGGED_QUERY: it has no bjobs -o."""

OPTIONS: dict[str, Option] = {
    **COMMON_OPTIONS,
    **queue_options(checked_name(lsf_queue_name), checked_name(lsf_project_name)),
    "tasks_per_node": Option(as_tasks_per_node, {}, "span[ptile=N]: a number, or a mapping app -> number"),
    "affinity": Option(as_bool, True, "bind each task to cpus_per_task cores with affinity[core(N)]"),
    "minute_times": Option(as_bool, False, "use bjobs' times (minutes only) instead of the harness's clock"),
}


@register("lsf")
class LsfJobModule(SchedulerModule):
    """Runs the harness's jobs on an LSF cluster (options: see ``OPTIONS``)."""

    name = "lsf"
    OPTIONS = OPTIONS
    BATCH_TEMPLATE = Path(__file__).with_name("batch.sh.j2")

    _lsf: Lsf | None = None

    def lsf(self) -> Lsf:
        """The installed LSF, from one ``lsid`` (retried while LSF is down), then remembered."""
        if self._lsf is None:
            try:
                self._lsf = parse_lsid(self.run("lsid").stdout)
            except ValueError as exc:
                raise JobModuleError(f"{self.name}: {exc}") from None
        return self._lsf

    def node_capacity(self) -> CpuCapacity | None:
        """The CPUs of the cluster's server hosts, from ``lshosts``: a task's cores (affinity
        core(N)) fit on one host, the largest ``ncpus``; a job's tasks spread over all of them.
        None when lshosts does not say."""
        shown = self.run("lshosts", check=False)
        cpus = parse_lshosts(shown.stdout) if shown.returncode == 0 else {}
        if not cpus:
            return None
        largest, total = max(cpus.values()), sum(cpus.values())
        return CpuCapacity(largest, total, f"the largest of the {len(cpus)} server hosts has {largest} CPUs "
                                           f"and all of them {total} (lshosts)")

    def bsub_arguments(self, request: JobRequest, hosts: Sequence[str]) -> list[str]:
        """The bsub options for ``request`` placed on ``hosts`` (empty: anywhere), as the installed
        LSF takes them."""
        lsf = self.lsf()
        args = ["-J", tagged_name(request.name, request.token), *([] if lsf.openlava else ["-rn"]),
                "-o", request.stdout_path, "-e", request.stderr_path]
        if lsf.openlava:
            if request.total_tasks > 1:
                raise JobModuleError(f"{self.name}: {lsf.product} has no blaunch to start "
                                     f"{request.total_tasks} tasks of {request.name}: one task per job on it")
            args += ["-n", str(request.cpus_per_task), "-R", "span[hosts=1]"]
        else:
            args += ["-n", str(request.total_tasks)]
            if self.options["affinity"]:
                args += ["-R", f"affinity[core({request.cpus_per_task})]"]
            per_node = tasks_per_node_for(self.options["tasks_per_node"], request.app)
            if per_node:
                args += ["-R", f"span[ptile={per_node}]"]
        args += ["-M", lsf.memory_limit(task_memory_mib(request, self.memory_margin)),
                 "-W", str(time_limit_minutes(request.exec_time, self.time_factor, self.time_margin))]
        if hosts:
            args += ["-m", " ".join(hosts)]
        queue = self.queue_for(request)
        if queue:
            args += ["-q", queue]
        if self.options["project"]:
            args += ["-P", self.options["project"]]
        return args + list(self.options["submit_options"])

    def batch_values(self, request: JobRequest) -> dict[str, Any]:
        """The tasks (with blaunch, one per slot, when several), each with OMP_NUM_THREADS and the
        request's environment."""
        env = {"OMP_NUM_THREADS": str(request.cpus_per_task), **request.env}
        launcher = ["blaunch"] if request.total_tasks > 1 else []
        return {"env": [f"{k}={v}" for k, v in env.items()],
                "command": [*launcher, *request.argv]}

    # -- the paper's command-returning methods -----------------------------------------------

    def get_submit_command(self, request: JobRequest) -> str:
        """bsub reading the job's script (written by ``submit`` as NAME.sh beside its output) from
        its standard input, so LSF spools it."""
        return (shlex.join(["bsub", *self.bsub_arguments(request, self.placement(request))])
                + " < " + shlex.quote(script_path(request.stdout_path)))

    def parse_job_id(self, submit_stdout: str, submit_stderr: str) -> str:
        return parse_bsub(submit_stdout)[0]

    def get_poll_completion_command(self, submit_stdout: str, submit_stderr: str) -> str:
        job_id = parse_bsub(submit_stdout)[0]
        if self.lsf().openlava:  # bjobs -w: the state is the third column
            return (shlex.join(["bjobs", "-a", "-w", "-noheader", job_id]) + " | "
                    + shlex.join(["grep", "-qE", f"^{job_id} +[^ ]+ +({'|'.join(FINISHED_STATES)}) "]))
        return (shlex.join(["bjobs", "-a", "-noheader", "-o", "stat", job_id])
                + " | " + shlex.join(["grep", "-qxE", "|".join(FINISHED_STATES)]))

    def get_suspend_command(self, job_id: str) -> str:
        return shlex.join(["bstop", job_id])

    def get_resume_command(self, job_id: str) -> str:
        return shlex.join(["bresume", job_id])

    def get_cancel_command(self, job_id: str) -> str:
        return shlex.join(["bkill", job_id])

    def get_status_command(self, job_ids: Sequence[str]) -> str:
        fields = ["-l"] if self.lsf().openlava else ["-noheader", "-o", BJOBS_FORMAT]
        return shlex.join(["env", "TZ=UTC", "bjobs", "-a", *fields, *job_ids])

    def parse_status(self, stdout: str) -> dict[str, JobStatus]:
        parse = parse_long if self.lsf().openlava else parse_bjobs
        return {job_id: record.status(minute_times=self.options["minute_times"])
                for job_id, record in parse(stdout, time.time()).items()}

    # -- scheduler specifics -------------------------------------------------------------------

    def is_transient(self, stderr: str) -> bool:
        return is_transient(stderr)

    def suspend(self, job_id: str) -> None:
        self._signal(self.get_suspend_command(job_id))

    def resume(self, job_id: str) -> None:
        self._signal(self.get_resume_command(job_id))

    def _signal(self, command: str) -> None:
        """bstop or bresume. "Job <N>: Operation is in progress" (exit 255) is taken as done:
        mbatchd could not reach the job's sbatchd at once (seen live just after an mbatchd restart)
        and delivers the signal as soon as it can; retrying would only queue it again."""
        result = self.run(command, check=False)
        if result.returncode != 0 and not OPERATION_IN_PROGRESS.search(result.stderr + result.stdout):
            raise JobModuleError(f"{self.name}: command failed ({result.returncode}): {command}: "
                                 f"{one_line(result.stderr or result.stdout)}")

    def accounting(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        """On OpenLava, the ends of jobs bjobs no longer lists (it forgets a finished job after
        CLEAN_PERIOD), from ``bhist -l`` (mbatchd's event log); IBM LSF's bhist is not read."""
        if not self.lsf().openlava:
            return {}
        command = shlex.join(["env", "TZ=UTC", "bhist", "-l", *job_ids])
        result = self.run(command, check=False)
        if result.returncode != 0 and not NO_MATCHING_JOB.search(result.stderr + result.stdout):
            raise JobModuleError(f"{self.name}: bhist failed ({result.returncode}): {command}: "
                                 f"{one_line(result.stderr or result.stdout)}")
        return {job_id: record.status(minute_times=True)
                for job_id, record in parse_long(result.stdout, time.time()).items()}

    def status_failed(self, result: CommandResult) -> bool:
        """bjobs exits non-zero when some job is not found; that is an answer, not a failure."""
        return result.returncode != 0 and not JOB_NOT_FOUND.search(result.stderr)

    def tagged_query(self) -> str:
        """The bjobs listing every job of the user with its name: TAGGED_QUERY, or WIDE_QUERY on OpenLava."""
        return WIDE_QUERY if self.lsf().openlava else TAGGED_QUERY

    def tagged_jobs(self, result: CommandResult) -> list[TaggedJob]:
        """The tagged jobs of a tagged_query answer; "No job found" is an empty answer, not a failure."""
        if result.returncode != 0 and not NO_JOB_FOUND.search(result.stderr + result.stdout):
            raise JobModuleError(f"{self.name}: bjobs failed ({result.returncode}): {result.command}: "
                                 f"{one_line(result.stderr or result.stdout)}")
        return (parse_bjobs_wide if self.lsf().openlava else parse_tagged_jobs)(result.stdout)

    def find_submitted(self, token: str) -> str | None:
        """The job named with ``token`` (its bsub's reply was lost), in any state bjobs -a lists."""
        return job_with_token(self.tagged_jobs(self.run_once(self.tagged_query())), token)

    def find_by_token(self, tokens: Collection[str]) -> dict[str, str]:
        """The jobs not yet ended whose name carries one of ``tokens``, in one bjobs."""
        return live_jobs_by_token(self.tagged_jobs(self.run(self.tagged_query(), check=False)), tokens)


MODULE = LsfJobModule
