"""A site's own Slurm history replayed offline, under its own configuration, and set beside the record.

What a site has: a ``sacct --parsable2 --allocations`` dump of its jobs (:mod:`djsb.workloads.sacct`,
which keeps what Slurm recorded of each start), its slurm.conf (:mod:`djsb.calibrate.slurm_conf`), and
optionally its associations and QoS as sacctmgr prints them (the commands are
:data:`~djsb.calibrate.slurm_config.ASSOCIATIONS_COMMAND` and
:data:`~djsb.calibrate.slurm_config.QOS_COMMAND`). The model takes the cluster, the scheduler options
and the priority plugin from those files exactly as a calibration takes them from a live Slurm
(:mod:`djsb.calibrate.slurm_config`), replays the recorded jobs with their recorded submissions, run
times and limits, and :mod:`djsb.report.replay_error` measures how far each start and the
moving-average wait fall from the record.

Every setting of the files the model does not reproduce is named in one note (:func:`unmodelled`),
never dropped silently. The model holds the default partition and the partitions the dump's jobs ran
in (a note names the others); jobs the model cannot place (an unknown partition, more CPUs than a node
has) are rejected with their reason by the model and counted apart from the errors.

Not yet reproduced (each a note when it applies): jobs running when the dump starts are replayed
from their submission like the others (the dump's first jobs start on an empty cluster), and the
fair-share usage accrued before the dump is taken as none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from djsb.calibrate.slurm_conf import SlurmConf, read_slurm_conf
from djsb.calibrate.slurm_config import (
    COUNTS,
    FLAGS,
    SECONDS,
    SLURM_LIKE,
    cluster_spec,
    parse_associations,
    parse_qos,
    priority_plugin,
    scheduler_config,
    scheduler_parameters,
)
from djsb.errors import ConfigError
from djsb.model import Simulation, SimulationResult
from djsb.model.cluster import QosSpec
from djsb.report.replay_error import breakdown, job_errors, moving_average_waits, recorded_frame, summary
from djsb.workloads.sacct import read_sacct
from djsb.workloads.swf import Workload

BREAKDOWNS = ("partition", "qos", "account", "size")
"""The groups the errors are broken down by."""

PARTITION_KEYS_MODELLED = {"PartitionName", "Nodes", "MaxTime", "OverSubscribe", "PriorityTier",
                           "PriorityJobFactor", "Default", "State"}
NODE_KEYS_MODELLED = {"NodeName", "CPUs", "CPUTot", "RealMemory", "Boards", "Sockets", "CoresPerSocket",
                      "ThreadsPerCore", "NodeHostname", "NodeAddr", "Port", "State"}
NODE_STATES_IN_SERVICE = {"UNKNOWN", "IDLE", "CLOUD"}
SCHEDULER_PARAMETERS_MODELLED = {*SECONDS, *COUNTS, *FLAGS, "bf_window"}


@dataclass(frozen=True)
class SiteFiles:
    """The files a site gives: its sacct dump and slurm.conf, and optionally sacctmgr's answers."""

    sacct: Path
    slurm_conf: Path
    associations: Path | None = None
    qos: Path | None = None


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


def unmodelled(conf: SlurmConf) -> list[str]:
    """One note per setting of ``conf`` the model does not reproduce."""
    notes = []
    preempt = conf.config.get("PreemptType", "preempt/none")
    if preempt != "preempt/none":
        notes.append(f"PreemptType={preempt} has no model: no job is preempted")
    params = scheduler_parameters(conf.config.get("SchedulerParameters", ""))
    notes += [f"SchedulerParameters {key}{'=' + value if value else ''} has no model"
              for key, value in params.items() if key not in SCHEDULER_PARAMETERS_MODELLED]
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


def default_partition(conf: SlurmConf) -> str:
    """The partition a job without one goes to: the one marked Default=YES, else the first."""
    if not conf.partitions:
        raise ConfigError("no PartitionName line: the model needs the site's partitions",
                          source=conf.sources[0] if conf.sources else None)
    marked = [p["PartitionName"] for p in conf.partitions if p.get("Default", "NO").upper() == "YES"]
    return (marked or [conf.partitions[0]["PartitionName"]])[0]


def replay_history(files: SiteFiles, *, window: float, step: float, seed: int = 0,
                   on_progress: Callable[[int, int], None] | None = None) -> HistoryReplay:
    """Replay the history of ``files`` on the model of the site's own configuration and measure it
    against the record (moving averages over ``window``, sampled every ``step``: seconds)."""
    workload = read_sacct(files.sacct)
    jobs = workload.replayable_jobs()
    conf = read_slurm_conf(files.slurm_conf)
    notes = unmodelled(conf)
    qos = parse_qos(files.qos.read_text()) if files.qos is not None else (QosSpec("normal"),)
    first = default_partition(conf)
    used = {job.partition for job in jobs}
    others = [p["PartitionName"] for p in conf.partitions if p["PartitionName"] != first]
    left_out = [name for name in others if name not in used]
    if left_out:
        notes.append(f"partition(s) {', '.join(left_out)} of slurm.conf ran no job of the dump: not modelled")
    cluster = cluster_spec(conf.partitions, conf.nodes, first, [name for name in others if name in used], qos)
    scheduler = dataclasses.replace(scheduler_config(conf.config), **SLURM_LIKE)
    associations = parse_associations(files.associations.read_text()) if files.associations else None
    make_priority, priority_notes = priority_plugin(conf.config, associations)
    notes += priority_notes + _history_notes(workload, window)
    pairs = associations.pairs if associations is not None else ()
    result = Simulation(jobs, cluster, scheduler, make_priority(), seed=seed, associations=pairs,
                        on_progress=on_progress).run()
    errors = job_errors(recorded_frame(jobs, workload.recorded), result.jobs)
    return HistoryReplay(errors, summary(errors, window, step),
                         {by: breakdown(errors, by, window, step) for by in BREAKDOWNS},
                         moving_average_waits(errors, window, step), result, notes)


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
    return notes


def write_history(replay: HistoryReplay, out_dir: Path) -> None:
    """The replay's files: jobs.csv (the model's), errors.csv (one row per recorded job),
    summary.csv (the headline figures, then one row per group of each breakdown), moving_average.csv,
    rejected.csv and notes.txt."""
    replay.result.jobs.to_csv(out_dir / "jobs.csv", index=False)
    replay.result.rejected.to_csv(out_dir / "rejected.csv", index=False)
    replay.errors.to_csv(out_dir / "errors.csv", index=False)
    rows = [{"group_by": "all", "group": "all", **replay.figures}]
    for by, table in replay.breakdowns.items():
        rows += [{"group_by": by, "group": group, **values} for group, values in table.iterrows()]
    pd.DataFrame(rows).to_csv(out_dir / "summary.csv", index=False)
    replay.averages.to_csv(out_dir / "moving_average.csv")
    (out_dir / "notes.txt").write_text("".join(f"{note}\n" for note in replay.notes))
