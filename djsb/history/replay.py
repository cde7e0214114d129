"""A site's own Slurm history replayed offline, under its own configuration, and set beside the record.

What a site has: a ``sacct --parsable2 --allocations`` dump of its jobs (:mod:`djsb.workloads.sacct`,
which keeps what Slurm recorded of each start), its slurm.conf (:mod:`djsb.slurmsite.slurm_conf`), and
optionally its associations and QoS as sacctmgr prints them (the commands are
:data:`~djsb.slurmsite.slurm_config.ASSOCIATIONS_COMMAND` and
:data:`~djsb.slurmsite.qos_text.QOS_COMMAND`). The model takes the cluster, the scheduler options
and the priority plugin from those files exactly as a calibration takes them from a live Slurm
(:mod:`djsb.slurmsite.slurm_config`), replays the recorded jobs with their recorded submissions, run
times and limits, and :mod:`djsb.report.replay_error` measures how far each start and the moving-average
wait fall from the record.

Every setting of the files the model does not reproduce is named in one note
(:func:`~djsb.history.notes.unmodelled`), never dropped silently (:mod:`djsb.history.notes`). The model
holds the partitions the dump's jobs ran in (the default one for a job that names none; a note names the
others); jobs the model cannot place (more CPUs than a node has...) are rejected with their reason by
the model and counted apart from the errors.

A job that became eligible after its submission (a dependency, an array throttle, ``--begin``) is queued
in the model at its recorded Eligible time; the sbatch options of its SubmitLine the model does not
reproduce (``--nodelist``, ``--exclusive``...) are counted in a note.

The replay starts at an instant of the history (``start``; the dump's first submission by default, when
the cluster was empty as far as the dump tells), split by :func:`~djsb.history.start.split_at_start`:
the jobs that ended before it only charge fair share (:func:`~djsb.history.start.usage_before`: the
model's own accounting, each job's CPUs over its recorded run, decayed to the start with
PriorityDecayHalfLife) unless the usage at the start is given (sshare's RawUsage); the jobs running at
it are placed where the record put them (their NodeList; their size where the dump has none, or where
the model lacks those nodes) and hold their nodes until their recorded end, unscored; the jobs pending
at it are queued at it and scored with their waits counted from their recorded submission, as the
others. Jobs the model cannot replay or place are listed with their reason (rejected.csv) and counted in
a note.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from djsb import slurm_text
from djsb.errors import ConfigError, InputError
from djsb.history.compare import figure_changes
from djsb.history.dependencies import array_notes, dependency_notes, history_dependencies
from djsb.history.inputs import (
    SiteFiles,
    default_partition,
    earlier_dump,
    given_usage,
    history_span,
    replay_start,
    replayable_dump,
    site_text,
)
from djsb.history.notes import (
    history_notes,
    job_notes,
    log_note,
    rejected_notes,
    site_events,
    site_reservations,
    start_notes,
    unmodelled,
    unmodelled_options,
)
from djsb.history.recorded_priorities import decay_runs
from djsb.history.start import (
    clock_step,
    eligible_before,
    queued_at,
    running_at_start,
    split_at_start,
    usage_before,
)
from djsb.model import Simulation, SimulationResult, StartState
from djsb.model.cluster_spec import QosSpec
from djsb.model.priority.multifactor import MultifactorOptions
from djsb.report.history import recorded_intervals, replayed_intervals, write_history_html
from djsb.report.replay_error import (
    BREAKDOWNS,
    breakdown,
    job_errors,
    moving_average_waits,
    reason_table,
    recorded_frame,
    summary,
    summary_rows,
)
from djsb.slurmsite.assoc_text import parse_association_limits
from djsb.slurmsite.qos_text import QosTable, parse_qos
from djsb.slurmsite.site_events import in_reservations, model_events, model_reservations
from djsb.slurmsite.slurm_conf import gres_notes, read_gres_conf, read_slurm_conf
from djsb.slurmsite.slurm_config import (
    SLURM_LIKE,
    cluster_spec,
    fair_share_used,
    from_slurm,
    parse_associations,
    priority_plugin,
    scheduler_config,
    unknown_partition_qos,
)
from djsb.slurmsite.slurmctld_log import SchedulerLog, pass_instants, read_scheduler_log
from djsb.workloads.sacct import merged_dumps
from djsb.workloads.swf import Workload


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
    parts = [*(earlier_dump(path, grid) for path in files.earlier), replayable_dump(files.sacct, grid)]
    workload = merged_dumps(parts, align=grid)
    log = read_scheduler_log(files.slurmctld_log) if files.slurmctld_log is not None else None
    if log is not None:
        if not any(job.job_id in log.starts for job in workload.jobs):
            raise InputError(f"{files.slurmctld_log} logs the start of no job of the dump ({len(log.starts)} "
                             "start(s) in all): give the log of the controller that ran the dump's jobs, "
                             "over its span", key="--slurmctld-log")
        workload = with_logged_times(workload, log)
    span = history_span(workload)
    passes = {kind: [at - workload.time_origin for at in instants]
              for kind, instants in pass_instants(log, scheduler.bf_interval, span).items()} if log else {}
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
    dependencies = history_dependencies(jobs, split.running, workload.recorded, split.ended)
    held_in_replay = dependencies.enforced.keys() | {job.job_id for job in jobs if job.array is not None}
    queued = [queued_at(job, workload.recorded.get(job.job_id) if job.job_id not in held_in_replay else None,
                        begin) for job in jobs]
    notes = unmodelled(conf)
    gres = read_gres_conf(files.slurm_conf)
    if gres is not None:
        notes += gres_notes(*gres)
    qos_table = (parse_qos(site_text(files.qos, "--qos"), str(files.qos), "--qos") if files.qos is not None
                 else QosTable((QosSpec("normal"),), []))
    qos = qos_table.qos
    notes += qos_table.notes
    if slurm_text.preempt_type(conf.config.get("PreemptType", "")) == "qos" and not qos_table.preempt_lists:
        notes.append("PreemptType=preempt/qos: --qos gives no Preempt lists (sacctmgr's Preempt column): "
                     "no job is preempted")
    default = default_partition(conf)
    used = {default if job.partition is None else job.partition for job in (*jobs, *split.running)}
    modelled = [p["PartitionName"] for p in conf.partitions if p["PartitionName"] in used]
    left_out = [p["PartitionName"] for p in conf.partitions if p["PartitionName"] not in used]
    if left_out:
        notes.append(f"partition(s) {', '.join(left_out)} of slurm.conf ran no job of the dump: not modelled")
    if not modelled:
        raise ConfigError(f"no job of the dump ran in a partition of slurm.conf (they ran in "
                          f"{', '.join(sorted(str(name) for name in used))})", source=str(files.slurm_conf))
    notes += unknown_partition_qos([p for p in conf.partitions if p["PartitionName"] in used], qos)
    cluster = cluster_spec(conf.partitions, conf.nodes, modelled[0], modelled[1:], qos)
    events, event_notes = model_events(site_events(files), workload.time_origin,
                                       (begin, span[1] - workload.time_origin),
                                       {node.name for node in cluster.nodes})
    held, reservation_notes = model_reservations(site_reservations(files), workload.time_origin,
                                                 (begin, span[1] - workload.time_origin),
                                                 {node.name for node in cluster.nodes})
    cluster = dataclasses.replace(cluster, events=events, reservations=held)
    queued, outside_notes = in_reservations(queued, held)
    reservation_notes += outside_notes
    assoc_text = site_text(files.associations, "--associations") if files.associations else None
    associations = parse_associations(assoc_text, str(files.associations), "--associations") \
        if assoc_text is not None else None
    if assoc_text is not None:
        assoc_limits, assoc_notes = parse_association_limits(assoc_text, str(files.associations),
                                                             "--associations")
        cluster = dataclasses.replace(cluster, associations=assoc_limits)
        notes += assoc_notes
    half_life = from_slurm(MultifactorOptions, conf.config)["decay_half_life"]
    usage = given_usage(files.usage) if files.usage is not None \
        else usage_before([*split.ended, *split.running], workload.recorded, begin, half_life)
    make_priority, priority_notes = priority_plugin(conf.config, associations, usage,
                                                    decay_runs(workload.jobs, workload.recorded))
    eligible_later = sum(1 for job, as_queued in zip(jobs, queued, strict=True)
                         if as_queued.submit > max(job.submit, begin))
    unmodelled_jobs = unmodelled_options([*jobs, *split.running], workload.recorded)
    notes += priority_notes + history_notes(workload, window) + job_notes(unmodelled_jobs, eligible_later)
    notes += dependency_notes(dependencies) + array_notes(jobs)
    notes += start_notes(split, begin, files.usage, fair_share_used(conf.config))
    notes += event_notes + reservation_notes
    if log is not None:
        notes.append(log_note(log, workload, passes))
    pairs = [*(associations.pairs if associations is not None else ()),
             *((job.user, job.account) for job in split.running)]
    state = StartState(begin, running_at_start(split.running, workload.recorded),
                       eligible_before(jobs, workload, begin), passes, epoch=workload.time_origin)
    result = Simulation(queued, cluster, scheduler, make_priority(), seed=seed, associations=pairs,
                        on_progress=on_progress, start=state,
                        dependencies=dependencies.enforced or None).run()
    rejected = result.rejected
    notes += rejected_notes(rejected)
    errors = job_errors(recorded_frame(jobs, workload.recorded), result.jobs)
    return HistoryReplay(errors, summary(errors, window, step),
                         {by: breakdown(errors, by, window, step) for by in BREAKDOWNS},
                         moving_average_waits(errors, window, step), result, notes, rejected, unmodelled_jobs,
                         recorded_intervals([*jobs, *split.running], workload.recorded), workload.time_origin)


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


def write_history(replay: HistoryReplay, out_dir: Path, title: str) -> None:
    """The replay's files: jobs.csv (the model's), errors.csv (one row per recorded job), reasons.csv
    (how many jobs each pair of recorded and simulated reasons held),
    summary.csv (the headline figures, then one row per group of each breakdown), moving_average.csv,
    rejected.csv, unmodelled.csv, out_of_service.csv (with node events), notes.txt and report.html
    (``title``) with its figures."""
    replay.result.jobs.to_csv(out_dir / "jobs.csv", index=False)
    replay.rejected.to_csv(out_dir / "rejected.csv", index=False)
    if replay.result.out_of_service is not None:
        replay.result.out_of_service.to_csv(out_dir / "out_of_service.csv", index=False)
    replay.unmodelled.to_csv(out_dir / "unmodelled.csv", index=False)
    replay.errors.to_csv(out_dir / "errors.csv", index=False)
    reason_table(replay.errors).to_csv(out_dir / "reasons.csv", index=False)
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
