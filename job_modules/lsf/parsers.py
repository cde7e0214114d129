"""Pure parsers of LSF command output (text -> records), for job_modules/lsf/module.py.

Two LSFs: IBM Spectrum LSF 10.1, from IBM's documentation (bsub's "Job <ID> is submitted to queue
<NAME>." message, and bjobs' customized output, ``bjobs -o "field ... delimiter='|'"``, "bjobs -o"
and "LSB_BJOBS_FORMAT" pages: one line per job, fields in the order asked, "-" for a value that
does not exist (yet)); and OpenLava 4.0, the open-source clone, from its live output (it has no
``bjobs -o``: :func:`parse_long` reads ``bjobs -l`` and ``bhist -l``, :func:`parse_bjobs_wide` ``bjobs -w``).
:func:`parse_lsid` tells them apart.

Times: bjobs prints them as the default bjobs output does, "Mmm dd hh:mm" (e.g. "Nov 23 09:15")
in the local time of the machine running bjobs, without a year and, unless the site configured
otherwise, without seconds; a time that is an estimate carries a status letter after it
("Nov 23 10:15 L": L run limit, E estimated run time, X estimate exceeded, as in bjobs -WF).
The module runs bjobs with TZ=UTC, so the times are UTC. The year is the one that puts the time
closest to (and not more than a day after) the moment of the query: LSF forgets finished jobs
after CLEAN_PERIOD (one hour by default), so every time it prints is at most months old. Times
with seconds ("Nov 23 09:15:42") and with a year ("Nov 23 09:15:42 2026") are read too.
"""

from __future__ import annotations

import calendar
import math
import re
import time
from dataclasses import dataclass

from djsb.jobs.api import JobState, JobStatus
from djsb.jobs.scheduler_base import TaggedJob, name_token

# The bjobs -o fields, in the order parse_bjobs reads them.
BJOBS_FIELDS = ("jobid", "stat", "submit_time", "start_time", "finish_time", "exec_host", "exit_code")
BJOBS_FORMAT = " ".join(BJOBS_FIELDS) + " delimiter='|'"

# LSF job states (bjobs STAT) -> what the harness distinguishes (bjobs "Job states" in IBM's docs).
# PSUSP is a *pending* job held by its owner or an administrator, so it still waits; USUSP and SSUSP
# are running jobs stopped by the user (bstop) or by LSF (load, preemption): SUSPENDED. WAIT is a
# chunk-job member waiting for its chunk. ZOMBI is a job bkill'ed while its host was unreachable:
# LSF kills it once the host answers and it becomes EXIT, so until then its processes may still
# hold CPUs (as Slurm's COMPLETING). UNKWN: mbatchd lost contact with the host's sbatchd.
STATE_TABLE: dict[str, JobState] = {
    "PEND": JobState.PENDING,
    "PSUSP": JobState.PENDING,
    "WAIT": JobState.PENDING,
    "RUN": JobState.RUNNING,
    "PROV": JobState.RUNNING,
    "ZOMBI": JobState.RUNNING,
    "USUSP": JobState.SUSPENDED,
    "SSUSP": JobState.SUSPENDED,
    "DONE": JobState.COMPLETED,
    "EXIT": JobState.FAILED,
    "UNKWN": JobState.UNKNOWN,
}

# Messages of an LSF master that is down, restarting or busy: worth retrying. "Job <N> is not
# found" (a job LSF forgot) is an answer, not one of these.
TRANSIENT_PATTERNS = re.compile(
    r"LSF is down|not responding|still trying|Please wait|Cannot connect to LSF|LIM is down"
    r"|Slave LIM configuration is not ready|Connection refused|Communication time out"
    r"|Batch system not responding|Failed in sending/receiving a message",
    re.IGNORECASE)

JOB_NOT_FOUND = re.compile(r"Job <[^>]*> is not found")
# bstop's or bresume's answer when mbatchd cannot reach the job's sbatchd now (LSBE_OP_RETRY, e.g. just
# after an mbatchd restart): it has kept the signal as the job's pending event and delivers it once it
# can (OpenLava's mbd.job.c, sigStartedJob), so the request was taken.
OPERATION_IN_PROGRESS = re.compile(r"Operation is in progress")
# bhist's answer when none of the jobs asked is in mbatchd's events
NO_MATCHING_JOB = re.compile(r"No matching job found")
# bjobs' answer when the user has no job it would list ("No unfinished job found", with -a "No job found").
NO_JOB_FOUND = re.compile(r"No (?:unfinished )?job found")

TAGGED_FIELDS = ("jobid", "stat", "job_name")
TAGGED_FORMAT = " ".join(TAGGED_FIELDS) + " delimiter='|'"
"""The bjobs -o fields :func:`parse_tagged_jobs` reads; the name last, so a '|' in it stays in it."""

# Exit codes LSF gives the jobs it kills (measured on OpenLava 4.0; the same in IBM LSF): bkill sends
# SIGINT, SIGTERM, then SIGKILL (128 + SIGINT), and a job past its run limit (bsub -W) gets 140.
KILLED_EXIT_CODE = 130
RUNLIMIT_EXIT_CODE = 140

_SUBMITTED = re.compile(r"Job <(\d+)> is submitted to (?:default )?queue <([^>]*)>")
_MONTHS = {name: number for number, name in enumerate(calendar.month_abbr) if name}
_TIME = re.compile(r"^([A-Z][a-z]{2})\s+(\d{1,2})\s+(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\s+(\d{4}))?"
                   r"(?:\s+([A-Z]))?$")
DAY = 86400.0


@dataclass(frozen=True)
class LsfTime:
    """A time bjobs printed: Unix seconds (UTC), whether it had seconds, whether it is an estimate."""

    epoch: float
    has_seconds: bool
    estimate: bool


def parse_bsub(stdout: str) -> tuple[str, str]:
    """The job id and queue in bsub's 'Job <1234> is submitted to [default ]queue <normal>.'"""
    match = _SUBMITTED.search(stdout)
    if match is None:
        raise ValueError(f"bsub printed no job id: {stdout.strip()!r}")
    return match.group(1), match.group(2)


def lsf_time(text: str, now: float) -> LsfTime | None:
    """A bjobs time printed in UTC ('Nov 23 09:15', optionally with :ss, a year, an estimate flag);
    None for '-' and empty. Without a year, the year that puts it at most a day after ``now``."""
    match = _TIME.match(text.strip())
    if match is None or match.group(1) not in _MONTHS:
        return None
    month_name, day, hour, minute, second, year, flag = match.groups()
    fields = (_MONTHS[month_name], int(day), int(hour), int(minute), int(second or 0))
    if year is not None:
        epoch = calendar.timegm((int(year), *fields))
    else:
        this_year = time.gmtime(now).tm_year
        epoch = calendar.timegm((this_year, *fields))
        if epoch > now + DAY:
            epoch = calendar.timegm((this_year - 1, *fields))
    return LsfTime(float(epoch), second is not None, flag is not None)


@dataclass(frozen=True)
class Lsf:
    """The installed LSF as ``lsid`` names it, and what it offers. OpenLava (4.0) lacks what IBM
    LSF 10 has: ``bjobs -o``/``-json``, ``bsub -rn``, affinity in ``-R``, blaunch, and a unit in
    ``-M`` (it takes KB as a plain number)."""

    product: str
    openlava: bool

    def memory_limit(self, mib: float) -> str:
        """bsub -M's value for ``mib`` MiB: KB as a plain number on OpenLava; with its unit on IBM
        LSF ("-M mem_limit[KB|MB|...]": an explicit unit overrides LSF_UNIT_FOR_LIMITS)."""
        return str(math.ceil(mib * 1024)) if self.openlava else f"{math.ceil(mib)}MB"


def parse_lsid(stdout: str) -> Lsf:
    """The LSF of ``lsid``'s first line: 'OpenLava 4.0dev4, Nov 28 2026' or 'IBM Spectrum LSF
    Standard 10.1.0.0, May 04 2016' (older: 'Platform LSF ...')."""
    first = next((line.strip() for line in stdout.splitlines() if line.strip()), "")
    product = first.split(",", 1)[0].strip()
    if product.lower().startswith("openlava"):
        return Lsf(product, openlava=True)
    if "LSF" in product:
        return Lsf(product, openlava=False)
    raise ValueError(f"lsid names no LSF: {first!r}")


def exec_hosts(text: str) -> tuple[str, ...]:
    """Host names in bjobs' exec_host: 'hostA', '4*hostA:2*hostB' or 'hostA hostB'; '-' is none.

    Each host once, in the order LSF lists them (the first runs the job's first task)."""
    hosts: list[str] = []
    for item in re.split(r"[:\s]+", text.strip()):
        host = item.split("*", 1)[-1]
        if host and host != "-" and host not in hosts:
            hosts.append(host)
    return tuple(hosts)


def lsf_state(text: str) -> JobState:
    """The harness state of an LSF STAT value."""
    return STATE_TABLE.get(text.strip().upper(), JobState.UNKNOWN)


def _exit_code(text: str, state: JobState) -> int | None:
    """bjobs' exit_code: the job's exit code (LSF prints '-' for a DONE job: 0)."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    return 0 if state is JobState.COMPLETED else None


@dataclass(frozen=True)
class BjobsRecord:
    """One job of bjobs' output. Like the Slurm parsers, a start counts only once the job left
    PENDING and an end only once it finished; estimates (a running job's expected finish) never."""

    stat: str
    state: JobState
    submit: LsfTime | None
    start: LsfTime | None
    end: LsfTime | None
    nodes: tuple[str, ...]
    exit_code: int | None

    def status(self, *, minute_times: bool) -> JobStatus:
        """The JobStatus; times that carry only minutes are kept when ``minute_times``, else left
        out (the harness's own clock, to the second, is then the better one)."""

        def epoch(value: LsfTime | None) -> float | None:
            return value.epoch if value is not None and (value.has_seconds or minute_times) else None

        reason = {JobState.UNKNOWN: f"LSF state {self.stat}",
                  JobState.TIMEOUT: f"killed at its run limit (bsub -W; exit code {RUNLIMIT_EXIT_CODE})",
                  JobState.CANCELLED: f"killed by bkill (exit code {KILLED_EXIT_CODE})"}.get(self.state, "")
        return JobStatus(state=self.state, submit=epoch(self.submit), start=epoch(self.start),
                         end=epoch(self.end), exit_code=self.exit_code, nodes=self.nodes, reason=reason)


def _fact(text: str, now: float) -> LsfTime | None:
    """A printed time unless it is missing or an estimate."""
    value = lsf_time(text, now)
    return None if value is None or value.estimate else value


def parse_bjobs(stdout: str, now: float) -> dict[str, BjobsRecord]:
    """Records of ``bjobs -noheader -o BJOBS_FORMAT`` lines, keyed by job id (``now``: the query's
    Unix time, for the year the times do not print)."""
    records: dict[str, BjobsRecord] = {}
    for line in stdout.splitlines():
        if not line.strip():
            continue
        fields = [field.strip() for field in line.split("|")]
        if len(fields) != len(BJOBS_FIELDS):
            raise ValueError(f"bjobs line with {len(fields)} fields, expected {len(BJOBS_FIELDS)}: {line!r}")
        job_id, stat, submit, start, finish, hosts, code = fields
        state = lsf_state(stat)
        started = state not in (JobState.PENDING, JobState.UNKNOWN)
        records[job_id] = BjobsRecord(
            stat=stat, state=state, submit=_fact(submit, now),
            start=_fact(start, now) if started else None,
            end=_fact(finish, now) if state.finished else None,
            nodes=exec_hosts(hosts) if started else (),
            exit_code=_exit_code(code, state) if state.finished else None)
    return records


_LONG_INDENT = " " * 21  # bjobs -l and bhist -l wrap their lines at 80 columns, continuing here
_EVENT = re.compile(r"^[A-Z][a-z]{2} ([A-Z][a-z]{2} +\d{1,2} \d{1,2}:\d{2}:\d{2}(?: \d{4})?): (.*)$")
_FIELD = re.compile(r"(Job Id|Status) <([^>]*)>")
_STARTED = re.compile(r"(?:Started on|Dispatched to) (?:\d+ Hosts/Processors )?((?:<[^>]*>\s*)+)")
_EXITED = re.compile(r"Exited with exit code (\d+)")


def unwrapped(text: str) -> list[str]:
    """The lines of ``bjobs -l``/``bhist -l`` output with each wrapped line joined back to the one
    it continues (LSF cuts them at 80 columns, even inside a word)."""
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith(_LONG_INDENT) and lines:
            lines[-1] += line[len(_LONG_INDENT):]
        else:
            lines.append(line)
    return lines


def _long_record(lines: list[str], now: float) -> tuple[str, BjobsRecord] | None:
    """One job of ``bjobs -l`` or ``bhist -l``: its header (Job Id; Status in bjobs) and its timed
    events. A bhist job has no Status: its end event gives DONE or EXIT, and one not ended is skipped."""
    fields = dict(_FIELD.findall(lines[0]))
    if "Job Id" not in fields:
        return None
    submit = start = end = None
    nodes: tuple[str, ...] = ()
    exit_code: int | None = None
    runlimit = False
    for line in lines[1:]:
        runlimit = runlimit or line.strip() == "RUNLIMIT"
        event = _EVENT.match(line)
        if event is None:
            continue
        when, what = lsf_time(event.group(1), now), event.group(2)
        started = _STARTED.match(what)
        exited = _EXITED.match(what)
        if what.startswith("Submitted from host"):
            submit = when
        elif started:
            start, nodes = when, exec_hosts(" ".join(re.findall(r"<([^>]*)>", started.group(1))))
        elif what.startswith("Done successfully"):
            end, exit_code = when, 0
        elif exited:
            end, exit_code = when, int(exited.group(1))
    stat = fields.get("Status") or ("" if end is None else "DONE" if exit_code == 0 else "EXIT")
    if not stat:
        return None
    state = lsf_state(stat)
    if state is JobState.FAILED and exit_code == RUNLIMIT_EXIT_CODE and runlimit:
        state = JobState.TIMEOUT
    elif state is JobState.FAILED and exit_code == KILLED_EXIT_CODE:
        state = JobState.CANCELLED
    started_state = state not in (JobState.PENDING, JobState.UNKNOWN)
    return fields["Job Id"], BjobsRecord(
        stat=stat, state=state, submit=submit, start=start if started_state else None,
        end=end if state.finished else None, nodes=nodes if started_state else (),
        exit_code=exit_code if state.finished else None)


def parse_long(stdout: str, now: float) -> dict[str, BjobsRecord]:
    """Records of ``bjobs -a -l`` output (OpenLava, which has no ``bjobs -o``) or of ``bhist -l``
    (finished jobs only: bhist prints no state), keyed by job id: the state of each job's header,
    its submit/start/end events to the second (times printed 'Sat Nov 28 22:05:15' in the
    command's local time, read as UTC: the module runs it with TZ=UTC), the hosts it started on
    ("Started on" in bjobs, "Dispatched to" in bhist) and the exit code its end gives. LSF's kills
    are told apart: exit code 140 with a RUNLIMIT is TIMEOUT (bsub -W), 130 CANCELLED (bkill)."""
    blocks: list[list[str]] = []
    for line in unwrapped(stdout):
        if line.startswith("Job Id <"):
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
    return dict(record for block in blocks if (record := _long_record(block, now)) is not None)


def parse_bjobs_wide(stdout: str) -> list[TaggedJob]:
    """(job id, state, submission token) of each job of ``bjobs -a -w -noheader`` output (OpenLava)
    whose name carries a DJSB token. Its columns: JOBID USER STAT QUEUE FROM_HOST EXEC_HOST
    JOB_NAME SUBMIT_TIME, the time three words ('Nov 28 22:05'), so the name is what lies between
    the exec host and the time (spaces included)."""
    tagged: list[TaggedJob] = []
    for line in stdout.splitlines():
        fields = line.split()
        if len(fields) < 10 or not fields[0].isdigit():
            continue
        token = name_token(" ".join(fields[6:-3]))
        if token is not None:
            tagged.append((fields[0], lsf_state(fields[2]), token))
    return tagged


def parse_tagged_jobs(stdout: str) -> list[TaggedJob]:
    """(job id, state, submission token) of each job of ``bjobs -noheader -o TAGGED_FORMAT`` output
    whose name carries a DJSB token; other jobs (and bjobs' "No job found") are skipped."""
    tagged: list[TaggedJob] = []
    for line in stdout.splitlines():
        fields = line.split("|", len(TAGGED_FIELDS) - 1)
        if len(fields) != len(TAGGED_FIELDS):
            continue
        job_id, stat, name = fields
        token = name_token(name.strip())
        if token is not None:
            tagged.append((job_id.strip(), lsf_state(stat), token))
    return tagged


def is_transient(stderr: str) -> bool:
    """The error text of an LSF command says the master could not answer now."""
    return bool(TRANSIENT_PATTERNS.search(stderr))


def parse_lshosts(text: str) -> dict[str, int]:
    """The CPUs (``ncpus``) of each server host ``lshosts`` lists: client hosts (server ``No``),
    which run no job, and hosts that report no CPU count (``-``) are left out."""
    lines = text.splitlines()
    header = lines[0].split() if lines else []
    if "ncpus" not in header or "server" not in header:
        return {}
    ncpus, server = header.index("ncpus"), header.index("server")
    cpus = {}
    for line in lines[1:]:
        fields = line.split()
        if len(fields) > max(ncpus, server) and fields[server] != "No" and fields[ncpus].isdigit():
            cpus[fields[0]] = int(fields[ncpus])
    return cpus
