"""Standard Workload Format (SWF 2.2, Parallel Workloads Archive) reader and writer.

An SWF data line has 18 whitespace-separated fields (1-based numbers as in the PWA definition):

 1 job number            7 used memory (KB/proc)     13 group id
 2 submit time (s)       8 requested processors      14 executable (application) number
 3 wait time (s)         9 requested time (s)        15 queue number
 4 run time (s)         10 requested memory (KB/proc) 16 partition number
 5 allocated processors 11 status (1 done, 0 failed, 17 preceding job number
 6 average CPU time (s)    5 cancelled, -1 unknown)  18 think time from preceding job (s)
                        12 user id

-1 means "unknown". Comment lines start with ';'; the header lines ``; Key: value`` are parsed into
``Workload.header``.

Mapping to :class:`~djsb.workloads.job.TraceJob`
------------------------------------------------
- ``job_id`` = field 1; ``submit`` = field 2 (seconds from the log's start, ``UnixStartTime`` in the
  header; see *Time origin* below); ``run_time`` = field 4.
- ``cpus`` = requested processors (field 8) when > 0, else allocated processors (field 5).
- ``requested_time`` = field 9 when > 0, else None (the partition's maximum applies).
- ``memory_mb`` = requested memory (field 10) when > 0, else None. SWF gives it in **KB per processor**,
  so ``memory_mb = field10 * cpus / 1024`` (total for the job, in MiB, 1 MB = 1024 KB as in the
  archive). Used memory (field 7) is not a request and is ignored.
- ``user`` = ``"u<id>"`` (field 12), ``account`` = ``"g<id>"`` (field 13); an id of -1 becomes
  ``"unknown"``.
- ``partition`` = ``"p<n>"`` from the partition number (field 16) when > 0, else ``"q<n>"`` from the
  queue number (field 15) when > 0, else None. The two letters keep the two numberings apart (LANL-CM5
  numbers queues, LLNL-Atlas numbers partitions; queue 0 means "interactive" in SWF and is not mapped).
  With ``names_from_header=True`` the numbers are replaced by the names the header declares
  (``; Partition: 1 pbatch``, ``; Queue: 2 production``), and users/groups by ``; User: <id> <name>`` /
  ``; Group: <id> <name>`` lines (which :func:`write_swf` writes for names that are not ``u<id>``).
- ``depends_on`` = ``(field 17,)`` when >= 0 (SWF numbers jobs from 1, but MetaCentrum has a job 0) and
  not the job itself, else ``()``. It may name a job that is
  not in ``jobs`` (skipped, or beyond ``limit``). Think time (field 18) has no TraceJob field and is
  dropped; wait time, average CPU time, used memory, status and executable are outcome/analysis fields
  the model recomputes or does not need.
- ``nodes`` and ``qos`` are None (SWF has no node count and no QoS), except in the extended dialect below.

Skip rules (each skipped record is in ``Workload.skipped`` with its 1-based line number, reason, text;
checked in this order, the first that applies is the reason):

==========================  ===========================================================================
``malformed_field_count``   fewer than 18 fields
``malformed_number``        a field the reader needs is not a finite number (or a count is not an integer)
``invalid_job_id``          job number < 0
``cancelled_before_start``  status 5 (cancelled) and run time <= 0: the job never ran. A cancelled job
                            that ran (run time > 0) is kept: it occupied its processors.
``submit_unknown``          submit time < 0
``run_time_unknown``        run time < 0 (-1: unknown)
``no_processors``           neither requested nor allocated processors > 0
``duplicate_job_id``        a job number already read (the first record wins)
==========================  ===========================================================================

Run time 0 (not cancelled) is kept: such jobs ran and ended at once (LLNL-Atlas has a few thousand).
If more than half of the data lines are malformed (or none gives a job while some are malformed) the
file is not SWF and :class:`~djsb.errors.TraceError` is raised, pointing at the first bad line.

Extended dialect (MetaCentrum ``wagap`` trace, Alea simulator format)
--------------------------------------------------------------------
Lines with more than 18 fields are never rejected. When field 19 is a brace list of node ids the line is
read in the Alea/MetaCentrum dialect (see ``/work/shared/data/traces/README.md``):

- field 19: node ids, one per allocated CPU (``{1241,1241,...}``) -> ``nodes`` = number of distinct ids;
- field 20: queue name (``q_1d``, ``q_2w``, ``backfill``...) -> ``partition``;
- field 21: the PBS resource request (``1:ppn=64:x86_64:cl_zewura#excl``), kept verbatim;
- field 10 (requested memory) is in **bytes for the whole job**, not KB per processor:
  ``memory_mb = field10 / 2**20``. Evidence: it is 68719476736 (64 GiB) for a whole-node 64-CPU zewura
  job and 500 MiB (524288000) for many 1-CPU jobs; read as KB per processor the first would be 4 PiB
  against zewura's 505 GiB nodes (``.machines``: 529426432 KB per node);
- fields 13-18 are constant placeholders in this trace (group 1, executable 1, queue -1, partition 1,
  preceding job 1, think time 1), as are fields 6, 7 and 11 (1, 1024, 1): the preceding job is **not**
  taken as a dependency (it would make every job wait for job 1), and the group maps as usual (``g1``).

The raw extra fields are kept, not lost, in ``Workload.extra[job_id]`` as
``{"node_list": ..., "queue": ..., "resources": ...}`` (:func:`parse_node_list` turns the first into a
tuple of ints). Extra fields of any other layout are kept as ``{"extra_fields": "<fields 19..>"}``.

Time origin
-----------
PWA traces count submit times from the log's start (``UnixStartTime`` in the header) and are kept as they
are. A trace whose header has neither ``UnixStartTime`` nor ``Version`` (so not an SWF 2.2 file, nor one
:func:`write_swf` wrote) and whose earliest submit is >= 1e8 s (after 1973: an absolute Unix time, as in
the header-less MetaCentrum trace) is rebased to its earliest accepted submit; the subtracted epoch is
``Workload.time_origin`` (0.0 when nothing was subtracted).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from math import isfinite
from operator import attrgetter

from djsb.errors import TraceError
from djsb.workloads._textio import atomic_output, open_trace_text
from djsb.workloads.job import RecordedOutcome, TraceJob
from djsb.workloads.records import (
    CANCELLED_BEFORE_START,
    DUPLICATE_JOB_ID,
    FIELD_COUNT,
    NO_PROCESSORS,
    SUBMIT_UNKNOWN,
    Parser,
    Skip,
    SkippedRecord,
    read_records,
    skip_counts,
    skip_reasons,
)

SWF_FIELDS = 18
EPOCH_THRESHOLD = 1e8  # submit times at or above this (1973-03-03) are absolute Unix times
UNKNOWN = "unknown"
_KB_PER_MB = 1024.0
_BYTES_PER_MB = 1048576.0

# Header keys whose repeated lines map numbers to names ("; Queue:  1  development").
NAME_MAP_KEYS = ("Partition", "Queue", "User", "Group")

_QUEUE_NAME = re.compile(r"q\d+")
_HEADER_LINE = re.compile(r"^;\s*([A-Za-z][A-Za-z0-9_]*)\s*:(?:\s+(.*?))?\s*$")


@dataclass(frozen=True)
class Workload:
    """Jobs read from a trace, sorted by (submit, job_id), with everything needed to audit the reading."""

    jobs: list[TraceJob]
    header: dict[str, str]
    skipped: list[SkippedRecord]
    source: str
    extra: dict[int, dict[str, str]] = field(default_factory=dict)
    """Per job id, trace fields that have no TraceJob field (extended SWF columns, sacct state...)."""
    time_origin: float = 0.0
    """Absolute Unix time subtracted from the trace's submit times (0.0 when none was)."""
    recorded: dict[int, RecordedOutcome] = field(default_factory=dict)
    """Per job id, what the scheduler that ran it recorded of its scheduling (sacct's Start,
    Eligible, Flags...), for a replay to be compared with; empty when the trace keeps none."""

    def replayable_jobs(self) -> list[TraceJob]:
        """The jobs, for a replay: a trace with none (empty, a header alone, every record skipped) is
        a TraceError, since a replay of nothing would run silently and measure nothing."""
        if self.jobs:
            return self.jobs
        if not self.skipped:
            raise TraceError("no job in the trace: it has no record (empty, or a header alone)",
                             source=self.source)
        raise TraceError(f"no usable job in the trace: all {len(self.skipped)} record(s) skipped "
                         f"({skip_reasons(self.skipped)})", source=self.source)

    def skip_summary(self) -> dict[str, int]:
        """Reason -> number of skipped records, most frequent first."""
        return skip_counts(self.skipped)

    def header_int(self, key: str) -> int | None:
        """A header value as an int (``MaxProcs``, ``MaxJobs``...), None when absent or not an integer."""
        value = self.header.get(key)
        if value is None:
            return None
        try:
            return int(value.split()[0])
        except (ValueError, IndexError):
            return None


# --------------------------------------------------------------------------------------------- header


class _HeaderParser:
    """Accumulates ``; Key: value`` comment lines; repeated keys and continuation lines join with newlines."""

    def __init__(self) -> None:
        self.header: dict[str, str] = {}
        self._last: str | None = None

    def feed(self, line: str) -> None:
        m = _HEADER_LINE.match(line)
        if m:
            key, value = m.group(1), m.group(2) or ""
            if key in self.header:
                self.header[key] = self.header[key] + "\n" + value
            else:
                self.header[key] = value
            self._last = key
            return
        content = line[1:].strip()
        if not content:
            self._last = None  # a bare ';' ends a multi-line value
        elif self._last is not None:
            self.header[self._last] = self.header[self._last] + "\n" + content


def header_name_map(header: Mapping[str, str], key: str) -> dict[int, str]:
    """Number -> name from repeated header lines such as ``; Queue:  1  development`` (key "Queue")."""
    out: dict[int, str] = {}
    for entry in header.get(key, "").split("\n"):
        parts = entry.split(None, 1)
        if len(parts) == 2:
            try:
                out[int(parts[0])] = parts[1].strip()
            except ValueError:
                continue
    return out


def parse_node_list(text: str) -> tuple[int, ...]:
    """The node ids of an extended-SWF node list ``{1241,1241,1129}`` (one entry per allocated CPU)."""
    inner = text.strip().lstrip("{").rstrip("}")
    return tuple(int(x) for x in inner.split(",") if x.strip())


# --------------------------------------------------------------------------------------------- reading


def _as_int(text: str) -> int:
    """int of an SWF count that may be written as a float ("4.0"); ValueError if not integral."""
    value = float(text)
    if not value.is_integer():
        raise ValueError(text)
    return int(value)


def read_swf(path: str | os.PathLike, *, limit: int | None = None,
             names_from_header: bool = False) -> Workload:
    """Read an SWF trace (plain or gzip, detected by content) into a :class:`Workload`.

    ``limit``: stop after this many accepted jobs (skipped records before that point are still reported).
    ``names_from_header``: map partition/queue/user/group numbers to the names the header declares.
    Raises :class:`~djsb.errors.TraceError` (with source and line) when the file cannot be read or is not
    SWF; individual bad records are skipped with a reason instead (see the module docstring).
    """
    source = os.fspath(path)
    if limit is not None and limit < 0:
        raise TraceError(f"limit must be >= 0, got {limit}", source=source)
    if limit == 0:
        with open_trace_text(source):
            return Workload([], {}, [], source)
    hp = _HeaderParser()
    extra: dict[int, dict[str, str]] = {}
    with open_trace_text(source) as stream:
        jobs, skipped = read_records(stream, _swf_parser(hp, extra), source=source, kind="an SWF trace",
                                     need=f" (need {SWF_FIELDS} numeric fields)", limit=limit)
    header = hp.header
    time_origin = 0.0
    if jobs and "UnixStartTime" not in header and "Version" not in header:
        earliest = min(j.submit for j in jobs)
        if earliest >= EPOCH_THRESHOLD:
            time_origin = earliest
            jobs = [replace(j, submit=j.submit - earliest) for j in jobs]
    if names_from_header:
        jobs = _apply_header_names(jobs, header)
    jobs.sort(key=attrgetter("submit", "job_id"))
    return Workload(jobs, header, skipped, source, extra, time_origin)


_NUMBER = Skip("malformed_number", malformed=True)
_INVALID_JOB_ID = Skip("invalid_job_id")
_RUN_TIME_UNKNOWN = Skip("run_time_unknown")


def _swf_parser(hp: _HeaderParser, extra: dict[int, dict[str, str]]) -> Parser[TraceJob]:
    """The parser of one SWF file for :func:`read_records`: header lines go to ``hp``, the extended
    columns of each job to ``extra``; the skip rules are the module docstring's, in its order."""
    seen: set[int] = set()
    users: dict[int, str] = {}
    groups: dict[int, str] = {}
    parts: dict[int, str] = {}
    queues: dict[int, str] = {}
    new_job = TraceJob

    def parse(lineno: int, line: str) -> TraceJob | Skip | None:
        f = line.split()
        if not f:
            return None
        if f[0][0] == ";":
            hp.feed(line.strip())
            return None
        n = len(f)
        if n < SWF_FIELDS:
            return FIELD_COUNT
        try:
            try:
                job_id = int(f[0])
                alloc = int(f[4])
                req = int(f[7])
                status = int(f[10])
                uid = int(f[11])
                gid = int(f[12])
                queue = int(f[14])
                part = int(f[15])
                prec = int(f[16])
            except ValueError:  # slow path: counts written as floats ("4.0")
                job_id, alloc, req, status, uid, gid, queue, part, prec = (
                    _as_int(f[i]) for i in (0, 4, 7, 10, 11, 12, 14, 15, 16))
            submit = float(f[1])
            run = float(f[3])
            rtime = float(f[8])
            rmem = float(f[9])
            if not isfinite(submit + run + rtime + rmem):  # "nan", "inf"
                return _NUMBER
        except ValueError:
            return _NUMBER
        if job_id < 0:
            return _INVALID_JOB_ID
        if status == 5 and run <= 0:
            return CANCELLED_BEFORE_START
        if submit < 0:
            return SUBMIT_UNKNOWN
        if run < 0:
            return _RUN_TIME_UNKNOWN
        cpus = req if req > 0 else alloc
        if cpus <= 0:
            return NO_PROCESSORS
        if job_id in seen:
            return DUPLICATE_JOB_ID
        seen.add(job_id)

        user = users.get(uid)
        if user is None:
            user = users[uid] = f"u{uid}" if uid >= 0 else UNKNOWN
        account = groups.get(gid)
        if account is None:
            account = groups[gid] = f"g{gid}" if gid >= 0 else UNKNOWN
        nodes = None
        if n > SWF_FIELDS and f[18][0] == "{":
            # Alea / MetaCentrum extended dialect (module docstring).
            memory = rmem / _BYTES_PER_MB if rmem > 0 else None
            queue_name = f[19] if n > 19 else ""
            partition = queue_name if queue_name not in ("", "-") else None
            try:
                nodes = len(set(parse_node_list(f[18]))) or None
            except ValueError:
                nodes = None
            depends: tuple[int, ...] = ()
            extra[job_id] = {"node_list": f[18], "queue": queue_name, "resources": " ".join(f[20:])}
        else:
            memory = rmem * cpus / _KB_PER_MB if rmem > 0 else None
            if part > 0:
                partition = parts.get(part)
                if partition is None:
                    partition = parts[part] = f"p{part}"
            elif queue > 0:
                partition = queues.get(queue)
                if partition is None:
                    partition = queues[queue] = f"q{queue}"
            else:
                partition = None
            depends = (prec,) if prec >= 0 and prec != job_id else ()
            if n > SWF_FIELDS:
                extra[job_id] = {"extra_fields": " ".join(f[SWF_FIELDS:])}
        return new_job(job_id, submit, run, cpus, rtime if rtime > 0 else None, memory, nodes, user,
                       account, partition, None, depends)

    return parse


def _apply_header_names(jobs: list[TraceJob], header: Mapping[str, str]) -> list[TraceJob]:
    renames: dict[str, str] = {}
    for key, prefix in (("Partition", "p"), ("Queue", "q"), ("User", "u"), ("Group", "g")):
        for number, name in header_name_map(header, key).items():
            renames[f"{prefix}{number}"] = name
    if not renames:
        return jobs
    out = []
    for j in jobs:
        user = renames.get(j.user, j.user)
        account = renames.get(j.account, j.account)
        partition = renames.get(j.partition, j.partition) if j.partition is not None else None
        if (user, account, partition) != (j.user, j.account, j.partition):
            j = replace(j, user=user, account=account, partition=partition)
        out.append(j)
    return out


# --------------------------------------------------------------------------------------------- writing


def _num(value: float | int | None) -> str:
    """An SWF number: -1 for None, integers without a decimal point, other floats exactly (repr)."""
    if value is None:
        return "-1"
    if isinstance(value, int):
        return str(value)
    value = float(value)
    if value.is_integer():
        return str(int(value))
    return repr(value)


class _Numbering:
    """Names -> SWF numbers: ``<prefix><int>`` keeps its number, others get fresh ones (and a header line)."""

    def __init__(self, prefix: str, names: Iterable[str], first_fresh: int = 1) -> None:
        self.prefix = prefix
        self.numbers: dict[str, int] = {}
        self.fresh: dict[int, str] = {}
        pattern = re.compile(rf"^{re.escape(prefix)}(-?\d+)$")
        named = []
        for name in names:
            if name in self.numbers:
                continue
            m = pattern.match(name)
            if m:
                self.numbers[name] = int(m.group(1))
            elif name == UNKNOWN:
                self.numbers[name] = -1
            else:
                named.append(name)
        next_free = max([first_fresh - 1, *self.numbers.values()]) + 1
        for name in named:
            if name in self.numbers:
                continue
            self.numbers[name] = next_free
            self.fresh[next_free] = name
            next_free += 1


def write_swf(jobs: Iterable[TraceJob], path: str | os.PathLike, header: Mapping[str, str] | None = None,
              *, extra: Mapping[int, Mapping[str, str]] | None = None) -> None:
    """Write jobs as an SWF 2.2 file (gzip when ``path`` ends in .gz), replacing ``path`` atomically.

    Fields written: job number, submit, run time, allocated = requested processors (``cpus``), requested
    time, requested memory (KB per processor: ``memory_mb * 1024 / cpus``), user, group, queue/partition
    number, preceding job; the rest are -1. Numbers keep their exact value (integral values without a
    decimal point, others as Python ``repr``), so ``read_swf(write_swf(jobs))`` gives the same jobs.

    Names that are not ``u<id>`` / ``g<id>`` / ``p<n>`` / ``q<n>`` get fresh numbers and a header line
    (``; User: 7 alice``, ``; Group: 3 a0``, ``; Partition: 2 gpu``); read them back with
    ``read_swf(..., names_from_header=True)``. ``qos`` and ``nodes`` have no SWF field and are not written
    (except ``nodes`` through the extended columns). A job with more than one dependency cannot be
    written (SWF holds one preceding job) and raises TraceError.

    ``extra``: per job id, the extended columns of :func:`read_swf`'s MetaCentrum dialect
    (``node_list``, ``queue``, ``resources``); such jobs are written in that dialect (memory in bytes,
    queue name as partition) so that a MetaCentrum workload round-trips too.

    ``header`` (e.g. ``Workload.header``) is written as ``; Key: value`` lines (multi-line values as
    continuation lines, the number-to-name keys as repeated lines). Without one, a minimal header is
    written: Version, Conversion, MaxJobs, MaxRecords, MaxProcs.
    """
    target = os.fspath(path)
    job_list = list(jobs)
    extra = extra or {}
    for j in job_list:
        if j.submit < 0 or j.run_time < 0 or j.cpus <= 0 or j.job_id < 0:
            raise TraceError(f"job {j.job_id}: submit {j.submit}, run_time {j.run_time}, cpus {j.cpus}: "
                             "SWF needs submit >= 0, run_time >= 0, cpus > 0, job_id >= 0", source=target)
        if len(j.depends_on) > 1:
            raise TraceError(f"job {j.job_id} depends on {len(j.depends_on)} jobs; SWF's preceding-job "
                             "field holds one", source=target)

    def is_extended(j: TraceJob) -> bool:
        e = extra.get(j.job_id)
        return e is not None and "node_list" in e

    users = _Numbering("u", (j.user for j in job_list))
    groups = _Numbering("g", (j.account for j in job_list))
    part_names = [j.partition for j in job_list if j.partition is not None and not is_extended(j)]
    queues = _Numbering("q", (p for p in part_names if _QUEUE_NAME.fullmatch(p)))
    partitions = _Numbering("p", (p for p in part_names if not _QUEUE_NAME.fullmatch(p)))
    if header is None:
        out_header: dict[str, str] = {
            "Version": "2.2",
            "Conversion": "djsb.workloads.swf.write_swf",
            "MaxJobs": str(len(job_list)),
            "MaxRecords": str(len(job_list)),
            "MaxProcs": str(max((j.cpus for j in job_list), default=0)),
        }
    else:
        out_header = dict(header)
    for key, numbering in (("Partition", partitions), ("User", users), ("Group", groups)):
        if numbering.fresh:
            lines = [f"{number} {name}" for number, name in sorted(numbering.fresh.items())]
            existing = out_header.get(key)
            out_header[key] = "\n".join(([existing] if existing else []) + lines)

    with atomic_output(target) as out:
        for key, value in out_header.items():
            lines = str(value).split("\n")
            if key in NAME_MAP_KEYS:
                for entry in lines:
                    out.write(f"; {key}: {entry}\n")
            else:
                out.write(f"; {key}: {lines[0]}\n" if lines[0] else f"; {key}:\n")
                pad = " " * (len(key) + 2)
                for entry in lines[1:]:
                    out.write(f";{pad} {entry}\n")
        write = out.write
        for j in job_list:
            cpus = j.cpus
            user = users.numbers[j.user]
            group = groups.numbers[j.account]
            e = extra.get(j.job_id)
            if e and "node_list" in e:
                mem = _num(j.memory_mb * _BYTES_PER_MB) if j.memory_mb is not None else "-1"
                tail = f" {e['node_list']} {j.partition or e.get('queue') or '-'} {e.get('resources', '')}"
                queue_no = part_no = -1
                prec = -1
            else:
                mem = _num(j.memory_mb * _KB_PER_MB / cpus) if j.memory_mb is not None else "-1"
                tail = f" {e['extra_fields']}" if e and "extra_fields" in e else ""
                queue_no = part_no = -1
                if j.partition is not None:
                    if j.partition in queues.numbers:
                        queue_no = queues.numbers[j.partition]
                    else:
                        part_no = partitions.numbers[j.partition]
                prec = j.depends_on[0] if j.depends_on else -1
            write(f"{j.job_id} {_num(j.submit)} -1 {_num(j.run_time)} {cpus} -1 -1 {cpus} "
                  f"{_num(j.requested_time)} {mem} -1 {user} {group} -1 {queue_no} {part_no} {prec} -1"
                  f"{tail.rstrip()}\n")
