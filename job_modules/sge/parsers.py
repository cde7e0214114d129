"""Pure parsers of Grid Engine command output (text -> records), for job_modules/sge/module.py.

Each function takes what a Grid Engine 8.1.9 command printed (qsub, qstat -xml, qacct -j) and
returns plain values; each is tested on output captured from a real cell (tests/fixtures/sge/,
made by capture.sh and capture_tokens.sh there). Grid Engine prints local times without a zone,
so the module runs the commands under TZ=UTC and these parsers read every time as UTC.
"""

from __future__ import annotations

import calendar
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator

from djsb.jobs.api import JobState, JobStatus
from djsb.jobs.scheduler_base import TaggedJob, name_token

# qstat's job state is a string of letters (qstat(1) "state"): d(eletion), E(rror), h(old),
# r(unning), R(estarted), s(uspended by qmod -sj), S(uspended with its queue), t(ransferring),
# T(hreshold: suspended by the queue's suspend_thresholds), w(aiting), q(ueued). The first rule
# whose letter is in the string decides. An error state (Eqw: the job failed to start and waits
# for qmod -cj) never runs without a person, so the harness counts it as FAILED. "d" alone does not
# decide: a job being deleted still holds its CPUs until it leaves qstat, and qacct then says how
# it ended.
STATE_RULES: tuple[tuple[str, JobState], ...] = (
    ("E", JobState.FAILED),
    ("s", JobState.SUSPENDED),
    ("S", JobState.SUSPENDED),
    ("T", JobState.SUSPENDED),
    ("r", JobState.RUNNING),
    ("t", JobState.RUNNING),
    ("q", JobState.PENDING),
    ("w", JobState.PENDING),
    ("h", JobState.PENDING),
)

# qacct's "failed" codes (sge_status(5), accounting(5)) that say more than "failed": 37 is a limit
# the qmaster enforced (h_rt, h_cpu or h_vmem: the captured h_rt job), 100 with exit status 137
# (SIGKILL) what a qdel of a running job leaves.
FAILED_LIMIT = 37
FAILED_AFTER_JOB = 100
KILLED = 128 + 9

# Messages of a qmaster that is down or restarting: worth retrying.
TRANSIENT_PATTERNS = re.compile(
    r"unable to contact qmaster|unable to send message to qmaster|commlib error|can't connect to service"
    r"|failed receiving gdi request|Connection refused|got select error|qmaster is down",
    re.IGNORECASE)

_SUBMITTED = re.compile(r"^Your job(?:-array)? (\d+)(?:\.\S+)? \(.*\) has been submitted", re.MULTILINE)
_TERSE = re.compile(r"^(\d+)(?:\.\S+)?$")


def parse_qsub(stdout: str) -> str:
    """The job id qsub printed: '-terse' ('12', an array '12.1-10:1') or 'Your job 12 ("x") has
    been submitted'."""
    match = _SUBMITTED.search(stdout)
    if match:
        return match.group(1)
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    terse = _TERSE.match(lines[-1]) if lines else None
    if terse is None:
        raise ValueError(f"qsub printed no job id: {stdout.strip()!r}")
    return terse.group(1)


def sge_state(letters: str) -> JobState:
    """The harness state of a qstat state string such as 'qw', 'hqw', 'r', 's', 'Ss', 'Eqw', 'dr'."""
    for letter, state in STATE_RULES:
        if letter in letters:
            return state
    return JobState.UNKNOWN


def _utc(text: str, fmt: str) -> float | None:
    try:
        return float(calendar.timegm(time.strptime(text, fmt)))
    except ValueError:
        return None


def qstat_time(text: str) -> float | None:
    """qstat -xml's '2026-11-23T09:39:32' (printed under TZ=UTC) as Unix seconds."""
    return _utc(text.strip().split(".")[0], "%Y-%m-%dT%H:%M:%S") if text.strip() else None


def qacct_time(text: str) -> float | None:
    """qacct's 'Mon Nov 23 09:39:22 2026' (ctime form, printed under TZ=UTC) as Unix seconds;
    None for a job that never started ('-/-')."""
    return _utc(" ".join(text.split()), "%a %b %d %H:%M:%S %Y")


def queue_host(queue_instance: str) -> str | None:
    """The host of a queue instance 'all.q@node1'; None for a pending job's empty queue."""
    _, at, host = queue_instance.strip().partition("@")
    return host if at and host else None


def _qstat_jobs(stdout: str) -> Iterator[tuple[str, str, ET.Element]]:
    """(job id, state letters, element) of each job of ``qstat -xml`` (running jobs under
    queue_info, pending ones under job_info)."""
    if not stdout.strip():
        return
    try:
        root = ET.fromstring(stdout)
    except ET.ParseError as exc:
        raise ValueError(f"qstat -xml printed no XML document: {exc}") from None
    for job in root.iter("job_list"):
        job_id = (job.findtext("JB_job_number") or "").strip()
        if job_id:
            yield job_id, (job.findtext("state") or "").strip(), job


def parse_qstat_xml(stdout: str) -> dict[str, JobStatus]:
    """Records of ``qstat -xml``, by id.

    qstat -xml gives a running job's start time and a pending job's submission time, nothing else;
    an array job's tasks share one id here (DJSB submits none).
    """
    records: dict[str, JobStatus] = {}
    for job_id, letters, job in _qstat_jobs(stdout):
        state = sge_state(letters)
        host = queue_host(job.findtext("queue_name") or "")
        started = state in (JobState.RUNNING, JobState.SUSPENDED)
        reason = ""
        if "E" in letters:
            reason = f"Grid Engine error state {letters} (qstat -j {job_id} says why)"
        elif state is JobState.UNKNOWN:
            reason = f"Grid Engine state {letters!r}"
        records[job_id] = JobStatus(
            state=state,
            submit=qstat_time(job.findtext("JB_submission_time") or ""),
            start=qstat_time(job.findtext("JAT_start_time") or "") if started else None,
            nodes=(host,) if host and started else (),
            reason=reason)
    return records


def parse_qstat_tokens(stdout: str) -> list[TaggedJob]:
    """(job id, state, submission token) of each job of ``qstat -xml`` whose full name (JB_name)
    carries a DJSB token; other jobs are skipped."""
    tagged: list[TaggedJob] = []
    for job_id, letters, job in _qstat_jobs(stdout):
        token = name_token((job.findtext("JB_name") or "").strip())
        if token is not None:
            tagged.append((job_id, sge_state(letters), token))
    return tagged


def _qacct_state(failed: int, exit_status: int) -> JobState:
    """How a job ended, from qacct's failed code and exit status."""
    if failed == FAILED_LIMIT:
        return JobState.TIMEOUT
    if failed == FAILED_AFTER_JOB and exit_status == KILLED:
        return JobState.CANCELLED
    if failed == 0 and exit_status == 0:
        return JobState.COMPLETED
    return JobState.FAILED


def _leading_int(text: str) -> int | None:
    match = re.match(r"\s*(-?\d+)", text)
    return int(match.group(1)) if match else None


def _qacct_blocks(stdout: str) -> Iterator[dict[str, str]]:
    """The fields (name -> value) of each job's block of ``qacct -j`` output (opened by a '=====' line)."""
    for block in re.split(r"^=+\s*$", stdout, flags=re.MULTILINE):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, _, value = line.strip().partition(" ")
            if key:
                fields[key] = value.strip()
        yield fields


def parse_qacct(stdout: str) -> dict[str, JobStatus]:
    """Records of ``qacct -j ID`` output (one or several jobs' blocks), keyed by job id. A job
    started more than once has several blocks; the last one wins."""
    records: dict[str, JobStatus] = {}
    for fields in _qacct_blocks(stdout):
        job_id = fields.get("jobnumber", "")
        failed = _leading_int(fields.get("failed", ""))
        exit_status = _leading_int(fields.get("exit_status", ""))
        if not job_id or failed is None or exit_status is None:
            continue
        state = _qacct_state(failed, exit_status)
        host = fields.get("hostname", "")
        failed_text = " ".join(fields.get("failed", "").split())
        records[job_id] = JobStatus(
            state=state,
            submit=qacct_time(fields.get("qsub_time", "")),
            start=qacct_time(fields.get("start_time", "")),
            end=qacct_time(fields.get("end_time", "")),
            exit_code=exit_status,
            nodes=(host,) if host and host != "UNKNOWN" else (),
            reason="" if failed == 0 else f"failed {failed_text}")
    return records


def parse_qacct_tokens(stdout: str) -> list[TaggedJob]:
    """(job id, state, submission token) of each ended job of ``qacct -j`` output whose name carries
    a DJSB token (the accounting keeps a job's name, not its context)."""
    records = parse_qacct(stdout)
    tagged: list[TaggedJob] = []
    for fields in _qacct_blocks(stdout):
        job_id, token = fields.get("jobnumber", ""), name_token(fields.get("jobname", ""))
        if token is not None and job_id in records:
            tagged.append((job_id, records[job_id].state, token))
    return tagged


def is_transient(stderr: str) -> bool:
    """The error text of a Grid Engine command says the qmaster could not answer now."""
    return bool(TRANSIENT_PATTERNS.search(stderr))


def parse_qhost(text: str) -> dict[str, int]:
    """The CPUs of each execution host ``qhost`` lists (its NCPU column): the ``global``
    pseudo-host, hosts that do not answer (``-``) and indented resource lines are left out."""
    lines = text.splitlines()
    header = next((line.split() for line in lines if line.startswith("HOSTNAME")), None)
    if header is None or "NCPU" not in header:
        return {}
    column = header.index("NCPU")
    cpus = {}
    for line in lines:
        fields = line.split()
        if line[:1].isspace() or len(fields) <= column or fields[0] in ("HOSTNAME", "global"):
            continue
        if fields[column].isdigit():
            cpus[fields[0]] = int(fields[column])
    return cpus
