"""Pure parsers of Slurm's command output (text -> records), for job_modules/slurm/module.py.

Every function here takes the text a Slurm command printed and returns plain values, so each is
tested on output captured from a real Slurm 22.05 (tests/fixtures/slurm/). The commands are run
with ``SLURM_TIME_FORMAT=%s``: times come as Unix seconds, whatever the time zone of the machine
that runs the client (the fixtures show the same jobs printed in UTC and in UTC+05:30).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from djsb.jobs.api import JobState, JobStatus
from djsb.jobs.hostlist import node_names
from djsb.jobs.scheduler_base import TOKEN_PREFIX, TaggedJob

# The squeue --Format fields, by the name the parser gives them, in the order parse_squeue reads
# them. "Field:|" means no width limit (the whole value) followed by "|"; Reason is last because it
# is free text.
SQUEUE_COLUMNS = {"id": "JobID", "state": "State", "submit": "SubmitTime", "start": "StartTime",
                  "end": "EndTime", "nodes": "NodeList", "exit_code": "exit_code", "restarts": "RestartCnt",
                  "reason": "Reason"}
SQUEUE_FIELDS = tuple(SQUEUE_COLUMNS.values())
SQUEUE_FORMAT = ",".join(f"{name}:|" for name in SQUEUE_FIELDS[:-1]) + f",{SQUEUE_FIELDS[-1]}:"

# The sacct --format fields (with --parsable2, "|"-separated), likewise. sacct has no restart count:
# a requeued job's earlier runs are records of their own (REQUEUED), the last one is the job now.
SACCT_COLUMNS = {"id": "JobIDRaw", "state": "State", "submit": "Submit", "start": "Start", "end": "End",
                 "nodes": "NodeList", "exit_code": "ExitCode", "reason": "Reason"}
SACCT_FIELDS = tuple(SACCT_COLUMNS.values())
SACCT_FORMAT = ",".join(SACCT_FIELDS)

# Slurm job states (squeue %T, scontrol JobState, sacct State) -> what they mean for the benchmark.
# Jobs on their way in (configuring, requeued, held for a reservation) count as pending. A job that
# is COMPLETING (or STAGE_OUT) has ended: its processes are gone or going, its end time is stamped,
# and it may hold only some of its nodes while they finish tearing it down, minutes long when
# slurmctld was down as it ended: counting it as running would colocate the next job on
# what is left of it. Its exit code tells a success from a failure (see ENDING_STATES). SIGNALING
# (signals being delivered) still runs. STOPPED (SIGSTOP through scancel) is a suspension the
# scheduler did not do; the harness treats it as SUSPENDED all the same.
STATE_TABLE: dict[str, JobState] = {
    "PENDING": JobState.PENDING,
    "CONFIGURING": JobState.PENDING,
    "REQUEUED": JobState.PENDING,
    "REQUEUE_FED": JobState.PENDING,
    "REQUEUE_HOLD": JobState.PENDING,
    "RESV_DEL_HOLD": JobState.PENDING,
    "RUNNING": JobState.RUNNING,
    "COMPLETING": JobState.COMPLETED,
    "SIGNALING": JobState.RUNNING,
    "STAGE_OUT": JobState.COMPLETED,
    "RESIZING": JobState.RUNNING,
    "SUSPENDED": JobState.SUSPENDED,
    "STOPPED": JobState.SUSPENDED,
    "COMPLETED": JobState.COMPLETED,
    "FAILED": JobState.FAILED,
    "SPECIAL_EXIT": JobState.FAILED,
    "CANCELLED": JobState.CANCELLED,
    "REVOKED": JobState.CANCELLED,
    "TIMEOUT": JobState.TIMEOUT,
    "DEADLINE": JobState.TIMEOUT,
    "PREEMPTED": JobState.PREEMPTED,
    "NODE_FAIL": JobState.NODE_FAIL,
    "BOOT_FAIL": JobState.NODE_FAIL,
    "OUT_OF_MEMORY": JobState.OUT_OF_MEMORY,
}

# States in which a job has ended but Slurm does not tell its final state yet (a cancelled job too
# shows COMPLETING, exit code 0; so does a job whose node died, for as long as SlurmdTimeout, before
# Slurm fails or requeues it): COMPLETED above, TIMEOUT when the reason is its time limit, FAILED
# when its exit code is not 0, as a guess only: the status is not final (JobStatus.final) and its
# reason says so (ENDING_REASON), so the module asks the accounting for the final state and can
# tell a job it cancelled itself.
ENDING_STATES = frozenset({"COMPLETING", "STAGE_OUT"})
ENDING_REASON = "ending (final state not yet known)"

# Messages of a controller that is down, restarting or overloaded: worth retrying. An unknown job
# id ("slurm_load_jobs error: Invalid job id specified") is an answer, not one of these.
TRANSIENT_PATTERNS = re.compile(
    r"Socket timed out|Unable to contact slurm controller|slurm_load_jobs error: (?!Invalid job id)"
    r"|Zero Bytes were transmitted|Connection refused|Resource temporarily unavailable"
    r"|Slurm temporarily unable|Communication connection failure|Transport endpoint is not connected",
    re.IGNORECASE)

INVALID_JOB_ID = "Invalid job id specified"


def slurm_state(text: str) -> JobState:
    """The harness state of a Slurm state name; sacct's 'CANCELLED by 0' counts as CANCELLED."""
    words = text.split()
    return STATE_TABLE.get(words[0].upper(), JobState.UNKNOWN) if words else JobState.UNKNOWN


def slurm_epoch(text: str) -> float | None:
    """Unix seconds printed under SLURM_TIME_FORMAT=%s; None for N/A, NONE, Unknown and empty."""
    text = text.strip()
    return float(text) if text.isdigit() else None


def wait_status_exit_code(text: str) -> int | None:
    """squeue's exit_code is a wait(2) status: the exit code, or 128 + the signal that killed it."""
    if not text.strip().isdigit():
        return None
    status = int(text)
    signal = status & 0x7F
    return 128 + signal if signal else status >> 8


def sacct_exit_code(text: str) -> int | None:
    """sacct's ExitCode 'code:signal': the exit code, or 128 + the signal that killed the job."""
    code, _, signal = text.strip().partition(":")
    if not (code.isdigit() and signal.isdigit()):
        return None
    return 128 + int(signal) if int(signal) else int(code)


def _status(fields: dict[str, str], exit_code: int | None) -> JobStatus:
    """A JobStatus from one job's fields (named as the keys of SQUEUE_COLUMNS), keeping only the
    times that are facts.

    squeue prints a pending job's *expected* start and a running job's *expected* end (start plus
    time limit); those are forecasts, so a start counts only once the job left PENDING and an end
    only once it finished.
    """
    state_text = fields["state"]
    state = slurm_state(state_text)
    reason = "" if fields["reason"] in ("None", "") else fields["reason"]
    final = state_text.upper() not in ENDING_STATES
    if not final:
        state = JobState.TIMEOUT if reason == "TimeLimit" else JobState.FAILED if exit_code else state
        reason = reason or ENDING_REASON
    started = state not in (JobState.PENDING, JobState.UNKNOWN)
    restarts = fields.get("restarts", "0")
    return JobStatus(
        state=state,
        submit=slurm_epoch(fields["submit"]),
        start=slurm_epoch(fields["start"]) if started else None,
        end=slurm_epoch(fields["end"]) if state.finished else None,
        exit_code=exit_code if state.finished else None,
        nodes=node_names(fields["nodes"]) if started else (),
        reason=reason,
        final=final,
        restarts=int(restarts) if restarts.isdigit() else 0,
    )


def _parse_table(stdout: str, command: str, columns: Mapping[str, str],
                 exit_code: Callable[[str], int | None]) -> dict[str, JobStatus]:
    """Records of '|'-separated lines with the fields ``columns`` (the last one free text), by job id.

    With several lines for one id (sacct's records of a requeued job), the last, most recent, wins.
    """
    records: dict[str, JobStatus] = {}
    for line in stdout.splitlines():
        if not line.strip():
            continue
        values = [value.strip() for value in line.split("|", len(columns) - 1)]
        if len(values) != len(columns):
            raise ValueError(f"{command} line with {len(values)} fields, expected {len(columns)}: {line!r}")
        fields = dict(zip(columns, values, strict=True))
        records[fields["id"]] = _status(fields, exit_code(fields["exit_code"]))
    return records


def parse_array_states(stdout: str) -> dict[int, JobState]:
    """``squeue --noheader --array --format=%K|%T`` output: each array task's index -> its state."""
    states = {}
    for line in stdout.splitlines():
        index, _, state = line.strip().partition("|")
        if index.isdigit():
            states[int(index)] = STATE_TABLE.get(state.strip().upper(), JobState.UNKNOWN)
    return states


def parse_array_task_ids(stdout: str) -> dict[str, str]:
    """The own job id of each job array task that left PENDING, by its ``ARRAY_INDEX`` name, from
    ``squeue --array --format=%i|%A|%T`` or ``sacct --format=JobID,JobIDRaw,State`` (the same three
    columns). A pending task shows its array's id as its own until it starts (Slurm splits it off
    then, with an id of its own; the last one keeps the array's), so it is left out; so are plain jobs."""
    ids = {}
    for line in stdout.splitlines():
        name, _, rest = line.strip().partition("|")
        own, _, state = rest.partition("|")
        array_id, underscore, index = name.partition("_")
        if underscore and array_id.isdigit() and index.isdigit() and own.isdigit() \
                and STATE_TABLE.get(state.strip().upper()) != JobState.PENDING:
            ids[name] = own
    return ids


def parse_squeue(stdout: str) -> dict[str, JobStatus]:
    """Records of ``squeue --noheader --Format=SQUEUE_FORMAT`` output, keyed by job id."""
    return _parse_table(stdout, "squeue", SQUEUE_COLUMNS, wait_status_exit_code)


def parse_sacct(stdout: str) -> dict[str, JobStatus]:
    """Records of ``sacct --noheader --parsable2 --allocations --format=SACCT_FORMAT``, keyed by job id."""
    return _parse_table(stdout, "sacct", SACCT_COLUMNS, sacct_exit_code)


def parse_sbatch_parsable(stdout: str) -> str:
    """The job id ``sbatch --parsable`` printed: 'ID' or 'ID;cluster'."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    if not lines:
        raise ValueError("sbatch --parsable printed nothing")
    job_id = lines[-1].split(";", 1)[0]
    if not job_id.isdigit():
        raise ValueError(f"sbatch --parsable printed {lines[-1]!r}, not a job id")
    return job_id


def is_transient(stderr: str) -> bool:
    """The error text of a Slurm command says the controller could not answer now."""
    return bool(TRANSIENT_PATTERNS.search(stderr))


def parse_config_value(stdout: str, key: str) -> str | None:
    """The value of ``key`` in ``scontrol show config`` output ('Key = value' lines)."""
    for line in stdout.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() == key:
            return value.strip()
    return None


TAGGED_FORMAT = "%i|%T|%k"
"""The squeue --format :func:`parse_tagged_jobs` reads: id, state, comment (last: free text)."""


def parse_tagged_jobs(stdout: str) -> list[TaggedJob]:
    """(job id, state, submission token) of each job of ``squeue --noheader --format=TAGGED_FORMAT``
    output whose comment carries a DJSB token; other jobs are skipped."""
    tagged: list[TaggedJob] = []
    for line in stdout.splitlines():
        job_id, _, rest = line.partition("|")
        state, _, comment = rest.partition("|")
        comment = comment.strip()
        if comment.startswith(TOKEN_PREFIX):
            tagged.append((job_id.strip(), slurm_state(state), comment[len(TOKEN_PREFIX):]))
    return tagged


def parse_tagged_array_tasks(stdout: str) -> list[tuple[str, int, JobState, str]]:
    """(array id, task index, state, submission token) of each array task of ``squeue --noheader
    --array --format=TAGGED_FORMAT`` output (ids ``ARRAY_INDEX``) whose comment carries a DJSB token.
    Other lines are skipped: jobs that are not arrays, and an array's own record (its id alone), which
    stands for its tasks cancelled while pending."""
    tasks: list[tuple[str, int, JobState, str]] = []
    for job_id, state, token in parse_tagged_jobs(stdout):
        array_id, _, index = job_id.partition("_")
        if index.isdigit():
            tasks.append((array_id, int(index), state, token))
    return tasks
