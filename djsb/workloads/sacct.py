"""Slurm accounting (``sacct --parsable2``) reader.

``sacct -P`` / ``--parsable2`` prints one header line of field names and one line per job or job step,
``|``-separated *without* a trailing ``|`` (``--parsable`` adds one; a trailing empty field is tolerated).
Fields are found by their header name, case-insensitively, in any order; only these are used:

==================  ==========================================================================================
JobID / JobIDRaw    the job id; ids with a ``.`` are job steps (``123.batch``, ``123.extern``, ``123.0``) and
                    are skipped. JobIDRaw (a plain integer) is preferred when present; without it, array
                    tasks (``123_4``) and heterogeneous components (``123+1``) get fresh ids above the
                    largest job number in the output, in input order (the original id is kept in
                    ``Workload.extra``)
Submit Start End    ``YYYY-MM-DDTHH:MM:SS`` (sacct's default ``SLURM_TIME_FORMAT=standard``), or
                    ``Unknown`` / ``None``. Times are local wall-clock without a zone; they are read as if
                    UTC, so differences are right except across a DST change
Elapsed/ElapsedRaw  run time (a Slurm time: ``D-HH:MM:SS``, ``HH:MM:SS``, ``MM:SS[.mmm]``, read by
                    djsb.yamlnodes.parse_duration; or seconds); else End - Start
Timelimit /         requested time (``D-HH:MM:SS``, ``HH:MM:SS``, ``MM:SS``; minutes for TimelimitRaw);
TimelimitRaw        ``UNLIMITED``, ``Partition_Limit``, ``INVALID`` or empty -> None (partition maximum)
AllocCPUS / NCPUS   cpus (first that is > 0), else ReqCPUS
NNodes              nodes: the count Slurm allocated. With a SubmitLine the count is the one it asked
                    (``-N``/``--nodes``, the minimum of a range), none when it asked none: a job of
                    ``--ntasks=8`` alone may take any number of nodes. ReqMem's per-node suffix ``n``
                    is multiplied by the allocated count
ReqMem              memory: ``<number>[K|M|G|T|P]`` in MiB by default (sacct >= 21.08 prints the job's total
                    ``mem`` TRES request); the suffixes ``c`` (per CPU) and ``n`` (per node) of older Slurm
                    are multiplied out. ``0`` or empty -> None
User / UID          user name (``u<uid>`` from UID when there is no User column; ``unknown`` if empty)
Account             account (``unknown`` if empty)
Partition, QOS      as printed (None if empty)
State               ``CANCELLED by <uid>`` etc.; kept in ``Workload.extra[job_id]["State"]``
==================  ==========================================================================================

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
``cancelled_before_start``  State CANCELLED and the job never started (Start Unknown/None) or ran 0 s
``not_started``             State PENDING (whose Start may be the scheduler's *expected* start), or no
                            Start time
``not_finished``            started but no End (RUNNING, SUSPENDED, REQUEUED...): run time unknown
``submit_unknown``          Submit is Unknown/None
``malformed_value``         a time, duration, count or memory value that cannot be parsed (times are
                            parsed right after ``job_step``, the other values at this point)
``no_processors``           no CPU count > 0
``duplicate_job_id``        the id was already read (``sacct -D`` duplicates; the first one wins)
==========================  =======================================================================

Jobs that ended in TIMEOUT, NODE_FAIL, FAILED, OUT_OF_MEMORY, PREEMPTED or CANCELLED after starting are kept
with the time they really ran.
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from operator import attrgetter, itemgetter

from djsb.errors import TraceError
from djsb.workloads._textio import read_bounded
from djsb.workloads.job import STARTED_BY, RecordedOutcome, TraceJob
from djsb.workloads.records import (
    CANCELLED_BEFORE_START,
    DUPLICATE_JOB_ID,
    FIELD_COUNT,
    NO_PROCESSORS,
    SUBMIT_UNKNOWN,
    Skip,
    read_records,
)
from djsb.workloads.submit_line import requested_nodes
from djsb.workloads.swf import UNKNOWN, Workload
from djsb.yamlnodes import parse_duration

_NO_TIME = {"", "unknown", "none"}
_NO_LIMIT = {"", "unlimited", "partition_limit", "invalid", "none", "unknown"}
_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)([cn]?)$", re.IGNORECASE)
_MEM_SCALE = {"": 1.0, "K": 1.0 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}
_ARRAY_OR_HET = re.compile(r"^(\d+)[_+](\d+)$")
_LEADING_DIGITS = re.compile(r"\d+")
_SCHED_FLAGS = {f"sched{name}": name for name in STARTED_BY}
_EPOCH = datetime(1970, 1, 1)
_SECOND = timedelta(seconds=1)
LAST_INSTANT = (datetime(2200, 1, 1) - _EPOCH) // _SECOND
"""Timestamps after 2200 are not a real record (pandas' datetime64[ns] ends in 2262): malformed."""
LONGEST_RUN = 100 * 365 * 86400.0
"""A run time or limit beyond a century is not a real record (Elapsed of 99999 days): malformed."""
START_BEFORE_SUBMIT = Skip("start_before_submit", malformed=True)


def parse_sacct_time(text: str) -> float | None:
    """Seconds since the epoch of a sacct timestamp read as UTC; None for Unknown/None/empty.

    Raises ValueError for anything else than ``YYYY-MM-DDTHH:MM:SS`` (optionally with fractional seconds).
    """
    value = text.strip()
    if value.lower() in _NO_TIME:
        return None
    if len(value) < 19 or value[10] != "T":
        raise ValueError(f"not a sacct timestamp (YYYY-MM-DDTHH:MM:SS): {text!r}")
    stamp = datetime.fromisoformat(value)
    if stamp.tzinfo is not None:
        return stamp.timestamp()
    return (stamp - _EPOCH) // _SECOND + stamp.microsecond / 1e6  # whole seconds exactly, as timegm


def format_sacct_time(seconds: float) -> str:
    """A Unix time as sacct prints it (``YYYY-MM-DDTHH:MM:SS``, UTC as :func:`parse_sacct_time` reads it)."""
    return (_EPOCH + timedelta(seconds=int(seconds))).strftime("%Y-%m-%dT%H:%M:%S")


def parse_timelimit(text: str) -> float | None:
    """Seconds of a sacct Timelimit; None for UNLIMITED, Partition_Limit, INVALID or empty."""
    value = text.strip()
    if value.lower() in _NO_LIMIT:
        return None
    return _slurm_duration(value)


@functools.lru_cache(maxsize=1 << 16)
def _slurm_duration(text: str) -> float:
    """Seconds of a Slurm time as sacct prints Elapsed and Timelimit (``parse_duration`` in
    minutes), remembered: a dump repeats its time limits and run times over hundreds of thousands
    of lines. A pure function of the text, so no entry ever goes stale; the size bound only keeps
    the memory small on a dump of many distinct times."""
    return parse_duration(text, "min")


def parse_reqmem(text: str, cpus: int, nodes: int | None) -> float | None:
    """MiB of a sacct ReqMem (``4000M``, ``16G``, ``2Gc`` per CPU, ``1.50Gn`` per node); None for 0/empty."""
    value = text.strip()
    if not value:
        return None
    m = _MEMORY.match(value)
    if not m:
        raise ValueError(f"not a ReqMem value: {text!r}")
    number, unit, per = m.groups()
    mb = float(number) * _MEM_SCALE[unit.upper()]
    if per.lower() == "c":
        mb *= cpus
    elif per.lower() == "n":
        mb *= nodes or 1
    return mb if mb > 0 else None


_VALUE = Skip("malformed_value", malformed=True)
_JOB_STEP = Skip("job_step")
_NOT_STARTED = Skip("not_started")
_NOT_FINISHED = Skip("not_finished")


def _count(text: str) -> int:
    value = text.strip()
    return int(value) if value else 0


def parse_sacct_parsable2(text: str, *, source: str = "<sacct>", keep_extra: bool = True,
                          align: float = 0.0) -> Workload:
    """Parse ``sacct --parsable2`` output (header line required) into a :class:`Workload`.

    Pure: text in, records out. ``keep_extra=False`` drops the per-job ``State``/``JobID`` strings (saves
    memory on very large dumps). The times count from the first submission, or with ``align`` (seconds)
    from the multiple of it at or before the first submission (a replay of Slurm counts from a
    multiple of bf_resolution: djsb.history.replay.clock_step). Raises
    :class:`~djsb.errors.TraceError` when there is no header naming JobID, when a needed column is
    missing, or when most data lines are malformed.
    """
    lines = text.splitlines()
    header_index = next((i for i, line in enumerate(lines) if line.strip()), None)
    if header_index is None:
        raise TraceError("empty sacct output (expected a header line such as JobID|Submit|...)",
                         source=source, line=1)
    header_line = lines[header_index].rstrip("\r")
    names = header_line.split("|")
    if names and names[-1] == "":  # --parsable's trailing '|'
        names = names[:-1]
    col = {name.strip().lower(): i for i, name in enumerate(names) if name.strip()}
    if "jobid" not in col and "jobidraw" not in col:
        raise TraceError("no JobID column in the header: run sacct with --parsable2 and without "
                         "--noheader", source=source, line=header_index + 1)
    if "submit" not in col:
        raise TraceError("no Submit column: add Submit to sacct --format", source=source,
                         line=header_index + 1)
    if "elapsed" not in col and "elapsedraw" not in col and not ("start" in col and "end" in col):
        raise TraceError("no run time: add Elapsed (or Start and End) to sacct --format", source=source,
                         line=header_index + 1)
    if not ({"alloccpus", "ncpus", "reqcpus"} & col.keys()):
        raise TraceError("no CPU count: add AllocCPUS (or NCPUS) to sacct --format", source=source,
                         line=header_index + 1)

    def getter(*keys: str) -> Callable[[list[str]], str]:
        """The field of the first of ``keys`` the header names (C-level ``itemgetter``: it is read
        several times per line), else always ""."""
        for key in keys:
            if key in col:
                return itemgetter(col[key])
        return lambda row: ""

    g_jobid = getter("jobid")
    g_jobidraw = getter("jobidraw")
    g_state = getter("state")
    g_submit, g_start, g_end = getter("submit"), getter("start"), getter("end")
    g_elapsed, g_elapsedraw = getter("elapsed"), getter("elapsedraw")
    g_tl, g_tlraw = getter("timelimit"), getter("timelimitraw")
    g_alloc, g_ncpus, g_req = getter("alloccpus"), getter("ncpus"), getter("reqcpus")
    g_nnodes, g_reqmem = getter("nnodes"), getter("reqmem")
    g_user, g_uid, g_account = getter("user"), getter("uid"), getter("account")
    g_partition, g_qos = getter("partition"), getter("qos")
    g_eligible, g_flags, g_priority = getter("eligible"), getter("flags"), getter("priority")
    g_reason, g_nodelist, g_submit_line = getter("reason"), getter("nodelist"), getter("submitline")
    seen: set[int] = set()
    max_numeric = 0  # the largest job number on any line (steps and skipped jobs too): fresh ids go above
    width = len(names)

    Parsed = tuple[int | None, str, _Job, str, _Outcome | None]

    def parse(lineno: int, raw: str) -> Parsed | Skip | None:
        """(id or None for a fresh one, JobID text, the job's fields after its id, state, the fields
        of what was recorded of its scheduling or None without a Start column) of one line, in
        absolute times, or why it is skipped."""
        nonlocal max_numeric
        if not raw.strip():
            return None
        row = raw.split("|")
        if len(row) == width + 1 and row[-1] == "":
            row.pop()
        if len(row) != width:
            return FIELD_COUNT
        job_text = (g_jobid(row) or g_jobidraw(row)).strip()
        for text in (job_text, g_jobidraw(row)):
            digits = _LEADING_DIGITS.match(text.strip())
            if digits:
                max_numeric = max(max_numeric, int(digits.group()))
        if "." in job_text or "." in g_jobidraw(row):
            return _JOB_STEP
        state = g_state(row).strip()
        upper_state = state.upper()
        try:
            start = parse_sacct_time(g_start(row))
            end = parse_sacct_time(g_end(row))
            submit = parse_sacct_time(g_submit(row))
            eligible = parse_sacct_time(g_eligible(row))
            if g_elapsedraw(row).strip():
                run: float | None = float(g_elapsedraw(row))
            elif g_elapsed(row).strip():
                run = _slurm_duration(g_elapsed(row))
            elif start is not None and end is not None:
                run = end - start
            else:
                run = None
            if run is not None and not (math.isfinite(run) and run <= LONGEST_RUN):
                return _VALUE
            if any(instant is not None and not 0 <= instant < LAST_INSTANT
                   for instant in (start, end, submit, eligible)):
                return _VALUE
        except ValueError:
            return _VALUE
        if start is not None and submit is not None and start < submit:
            return START_BEFORE_SUBMIT
        started = upper_state != "PENDING" and (start is not None if "start" in col else True)
        if upper_state.startswith("CANCELLED") and (not started or not run or run <= 0):
            return CANCELLED_BEFORE_START
        if not started:
            return _NOT_STARTED
        if "end" in col:
            finished = end is not None
        else:
            finished = upper_state not in ("RUNNING", "SUSPENDED", "REQUEUED", "RESIZING")
        if not finished or run is None:
            return _NOT_FINISHED
        if submit is None:
            return SUBMIT_UNKNOWN
        try:
            cpus = _count(g_alloc(row)) or _count(g_ncpus(row)) or _count(g_req(row))
            allocated = _count(g_nnodes(row)) or None
            submit_line = g_submit_line(row).strip()
            nodes = requested_nodes(submit_line) if submit_line else allocated
            if g_tlraw(row).strip().isdigit():
                limit: float | None = float(g_tlraw(row)) * 60.0
            else:
                limit = parse_timelimit(g_tl(row))
            if limit is not None and not 0 <= limit <= LONGEST_RUN:
                return _VALUE
            memory = parse_reqmem(g_reqmem(row), cpus, allocated)
            priority_text = g_priority(row).strip()
            priority = int(priority_text) if priority_text else None
            raw_id = g_jobidraw(row).strip()
            if raw_id.isdigit():
                job_id: int | None = int(raw_id)
            elif job_text.isdigit():
                job_id = int(job_text)
            elif _ARRAY_OR_HET.match(job_text):
                job_id = None  # a fresh id is given below
            else:
                return _VALUE
        except ValueError:
            return _VALUE
        if cpus <= 0:
            return NO_PROCESSORS
        if job_id is not None:
            if job_id in seen:
                return DUPLICATE_JOB_ID
            seen.add(job_id)
        user = g_user(row).strip()
        if not user:
            uid = g_uid(row).strip()
            user = f"u{uid}" if uid.isdigit() else UNKNOWN
        account = g_account(row).strip() or UNKNOWN
        job = (submit, max(run, 0.0), cpus, limit, memory, nodes, user, account,
               g_partition(row).strip() or None, g_qos(row).strip() or None)
        outcome = None if start is None else (
            start, eligible, started_by(g_flags(row)), state, g_reason(row).strip(), priority,
            g_nodelist(row).strip(), submit_line)
        return job_id, job_text, job, state, outcome

    accepted, skipped = read_records(lines[header_index + 1:], parse, source=source,
                                     kind="sacct --parsable2 output", start=header_index + 2)

    next_id = max_numeric + 1
    origin = min((job[0] for _, _, job, _, _ in accepted), default=0.0)
    if align > 0:
        origin = math.floor(origin / align) * align
    jobs: list[TraceJob] = []
    extra: dict[int, dict[str, str]] = {}
    recorded: dict[int, RecordedOutcome] = {}
    for job_id, job_text, job, state, outcome in accepted:
        if job_id is None:
            job_id = next_id
            next_id += 1
        jobs.append(TraceJob(job_id, job[0] - origin, *job[1:]))
        if outcome is not None:
            eligible = outcome[1]
            recorded[job_id] = RecordedOutcome(outcome[0] - origin,
                                               None if eligible is None else eligible - origin, *outcome[2:])
        if keep_extra:
            info = {"State": state} if state else {}
            if job_text != str(job_id):
                info["JobID"] = job_text
            if info:
                extra[job_id] = info
    jobs.sort(key=attrgetter("submit", "job_id"))
    return Workload(jobs, {"Fields": "|".join(n.strip() for n in names)}, skipped, source, extra, origin,
                    recorded)


_Job = tuple[float, float, int, float | None, float | None, int | None, str, str, str | None, str | None]
"""A parsed job's :class:`TraceJob` fields after its id, its submission in absolute time."""
_Outcome = tuple[float, float | None, str | None, str, str, int | None, str, str]
"""A parsed job's :class:`RecordedOutcome` fields, its times absolute."""


def started_by(flags: str) -> str | None:
    """The pass that started a job, from sacct's Flags (``SchedMain,StartRecieved`` -> ``main``):
    one of :data:`~djsb.workloads.job.STARTED_BY`, None when no pass is named."""
    for flag in flags.split(","):
        name = _SCHED_FLAGS.get(flag.strip().lower())
        if name is not None:
            return name
    return None


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
