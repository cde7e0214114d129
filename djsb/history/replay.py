"""A site's own Slurm history replayed offline, under its own configuration, and set beside the record.

What a site has: a ``sacct --parsable2 --allocations`` dump of its jobs (:mod:`djsb.workloads.sacct`,
which keeps what Slurm recorded of each start), its slurm.conf (:mod:`djsb.slurmsite.slurm_conf`), and
optionally its associations and QoS as sacctmgr prints them (the commands are
:data:`~djsb.slurmsite.slurm_config.ASSOCIATIONS_COMMAND` and
:data:`~djsb.slurmsite.slurm_config.QOS_COMMAND`). The model takes the cluster, the scheduler options
and the priority plugin from those files exactly as a calibration takes them from a live Slurm
(:mod:`djsb.slurmsite.slurm_config`), replays the recorded jobs with their recorded submissions, run
times and limits, and :mod:`djsb.report.replay_error` measures how far each start and the
moving-average wait fall from the record.

Every setting of the files the model does not reproduce is named in one note (:func:`unmodelled`),
never dropped silently. The model holds the partitions the dump's jobs ran in (the default one for a
job that names none; a note names the others); jobs the model cannot place (more CPUs than a node
has...) are rejected with their reason by the model and counted apart from the errors.

A job that became eligible after its submission (a dependency, an array throttle, ``--begin``) is
queued in the model at its recorded Eligible time; the sbatch options of its SubmitLine the model
does not reproduce (``--nodelist``, ``--exclusive``...) are counted in a note.

The replay starts at an instant of the history (``start``; the dump's first submission by default,
when the cluster was empty as far as the dump tells), split by :func:`split_at_start`: the jobs that
ended before it only charge fair share (:func:`usage_before`: the model's own accounting, each job's
CPUs over its recorded run, decayed to the start with PriorityDecayHalfLife) unless the usage at the
start is given (sshare's RawUsage); the jobs running at it are placed where the record put them
(their NodeList; their size where the dump has none, or where the model lacks those nodes) and hold
their nodes until their recorded end, unscored; the jobs pending at it are queued at it and scored
with their waits counted from their recorded submission, as the others. Jobs the model cannot
replay or place are listed with their reason (rejected.csv) and counted in a note.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from djsb.errors import ConfigError, InputError, TraceError, excerpt
from djsb.history.compare import figure_changes
from djsb.history.recorded_priorities import decay_runs
from djsb.jobs.hostlist import NO_NODES, expand_hostlist
from djsb.model import RunningAtStart, Simulation, SimulationResult, StartState
from djsb.model.cluster import QosSpec
from djsb.model.priority.multifactor import MultifactorOptions
from djsb.report.history import recorded_intervals, replayed_intervals, write_history_html
from djsb.report.replay_error import (
    BREAKDOWNS,
    breakdown,
    job_errors,
    moving_average_waits,
    recorded_frame,
    summary,
    summary_rows,
)
from djsb.slurmsite.site_events import parse_node_events, parse_reservations, site_event_notes
from djsb.slurmsite.slurm_conf import SlurmConf, gres_notes, read_gres_conf, read_slurm_conf
from djsb.slurmsite.slurm_conf_keys import SLURM_CONF_KEYS
from djsb.slurmsite.slurm_config import (
    SLURM_LIKE,
    SlurmConfigError,
    cluster_spec,
    fair_share_used,
    from_slurm,
    parse_associations,
    parse_qos,
    parse_sshare_usage,
    partition_keys_read,
    priority_plugin,
    read_keys,
    scheduler_config,
    scheduler_parameters,
    scheduler_parameters_read,
)
from djsb.slurmsite.slurmctld_log import SchedulerLog, pass_instants, read_scheduler_log
from djsb.workloads._textio import SITE_FILE_CHARS, read_bounded
from djsb.workloads.job import RecordedOutcome, TraceJob
from djsb.workloads.sacct import merged_dumps, read_sacct
from djsb.workloads.sacct_columns import format_sacct_time, parse_sacct_time
from djsb.workloads.submit_line import sbatch_options
from djsb.workloads.swf import Workload

OPTIONS_UNMODELLED = {
    "--nodelist": "the model places them on any node", "-w": "--nodelist",
    "--exclude": "the model may place them on the excluded nodes", "-x": "--exclude",
    "--exclusive": "the model shares their nodes as their partition allows",
    "--oversubscribe": "the model shares no core of theirs", "-s": "--oversubscribe",
    "--constraint": "the model ignores node features", "-C": "--constraint",
    "--gres": "the model places by CPUs and memory", "--gpus": "the model places by CPUs and memory",
    "--reservation": "the model has no reservation", "--contiguous": "the model ignores contiguity",
    "--switches": "the model has no network topology",
}
"""sbatch options (long name: what the replay does instead; short name: its long name) the model does
not reproduce, found in sacct's SubmitLine."""
SHORT_RUN, SHORT_SHARE = 60.0, 0.1
"""A dump whose jobs ran under a minute for more than a tenth of them gets a note: the second Slurm
spends between an end and the next start, which sacct does not keep, is then more than 1/60 of a
run (docs/history.md, on the mini-cluster records of 5-s jobs)."""
WHAT_IF_SETTINGS = read_keys()
"""The slurm.conf settings the model reads, which a what-if may change."""

PARTITION_KEYS_MODELLED = {"PartitionName", "Nodes", "Default", "State", *partition_keys_read()}
NODE_KEYS_MODELLED = {"NodeName", "CPUs", "CPUTot", "RealMemory", "Boards", "Sockets", "CoresPerSocket",
                      "ThreadsPerCore", "NodeHostname", "NodeAddr", "Port", "State"}
NODE_STATES_IN_SERVICE = {"UNKNOWN", "IDLE", "CLOUD"}


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


@dataclass(frozen=True)
class HistoryReplay:
    """A replay of a site's history beside the record: each job's errors, the headline figures, the
    breakdowns, the moving-average waits, the model's own result and the notes."""

    errors: pd.DataFrame
    figures: dict[str, float]
    breakdowns: dict[str, pd.DataFrame]
    averages: pd.DataFrame
    result: SimulationResult
    notes: list[str]
    rejected: pd.DataFrame
    """The jobs of the record not replayed (job_id, reason): not placed at the start, or refused."""
    unmodelled: pd.DataFrame
    """The jobs replayed without an sbatch option they asked (:func:`unmodelled_options`)."""
    recorded: pd.DataFrame
    """The record of the jobs replayed or placed (:data:`~djsb.report.history.INTERVAL_COLUMNS`)."""
    origin: float
    """The Unix time of the history's second 0 (its clock read as UTC)."""


@dataclass(frozen=True)
class StartSplit:
    """The jobs of a history at the instant its replay starts: those replayed (submitted after it,
    or pending at it), those running at it (Start < start < End, by the record) and those ended by
    it."""

    replayed: list[TraceJob]
    running: list[TraceJob]
    ended: list[TraceJob]


def split_at_start(jobs: Sequence[TraceJob], recorded: Mapping[int, RecordedOutcome],
                   start: float) -> StartSplit:
    """``jobs`` split at ``start`` by their recorded start and end (start + run time); a job
    without a recorded start is replayed."""
    replayed, running, ended = [], [], []
    for job in jobs:
        outcome = recorded.get(job.job_id)
        if outcome is None or outcome.start >= start:
            replayed.append(job)
        elif outcome.start + job.run_time > start:
            running.append(job)
        else:
            ended.append(job)
    return StartSplit(replayed, running, ended)


def usage_before(jobs: Sequence[TraceJob], recorded: Mapping[int, RecordedOutcome], start: float,
                 half_life: float) -> dict[tuple[str, str], float]:
    """The RawUsage (CPU-seconds decayed to ``start``, halving every ``half_life``; 0: no decay) each
    (user, account) has at ``start`` from the part before it of ``jobs``' recorded runs, charged as
    the model charges a running job (:class:`~djsb.model.priority.accounts.AccountTree`): CPUs
    times the integral of 2^-((start - t) / half_life) over the run."""
    usage: dict[tuple[str, str], float] = {}
    for job in jobs:
        outcome = recorded.get(job.job_id)
        if outcome is None or outcome.start >= start:
            continue
        end = min(outcome.start + job.run_time, start)
        if half_life > 0:
            charge = half_life / math.log(2) * (2.0 ** ((end - start) / half_life)
                                                - 2.0 ** ((outcome.start - start) / half_life))
        else:
            charge = end - outcome.start
        key = (job.user, job.account)
        usage[key] = usage.get(key, 0.0) + job.cpus * charge
    return usage


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
    first_at, last_at = _span(workload)
    if not first_at <= instant <= last_at:
        raise InputError(f"{text} is outside the dump's span, {format_sacct_time(first_at)} to "
                         f"{format_sacct_time(last_at)}", key="--start")
    return instant - workload.time_origin


def node_list(outcome: RecordedOutcome | None) -> list[str]:
    """The nodes a job ran on by its record (none when the dump does not say)."""
    text = "" if outcome is None else outcome.node_list
    if text in NO_NODES:
        return []
    try:
        return expand_hostlist(text, check=False)
    except ValueError:
        return []


def unmodelled(conf: SlurmConf) -> list[str]:
    """One note per setting of ``conf`` the model does not reproduce."""
    notes = [f"slurm.conf key {key} is not one Slurm 22.05 reads (a typo? slurm.conf(5)): ignored"
             for key in conf.config if key.lower() not in SLURM_CONF_KEYS]
    preempt = conf.config.get("PreemptType", "preempt/none")
    if preempt != "preempt/none":
        notes.append(f"PreemptType={preempt} has no model: no job is preempted")
    params = scheduler_parameters(conf.config.get("SchedulerParameters", ""))
    notes += [f"SchedulerParameters {key}{'=' + value if value else ''} has no model"
              for key, value in params.items() if key not in scheduler_parameters_read()]
    if conf.config.get("GresTypes"):
        notes.append(f"GresTypes={conf.config['GresTypes']} has no model: jobs are placed by CPUs and memory")
    for node in conf.nodes:
        state = node.get("State", "UNKNOWN").upper()
        if state not in NODE_STATES_IN_SERVICE:
            notes.append(f"node {node['NodeName']} State={state}: the model keeps it in service")
    keys_by_node: dict[str, list[str]] = {}
    for node in conf.nodes:
        for key in sorted(set(node) - NODE_KEYS_MODELLED):
            keys_by_node.setdefault(f"{key}={node[key]}", []).append(node["NodeName"])
    notes += [f"nodes {', '.join(names)}: {setting} has no model" for setting, names in keys_by_node.items()]
    for part in conf.partitions:
        notes += [f"partition {part['PartitionName']}: {key}={part[key]} has no model"
                  for key in sorted(set(part) - PARTITION_KEYS_MODELLED)]
    return notes


def submit_options(line: str) -> set[str]:
    """The long names of the options of an sbatch command line (up to its script), short ones by
    their long name when :data:`OPTIONS_UNMODELLED` knows it."""
    found: set[str] = set()
    for name, _ in sbatch_options(line):
        alias = OPTIONS_UNMODELLED.get(name, "")
        found.add(alias if alias.startswith("--") else name)
    return found


def unmodelled_options(jobs: Sequence[TraceJob], recorded: Mapping[int, RecordedOutcome]) -> pd.DataFrame:
    """One row per job of ``jobs`` and sbatch option of its submit line the model does not
    reproduce: job_id, option, and what the replay does instead (unmodelled.csv)."""
    rows = [(job.job_id, option, OPTIONS_UNMODELLED[option])
            for job in jobs for outcome in (recorded.get(job.job_id),) if outcome is not None
            for option in sorted(submit_options(outcome.submit_line)) if option in OPTIONS_UNMODELLED]
    return pd.DataFrame(rows, columns=["job_id", "option", "replayed_as"])


def job_notes(unmodelled_jobs: pd.DataFrame, eligible_later: int) -> list[str]:
    """Notes on what jobs asked that the model does not reproduce (:func:`unmodelled_options`),
    and on the jobs queued at their recorded Eligible time."""
    counts = Counter(unmodelled_jobs["option"])
    notes = [f"{count} job(s) asked {option}: {OPTIONS_UNMODELLED[option]} (unmodelled.csv)"
             for option, count in sorted(counts.items())]
    if eligible_later:
        notes.append(f"{eligible_later} job(s) became eligible after their submission (a dependency, an "
                     "array throttle, --begin): the model queues each at its recorded Eligible time")
    return notes


def default_partition(conf: SlurmConf) -> str:
    """The partition a job without one goes to: the one marked Default=YES, else the first."""
    if not conf.partitions:
        raise ConfigError("no PartitionName line: the model needs the site's partitions",
                          source=conf.sources[0] if conf.sources else None)
    marked = [p["PartitionName"] for p in conf.partitions if p.get("Default", "NO").upper() == "YES"]
    return (marked or [conf.partitions[0]["PartitionName"]])[0]


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


def replay_history(files: SiteFiles, *, window: float, step: float, seed: int = 0,
                   settings: Mapping[str, str] | None = None, start: str | None = None,
                   on_progress: Callable[[int, int], None] | None = None) -> HistoryReplay:
    """Replay the history of ``files`` from ``start`` (a sacct timestamp; None: the dump's first
    submission) on the model of the site's own configuration, with the slurm.conf ``settings``
    changed (a what-if; :func:`what_if_settings`), and measure it against the record (moving
    averages over ``window``, sampled every ``step``: seconds)."""
    conf = read_slurm_conf(files.slurm_conf)
    conf.config.update(settings or {})
    scheduler = dataclasses.replace(scheduler_config(conf.config), **SLURM_LIKE)
    grid = clock_step(scheduler.bf_resolution)
    parts = [*(_earlier_dump(path, grid) for path in files.earlier), replayable_dump(files.sacct, grid)]
    workload = merged_dumps(parts, align=grid)
    log = read_scheduler_log(files.slurmctld_log) if files.slurmctld_log is not None else None
    if log is not None:
        if not any(job.job_id in log.starts for job in workload.jobs):
            raise InputError(f"{files.slurmctld_log} logs the start of no job of the dump ({len(log.starts)} "
                             "start(s) in all): give the log of the controller that ran the dump's jobs, "
                             "over its span", key="--slurmctld-log")
        workload = with_logged_times(workload, log)
    passes = {kind: [at - workload.time_origin for at in instants]
              for kind, instants in pass_instants(log, scheduler.bf_interval, _span(workload)).items()} \
        if log else {}
    if start is None and files.earlier:  # the replayed dump's window, the earlier ones before it
        replayed = parts[-1]
        first = min(job.submit for job in replayed.replayable_jobs())
        begin = replayed.time_origin - workload.time_origin + first
    else:
        begin = replay_start(start, workload)
    split = split_at_start(workload.replayable_jobs(), workload.recorded, begin)
    jobs = split.replayed
    if not jobs:
        raise InputError(f"no job of {files.sacct} was submitted after, or pending at, {start}",
                         key="--start")
    queued = [_queued_at(job, workload.recorded.get(job.job_id), begin) for job in jobs]
    notes = unmodelled(conf)
    gres = read_gres_conf(files.slurm_conf)
    if gres is not None:
        notes += gres_notes(*gres)
    qos = (parse_qos(_site_text(files.qos, "--qos"), str(files.qos), "--qos") if files.qos is not None
           else (QosSpec("normal"),))
    default = default_partition(conf)
    used = {default if job.partition is None else job.partition for job in (*jobs, *split.running)}
    modelled = [p["PartitionName"] for p in conf.partitions if p["PartitionName"] in used]
    left_out = [p["PartitionName"] for p in conf.partitions if p["PartitionName"] not in used]
    if left_out:
        notes.append(f"partition(s) {', '.join(left_out)} of slurm.conf ran no job of the dump: not modelled")
    if not modelled:
        raise ConfigError(f"no job of the dump ran in a partition of slurm.conf (they ran in "
                          f"{', '.join(sorted(str(name) for name in used))})", source=str(files.slurm_conf))
    cluster = cluster_spec(conf.partitions, conf.nodes, modelled[0], modelled[1:], qos)
    associations = parse_associations(_site_text(files.associations, "--associations"),
                                      str(files.associations), "--associations") \
        if files.associations else None
    half_life = from_slurm(MultifactorOptions, conf.config)["decay_half_life"]
    usage = _given_usage(files.usage) if files.usage is not None \
        else usage_before([*split.ended, *split.running], workload.recorded, begin, half_life)
    make_priority, priority_notes = priority_plugin(conf.config, associations, usage,
                                                    decay_runs(workload.jobs, workload.recorded))
    eligible_later = sum(1 for job, as_queued in zip(jobs, queued, strict=True)
                         if as_queued.submit > max(job.submit, begin))
    unmodelled_jobs = unmodelled_options([*jobs, *split.running], workload.recorded)
    notes += priority_notes + _history_notes(workload, window) + job_notes(unmodelled_jobs, eligible_later)
    notes += _start_notes(split, begin, files.usage, fair_share_used(conf.config))
    notes += _site_event_notes(files, workload)
    if log is not None:
        notes.append(_log_note(log, workload, passes))
    pairs = [*(associations.pairs if associations is not None else ()),
             *((job.user, job.account) for job in split.running)]
    state = StartState(begin, running_at_start(split.running, workload.recorded),
                       _eligible_before(jobs, workload, begin), passes)
    result = Simulation(queued, cluster, scheduler, make_priority(), seed=seed, associations=pairs,
                        on_progress=on_progress, start=state).run()
    rejected = result.rejected
    notes += _rejected_notes(rejected)
    errors = job_errors(recorded_frame(jobs, workload.recorded), result.jobs)
    return HistoryReplay(errors, summary(errors, window, step),
                         {by: breakdown(errors, by, window, step) for by in BREAKDOWNS},
                         moving_average_waits(errors, window, step), result, notes, rejected, unmodelled_jobs,
                         recorded_intervals([*jobs, *split.running], workload.recorded), workload.time_origin)


def _earlier_dump(path: Path, grid: float) -> Workload:
    """An ``--earlier`` dump, read as the replayed one is; its errors name the option too."""
    try:
        return read_sacct(path, align=grid)
    except TraceError as exc:
        raise InputError(exc.message, source=exc.source, line=exc.line, key="--earlier") from None


def with_logged_times(workload: Workload, log: SchedulerLog) -> Workload:
    """``workload`` with the times of ``log`` to the millisecond where sacct cuts them to the second:
    each job's recorded start and run time (start to end) where the log has both, and its submission
    where the log has it (an array's later tasks have none: their submission stays sacct's second),
    with the eligibility at that submission when sacct's was its second."""
    origin = workload.time_origin
    jobs, recorded = [], dict(workload.recorded)
    for job in workload.jobs:
        submit, start, end = log.submits.get(job.job_id), log.starts.get(job.job_id), log.ends.get(job.job_id)
        outcome = recorded.get(job.job_id)
        if start is None or end is None or outcome is None:
            jobs.append(job)
            continue
        logged = job.submit if submit is None else submit - origin
        jobs.append(dataclasses.replace(job, submit=logged, run_time=end - start.time))
        eligible = outcome.eligible
        if eligible is not None and math.floor(eligible) <= math.floor(job.submit):
            eligible = logged
        recorded[job.job_id] = dataclasses.replace(outcome, start=start.time - origin, eligible=eligible)
    return dataclasses.replace(workload, jobs=sorted(jobs, key=lambda job: (job.submit, job.job_id)),
                               recorded=recorded)


def _log_note(log: SchedulerLog, workload: Workload, passes: Mapping[str, Sequence[float]]) -> str:
    """What the replay took from slurmctld's log."""
    timed = [job.job_id for job in workload.jobs if job.job_id in log.starts and job.job_id in log.ends]
    submitted = sum(1 for job_id in timed if job_id in log.submits)
    last = max((at for instants in passes.values() for at in instants), default=0.0)
    return (f"slurmctld's log: the starts and run times of {len(timed)} of {len(workload.jobs)} jobs to the "
            f"millisecond ({submitted} of them with their submission), and the model's passes at Slurm's "
            f"({len(passes.get('main', []))} main, {len(passes.get('backfill', []))} backfill) up to "
            f"{last:.0f} s, as configured after")


def _span(workload: Workload) -> tuple[float, float]:
    """The Unix times of a history's first submission and of its last recorded start or end."""
    origin = workload.time_origin
    first = min((job.submit for job in workload.jobs), default=0.0)
    last = max((max(outcome.start, outcome.start + job.run_time) for job in workload.jobs
                if (outcome := workload.recorded.get(job.job_id)) is not None), default=first)
    return origin + first, origin + last


def clock_step(resolution: float) -> float:
    """The step a replay's clock counts from a multiple of (on the Unix clock, at or before the
    first submission): bf_resolution in whole seconds. slurmctld counts whole seconds (``time_t``)
    and sched/backfill floors its reservations to multiples of bf_resolution on that clock
    (backfill.c ``start_time / backfill_resolution * backfill_resolution``); the model floors its
    own clock, so its floors are Slurm's only on a clock counted from such a multiple (the
    calibration runs on the Unix clock itself, for the same reason)."""
    return float(max(1, round(resolution)))


def running_at_start(running: Sequence[TraceJob],
                     recorded: Mapping[int, RecordedOutcome]) -> list[RunningAtStart]:
    """The jobs running at the replay's start, begun when and where the record says."""
    return [RunningAtStart(job, recorded[job.job_id].start, tuple(node_list(recorded[job.job_id])))
            for job in running]


def _start_notes(split: StartSplit, begin: float, usage: Path | None, fair_share: bool) -> list[str]:
    """Notes on how the replay starts within the history (on the usage at its start only when
    the priority has a fair-share term)."""
    notes = []
    if split.running:
        notes.append(f"{len(split.running)} job(s) running at the replay's start are placed where the record "
                     "put them and hold their nodes until their recorded end (not scored)")
    pending = sum(1 for job in split.replayed if job.submit < begin)
    if pending:
        notes.append(f"{pending} job(s) pending at the replay's start are queued at it: their age factor "
                     "counts from it (their waits from their submission)")
    if not fair_share:
        return notes
    if usage is not None:
        notes.append(f"fair share: the usage at the replay's start is {usage}'s")
    elif split.ended or split.running:
        notes.append(f"fair share: the usage at the replay's start is accrued from {len(split.ended)} job(s) "
                     f"ended before it and {len(split.running)} running at it")
    return notes


def _rejected_notes(rejected: pd.DataFrame) -> list[str]:
    """One note counting the jobs of the record not replayed, by reason."""
    if rejected.empty:
        return []
    counts = rejected["reason"].value_counts()
    reasons = "; ".join(f"{count} {reason}" for reason, count in counts.items())
    return [f"{len(rejected)} job(s) of the record are not replayed (rejected.csv): {reasons}"]


def _site_text(path: Path, key: str) -> str:
    """A site file's text (bounded: djsb.workloads._textio.read_bounded), or one line naming the
    option that gave it."""
    return read_bounded(path, what=f"the output {key} takes", key=key, most=SITE_FILE_CHARS)


def _site_event_notes(files: SiteFiles, workload: Workload) -> list[str]:
    """The notes of the node events and reservations ``files`` give that overlap the dump's span
    (its first submission to its last recorded end)."""
    events = parse_node_events(_site_text(files.events, "--events"), str(files.events)) \
        if files.events is not None else []
    held = parse_reservations(_site_text(files.reservations, "--reservations"), str(files.reservations)) \
        if files.reservations is not None else []
    ends = [outcome.start + job.run_time for job in workload.jobs
            for outcome in (workload.recorded.get(job.job_id),) if outcome is not None]
    if not workload.jobs or not ends:
        return []
    first = workload.time_origin + min(job.submit for job in workload.jobs)
    return site_event_notes(events, held, first, workload.time_origin + max(ends))


def _given_usage(path: Path) -> dict[tuple[str, str], float]:
    """sshare's RawUsage of each association, from the file ``--usage`` names."""
    try:
        return parse_sshare_usage(_site_text(path, "--usage"), str(path), "--usage")
    except ValueError as exc:
        raise InputError(f"{path}: not sshare --parsable2 Account|User|RawUsage output ({exc})",
                         key="--usage") from None


def _queued_at(job: TraceJob, outcome: RecordedOutcome | None, begin: float) -> TraceJob:
    """``job`` submitted to the model when Slurm recorded it eligible, if that was later, and not
    before the replay's start ``begin`` (the wait is still counted from its submission on both
    sides)."""
    eligible = job.submit if outcome is None or outcome.eligible is None else outcome.eligible
    queued = max(job.submit, eligible, begin)
    return job if queued == job.submit else dataclasses.replace(job, submit=queued)


def _eligible_before(jobs: Sequence[TraceJob], workload: Workload, begin: float) -> dict[int, float]:
    """When each job pending at the replay's start ``begin`` became eligible, by the record (its
    Eligible, else its submission): the model ages it from there, as Slurm does."""
    found = {}
    for job in jobs:
        outcome = workload.recorded.get(job.job_id)
        eligible = outcome.eligible if outcome is not None and outcome.eligible is not None else job.submit
        if eligible < begin:
            found[job.job_id] = eligible
    return found


def _history_notes(workload: Workload, window: float) -> list[str]:
    """Notes on what the dump itself leaves out of the comparison."""
    notes = []
    if workload.skipped:
        reasons = ", ".join(f"{count} {reason}" for reason, count in workload.skip_summary().items())
        notes.append(f"{len(workload.skipped)} record(s) of the dump are not replayed ({reasons})")
    span = max(job.submit for job in workload.jobs) - min(job.submit for job in workload.jobs)
    if span < window:
        notes.append(f"the dump spans {span:.0f} s of submissions, less than the {window:.0f} s window of "
                     "the moving averages: they have one sample")
    short = sum(1 for job in workload.jobs if job.run_time < SHORT_RUN)
    if short > SHORT_SHARE * len(workload.jobs):
        notes.append(f"{short} of the {len(workload.jobs)} jobs ran under {SHORT_RUN:.0f} s: Slurm starts a "
                     "waiting job at its background loop's next wake-up, about a second after the end that "
                     "made room, and sacct's whole seconds do not keep that second; on such jobs it is a "
                     "large part of the run, and the replay's waits may come out shorter than the record's")
    return notes


def write_history(replay: HistoryReplay, out_dir: Path, title: str) -> None:
    """The replay's files: jobs.csv (the model's), errors.csv (one row per recorded job),
    summary.csv (the headline figures, then one row per group of each breakdown), moving_average.csv,
    rejected.csv, unmodelled.csv, notes.txt and report.html (``title``) with its figures."""
    replay.result.jobs.to_csv(out_dir / "jobs.csv", index=False)
    replay.rejected.to_csv(out_dir / "rejected.csv", index=False)
    replay.unmodelled.to_csv(out_dir / "unmodelled.csv", index=False)
    replay.errors.to_csv(out_dir / "errors.csv", index=False)
    table = summary_rows(replay.figures, replay.breakdowns)
    table.to_csv(out_dir / "summary.csv", index=False)
    replay.averages.to_csv(out_dir / "moving_average.csv")
    (out_dir / "notes.txt").write_text("".join(f"{note}\n" for note in replay.notes))
    write_history_html(out_dir, errors=replay.errors, averages=replay.averages, recorded=replay.recorded,
                       replayed=replayed_intervals(replay.recorded, replay.result.jobs),
                       figures=replay.figures, summary=table, notes=replay.notes, rejected=replay.rejected,
                       origin=replay.origin, title=title)


def compare_what_if(baseline: HistoryReplay, what_if: HistoryReplay) -> pd.DataFrame:
    """The what-if's headline figures beside the baseline's
    (:func:`~djsb.history.compare.figure_changes`)."""
    return pd.DataFrame(figure_changes(baseline.figures, what_if.figures))
