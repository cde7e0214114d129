"""What a replay of a recorded history says it does not reproduce: one line per setting of the site's
files the model has no model for, per sbatch option of the jobs' SubmitLine, per node event and
reservation, and on how the replay starts; never dropped in silence."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from djsb import slurm_text
from djsb.history.inputs import SiteFiles, site_text
from djsb.history.start import StartSplit
from djsb.slurmsite.site_events import NodeEvent, ReservationRecord, parse_node_events, parse_reservations
from djsb.slurmsite.slurm_conf import SlurmConf
from djsb.slurmsite.slurm_conf_keys import SLURM_CONF_KEYS
from djsb.slurmsite.slurm_config import (
    partition_keys_read,
    scheduler_parameters,
    scheduler_parameters_read,
)
from djsb.slurmsite.slurmctld_log import SchedulerLog
from djsb.workloads.job import RecordedOutcome, TraceJob
from djsb.workloads.submit_line import sbatch_options
from djsb.workloads.swf import Workload

OPTIONS_UNMODELLED = {
    "--nodelist": "the model places them on any node", "-w": "--nodelist",
    "--exclude": "the model may place them on the excluded nodes", "-x": "--exclude",
    "--exclusive=user": "the model shares their nodes as their partition allows",
    "--exclusive=mcs": "the model shares their nodes as their partition allows",
    "--oversubscribe": "the model shares no core of theirs", "-s": "--oversubscribe",
    "--constraint": "the model ignores node features", "-C": "--constraint",
    "--gpus-per-socket": "the model binds no GPU to a socket",
    "--ntasks-per-gpu": "the model binds no task to a GPU",
    "--contiguous": "the model ignores contiguity",
    "--switches": "the model has no network topology",
}
"""sbatch options (long name: what the replay does instead; short name: its long name) the model does
not reproduce, found in sacct's SubmitLine."""


SHORT_RUN, SHORT_SHARE = 60.0, 0.1
"""A dump whose jobs ran under a minute for more than a tenth of them gets a note: the second Slurm
spends between an end and the next start, which sacct does not keep, is then more than 1/60 of a
run (docs/history.md, on the mini-cluster records of 5-s jobs)."""


PARTITION_KEYS_MODELLED = {"PartitionName", "Nodes", "Default", "State", *partition_keys_read()}


NODE_KEYS_MODELLED = {"NodeName", "CPUs", "CPUTot", "RealMemory", "Boards", "Sockets", "CoresPerSocket",
                      "ThreadsPerCore", "NodeHostname", "NodeAddr", "Port", "State", "Gres", "Weight"}


NODE_STATES_IN_SERVICE = {"UNKNOWN", "IDLE", "CLOUD"}


def unmodelled(conf: SlurmConf) -> list[str]:
    """One note per setting of ``conf`` the model does not reproduce."""
    notes = [f"slurm.conf key {key} is not one Slurm 22.05 reads (a typo? slurm.conf(5)): ignored"
             for key in conf.config if key.lower() not in SLURM_CONF_KEYS]
    preempt = conf.config.get("PreemptType", "preempt/none")
    mode = conf.config.get("PreemptMode", "OFF")
    if slurm_text.preempt_type(preempt) not in ("none", "partition_prio", "qos"):
        notes.append(f"PreemptType={preempt} has no model: no job is preempted")
    elif "GANG" in {word.strip().upper() for word in mode.split(",")} \
            and len({part.get("PriorityTier", "1") for part in conf.partitions}) > 1:
        notes.append(f"PreemptMode={mode}: a job of a higher PriorityTier partition that finds no idle core "
                     "takes the cores of lower-tier jobs (the gang scheduler's shadow suspending them) only "
                     "where they share cores (OverSubscribe FORCE:N) or by SUSPEND's preemption here; "
                     "cons_tres's _job_test lets any job do it under GANG (djsb/model/gang.py)")
    params = scheduler_parameters(conf.config.get("SchedulerParameters", ""))
    notes += [f"SchedulerParameters {key}{'=' + value if value else ''} has no model"
              for key, value in params.items() if key not in scheduler_parameters_read()]
    others = [kind for kind in conf.config.get("GresTypes", "").split(",") if kind.strip() not in ("", "gpu")]
    if others:
        notes.append(f"GresTypes {','.join(others)} has no model: of the generic resources, only GPUs are "
                     "placed")
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
    their long name when :data:`OPTIONS_UNMODELLED` knows it; ``--exclusive`` with its value
    (``--exclusive=user``: the plain one is modelled)."""
    found: set[str] = set()
    for name, value in sbatch_options(line):
        if name == "--exclusive" and value:
            name = f"--exclusive={value}"
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


def log_note(log: SchedulerLog, workload: Workload, passes: Mapping[str, Sequence[float]]) -> str:
    """What the replay took from slurmctld's log."""
    timed = [job.job_id for job in workload.jobs if job.job_id in log.starts and job.job_id in log.ends]
    submitted = sum(1 for job_id in timed if job_id in log.submits)
    last = max((at for instants in passes.values() for at in instants), default=0.0)
    return (f"slurmctld's log: the starts and run times of {len(timed)} of {len(workload.jobs)} jobs to the "
            f"millisecond ({submitted} of them with their submission), and the model's passes at Slurm's "
            f"({len(passes.get('main', []))} main, {len(passes.get('backfill', []))} backfill) up to "
            f"{last:.0f} s, as configured after")


def start_notes(split: StartSplit, begin: float, usage: Path | None, fair_share: bool) -> list[str]:
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


def rejected_notes(rejected: pd.DataFrame) -> list[str]:
    """One note counting the jobs of the record not replayed, by reason."""
    if rejected.empty:
        return []
    counts = rejected["reason"].value_counts()
    reasons = "; ".join(f"{count} {reason}" for reason, count in counts.items())
    return [f"{len(rejected)} job(s) of the record are not replayed (rejected.csv): {reasons}"]


def site_events(files: SiteFiles) -> list[NodeEvent]:
    """The node events of ``files`` (none without ``--events``)."""
    return parse_node_events(site_text(files.events, "--events"), str(files.events)) \
        if files.events is not None else []


def site_reservations(files: SiteFiles) -> list[ReservationRecord]:
    """The reservations of ``files`` (none without ``--reservations``)."""
    return parse_reservations(site_text(files.reservations, "--reservations"), str(files.reservations)) \
        if files.reservations is not None else []


def history_notes(workload: Workload, window: float) -> list[str]:
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
