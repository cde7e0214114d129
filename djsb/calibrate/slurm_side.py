"""What a calibration asks of the running Slurm and runs on it: its commands' answers (each saved
in the calibration directory when first asked), the model built from them, the Slurm job modules
that submit the jobs, and one replay on Slurm with its passes watched."""

from __future__ import annotations

import dataclasses
import math
import shlex
import time
from collections.abc import Callable
from typing import Any

import pandas as pd

from djsb.calibrate.ctld_log import located_passes, log_instants, log_reader, logged_starts, parse_ctld_log
from djsb.calibrate.fairshare import end_charge_note, snapshot
from djsb.calibrate.idle_wait import wait_until_idle
from djsb.calibrate.machine_changes import SlurmMachine
from djsb.calibrate.model_replay import SlurmModel, model_config
from djsb.calibrate.pass_watch import PassWatch
from djsb.calibrate.run_dir import CalibrationDir, ledger_name
from djsb.calibrate.slurm_replay import replay_on_slurm
from djsb.calibrate.spec import Calibration
from djsb.errors import RunError, one_line
from djsb.jobs.api import JobModule
from djsb.jobs.loader import load_job_module
from djsb.jobs.scheduler_base import SchedulerModule
from djsb.jobs.scontrol import parse_show_records
from djsb.model import ClusterSpec, SchedulerConfig
from djsb.model.cluster_spec import QosSpec
from djsb.slurmsite.qos_text import QOS_COMMAND, parse_qos
from djsb.slurmsite.recompute_watch import DECAY_THREAD, PENDING_PRIORITIES, RecomputeWatch
from djsb.slurmsite.slurm_config import (
    ASSOCIATIONS_COMMAND,
    SHOW_CONFIG_COMMAND,
    SSHARE_COMMAND,
    cluster_spec,
    fair_share_used,
    last_backfill_cycle,
    parse_associations,
    parse_show_config,
    priority_plugin,
)
from djsb.transport import Transport
from djsb.workloads.gpus import GpuRequest
from djsb.workloads.job import TraceJob


class CommandDenied(RunError):
    """A Slurm command the calibration needs failed on the cluster (denied, missing, unreachable)."""



def ask(module: SchedulerModule, argv: tuple[str, ...] | list[str], needed_for: str) -> str:
    """``argv``'s answer where the jobs run; a one-line :class:`CommandDenied` naming the command,
    Slurm's own words and what it was needed for when it fails (none needs more than a user's
    rights, but a site's PrivateData or a missing slurmdbd may refuse it)."""
    answer = module.run(shlex.join(argv), check=False)
    if answer.returncode != 0:
        said = one_line(answer.stderr or answer.stdout) or f"exit status {answer.returncode}"
        raise CommandDenied(f"{' '.join(argv[:3])} failed ({said}); the calibration needs it for "
                            f"{needed_for}")
    return answer.stdout



def _status_and_output(module: SchedulerModule, command: str) -> tuple[int, str]:
    """``command``'s exit status and output where the jobs run."""
    answer = module.run(command, check=False)
    return answer.returncode, answer.stdout


def answer_or_none(module: SchedulerModule, argv: tuple[str, ...] | list[str]) -> str | None:
    """``argv``'s answer, or None if it failed (PrivateData may hide sdiag or squeue from a user);
    the watches of the replay go on without it."""
    answer = module.run(shlex.join(argv), check=False)
    return answer.stdout if answer.returncode == 0 else None


def submitter(module: SchedulerModule, run_dir: CalibrationDir) -> tuple[str, str]:
    """The user the jobs run as and its default account (sacctmgr), as saved when the calibration
    started: the association of a job without an account of its own."""
    user = run_dir.slurm_text("user", lambda: ask(module, ["id", "-un"], "the user the jobs run as")).strip()
    default = run_dir.slurm_text("default_account", lambda: ask(
        module, ["sacctmgr", "--noheader", "--parsable2", "show", "user", user, "format=DefaultAccount"],
        "the account of the jobs without one")).strip()
    return user, default



def fair_share_snapshot(module: SchedulerModule, when: str) -> pd.DataFrame:
    """sshare's usage now, as :func:`djsb.calibrate.fairshare.snapshot` rows."""
    return snapshot(when, time.time(), ask(module, SSHARE_COMMAND, "the fair-share usage before and after "
                                                                    "each replay"))



def slurm_module(partition: str, transport: Transport, account: str | None = None,
                 memory_margin: float | None = None, qos: str | None = None,
                 gpus: GpuRequest | None = None) -> SchedulerModule:
    """DJSB's Slurm job module (through the registry) over ``transport``, limits as asked;
    ``account``, ``qos``: its jobs' --account and --qos; ``memory_margin``: its option (None: its
    default); ``gpus``: its jobs' GPU request, its sbatch arguments the module's ``sbatch_options``
    (:meth:`~djsb.workloads.gpus.GpuRequest.sbatch_options`; the module quotes every argument)."""
    options: dict[str, Any] = {"partition": partition, "time_factor": 1.0, "time_margin": 0.0}
    options.update({key: value for key, value in (("account", account), ("memory_margin", memory_margin),
                                                  ("qos", qos)) if value is not None})
    if gpus is not None:
        options["sbatch_options"] = list(gpus.sbatch_options())
    module = load_job_module("slurm", options, transport)
    if not isinstance(module, SchedulerModule):
        raise RunError(f"the slurm job module is a {type(module).__name__}, not a command-based module")
    return module



def job_modules(calibration: Calibration, module: SchedulerModule) -> Callable[[TraceJob], JobModule]:
    """The module that submits each job: ``module`` for a job of its partition with no account,
    QoS or GPU request of its own, else one with the job's --partition, --account, --qos and GPU
    option (made once each)."""
    made: dict[tuple[str, str | None, str | None, GpuRequest | None], JobModule] = {}

    def module_of(job: TraceJob) -> JobModule:
        key = (job.partition or calibration.partition, job.account if calibration.accounts else None, job.qos,
               job.gpus)
        if key == (calibration.partition, None, None, None):
            return module
        if key not in made:
            made[key] = slurm_module(key[0], module.transport, key[1], calibration.memory_margin, key[2],
                                     key[3])
        return made[key]
    return module_of



def slurm_cluster(module: SchedulerModule, run_dir: CalibrationDir, calibration: Calibration) -> ClusterSpec:
    """The calibration's partitions (``partitions``, else ``partition``) with their nodes as
    ``scontrol show partition`` / ``node`` give them, and the QoS of ``sacctmgr show qos`` when
    the jobs ask for some (each answer saved in ``run_dir`` when first asked)."""
    def show(what: str) -> str:
        return run_dir.slurm_text(f"show_{what}", lambda: ask(module, ["scontrol", "show", what],
                                                              "the model's cluster and scheduler"))

    names = calibration.partitions or (calibration.partition,)
    qos: tuple[QosSpec, ...] = (QosSpec("normal"),)
    if calibration.qos:
        answer = run_dir.slurm_text("qos", lambda: ask(module, QOS_COMMAND, "the QoS the jobs ask"))
        qos = parse_qos(answer).qos
    return cluster_spec(parse_show_records(show("partition")), parse_show_records(show("node")), names[0],
                        names[1:], qos)



def slurm_model(module: SchedulerModule, run_dir: CalibrationDir, calibration: Calibration,
                usage: dict[tuple[str, str], float] | None,
                decay_runs: list[tuple[float, float]]) -> tuple[SlurmModel, list[str]]:
    """The cluster, scheduler and priority plugin the model takes from the running Slurm (its
    answers as saved in ``run_dir`` when the calibration started), and notes on what it could not
    take. ``usage``: the associations' RawUsage when the replay the model follows started;
    ``decay_runs``: when its decay thread was seen recomputing the priorities (brackets of Unix
    seconds)."""
    config = parse_show_config(run_dir.slurm_text("show_config", lambda: ask(
        module, SHOW_CONFIG_COMMAND, "the model's scheduler")))
    cluster = slurm_cluster(module, run_dir, calibration)
    associations = None
    if fair_share_used(config):
        associations = parse_associations(run_dir.slurm_text("associations", lambda: ask(
            module, ASSOCIATIONS_COMMAND, "the fair-share tree (accounts, users and shares)")))
    priority, notes = priority_plugin(config, associations, usage, decay_runs)
    notes += end_charge_note(config) if associations is not None else []
    pairs = associations.pairs if associations is not None else ()
    return SlurmModel(cluster, model_config(config, calibration.model), priority, pairs), notes



def with_backfill_phase(scheduler: SchedulerConfig,
                        module: SchedulerModule) -> tuple[SchedulerConfig, list[str]]:
    """``scheduler`` with its backfill passes at the phase of Slurm's (``sdiag``'s last backfill
    cycle), or unchanged with a note when sdiag does not say."""
    answer = answer_or_none(module, ["sdiag"])
    when = last_backfill_cycle(answer) if answer is not None else None
    if when is None or scheduler.bf_interval <= 0:
        return scheduler, ["sdiag gave no backfill cycle time: the model's backfill passes keep phase 0"]
    return dataclasses.replace(scheduler, bf_phase=math.fmod(when, scheduler.bf_interval)), []



def replay_run(calibration: Calibration, module: SchedulerModule, run_dir: CalibrationDir, run: int,
               module_of: Callable[[TraceJob], JobModule], fair_share: bool, multifactor: bool,
               ctld_log: str | None = None) -> None:
    """Replay ``run`` on Slurm and save it with its passes, under multifactor the decay thread's
    runs (as passes of :data:`DECAY_THREAD`) and, under fair share, sshare's usage before and after.
    ``ctld_log``: slurmctld's log file; when it can be read, the replay gets its instants (columns
    ``ctld_*``) and the passes that started jobs are put at them (:mod:`djsb.calibrate.ctld_log`).
    It begins once the partitions' nodes are idle (:mod:`djsb.calibrate.idle_wait`)."""
    wait_until_idle(lambda argv: ask(module, argv, "each replay to begin on idle nodes"),
                    calibration.partitions or (calibration.partition,), calibration.poll_interval)
    before = fair_share_snapshot(module, "before") if fair_share else None
    read_log = log_reader(lambda command: _status_and_output(module, command), ctld_log) if ctld_log \
        else (lambda: None)
    watch = PassWatch(lambda: answer_or_none(module, ["sdiag"]))
    recomputes = RecomputeWatch(lambda: answer_or_none(module, PENDING_PRIORITIES))

    machine = SlurmMachine(calibration.machine, lambda argv, why: ask(module, argv, why), time.time,
                           run_dir.machine_record)

    def look() -> None:
        watch.look()
        if multifactor:
            recomputes.look()
        machine.due()

    try:
        replay = replay_on_slurm(calibration.jobs, module, calibration.work_dir,
                                 poll_interval=calibration.poll_interval, watch=look, log=run_dir,
                                 name=lambda job: ledger_name(run, job.job_id), module_of=module_of,
                                 started=machine.begin, dependencies=calibration.dependencies)
    finally:
        machine.end()
    origin = float(replay["origin"].iloc[0])
    seen = [(name, t, u) for name, times in watch.passes.items() for t, u in times]
    seen += [(DECAY_THREAD, (low + high) / 2, (high - low) / 2) for low, high in recomputes.runs]
    passes = pd.DataFrame([{"run": run, "scheduler": name, "time": t - origin, "uncertainty": u}
                           for name, t, u in seen], columns=["run", "scheduler", "time", "uncertainty"])
    log_text = read_log()
    logged = parse_ctld_log(log_text or "")
    instants = log_instants(logged, replay)
    if instants is not None:
        replay = replay.join(instants)
        passes = located_passes(passes, logged_starts(logged, replay))
    extras = {"passes": passes, **({"machine": machine.table()} if calibration.machine else {})}
    if before is not None:
        extras["sshare"] = pd.concat([before, fair_share_snapshot(module, "after")], ignore_index=True)
    run_dir.save_run(run, replay, extras, log_text)

