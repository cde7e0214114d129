"""Slurm accounting (``sacct --parsable2``) reader.

``sacct -P`` / ``--parsable2`` prints one header line of field names and one line per job or job step,
``|``-separated *without* a trailing ``|`` (``--parsable`` adds one; a trailing empty field is tolerated).
Fields are found by their header name, case-insensitively, in any order. The columns read, what each
holds, the function that reads it and which ones a dump needs are declared in
:mod:`djsb.workloads.sacct_columns` (docs/reference/sacct.md). Where columns say the same thing
(JobIDRaw and JobID; ElapsedRaw, Elapsed, End - Start; TimelimitRaw and Timelimit; AllocCPUS, NCPUS
and ReqCPUS; User and UID), the first one that has a value is read and the others are not read at all.

What the scheduler recorded of each job's scheduling goes to ``Workload.recorded[job_id]``
(:class:`~djsb.workloads.job.RecordedOutcome`), so a replay can be compared with it job by job: Start
(times from the same origin as the submits), and when the dump has them Eligible (``Unknown`` -> None),
Flags (``SchedMain`` / ``SchedBackfill`` / ``SchedSubmit``: the pass that started the job; Slurm 22.05
prints them with ``StartRecieved``, its own spelling), Priority, State, Reason, NodeList and SubmitLine.

Submit times are made relative to the earliest submit of the accepted jobs; that absolute time (as a Unix
time of the naive local timestamp) is ``Workload.time_origin``. ``Workload.header`` holds the column names
(``{"Fields": "JobID|JobName|..."}``).

Skip rules (reason, first that applies):

==========================  =======================================================================
``malformed_field_count``   the line has a different number of fields than the header
``job_step``                JobID contains ``.``
``malformed_value``         a time or duration that cannot be parsed, or is out of range
``start_before_submit``     Start before Submit (not a real record: counted as malformed)
``cancelled_before_start``  State CANCELLED and the job never started (Start Unknown/None) or ran 0 s
``not_started``             State PENDING (whose Start may be the scheduler's *expected* start), or no
                            Start time
``not_finished``            started but no End (RUNNING, SUSPENDED, REQUEUED...): run time unknown
``submit_unknown``          Submit is Unknown/None
``malformed_value``         a count, memory, limit, priority or id that cannot be parsed
``no_processors``           no CPU count > 0
``duplicate_job_id``        the id was already read (``sacct -D`` duplicates; the first one wins)
==========================  =======================================================================

Jobs that ended in TIMEOUT, NODE_FAIL, FAILED, OUT_OF_MEMORY, PREEMPTED or CANCELLED after starting are kept
with the time they really ran.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from operator import attrgetter, itemgetter
from typing import Any, NamedTuple

from djsb.errors import TraceError
from djsb.workloads._textio import read_bounded
from djsb.workloads.gpus import GpuRequest
from djsb.workloads.job import RecordedOutcome, TraceJob
from djsb.workloads.records import (
    CANCELLED_BEFORE_START,
    DUPLICATE_JOB_ID,
    FIELD_COUNT,
    NO_PROCESSORS,
    SUBMIT_UNKNOWN,
    Skip,
    read_records,
)
from djsb.workloads.sacct_columns import COLUMNS, memory_mb, unmet
from djsb.workloads.submit_line import (
    array_throttle,
    requested_cpus_per_task,
    requested_exclusive,
    requested_gpus,
    requested_nodes,
    requested_requeue,
    requested_reservation,
    sbatch_options,
)
from djsb.workloads.swf import UNKNOWN, Workload

_ARRAY_OR_HET = re.compile(r"^(\d+)[_+](\d+)$")
_LEADING_DIGITS = re.compile(r"\d+")
_UNFINISHED = ("RUNNING", "SUSPENDED", "REQUEUED", "RESIZING")
"""The states of a job that started and has not ended, when the dump has no End column."""
LAST_INSTANT = (datetime(2200, 1, 1) - datetime(1970, 1, 1)) // timedelta(seconds=1)
"""Timestamps after 2200 are not a real record (pandas' datetime64[ns] ends in 2262): malformed."""
LONGEST_RUN = 100 * 365 * 86400.0
"""A run time or limit beyond a century is not a real record (Elapsed of 99999 days): malformed."""
START_BEFORE_SUBMIT = Skip("start_before_submit", malformed=True)
_VALUE = Skip("malformed_value", malformed=True)
_JOB_STEP = Skip("job_step")
_NOT_STARTED = Skip("not_started")
_NOT_FINISHED = Skip("not_finished")

Reader = Callable[[list[str]], Any]
"""A column's value on a data line split at ``|``."""


def _field_index(names: Sequence[str]) -> dict[str, int]:
    """Where a header of ``names`` puts each of its columns (lower case; the last one of a name
    repeated)."""
    return {name.strip().lower(): i for i, name in enumerate(names) if name.strip()}


def _column_readers(index: dict[str, int]) -> dict[str, Reader]:
    """The reader of each declared column (by its declared name) on the lines under a header of
    ``index`` (:func:`_field_index`): its parser on its field, or its value of none when the header
    lacks it."""
    return {column.name: _reader(column.parse, index.get(column.name.lower())) for column in COLUMNS}


def _reader(parse: Callable[[str], Any], at: int | None) -> Reader:
    """``parse`` of field ``at``; without a field, its value of the empty text."""
    if at is None:
        none = parse("")
        return lambda row: none
    if parse is str:
        return itemgetter(at)  # the text as printed, taken in C: ids are read several times per line
    return lambda row: parse(row[at])


_Times = tuple[float | None, float | None, float | None, float | None, float | None]


def _read_times(read: dict[str, Reader], row: list[str]) -> _Times:
    """A line's submission, eligibility, start and end (absolute seconds; None: not recorded) and
    run time (None: unknown), from ElapsedRaw, else Elapsed, else End - Start. Raises ValueError
    for a value that is not one."""
    start, end = read["Start"](row), read["End"](row)
    run = read["ElapsedRaw"](row)
    if run is None:
        run = read["Elapsed"](row)
    if run is None and start is not None and end is not None:
        run = end - start
    return read["Submit"](row), read["Eligible"](row), start, end, run


def _out_of_range(submit: float | None, eligible: float | None, start: float | None, end: float | None,
                  run: float | None) -> Skip | None:
    """Why a line's times are not a real record, if they are not: a run time or an instant out of
    range, a start before the submission."""
    if run is not None and not (math.isfinite(run) and run <= LONGEST_RUN):
        return _VALUE
    for instant in (start, end, submit, eligible):
        if instant is not None and not 0 <= instant < LAST_INSTANT:
            return _VALUE
    if start is not None and submit is not None and start < submit:
        return START_BEFORE_SUBMIT
    return None


def _not_ran(state: str, start: float | None, end: float | None, run: float | None, has_start: bool,
             has_end: bool) -> Skip | None:
    """Why a job in ``state`` did not run to its end, if it did not: cancelled before it ran,
    never started (pending, or no Start in a dump that has the column), not ended (no End in a
    dump that has the column, else a state of a job still on its nodes)."""
    upper = state.upper()
    started = upper != "PENDING" and (start is not None if has_start else True)
    if upper.startswith("CANCELLED") and (not started or not run or run <= 0):
        return CANCELLED_BEFORE_START
    if not started:
        return _NOT_STARTED
    if not (end is not None if has_end else upper not in _UNFINISHED):
        return _NOT_FINISHED
    return None


class Request(NamedTuple):
    """What a job of a dump asked (:func:`_read_request`)."""

    cpus: int
    nodes: int | None
    limit: float | None
    memory_mb: float | None
    gpus: GpuRequest | None


def _read_request(read: dict[str, Reader], row: list[str]) -> Request:
    """A job's CPUs (the first count above 0), nodes (those its SubmitLine asked, without one
    those allocated; None: Slurm chose), time limit (TimelimitRaw, else Timelimit; None: the
    partition's), MiB of memory (None: no request, or asked per GPU) and GPUs (as its SubmitLine
    asked them, with its ``--cpus-per-gpu`` and ``--mem-per-gpu``, else ReqTRES's count over the
    job with those the SubmitLine gave; and its ``--cpus-per-task``, which keeps DefCpuPerGPU off
    them; None: none). Raises ValueError for a value that is not one, or a limit out of range."""
    cpus = read["AllocCPUS"](row) or read["NCPUS"](row) or read["ReqCPUS"](row)
    allocated = read["NNodes"](row) or None
    submit_line = read["SubmitLine"](row)
    nodes = requested_nodes(submit_line) if submit_line else allocated
    limit = read["TimelimitRaw"](row)
    if limit is None:
        limit = read["Timelimit"](row)
    if limit is not None and not 0 <= limit <= LONGEST_RUN:
        raise ValueError(f"not a time limit: {limit} s")
    gpus = _submitted_gpus(submit_line) if "gpu" in submit_line else None
    if gpus is None:
        asked = read["ReqTRES"](row)
        gpus = None if asked is None else _brought(GpuRequest(asked[0], "job", asked[1]), submit_line)
    if gpus is not None and ("-c" in submit_line or "--cpus-per-task" in submit_line):
        gpus = replace(gpus, cpus_per_task=requested_cpus_per_task(submit_line))
    if gpus is not None and gpus.mem_per_gpu is not None:  # ReqMem is then the GPUs' memory
        return Request(cpus, nodes, limit, None, gpus)
    return Request(cpus, nodes, limit, memory_mb(read["ReqMem"](row), cpus, allocated), gpus)


def _submitted_gpus(submit_line: str) -> GpuRequest | None:
    """The GPUs a SubmitLine asked, None when it asked none or none the model holds (GPUs of two
    types at once: the job's ReqTRES total then stands for them)."""
    try:
        return requested_gpus(submit_line)
    except ValueError:
        return None


def _brought(gpus: GpuRequest, submit_line: str) -> GpuRequest:
    """GPUs only ReqTRES counts (an ``#SBATCH`` line of the script asked them) with the
    ``--cpus-per-gpu`` and ``--mem-per-gpu`` the SubmitLine gave beside them; as they are when it gave
    none, or one that is not a value (:func:`_submitted_gpus` passes over those too)."""
    if "-per-gpu" not in submit_line:
        return gpus
    try:
        return gpus.bringing(dict(sbatch_options(submit_line)))
    except ValueError:
        return gpus


def _asked_reservation(submit_line: str) -> str | None:
    """The reservation a SubmitLine asked for, read when the dump has no Reservation column or an
    empty one (None: none)."""
    return requested_reservation(submit_line) if "--reservation" in submit_line else None


def _throttled_array(job_text: str, submit_line: str) -> tuple[int, int] | None:
    """An array task's (array job id, throttle) when its JobID is ``123_4`` and its SubmitLine's
    ``--array`` has a ``%N`` throttle; None otherwise (a throttle that is not a count included)."""
    if "_" not in job_text or "%" not in submit_line:
        return None
    array_id = job_text.split("_", 1)[0]
    try:
        throttle = array_throttle(submit_line)
    except ValueError:
        return None
    return (int(array_id), throttle) if array_id.isdigit() and throttle is not None else None


def _array_task(job_text: str) -> tuple[int, int] | None:
    """An array task's (array job id, task index) from its JobID ``123_4``; None for any other job
    (a pending array's ``123_[5-9]`` never ran, so no dump line of a replayed job has it)."""
    if "_" not in job_text:
        return None
    match = _ARRAY_OR_HET.match(job_text)
    return (int(match.group(1)), int(match.group(2))) if match is not None and "+" not in job_text else None


def _job_number(text: str) -> int:
    """The job number ``text`` starts with (``123`` of ``123_4``), 0 if none: fresh ids go above
    every one of a dump."""
    value = text.strip()
    if value.isdecimal():  # a plain id, most lines: what the pattern would match, without it
        return int(value)
    digits = _LEADING_DIGITS.match(value)
    return int(digits.group()) if digits else 0


def _job_id(job_text: str, raw_id: str) -> int | None:
    """A job's id: JobIDRaw when a plain integer, else JobID; None for an array task or a
    heterogeneous component without JobIDRaw (it gets a fresh id). Raises ValueError for another
    id."""
    raw = raw_id.strip()
    if raw.isdigit():
        return int(raw)
    if job_text.isdigit():
        return int(job_text)
    if _ARRAY_OR_HET.match(job_text):
        return None
    raise ValueError(f"not a job id: {job_text!r}")


def _user(read: dict[str, Reader], row: list[str]) -> str:
    """A job's user: User, else ``u<uid>`` of UID, else ``unknown``."""
    name: str = read["User"](row)
    if name:
        return name
    uid = read["UID"](row)
    return f"u{uid}" if uid.isdigit() else UNKNOWN


class SacctJob(NamedTuple):
    """One job of a dump as read, its times absolute (Unix seconds of the dump's timestamps read as
    UTC). ``job_id`` None: an array task or heterogeneous component without JobIDRaw, given a fresh
    id once the whole dump is read; ``job_text``: JobID as printed; ``start`` None: the dump has no
    Start column, so nothing of its scheduling is recorded."""

    job_id: int | None
    job_text: str
    state: str
    submit: float
    run_time: float
    cpus: int
    requested_time: float | None
    memory_mb: float | None
    nodes: int | None
    user: str
    account: str
    partition: str | None
    qos: str | None
    start: float | None
    eligible: float | None
    started_by: str | None
    reason: str
    priority: int | None
    node_list: str
    submit_line: str
    gpus: GpuRequest | None
    array: tuple[int, int] | None
    reservation: str | None
    name: str | None
    exclusive: bool
    requeue: bool | None


class DumpLines:
    """The parser of a dump's data lines for :func:`~djsb.workloads.records.read_records`: a line
    to a :class:`SacctJob`, a :class:`Skip` or None (blank). It keeps the ids read (a duplicate is
    skipped) and the largest job number of any line, steps and skipped lines too (fresh ids go
    above it)."""

    def __init__(self, names: Sequence[str]) -> None:
        index = _field_index(names)
        self.read = _column_readers(index)
        self.width = len(names)
        self.has_start, self.has_end = "start" in index, "end" in index
        self.seen: set[int] = set()
        self.max_numeric = 0

    def __call__(self, lineno: int, raw: str) -> SacctJob | Skip | None:
        """The job of data line ``raw``, or the first skip rule of the module's docstring it meets."""
        if not raw.strip():
            return None
        row = raw.split("|")
        if len(row) == self.width + 1 and row[-1] == "":
            row.pop()
        if len(row) != self.width:
            return FIELD_COUNT
        read = self.read
        raw_id = read["JobIDRaw"](row)
        job_text = (read["JobID"](row) or raw_id).strip()
        self.max_numeric = max(self.max_numeric, _job_number(job_text), _job_number(raw_id))
        if "." in job_text or "." in raw_id:
            return _JOB_STEP
        state = read["State"](row)
        try:
            submit, eligible, start, end, run = _read_times(read, row)
        except ValueError:
            return _VALUE
        skip = (_out_of_range(submit, eligible, start, end, run)
                or _not_ran(state, start, end, run, self.has_start, self.has_end))
        if skip is not None:
            return skip
        if run is None:
            return _NOT_FINISHED
        if submit is None:
            return SUBMIT_UNKNOWN
        try:
            cpus, nodes, limit, memory, gpus = _read_request(read, row)
            priority = read["Priority"](row)
            number = _job_id(job_text, raw_id)
        except ValueError:
            return _VALUE
        if cpus <= 0:
            return NO_PROCESSORS
        if number is not None:
            if number in self.seen:
                return DUPLICATE_JOB_ID
            self.seen.add(number)
        submit_line = read["SubmitLine"](row)
        array = _throttled_array(job_text, submit_line)
        return SacctJob(number, job_text, state, submit, max(run, 0.0), cpus, limit, memory, nodes,
                        _user(read, row), read["Account"](row) or UNKNOWN, read["Partition"](row),
                        read["QOS"](row), start, eligible, read["Flags"](row), read["Reason"](row), priority,
                        read["NodeList"](row), submit_line, gpus, array,
                        read["Reservation"](row) or _asked_reservation(submit_line), read["JobName"](row),
                        "--exclusive" in submit_line and requested_exclusive(submit_line),
                        requested_requeue(submit_line) if "requeue" in submit_line else None)


def _header_names(lines: list[str], source: str) -> tuple[int, list[str]]:
    """The index of a dump's header line (its first non-blank one) and its column names. Raises
    :class:`~djsb.errors.TraceError` for an empty dump or a header that lacks a needed column."""
    header_index = next((i for i, line in enumerate(lines) if line.strip()), None)
    if header_index is None:
        raise TraceError("empty sacct output (expected a header line such as JobID|Submit|...)",
                         source=source, line=1)
    names = lines[header_index].rstrip("\r").split("|")
    if names and names[-1] == "":  # --parsable's trailing '|'
        names = names[:-1]
    need = unmet(_field_index(names).keys())
    if need is not None:
        raise TraceError(need.error, source=source, line=header_index + 1)
    return header_index, names


def _trace_job(job: SacctJob, number: int, origin: float) -> TraceJob:
    """The :class:`TraceJob` of ``job`` as job ``number``, its submission from ``origin``."""
    return TraceJob(number, job.submit - origin, job.run_time, job.cpus, job.requested_time, job.memory_mb,
                    job.nodes, job.user, job.account, job.partition, job.qos, gpus=job.gpus, array=job.array,
                    array_task=_array_task(job.job_text), reservation=job.reservation, name=job.name,
                    exclusive=job.exclusive, requeue=job.requeue)


def _recorded_outcome(job: SacctJob, start: float, origin: float) -> RecordedOutcome:
    """What was recorded of the scheduling of ``job``, which started at ``start``, its times from
    ``origin``."""
    eligible = job.eligible
    return RecordedOutcome(start - origin, None if eligible is None else eligible - origin, job.started_by,
                           job.state, job.reason, job.priority, job.node_list, job.submit_line)


def _extra_of(job: SacctJob, number: int) -> dict[str, str]:
    """What ``Workload.extra`` keeps of ``job`` (job ``number``): its State, and its JobID when that
    is not the number."""
    info = {"State": job.state} if job.state else {}
    if job.job_text != str(number):
        info["JobID"] = job.job_text
    return info


def parse_sacct_parsable2(text: str, *, source: str = "<sacct>", keep_extra: bool = True,
                          align: float = 0.0) -> Workload:
    """Parse ``sacct --parsable2`` output (header line required) into a :class:`Workload`.

    Pure: text in, records out. ``keep_extra=False`` drops the per-job ``State``/``JobID`` strings (saves
    memory on very large dumps). The times count from the first submission, or with ``align`` (seconds)
    from the multiple of it at or before the first submission (a replay of Slurm counts from a
    multiple of bf_resolution: djsb.history.start.clock_step). Raises
    :class:`~djsb.errors.TraceError` when there is no header naming JobID, when a needed column is
    missing, or when most data lines are malformed.
    """
    lines = text.splitlines()
    header_index, names = _header_names(lines, source)
    parse = DumpLines(names)
    accepted, skipped = read_records(lines[header_index + 1:], parse, source=source,
                                     kind="sacct --parsable2 output", start=header_index + 2)
    next_id = parse.max_numeric + 1
    origin = min((job.submit for job in accepted), default=0.0)
    if align > 0:
        origin = math.floor(origin / align) * align
    jobs: list[TraceJob] = []
    extra: dict[int, dict[str, str]] = {}
    recorded: dict[int, RecordedOutcome] = {}
    for job in accepted:
        number = job.job_id
        if number is None:
            number = next_id
            next_id += 1
        jobs.append(_trace_job(job, number, origin))
        if job.start is not None:
            recorded[number] = _recorded_outcome(job, job.start, origin)
        if keep_extra:
            info = _extra_of(job, number)
            if info:
                extra[number] = info
    jobs.sort(key=attrgetter("submit", "job_id"))
    return Workload(jobs, {"Fields": "|".join(n.strip() for n in names)}, skipped, source, extra, origin,
                    recorded)


def read_sacct(path: str | os.PathLike, *, keep_extra: bool = True, align: float = 0.0) -> Workload:
    """Read a file of ``sacct --parsable2`` output (plain or gzip) with :func:`parse_sacct_parsable2`."""
    source = os.fspath(path)
    text = read_bounded(source, what="sacct --parsable2 output")
    return parse_sacct_parsable2(text, source=source, keep_extra=keep_extra, align=align)


def merged_dumps(parts: Sequence[Workload], *, align: float = 0.0) -> Workload:
    """Several sacct dumps of one history (each read by :func:`read_sacct`, in time order) as one:
    times count from the first submission of them all (or the multiple of ``align`` before it); a
    job in more than one dump (windows that overlap) is kept as the first dump has it."""
    if len(parts) == 1:
        return parts[0]
    first = min(part.time_origin + min((job.submit for job in part.jobs), default=0.0) for part in parts)
    origin = math.floor(first / align) * align if align > 0 else first
    jobs: dict[int, TraceJob] = {}
    recorded: dict[int, RecordedOutcome] = {}
    extra: dict[int, dict[str, str]] = {}
    for part in parts:
        shift = part.time_origin - origin
        for job in part.jobs:
            if job.job_id in jobs:
                continue
            jobs[job.job_id] = replace(job, submit=job.submit + shift)
            outcome = part.recorded.get(job.job_id)
            if outcome is not None:
                recorded[job.job_id] = replace(
                    outcome, start=outcome.start + shift,
                    eligible=None if outcome.eligible is None else outcome.eligible + shift)
            if job.job_id in part.extra:
                extra[job.job_id] = part.extra[job.job_id]
    skipped = [record for part in parts for record in part.skipped]
    return Workload(sorted(jobs.values(), key=attrgetter("submit", "job_id")), parts[-1].header, skipped,
                    " + ".join(part.source for part in parts), extra, origin, recorded)
