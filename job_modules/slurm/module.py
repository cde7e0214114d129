"""The Slurm job module: sbatch/squeue/sacct/scontrol/scancel through a transport (paper 001 sec. 2.2).

Table-driven like PSI/J's and ReFrame's Slurm backends: the application options map to sbatch
options (:func:`sbatch_arguments`), Slurm's states map to the harness's through one table
(parsers.STATE_TABLE), and every command's output is read by a pure parser.

- Submit: ``sbatch --parsable`` with --ntasks, --cpus-per-task, --mem-per-cpu (or --mem per node; the
  application's memory plus ``memory_margin`` per task),
  --time (exec_time times ``time_factor`` plus ``time_margin``, in whole minutes: Slurm's unit),
  --nodelist (node_host_names, or the simulation's nodes for a colocated analytics),
  --oversubscribe, and partition/account/qos/extra options. The batch script (batch.sh.j2 beside
  this file, kept beside the job's output as NAME.sh) runs the tasks with ``srun``, each with
  OMP_NUM_THREADS=cpus_per_task and the request's environment.
- Poll: one ``squeue`` for all the run's jobs (``--states=all`` keeps finished jobs until
  MinJobAge), then ``sacct`` for jobs the controller already forgot, when accounting is on.
  Times are asked as Unix seconds (SLURM_TIME_FORMAT=%s), so the client's time zone never
  matters; sacct's --starttime is given in UTC (TZ=UTC) from the earliest submission of those jobs.
- Suspend/resume: ``scontrol suspend/resume``: Slurm sends SIGSTOP/SIGCONT to every process of
  the job and frees its CPUs (not its memory) while it is suspended. Only root, the SlurmUser or a
  Slurm operator/administrator may do this.
- Every call runs under ``command_timeout`` (the CLI hangs for minutes when slurmctld is down) and
  is retried with exponential back-off for ``retry_for`` seconds on a transient error, so a run
  survives a slurmctld restart (djsb.jobs.scheduler_base). A retried sbatch first looks for the
  job the lost attempt may have submitted (by the request's submission token in --comment: the
  base's ``find_submitted`` hook), so a job is never submitted twice; ``--resume`` finds the jobs
  of a killed harness by the same token (``find_by_token``).
"""

from __future__ import annotations

import math
import shlex
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from djsb.errors import JobModuleError, one_line
from djsb.jobs.api import CpuCapacity, JobRequest, JobState, JobStatus, held
from djsb.jobs.batch import script_path
from djsb.jobs.hostlist import expand_hostlist, split_host_list
from djsb.jobs.loader import register
from djsb.jobs.names import slurm_name, slurm_partitions
from djsb.jobs.options import (
    Option,
    OptionValues,
    as_arguments,
    as_tasks_per_node,
    checked_name,
    one_of,
    option_error,
    tasks_per_node_for,
)
from djsb.jobs.scheduler_base import (
    COMMON_OPTIONS,
    TOKEN_PREFIX,
    Recover,
    SchedulerModule,
    job_with_token,
    live_jobs_by_token,
    placement_hosts,
    task_memory_mib,
    time_limit_minutes,
)
from djsb.jobs.scontrol import parse_show_records
from djsb.transport import CommandResult, Transport
from djsb.yamlnodes import Located
from job_modules.slurm.parsers import (
    INVALID_JOB_ID,
    SACCT_FORMAT,
    SQUEUE_FORMAT,
    STATE_TABLE,
    TAGGED_FORMAT,
    is_transient,
    parse_array_states,
    parse_array_task_ids,
    parse_config_value,
    parse_sacct,
    parse_sbatch_parsable,
    parse_squeue,
    parse_tagged_array_tasks,
    parse_tagged_jobs,
)

# Slurm prints times as Unix seconds; sacct reads --starttime in UTC.
ENV_PREFIX = ["env", "TZ=UTC", "SLURM_TIME_FORMAT=%s"]
FINISHED_STATES = tuple(name for name, state in STATE_TABLE.items() if state.finished)
TAGGED_QUERY = shlex.join(["squeue", "--noheader", "--states=all", f"--format={TAGGED_FORMAT}"])
TAGGED_TASKS_QUERY = shlex.join(["squeue", "--noheader", "--me", "--array", "--states=all",
                                 f"--format={TAGGED_FORMAT}"])

# sbatch/srun options that take node names (sbatch(1): a list, a hostlist expression, or a file name
# when the value holds a '/').
NODE_LIST_OPTIONS = frozenset({"-w", "--nodelist", "-x", "--exclude"})


def node_list_values(words: Sequence[str]) -> list[str]:
    """The values given to the node-list options among ``words`` (--nodelist=V, or -w V)."""
    values = []
    for index, word in enumerate(words):
        name, equals, value = word.partition("=")
        if name in NODE_LIST_OPTIONS and equals:
            values.append(value)
        elif word in NODE_LIST_OPTIONS and index + 1 < len(words):
            values.append(words[index + 1])
    return values


def as_slurm_arguments(node: Located) -> tuple[str, ...]:
    """Extra sbatch/srun arguments (as_arguments), whose node lists must be host names or hostlist
    expressions: ``n[1-`` is an error here, not sbatch's mid-run."""
    words = as_arguments(node)
    for value in node_list_values(words):
        if "/" in value:
            continue
        try:
            for item in split_host_list(value):
                expand_hostlist(item)
        except ValueError as exc:
            raise node.error(str(exc)) from None
    return words


OPTIONS: dict[str, Option] = {
    **COMMON_OPTIONS,
    "partition": Option(checked_name(slurm_partitions), None, "sbatch --partition (several: a,b)"),
    "account": Option(checked_name(slurm_name), None, "sbatch --account"),
    "qos": Option(checked_name(slurm_name), None, "sbatch --qos"),
    "sbatch_options": Option(as_slurm_arguments, (), "extra sbatch arguments, a list"),
    "srun_options": Option(as_slurm_arguments, (), "extra srun arguments, a list"),
    "tasks_per_node": Option(as_tasks_per_node, {},
                             "--ntasks-per-node: a number, or a mapping app -> number"),
    "memory": Option(one_of("per_cpu", "per_node"), "per_cpu",
                     "'per_cpu' (--mem-per-cpu) or 'per_node' (--mem, needs tasks_per_node)"),
    "accounting": Option(one_of("auto", True, False), "auto", "use sacct for jobs slurmctld forgot"),
}


def slurm_path(path: str) -> str:
    """A file name for --output/--error: Slurm expands %j and friends in them; %% is a literal %."""
    return path.replace("%", "%%")


@register("slurm")
class SlurmJobModule(SchedulerModule):
    """Runs the harness's jobs on a Slurm cluster (options: see ``OPTIONS``)."""

    name = "slurm"
    OPTIONS = OPTIONS
    BATCH_TEMPLATE = Path(__file__).with_name("batch.sh.j2")

    def __init__(self, options: Mapping[str, Any] | Located, transport: Transport, *,
                 sleep: Callable[[float], None] | None = None) -> None:
        super().__init__(options, transport, sleep=sleep)
        self.sbatch_options: tuple[str, ...] = self.options["sbatch_options"]
        self.srun_options: tuple[str, ...] = self.options["srun_options"]
        self.memory: str = self.options["memory"]
        self.tasks_per_node: int | dict[str, int] = self.options["tasks_per_node"]
        accounting = self.options["accounting"]
        self._accounting: bool | None = None if accounting == "auto" else accounting

    @classmethod
    def read_options(cls, options: Mapping[str, Any] | Located) -> OptionValues:
        """The options, and memory: per_node only with tasks_per_node (the memory of a node's tasks)."""
        values = super().read_options(options)
        if values["memory"] == "per_node" and not values["tasks_per_node"]:
            raise values.error("memory", "per_node needs tasks_per_node (the memory of a node's tasks)")
        return values

    # -- the paper's command-returning methods -----------------------------------------------

    def app_tasks_per_node(self, app: str) -> int | None:
        """--ntasks-per-node for ``app``: the option's number, or its entry for this app."""
        return tasks_per_node_for(self.tasks_per_node, app)

    def sbatch_arguments(self, request: JobRequest, nodes: Sequence[str],
                         array: str | None = None, dependency: str | None = None,
                         requeue: bool = False) -> list[str]:
        """The sbatch options for ``request`` placed on ``nodes`` (empty: anywhere); ``array``: the
        indices of a job array (--array), whose tasks each write their own output, ``.INDEX`` added;
        ``dependency``: what the job waits for (--dependency, as ``afterok:123``). A job is submitted
        ``--no-requeue`` (a benchmark's job run twice would measure twice) unless ``requeue``: then
        Slurm runs it again after a preemption under REQUEUE or a node failure."""
        per_node = self.app_tasks_per_node(request.app)
        task_memory = task_memory_mib(request, self.memory_margin)
        task = ".%a" if array is not None else ""
        stdout, stderr = slurm_path(request.stdout_path) + task, slurm_path(request.stderr_path) + task
        args = ["--parsable", "--requeue" if requeue else "--no-requeue", f"--job-name={request.name}",
                f"--output={stdout}",
                f"--error={stderr}",
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
                 if self.options[key] is not None]
        if array is not None:
            args.append(f"--array={array}")
        if dependency is not None:
            args.append(f"--dependency={dependency}")
        return args + list(self.sbatch_options)

    def batch_values(self, request: JobRequest) -> dict[str, Any]:
        """srun starts the tasks (with --cpus-per-task again: since Slurm 22.05 srun no longer
        inherits it from sbatch). Each task writes its stdout to a file of its own, appended to the
        job's stdout when srun ends: forwarded by Slurm, the output of several tasks is cut into
        1 KiB pieces and interleaved, which breaks djsb-stream's one-line JSON reports (Slurm 22.05)."""
        env = {"OMP_NUM_THREADS": str(request.cpus_per_task), **request.env}
        return {"env": [f"{k}={v}" for k, v in env.items()],
                "srun": ["srun", f"--ntasks={request.total_tasks}",
                         f"--cpus-per-task={request.cpus_per_task}",
                         f"--output={slurm_path(request.stdout_path)}.task%t", *self.srun_options],
                "argv": request.argv, "task_output": request.stdout_path + ".task"}

    def placement(self, request: JobRequest) -> tuple[str, ...]:
        """The nodes the job must run on: the simulation's (as many as its tasks need), or the
        configured node_host_names, or none."""
        nodes = placement_hosts(self, request, self._last)
        if request.colocate_with is None:
            return nodes
        per_node = self.app_tasks_per_node(request.app) or 1
        return nodes[:min(len(nodes), math.ceil(request.total_tasks / per_node))]

    def get_submit_command(self, request: JobRequest, array: str | None = None,
                           dependency: str | None = None, requeue: bool = False) -> str:
        """sbatch of the job's script (written by ``submit`` as NAME.sh beside its output), tagged with
        the request's submission token in --comment to find the job after a lost reply; ``array``:
        sbatch --array's indices; ``dependency``: sbatch --dependency's; ``requeue``: --requeue."""
        options = self.sbatch_arguments(request, self.placement(request), array, dependency, requeue)
        return shlex.join(["sbatch", *options,
                           f"--comment={TOKEN_PREFIX}{request.token}", script_path(request.stdout_path)])

    def submit_own_script(self, request: JobRequest, script: str, *, array: str | None = None,
                          dependency: str | None = None, requeue: bool = False) -> str:
        """Submit ``script`` (not batch.sh.j2's: a workflow wrapper's, a sweep's array task) with the
        request's sbatch options; ``array``: the indices of a job array (``0-19,25%4``), each task's
        output then ``.INDEX``; ``dependency``: what it waits for (``afterok:123``); ``requeue``: run
        again after a preemption or a node failure. Returns the job id (an array's master id)."""
        command = self.get_submit_command(request, array, dependency, requeue)
        return self.submit_script(request, script, command)

    def get_array_task_ids_command(self, array_ids: Sequence[str], accounting: bool = False) -> str:
        """squeue (or, ``accounting``, sacct) of the tasks of the job arrays ``array_ids``, one per
        line: ``ARRAY_INDEX|OWN_ID|STATE``."""
        if accounting:
            return shlex.join(["sacct", "--noheader", "--parsable2", "--allocations",
                               f"--jobs={','.join(array_ids)}", "--format=JobID,JobIDRaw,State"])
        return shlex.join(["squeue", "--noheader", "--array", "--states=all", f"--jobs={','.join(array_ids)}",
                           "--format=%i|%A|%T"])

    def array_task_ids(self, array_ids: Sequence[str]) -> dict[str, str]:
        """The own job id of every task of the job arrays ``array_ids`` that started, by its
        ``ARRAY_INDEX`` name (:func:`parse_array_task_ids`): squeue's, and sacct's for the arrays
        squeue no longer lists (MinJobAge after their end), when there is accounting."""
        result = self.run(self.get_array_task_ids_command(array_ids), check=False)
        if self.status_failed(result):
            raise JobModuleError(f"{self.name}: squeue of arrays failed: {one_line(result.stderr)}")
        ids = parse_array_task_ids(result.stdout)
        listed = {line.strip().partition("_")[0] for line in result.stdout.splitlines()}
        forgotten = [array_id for array_id in array_ids if array_id not in listed]
        if forgotten and self.has_accounting():
            answer = self.run(self.get_array_task_ids_command(forgotten, accounting=True), check=False)
            ids.update(parse_array_task_ids(answer.stdout))
        return ids

    def get_array_status_command(self, job_id: str) -> str:
        """squeue of each task of job array ``job_id``, one per line: ``INDEX|STATE``."""
        return shlex.join(["squeue", "--noheader", "--array", "--states=all", f"--jobs={job_id}",
                           "--format=%K|%T"])

    def array_states(self, job_id: str) -> dict[int, JobState]:
        """The state of each task of job array ``job_id`` slurmctld still lists (none once it forgot
        the array: MinJobAge after its end)."""
        result = self.run(self.get_array_status_command(job_id), check=False)
        if self.status_failed(result):
            raise JobModuleError(f"{self.name}: squeue of array {job_id} failed: {one_line(result.stderr)}")
        return parse_array_states(result.stdout)

    def parse_job_id(self, submit_stdout: str, submit_stderr: str) -> str:
        return parse_sbatch_parsable(submit_stdout)

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

    def poll(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        """As the base's; for a job squeue shows ending (COMPLETING: its final state not yet known)
        the final record comes from sacct, which has it as soon as the job ended; a job this module
        cancelled that is still COMPLETING counts as CANCELLED (Slurm shows a cancelled job
        COMPLETING with exit code 0 until its nodes are clean)."""
        statuses = super().poll(job_ids)
        for job_id, status in statuses.items():
            if job_id in self._cancelled and not status.final:
                statuses[job_id] = replace(status, state=JobState.CANCELLED, reason="cancelled by djsb",
                                           final=True)
        ending = [job_id for job_id, status in statuses.items() if not status.final]
        if ending:
            for job_id, record in self.accounting(ending).items():
                if job_id in statuses and record.state.finished:
                    statuses[job_id] = replace(record, restarts=statuses[job_id].restarts)
        self._last.update(statuses)
        return statuses

    def still_held(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        """The jobs squeue still shows pending, running, suspended or COMPLETING (with sacct for
        those it no longer lists): the scheduler's own states, not :meth:`poll`'s reading, which
        takes a cancelled job COMPLETING for CANCELLED and asks sacct for the end of one that is
        COMPLETING; either may still be requeued (a launch that failed on a dead node)."""
        return held(super().poll(job_ids))

    def get_accounting_command(self, job_ids: Sequence[str], since: float) -> str:
        """sacct for jobs the controller forgot, from ``since`` (Unix seconds) on, times in UTC."""
        start = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(since))
        return shlex.join([*ENV_PREFIX, "sacct", "--noheader", "--parsable2", "--allocations",
                           f"--jobs={','.join(job_ids)}", f"--starttime={start}", "--endtime=now",
                           f"--format={SACCT_FORMAT}"])

    # -- scheduler specifics -----------------------------------------------------------------

    def node_capacity(self) -> CpuCapacity | None:
        """The CPUs of the partition the jobs go to (the option's, any of several, else Slurm's
        default), from ``scontrol show partition`` and ``scontrol show node`` of its nodes: a task
        fits on one node (its CPUTot, at most the partition's MaxCPUsPerNode), a job in the
        partition's TotalCPUs. None when Slurm does not say."""
        shown = self.run(shlex.join(["scontrol", "show", "partition"]), check=False)
        partitions = parse_show_records(shown.stdout) if shown.returncode == 0 else []
        named = self.options["partition"]
        chosen = ([p for p in partitions if p.get("PartitionName") in named.split(",")] if named else
                  [p for p in partitions if p.get("Default") == "YES"])
        if not chosen:
            return None
        node_list = ",".join(p.get("Nodes", "") for p in chosen if p.get("Nodes", "(null)") != "(null)")
        if not node_list:
            return None
        nodes = self.run(shlex.join(["scontrol", "show", "node", node_list]), check=False)
        if nodes.returncode != 0:
            return None
        cpus = {n.get("NodeName", ""): int(n["CPUTot"]) for n in parse_show_records(nodes.stdout)
                if n.get("CPUTot", "").isdigit()}
        best: tuple[int, int, str] | None = None
        for partition in chosen:
            members = [host for item in split_host_list(partition.get("Nodes", ""))
                       for host in expand_hostlist(item, check=False) if host in cpus]
            if not members:
                continue
            cap = partition.get("MaxCPUsPerNode", "UNLIMITED")
            per_node = max(min(cpus[host], int(cap) if cap.isdigit() else cpus[host]) for host in members)
            total = int(partition.get("TotalCPUs", "0") or 0) or sum(cpus[host] for host in members)
            if best is None or (per_node, total) > best[:2]:
                best = (per_node, total, partition.get("PartitionName", "?"))
        if best is None:
            return None
        per_node, total, name = best
        return CpuCapacity(per_node, total, f"partition {name}'s largest node has {per_node} CPUs and all "
                                            f"its nodes {total} (scontrol show partition, show node)")

    def is_transient(self, stderr: str) -> bool:
        return is_transient(stderr)

    def status_failed(self, result: CommandResult) -> bool:
        """squeue exits non-zero when a job id is unknown; that is an answer, not a failure."""
        return result.returncode != 0 and INVALID_JOB_ID not in result.stderr

    def has_accounting(self) -> bool:
        """Whether sacct can answer: the option, or (auto) the cluster's AccountingStorageType."""
        if self._accounting is None:
            config = self.run(shlex.join(["scontrol", "show", "config"]), check=False).stdout
            storage = parse_config_value(config, "AccountingStorageType") or "accounting_storage/none"
            self._accounting = storage != "accounting_storage/none"
        return self._accounting

    def accounting(self, job_ids: Sequence[str]) -> dict[str, JobStatus]:
        """sacct's records of jobs slurmctld purged (MinJobAge), from a minute before their submission."""
        if not self.has_accounting():
            return {}
        since = min(self.first_seen(job_id) for job_id in job_ids) - 60
        return parse_sacct(self.run(self.get_accounting_command(job_ids, since), check=False).stdout)

    def find_submitted(self, token: str) -> str | None:
        """The job whose --comment carries ``token`` (its submit's reply was lost), in any state; for
        an array, its id (squeue lists its tasks as ARRAY_INDEX and ARRAY_[RANGE])."""
        found = job_with_token(parse_tagged_jobs(self.run_once(TAGGED_QUERY).stdout), token)
        return None if found is None else found.partition("_")[0]

    def find_by_token(self, tokens: Collection[str]) -> dict[str, str]:
        """The jobs not yet ended whose --comment carries one of ``tokens``, in one squeue."""
        return live_jobs_by_token(parse_tagged_jobs(self.run(TAGGED_QUERY).stdout), tokens)

    def live_array_tasks(self, tokens: Collection[str]) -> dict[str, dict[int, JobState]]:
        """The tasks not yet ended of the job arrays whose --comment carries one of ``tokens``, in one
        squeue of this user's jobs: array id -> {task index: state}."""
        wanted = set(tokens)
        live: dict[str, dict[int, JobState]] = {}
        for array_id, index, state, token in parse_tagged_array_tasks(self.run(TAGGED_TASKS_QUERY).stdout):
            if token in wanted and not state.finished:
                live.setdefault(array_id, {})[index] = state
        return live

    def run(self, command: str, *, check: bool = True, recover: Recover | None = None) -> CommandResult:
        """As the base's, with a hint when scontrol suspend/resume lacks the privileges."""
        try:
            return super().run(command, check=check, recover=recover)
        except JobModuleError as exc:
            if command.startswith("scontrol") and "ccess" in str(exc):
                raise JobModuleError(f"{exc} (suspend/resume need root, the SlurmUser or a Slurm "
                                     "operator)") from None
            raise


MODULE = SlurmJobModule
