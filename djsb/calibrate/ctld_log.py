"""What slurmctld's own log says of a replay, to the millisecond: when each job was queued, when it
started and by which scheduler, and when it ended.

The calibration otherwise knows a pass only within the tenth of a second between two ``sdiag``
answers (:mod:`djsb.calibrate.pass_watch`), a submission as the instant sbatch returned, and a
run time as a sleep plus the replay's mean launch overhead, Slurm recording whole seconds. On a
loaded machine those blur what decides a small replay: a job queued at .522 and backfilled by a
pass at .526 looked, from sbatch's return at .557 and a pass bracketed at .40-.56, submitted
after the pass, so the model backfilled it a whole ``bf_interval`` later and the queue behind it
moved. slurmctld logs each of these instants at its default level (info) and time format
(``LogTimeFormat=iso8601_ms``):

* ``_slurm_rpc_submit_batch_job: JobId=N`` when the job was queued (job_mgr.c);
* ``sched: Allocate JobId=N`` when the main scheduler started it (job_scheduler.c ``_schedule``);
* ``sched/backfill: _start_job: Started JobId=N`` when the backfill scheduler did (backfill.c);
* ``_job_complete: JobId=N done`` when it ended (job_mgr.c);
* ``gang: suspending JobId=N`` and ``gang: resuming JobId=N`` when the gang scheduler suspended and
  resumed it (gang.c ``_suspend_job``, ``_resume_job``: at info only with ``DebugFlags=Gang``, at
  debug otherwise; a job suspended as it starts is logged so just before its start, :data:`SAME_CALL`),
  so a preemption under ``PreemptMode=SUSPEND,GANG`` is known to the millisecond when the calibration
  runs with that flag; without it a suspended job's run time counts its suspension, which the model
  then adds again.

A pass that started jobs ran when it started the first of them: that instant replaces sdiag's
bracket (:func:`located_passes`). The log's clock is the controller's local time, without a
zone: it is put on Unix time by the whole quarter hours that align its submissions with Slurm's
recorded submit seconds (:func:`clock_offset`). Read only when the calibration's user may read
``SlurmctldLogFile`` (the mini-cluster's; a site's is often root's alone): otherwise the sdiag and
sbatch instants stand and a note says so.
"""

from __future__ import annotations

import calendar
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import pandas as pd

from djsb.slurmsite.slurm_config import CTLD_LOG_FILE

SUBMIT, MAIN, BACKFILL, END = "submit", "main", "backfill", "end"
"""The events read: a job queued, started by either scheduler, ended."""
SUSPEND, RESUME = "suspend", "resume"
"""A job suspended and resumed by the gang scheduler."""
_MESSAGES = ((SUBMIT, re.compile(r"_slurm_rpc_submit_batch_job: JobId=(\S+)")),
             (MAIN, re.compile(r"sched: Allocate JobId=(\S+)")),
             (BACKFILL, re.compile(r"sched/backfill: _start_job: Started JobId=(\S+)")),
             (END, re.compile(r"_job_complete: JobId=(\S+) done")),
             (SUSPEND, re.compile(r"gang: suspending JobId=(\S+)$")),
             (RESUME, re.compile(r"gang: resuming JobId=(\S+)$")))
_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})([+-]\d\d:?\d\d|Z)?\] (.*)$")
_JOB_ID = re.compile(r"^(\d+)(?:_\d+)?(?:\((\d+)\))?$")
"""``%pJ``'s forms: ``123``, and an array task's ``123_4(127)`` (its own id in parentheses)."""
SAME_CALL = 1.0
"""Seconds within which a suspension logged before a job's start is that start's: the gang scheduler
suspends a job that does not fit its partition's active row as it is allocated (node_scheduler.c
``select_nodes`` -> gang.c ``gs_job_start`` -> ``_add_job_to_part`` -> ``_suspend_job``), before the
scheduler that allocated it logs the start, under the same locks (milliseconds). A previous run's
suspension is older by far: a requeued job waits at least ``cred_expire`` + 1 s before it starts again."""
QUARTER_HOUR = 900.0
"""Time zones lie whole quarter hours apart from UTC."""
READ_LIMIT = 64 * 1024 * 1024
"""The most of a log's matching lines read per replay (a busy site's log grows by gigabytes)."""
GREP_PATTERN = ("_slurm_rpc_submit_batch_job: |sched: Allocate |_start_job: Started |_job_complete: .* done"
                "|gang: (suspending|resuming) JobId=")


@dataclass(frozen=True)
class CtldEvent:
    """One logged event: ``stamp``, the log's time read as if UTC (seconds; with its zone when the
    line has one), the event and Slurm's job id."""

    stamp: float
    event: str
    slurm_id: int


def parse_ctld_log(text: str) -> list[CtldEvent]:
    """The events of slurmctld log lines with millisecond stamps; other lines (and logs whose time
    format has no milliseconds) give none."""
    events = []
    for line in text.splitlines():
        stamped = _STAMP.match(line)
        if stamped is None:
            continue
        for event, pattern in _MESSAGES:
            said = pattern.search(stamped.group(3))
            job = _JOB_ID.match(said.group(1)) if said is not None else None
            if job is not None:
                events.append(CtldEvent(_utc_seconds(stamped.group(1), stamped.group(2)), event,
                                        int(job.group(2) or job.group(1))))
                break
    return events


def _utc_seconds(stamp: str, zone: str | None) -> float:
    """``2026-11-29T13:34:56.522`` as Unix seconds were it UTC, less ``zone`` (``+01:00``) if any."""
    when = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f")
    seconds = calendar.timegm(when.timetuple()) + when.microsecond / 1e6
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        seconds -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    return seconds


def clock_offset(events: list[CtldEvent], submitted: dict[int, float]) -> float | None:
    """What to subtract from the log's stamps to get Unix seconds: the whole quarter hours of the
    median (stamp - Slurm's recorded submit second) over the jobs of ``submitted`` (Slurm id: Unix
    second) the log saw queued; None when none, or when the remainder is not within the second
    Slurm truncated (then the log is not this replay's clock)."""
    gaps = [e.stamp - submitted[e.slurm_id] for e in events if e.event == SUBMIT and e.slurm_id in submitted]
    if not gaps:
        return None
    middle = float(pd.Series(gaps).median())
    offset = round(middle / QUARTER_HOUR) * QUARTER_HOUR
    return offset if -0.5 <= middle - offset < 1.5 else None


def _aligned(events: list[CtldEvent], replay: pd.DataFrame) -> list[tuple[int, float, str]] | None:
    """The events of ``replay``'s jobs (a Slurm replay table: index job_id, columns slurm_id,
    submit, origin) as (job_id, seconds from the origin, event), in the log's order; None when the
    log's clock cannot be aligned with the replay's."""
    origin = float(replay["origin"].iloc[0])
    ids = replay["slurm_id"].astype(int)
    sent_as = submitted_ids(replay)
    offset = clock_offset(events, dict(zip(sent_as, replay["submit"] + origin, strict=False)))
    if offset is None:
        return None
    of_id = dict(zip(ids, replay.index, strict=True))
    of_submission: dict[int, list[int]] = {}
    for slurm_id, job in zip(sent_as, replay.index, strict=True):
        of_submission.setdefault(slurm_id, []).append(job)
    return [(job, e.stamp - offset - origin, e.event) for e in events
            for job in (of_submission.get(e.slurm_id, []) if e.event == SUBMIT else
                        [of_id[e.slurm_id]] if e.slurm_id in of_id else [])]


def submitted_ids(replay: pd.DataFrame) -> pd.Series:
    """The id sbatch gave each job of ``replay``: its own, or for a task of a job array its array's
    (column ``submitted_id``; a replay saved without it had no arrays). slurmctld logs an array's
    submission once, under that id."""
    column = replay["submitted_id"] if "submitted_id" in replay else replay["slurm_id"]
    return column.astype(int)


def log_instants(events: list[CtldEvent], replay: pd.DataFrame) -> pd.DataFrame | None:
    """Per job of ``replay`` (a Slurm replay table: index job_id, columns slurm_id, submit,
    origin), the log's instants in seconds from the origin: ``ctld_submit``, its last start and
    end ``ctld_start``, ``ctld_end`` (a requeued job's run that counts is its last), NaN where the
    log has none, ``ctld_starts``, how many times it started, and ``ctld_suspended``, the seconds
    its last run spent suspended (a suspension not resumed lasts until its end); None when the
    log's clock cannot be aligned with the replay's."""
    aligned = _aligned(events, replay)
    if aligned is None:
        return None
    table = pd.DataFrame(index=replay.index, columns=["ctld_submit", "ctld_start", "ctld_end"], dtype=float)
    table["ctld_starts"] = 0
    table["ctld_suspended"] = 0.0
    suspended_at: dict[int, float] = {}
    for job, when, event in aligned:
        if event == SUBMIT:
            table.at[job, "ctld_submit"] = when
        elif event == END:
            table.at[job, "ctld_end"] = when
            if job in suspended_at:
                table.at[job, "ctld_suspended"] += when - suspended_at.pop(job)
        elif event == SUSPEND:
            suspended_at.setdefault(job, when)
        elif event == RESUME:
            if job in suspended_at:
                table.at[job, "ctld_suspended"] += when - suspended_at.pop(job)
        else:
            table.at[job, "ctld_start"] = when
            table.at[job, "ctld_starts"] += 1
            table.at[job, "ctld_suspended"] = 0.0
            if when - suspended_at.get(job, when) > SAME_CALL:
                suspended_at.pop(job)  # a previous run's, ended by a requeue the log does not say
    return table


def logged_starts(events: list[CtldEvent], replay: pd.DataFrame) -> pd.DataFrame:
    """Every start of ``replay``'s jobs the log gives (a requeued job's each), columns ``time``
    (seconds from the origin) and ``scheduler`` (main or backfill); empty when the log's clock
    cannot be aligned with the replay's."""
    aligned = _aligned(events, replay) or []
    return pd.DataFrame([(when, event) for _, when, event in aligned if event in (MAIN, BACKFILL)],
                        columns=["time", "scheduler"])


def located_passes(passes: pd.DataFrame, starts: pd.DataFrame) -> pd.DataFrame:
    """``passes`` (columns scheduler, time, uncertainty: sdiag's brackets, seconds from the
    origin) with each pass that started jobs at the instant it started the first of them
    (``starts``: :func:`logged_starts`): a job started by a scheduler belongs to the first of its
    passes whose bracket ends after the start (sdiag's counter steps when a pass ends). A located
    pass's uncertainty is the log's millisecond."""
    located = passes.copy()
    for scheduler in (MAIN, BACKFILL):
        rows = located.index[located["scheduler"] == scheduler]
        rows = rows[located.loc[rows, "time"].argsort(kind="stable")]
        ends = (located.loc[rows, "time"] + located.loc[rows, "uncertainty"]).to_numpy()
        first: dict[int, float] = {}
        for start in starts.loc[starts["scheduler"] == scheduler, "time"].sort_values():
            k = int(ends.searchsorted(start))
            if k < len(rows):
                first.setdefault(rows[k], start)
        for row, start in first.items():
            located.loc[row, ["time", "uncertainty"]] = [start, 0.0005]
    return located


def log_reader(run: Callable[[str], tuple[int, str]], path: str) -> Callable[[], str | None]:
    """A function that returns the lines of the log at ``path`` written since this call that
    :data:`GREP_PATTERN` matches (at most :data:`READ_LIMIT` bytes), or None if the log cannot be
    read (now or then). ``run`` runs a shell command where Slurm runs and returns its exit status
    and output."""
    quoted = shlex.quote(path)
    status, size = run(f"test -r {quoted} && stat -c %s -- {quoted}")
    if status != 0 or not size.strip().isdigit():
        return lambda: None
    since = int(size.strip()) + 1

    def read() -> str | None:
        status, text = run(f"test -r {quoted} && tail -c +{since} -- {quoted} | "
                           f"grep -E {shlex.quote(GREP_PATTERN)} | head -c {READ_LIMIT}")
        return text if status == 0 else None
    return read


def ctld_log_file(show_config: dict[str, str]) -> str | None:
    """slurmctld's log file as ``scontrol show config`` names it; None when it logs to syslog."""
    path = show_config.get(CTLD_LOG_FILE, "(null)")
    return None if path in ("", "(null)") else path


def unlogged_note(show_config: dict[str, str], replay: pd.DataFrame) -> list[str]:
    """A note when the replay the model follows has no instants from slurmctld's log."""
    if "ctld_start" in replay and replay["ctld_start"].notna().any():
        return []
    where = ctld_log_file(show_config)
    why = f"{where} could not be read or did not align with the replay's clock" if where \
        else "it logs to syslog"
    return [f"slurmctld's log gave no instants ({why}): the model's passes are sdiag's brackets, its "
            "submissions when sbatch returned and its run times each sleep plus the mean launch overhead"]
