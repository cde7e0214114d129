"""The Slurm job module: sbatch/squeue/sacct/scontrol/scancel through a transport (paper 001 sec. 2.2).

Table-driven like PSI/J's and ReFrame's Slurm backends: the application options map to sbatch
options (:func:`sbatch_arguments`), Slurm's states map to the harness's through one table
(djsb.slurm_parsers.STATE_TABLE), and every command's output is read by a pure parser.

- Submit: ``sbatch --parsable`` with --ntasks, --cpus-per-task, --mem-per-cpu (or --mem per node; the
  application's memory plus ``memory_margin`` per task),
  --time (exec_time times ``time_factor`` plus ``time_margin``, in whole minutes: Slurm's unit),
  --nodelist (node_host_names, or the simulation's nodes for a colocated analytics),
  --oversubscribe, and partition/account/qos/extra options. The batch script (``--wrap``) runs the
  tasks with ``srun``, each with OMP_NUM_THREADS=cpus_per_task and the request's environment.
- Poll: one ``squeue`` for all the run's jobs (``--states=all`` keeps finished jobs until
  MinJobAge), then ``sacct`` for jobs the controller already forgot, when accounting is on.
  Times are asked as Unix seconds (SLURM_TIME_FORMAT=%s), so the client's time zone never
  matters; sacct's --starttime is given in UTC (TZ=UTC) from the earliest submission of those jobs.
- Suspend/resume: ``scontrol suspend/resume``: Slurm sends SIGSTOP/SIGCONT to every process of
  the job and frees its CPUs (not its memory) while it is suspended. Only root, the SlurmUser or a
  Slurm operator/administrator may do this.
- Every call runs under ``command_timeout`` (the CLI hangs for minutes when slurmctld is down) and
  is retried with exponential back-off for ``retry_for`` seconds on a transient error, so a run
  survives a slurmctld restart. A retried sbatch first looks for the job the lost attempt may
  have submitted (by a random token in --comment), so a job is never submitted twice.
"""

from __future__ import annotations

import math
import shlex
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from djsb.errors import JobModuleError
from djsb.scheduler_common import (
    number_option,
    option_error,
    placement_hosts,
    string_list_option,
    tasks_per_node_for,
)
from djsb.slurm_parsers import (
    INVALID_JOB_ID,
    SACCT_FORMAT,
    SQUEUE_FORMAT,
    STATE_TABLE,
    is_transient,
    parse_config_value,
    parse_sacct,
    parse_sbatch_parsable,
    parse_squeue,
)
from djsb.transport import CommandResult, CommandTimeout, Transport
from job_modules.template import CommandJobModule, JobRequest, JobState, JobStatus

MIB = 1 << 20
# Slurm prints times as Unix seconds; sacct reads --starttime in UTC.
ENV_PREFIX = ["env", "TZ=UTC", "SLURM_TIME_FORMAT=%s"]
FINISHED_STATES = tuple(name for name, state in STATE_TABLE.items() if state.finished)

OPTIONS: dict[str, str] = {
    "partition": "sbatch --partition",
    "account": "sbatch --account",
    "qos": "sbatch --qos",
    "sbatch_options": "extra sbatch arguments, a list",
    "srun_options": "extra srun arguments, a list",
    "tasks_per_node": "--ntasks-per-node: a number, or a mapping app -> number",
    "memory": "'per_cpu' (--mem-per-cpu, default) or 'per_node' (--mem, needs tasks_per_node)",
    "memory_margin": "MiB added to each task's memory for the program itself (default 64)",
    "time_factor": "--time is exec_time * time_factor + time_margin (default 3)",
    "time_margin": "seconds added to the time limit (default 120)",
    "command_timeout": "seconds before a Slurm command counts as hung (default 30)",
    "retry_for": "seconds to keep retrying while slurmctld is unreachable (default 180)",
    "accounting": "use sacct for jobs slurmctld forgot: auto (default), true or false",
}


def time_limit_minutes(exec_time: float, factor: float, margin: float) -> int:
    """The --time value: Slurm counts time limits in whole minutes, so round up."""
    return max(1, math.ceil((exec_time * factor + margin) / 60))


def task_memory_mib(request: JobRequest, margin_mib: float) -> float:
    """One task's memory limit in MiB: its share of total_memory (the application's data) plus a
    margin for the program itself, which Slurm counts too (and kills the task beyond the limit)."""
    return request.memory_per_task / MIB + margin_mib


def slurm_path(path: str) -> str:
    """A file name for --output/--error: Slurm expands %j and friends in them; %% is a literal %."""
    return path.replace("%", "%%")


def task_command(request: JobRequest, srun_options: Sequence[str]) -> str:
    """The batch script: ``srun`` starts the tasks, each with OMP_NUM_THREADS and the request's env.

    srun gets --cpus-per-task again because since Slurm 22.05 it no longer inherits it from sbatch.
    Each task writes its stdout to a file of its own, appended to the job's stdout when srun ends:
    forwarded by Slurm, the output of several tasks is cut into 1 KiB pieces and interleaved,
    which breaks djsb-stream's one-line JSON reports (seen on Slurm 22.05).
    """
    env = {"OMP_NUM_THREADS": str(request.cpus_per_task), **request.env}
    parts = shlex.quote(request.stdout_path + ".task")
    srun = shlex.join(["env", *(f"{k}={v}" for k, v in env.items()), "srun",
                       f"--ntasks={request.total_tasks}", f"--cpus-per-task={request.cpus_per_task}",
                       f"--output={slurm_path(request.stdout_path)}.task%t", *srun_options, "--",
                       *request.argv])
    return f"{srun}\nstatus=$?\ncat {parts}[0-9]*\nrm -f {parts}[0-9]*\nexit $status\n"


class SlurmJobModule(CommandJobModule):
    """Runs the harness's jobs on a Slurm cluster (options: see ``OPTIONS``)."""

    name = "slurm"

    def __init__(self, options: Mapping[str, Any], transport: Transport, *,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__(options, transport)
        unknown = set(self.options) - set(OPTIONS)
        if unknown:
            raise option_error(sorted(unknown)[0], f"unknown option(s) {', '.join(sorted(unknown))} "
                                f"(known: {', '.join(OPTIONS)})")
        for key in ("partition", "account", "qos"):
            if key in self.options and not isinstance(self.options[key], str):
                raise option_error(key, f"expected a name, got {self.options[key]!r}")
        self.sbatch_options = string_list_option(self.options, "sbatch_options")
        self.srun_options = string_list_option(self.options, "srun_options")
        self.memory = self.options.get("memory", "per_cpu")
        if self.memory not in ("per_cpu", "per_node"):
            raise option_error("memory", f"expected per_cpu or per_node, got {self.memory!r}")
        self.tasks_per_node = self.options.get("tasks_per_node", {})
        if self.memory == "per_node" and not self.tasks_per_node:
            raise option_error("memory", "per_node needs tasks_per_node (the memory of a node's tasks)")
        self.memory_margin = number_option(self.options, "memory_margin", 64.0)
        self.time_factor = number_option(self.options, "time_factor", 3.0)
        self.time_margin = number_option(self.options, "time_margin", 120.0)
        self.command_timeout = number_option(self.options, "command_timeout", 30.0)
        self.retry_for = number_option(self.options, "retry_for", 180.0)
        accounting = self.options.get("accounting", "auto")
        if accounting not in ("auto", True, False):
            raise option_error("accounting", f"expected auto, true or false, got {accounting!r}")
        self._accounting: bool | None = None if accounting == "auto" else bool(accounting)
        self._sleep = sleep
        self._last: dict[str, JobStatus] = {}
        self._submitted_at: dict[str, float] = {}

    # -- the paper's command-returning methods -----------------------------------------------

    def app_tasks_per_node(self, app: str) -> int | None:
        """--ntasks-per-node for ``app``: the option's number, or its entry for this app."""
        return tasks_per_node_for(self.tasks_per_node, app)

    def sbatch_arguments(self, request: JobRequest, nodes: Sequence[str]) -> list[str]:
        """The sbatch options for ``request`` placed on ``nodes`` (empty: anywhere)."""
        per_node = self.app_tasks_per_node(request.app)
        task_memory = task_memory_mib(request, self.memory_margin)
        args = ["--parsable", f"--job-name={request.name}",
                f"--output={slurm_path(request.stdout_path)}", f"--error={slurm_path(request.stderr_path)}",
                f"--ntasks={request.total_tasks}", f"--cpus-per-task={request.cpus_per_task}",
                f"--time={time_limit_minutes(request.exec_time, self.time_factor, self.time_margin)}"]
        if self.memory == "per_cpu":
            args.append(f"--mem-per-cpu={math.ceil(task_memory / request.cpus_per_task)}M")
        elif per_node:
            args.append(f"--mem={math.ceil(task_memory * per_node)}M")
        else:
            raise option_error("tasks_per_node", f"no entry for {request.app}, needed by memory: per_node")
        if per_node:
            args.append(f"--ntasks-per-node={per_node}")
        if nodes:
            args += [f"--nodes={len(nodes)}", f"--nodelist={','.join(nodes)}"]
        if request.oversubscribe:
            args.append("--oversubscribe")
        args += [f"--{key}={self.options[key]}" for key in ("partition", "account", "qos")
                 if key in self.options]
        return args + list(self.sbatch_options)

    def placement(self, request: JobRequest) -> tuple[str, ...]:
        """The nodes the job must run on: the simulation's (as many as its tasks need), or the
        configured node_host_names, or none."""
        nodes = placement_hosts(self, request, self._last)
        if request.colocate_with is None:
            return nodes
        per_node = self.app_tasks_per_node(request.app) or 1
        return nodes[:min(len(nodes), math.ceil(request.total_tasks / per_node))]

    def submit_command(self, request: JobRequest, token: str) -> str:
        """The sbatch command line, tagged with ``token`` in --comment to find it after a lost reply."""
        args = ["sbatch", *self.sbatch_arguments(request, self.placement(request)), f"--comment=djsb-{token}",
                f"--wrap={task_command(request, self.srun_options)}"]
        return shlex.join(args)

    def get_submit_command(self, request: JobRequest) -> str:
        return self.submit_command(request, uuid.uuid4().hex)

    def get_poll_completion_command(self, submit_stdout: str, submit_stderr: str) -> str:
        job_id = parse_sbatch_parsable(submit_stdout)
        return (shlex.join(["squeue", "--noheader", "--states=all", f"--jobs={job_id}", "--format=%T"])
                + " | " + shlex.join(["grep", "-qxE", "|".join(FINISHED_STATES)]))

    def get_suspend_command(self, job_id: str) -> str:
        return shlex.join(["scontrol", "suspend", job_id])

    def get_resume_command(self, job_id: str) -> str:
        return shlex.join(["scontrol", "resume", job_id])

    def get_cancel_command(self, job_id: str) -> str:
        return shlex.join(["scancel", job_id])

    def get_status_command(self, job_ids: Sequence[str]) -> str:
        return shlex.join([*ENV_PREFIX, "squeue", "--noheader", "--states=all", f"--jobs={','.join(job_ids)}",
                           f"--Format={SQUEUE_FORMAT}"])

    def parse_status(self, stdout: str) -> dict[str, JobStatus]:
        return parse_squeue(stdout)

    def get_accounting_command(self, job_ids: Sequence[str], since: float) -> str:
        """sacct for jobs the controller forgot, from ``since`` (Unix seconds) on, times in UTC."""
        start = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(since))
        return shlex.join([*ENV_PREFIX, "sacct", "--noheader", "--parsable2", "--allocations",
                           f"--jobs={','.join(job_ids)}", f"--starttime={start}", "--endtime=now",
                           f"--format={SACCT_FORMAT}"])

    # -- running commands --------------------------------------------------------------------

    def run(self, command: str, *, check: bool = True,
            before_retry: Callable[[], CommandResult | None] | None = None) -> CommandResult:
        """Run ``command``, retrying with back-off while Slurm reports a transient error or hangs.

        ``before_retry`` may answer in the command's place before each retry (the job a lost
        sbatch reply had submitted).
        """
        deadline = time.monotonic() + self.retry_for
        delay = 0.5
        attempt = 0
        while True:
            result = before_retry() if attempt and before_retry else None
            if result is None:
                try:
                    result = self.transport.run(command, timeout=self.command_timeout)
                    error = result.stderr.strip() if result.returncode and is_transient(result.stderr) else ""
                except CommandTimeout:
                    error = f"no answer within {self.command_timeout:g} s"
            else:
                error = ""
            if not error:
                break
            if time.monotonic() + delay > deadline:
                raise JobModuleError(f"slurm: controller unreachable for {self.retry_for:g} s ({error}): "
                                     f"{command}")
            self._sleep(delay)
            delay = min(2 * delay, 15.0)
            attempt += 1
        if check and result.returncode != 0:
            hint = (" (suspend/resume need root, the SlurmUser or a Slurm operator)"
                    if "scontrol" in command and "ccess" in result.stderr else "")
            raise JobModuleError(f"slurm: command failed ({result.returncode}): {command}: "
                                 f"{result.stderr.strip() or result.stdout.strip()}{hint}")
        return result

    def _submitted_by(self, token: str) -> CommandResult | None:
        """The job whose --comment carries ``token``, as if sbatch had printed its id; else None."""
        query = shlex.join(["squeue", "--noheader", "--states=all", "--format=%i|%k"])
        found = self.transport.run(query, timeout=self.command_timeout)
        for line in found.stdout.splitlines():
            job_id, _, comment = line.partition("|")
            if comment.strip() == f"djsb-{token}":
                return CommandResult(query, 0, job_id.strip() + "\n", "")
        return None

    # -- the harness's operations ------------------------------------------------------------

    def submit(self, request: JobRequest) -> str:
        token = uuid.uuid4().hex
        submitted_at = time.time()
        result = self.run(self.submit_command(request, token), before_retry=lambda: self._submitted_by(token))
        try:
            job_id = parse_sbatch_parsable(result.stdout)
        except ValueError as exc:
            raise JobModuleError(f"slurm: {exc} (stderr: {result.stderr.strip()})") from None
        self._submitted_at[job_id] = submitted_at
        return job_id

    def accounting(self) -> bool:
        """Whether sacct can answer: the option, or (auto) the cluster's AccountingStorageType."""
        if self._accounting is None:
            config = self.run(shlex.join(["scontrol", "show", "config"]), check=False).stdout
            storage = parse_config_value(config, "AccountingStorageType") or "accounting_storage/none"
            self._accounting = storage != "accounting_storage/none"
        return self._accounting

    def poll(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        """One squeue for all jobs; sacct for the ones slurmctld purged; else their last known state."""
        if not job_ids:
            return {}
        result = self.run(self.get_status_command(job_ids), check=False)
        if result.returncode != 0 and INVALID_JOB_ID not in result.stderr:
            raise JobModuleError(f"slurm: squeue failed ({result.returncode}): {result.stderr.strip()}")
        statuses = {job_id: status for job_id, status in self.parse_status(result.stdout).items()
                    if job_id in job_ids}
        missing = [job_id for job_id in job_ids if job_id not in statuses]
        if missing and self.accounting():
            since = min((self._first_seen(job_id) for job_id in missing), default=time.time()) - 60
            found = self.run(self.get_accounting_command(missing, since), check=False)
            statuses.update((k, v) for k, v in parse_sacct(found.stdout).items() if k in missing)
        for job_id in job_ids:
            if job_id not in statuses:
                last = self._last.get(job_id)
                statuses[job_id] = last if last is not None and last.state.finished else JobStatus(
                    JobState.UNKNOWN, reason="not known to slurmctld, and no accounting record")
        self._last.update(statuses)
        return statuses

    def _first_seen(self, job_id: str) -> float:
        """The earliest time the job may have been submitted, for sacct's --starttime."""
        last = self._last.get(job_id)
        if last is not None and last.submit is not None:
            return last.submit
        return self._submitted_at.get(job_id, time.time() - 7 * 86400)


MODULE = SlurmJobModule
