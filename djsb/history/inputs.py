"""What a replayed history is read from: the site's files (:class:`SiteFiles`: the sacct dump, slurm.conf,
sacctmgr's and sshare's answers, node events and reservations), the instant the replay starts at, and the
slurm.conf settings a what-if changes, each read and checked before anything is replayed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from djsb.errors import ConfigError, InputError, TraceError, excerpt
from djsb.slurmsite.slurm_conf import SlurmConf, read_slurm_conf
from djsb.slurmsite.slurm_config import (
    SlurmConfigError,
    parse_sshare_usage,
    priority_plugin,
    read_keys,
    scheduler_config,
)
from djsb.workloads._textio import SITE_FILE_CHARS, read_bounded
from djsb.workloads.sacct import read_sacct
from djsb.workloads.sacct_columns import format_sacct_time, parse_sacct_time
from djsb.workloads.swf import Workload


@dataclass(frozen=True)
class SiteFiles:
    """The files a site gives: its sacct dump and slurm.conf, and optionally sacctmgr's answers."""

    sacct: Path
    slurm_conf: Path
    associations: Path | None = None
    qos: Path | None = None
    usage: Path | None = None
    """sshare's RawUsage of each association at the replay's start (else accrued from the dump)."""
    events: Path | None = None
    """sacctmgr's node events (:data:`~djsb.slurmsite.site_events.EVENTS_COMMAND`): noted, not modelled."""
    reservations: Path | None = None
    """sacctmgr's reservations (:data:`~djsb.slurmsite.site_events.RESERVATIONS_COMMAND`): noted, not
    modelled."""
    earlier: tuple[Path, ...] = ()
    """sacct dumps of the history before ``sacct``'s, in time order: their jobs charge fair share
    before the replay's start, which is then ``sacct``'s first submission unless given."""
    slurmctld_log: Path | None = None
    """slurmctld's log over the dump's span: its jobs' submissions, starts and ends to the millisecond
    and the instants of Slurm's passes (:func:`with_logged_times`)."""


def replayable_dump(path: Path, grid: float) -> Workload:
    """The dump a history replays: with the Start column (what the replay is measured against)
    and at least one job it can replay, else one line saying which."""
    workload = read_sacct(path, align=grid)
    fields = {name.lower() for name in workload.header.get("Fields", "").split("|")}
    if "start" not in fields:
        raise TraceError("no Start column: the replay is measured against the recorded starts (add Start "
                         "to sacct --format)", source=str(path), line=1)
    workload.replayable_jobs()  # none is one line saying why
    return workload


def replay_start(text: str | None, workload: Workload) -> float:
    """The instant a replay starts, in the workload's seconds: ``text`` a sacct timestamp
    (``YYYY-MM-DDTHH:MM:SS``, read as the dump's times are) within the dump's span (its first
    submission to its last recorded end), else the dump's first submission."""
    first = min(job.submit for job in workload.jobs)
    if text is None:
        return first
    try:
        instant = parse_sacct_time(text)
    except ValueError as exc:
        raise InputError(str(exc), key="--start") from None
    if instant is None:
        raise InputError(f"{excerpt(text)}: expected YYYY-MM-DDTHH:MM:SS", key="--start")
    first_at, last_at = history_span(workload)
    if not first_at <= instant <= last_at:
        raise InputError(f"{text} is outside the dump's span, {format_sacct_time(first_at)} to "
                         f"{format_sacct_time(last_at)}", key="--start")
    return instant - workload.time_origin


def default_partition(conf: SlurmConf) -> str:
    """The partition a job without one goes to: the one marked Default=YES, else the first."""
    if not conf.partitions:
        raise ConfigError("no PartitionName line: the model needs the site's partitions",
                          source=conf.sources[0] if conf.sources else None)
    marked = [p["PartitionName"] for p in conf.partitions if p.get("Default", "NO").upper() == "YES"]
    return (marked or [conf.partitions[0]["PartitionName"]])[0]


WHAT_IF_SETTINGS = read_keys()
"""The slurm.conf settings the model reads, which a what-if may change."""


def what_if_settings(pairs: Sequence[str]) -> dict[str, str]:
    """``KEY=VALUE`` changes of slurm.conf settings (Slurm's spelling, any case), each a setting the
    model reads (:data:`WHAT_IF_SETTINGS`); the last one of a key wins."""
    readable = {key.lower(): key for key in WHAT_IF_SETTINGS}
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or key.lower() not in readable:
            raise InputError(f"{pair!r}: expected KEY=VALUE with KEY one of the settings the model reads "
                             f"({', '.join(WHAT_IF_SETTINGS)})", key="--set")
        settings[readable[key.lower()]] = value
    return settings


def check_settings(slurm_conf: Path, settings: Mapping[str, str]) -> None:
    """Read every setting the model takes from ``slurm_conf``, then each what-if over it, before
    anything is replayed: a value the model cannot read is one line naming the file or the
    ``--set`` that gave it (exit 2), not a failure after the baseline's replay."""
    config = read_slurm_conf(slurm_conf).config
    _read_settings(config, source=str(slurm_conf), key=None)
    for key, value in settings.items():
        _read_settings({**config, key: value}, source=None, key=f"--set {key}")


def _read_settings(config: dict[str, str], *, source: str | None, key: str | None) -> None:
    """The scheduler's settings and the priority's (every weight and time, whatever PriorityType)
    read from ``config`` as a replay reads them; InputError where one cannot be."""
    try:
        scheduler_config(config)
        priority_plugin({**config, "PriorityType": "priority/multifactor"})
    except (ValueError, SlurmConfigError) as exc:
        raise InputError(str(exc), source=source, key=key) from None


def earlier_dump(path: Path, grid: float) -> Workload:
    """An ``--earlier`` dump, read as the replayed one is; its errors name the option too."""
    try:
        return read_sacct(path, align=grid)
    except TraceError as exc:
        raise InputError(exc.message, source=exc.source, line=exc.line, key="--earlier") from None


def site_text(path: Path, key: str) -> str:
    """A site file's text (bounded: djsb.workloads._textio.read_bounded), or one line naming the
    option that gave it."""
    return read_bounded(path, what=f"the output {key} takes", key=key, most=SITE_FILE_CHARS)


def given_usage(path: Path) -> dict[tuple[str, str], float]:
    """sshare's RawUsage of each association, from the file ``--usage`` names."""
    try:
        return parse_sshare_usage(site_text(path, "--usage"), str(path), "--usage")
    except ValueError as exc:
        raise InputError(f"{path}: not sshare --parsable2 Account|User|RawUsage output ({exc})",
                         key="--usage") from None


def history_span(workload: Workload) -> tuple[float, float]:
    """The Unix times of a history's first submission and of its last recorded start or end."""
    origin = workload.time_origin
    first = min((job.submit for job in workload.jobs), default=0.0)
    last = max((max(outcome.start, outcome.start + job.run_time) for job in workload.jobs
                if (outcome := workload.recorded.get(job.job_id)) is not None), default=first)
    return origin + first, origin + last
