"""``djsb calibrate CONFIG``: one workload on a real Slurm and on the model, side by side.

The file's format is in :mod:`djsb.calibrate.spec`.

Steps: the jobs are made Slurm-ready (:func:`~djsb.calibrate.slurm_replay.slurm_ready`: limits in
whole minutes) and replayed ``runs`` times on Slurm through the Slurm job module
(:mod:`djsb.calibrate.slurm_replay`); the model's scheduler and cluster come from ``scontrol show
config`` / ``partition`` / ``node`` (:mod:`djsb.slurmsite.slurm_config`), with the options that plan
as sched/backfill does turned on unless ``model`` says otherwise. The model replays run 1's
submissions (when sbatch returned) and run times as Slurm recorded them, and its main and
backfill passes when Slurm's ran (watched through sdiag: :mod:`djsb.calibrate.pass_watch`; if
sdiag shows none, as the model runs them, backfill at the phase of Slurm's last pass); when
slurmctld's log can be read, its millisecond instants of each submission, start and end, and of
the passes that started jobs, replace those (:mod:`djsb.calibrate.ctld_log`); and, under
priority/multifactor, recomputes the priorities at the phase at which Slurm's decay thread was seen
to (squeue: :mod:`djsb.slurmsite.recompute_watch`), so only scheduling decisions differ; it runs on
Slurm's clock (Unix seconds: Slurm rounds reservations and batches its will-run test on multiples
of 60 and 30 s of it). Under priority/multifactor with a fair-share weight the model also takes
the association tree and shares from ``sacctmgr show associations`` and the usage the
associations had when run 1 started from ``sshare`` (asked before and after every replay; the
model's jobs are the submitting user's in their accounts), and the usage each side accrued is
compared (:mod:`djsb.calibrate.fairshare`). Nothing the calibration runs needs more than a
user's rights (sbatch, squeue, sacct, scancel of its own jobs, scontrol show, sdiag, sshare,
sacctmgr show); a command the cluster refuses is one line naming it and what it was needed for.

Written to the output directory: ``slurm_N.csv``, ``model.csv``,
``jobs.csv`` (per job: every side's start, wait and backfilled flag), ``passes.csv`` (per run and
scheduler, each pass seen and its uncertainty; the decay thread's runs as scheduler ``priority``),
``usage.csv`` (fair share: each association's
usage on both sides), ``comparison.json`` (model vs each run, run N vs run 1, the range of model vs
run 1 over the replays with drawn passes), ``timeline.png``
(every job's run as a bar, one panel per side) and ``report.html`` (all of it on one page, with
Slurm's answers the model was built from). The directory is also what ``--resume`` continues
(:mod:`djsb.calibrate.run_dir`: a ledger of the submissions, each finished replay, Slurm's
answers).
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pandas as pd

from djsb.calibrate.ctld_log import ctld_log_file, unlogged_note
from djsb.calibrate.fairshare import usage_at, usage_table
from djsb.calibrate.machine_changes import check_nodes, model_machine
from djsb.calibrate.machine_left import NOTHING_LEFT, MachineLeft, undone_note
from djsb.calibrate.model_replay import in_partitions, model_replay, within_nodes, within_qos
from djsb.calibrate.outputs import kill_note, late_start_notes, write_outputs
from djsb.calibrate.pass_watch import SCHEDULERS
from djsb.calibrate.run_dir import CalibrationDir
from djsb.calibrate.slurm_side import (
    answer_or_none,
    ask,
    job_modules,
    replay_run,
    slurm_cluster,
    slurm_model,
    slurm_module,
    submitter,
    with_backfill_phase,
)
from djsb.calibrate.spec import Calibration, load_calibration
from djsb.calibrate.watch_draws import drawn_passes
from djsb.jobs.scheduler_base import SchedulerModule
from djsb.remote.connect import open_remote
from djsb.slurmsite.recompute_watch import DECAY_THREAD
from djsb.slurmsite.slurm_config import (
    SHOW_CONFIG_COMMAND,
    fair_share_used,
    parse_show_config,
)
from djsb.transport import LocalTransport


def run_calibration(config_path: Path, out_dir: Path, *, runs: int | None = None,
                    module: SchedulerModule | None = None, left: MachineLeft = NOTHING_LEFT) -> str:
    """Replay on Slurm (``runs`` times, default the file's) and on the model; write the outputs
    into ``out_dir`` (a new calibration directory) and return the summary lines. ``left``: what a
    calibration killed in the directory this one replaces left on Slurm, undone first."""
    calibration = load_calibration(config_path)
    run_dir = CalibrationDir.create(out_dir, config_path, runs or calibration.runs, calibration.jobs, left)
    return _connected(calibration, run_dir, module)



def resume_calibration(out_dir: Path, *, module: SchedulerModule | None = None) -> str:
    """Continue the calibration in ``out_dir``: cancel what its interrupted replay left queued or
    running, keep its finished replays, do the others, then the model and the report."""
    run_dir = CalibrationDir.resume(out_dir)
    calibration = load_calibration(run_dir.config)
    run_dir.check_jobs(calibration.jobs)
    return _connected(calibration, run_dir, module)



def _connected(calibration: Calibration, run_dir: CalibrationDir, module: SchedulerModule | None) -> str:
    """:func:`_calibrate` with the Slurm module (``module``, else one here or over SSH)."""
    try:
        if module is not None:
            return _calibrate(calibration, module, run_dir)
        ssh = calibration.ssh
        transport = LocalTransport() if ssh is None else open_remote(ssh, str(run_dir.config))
        try:
            return _calibrate(calibration, slurm_module(calibration.partition, transport,
                                                        memory_margin=calibration.memory_margin), run_dir)
        finally:
            transport.close()
    finally:
        run_dir.release()



def _calibrate(calibration: Calibration, module: SchedulerModule, run_dir: CalibrationDir) -> str:
    """The replays not yet finished, then the model's replay of the first and the outputs."""
    cancelled = run_dir.cancel_left_behind(module)
    notes = [f"cancelled {len(cancelled)} job(s) an interrupted replay left: "
             f"{', '.join(s.describe() for s in cancelled)}"] if cancelled else []
    notes += undone_note(run_dir.undo_machine_left(lambda argv, why: ask(module, argv, why),
                                                   lambda argv: answer_or_none(module, argv)))
    ask(module, ["mkdir", "-p", calibration.work_dir], "the sleep jobs' scripts and outputs")
    cluster = slurm_cluster(module, run_dir, calibration)
    check_nodes(calibration.machine, cluster)
    fitted, memory_notes = within_nodes(within_qos(in_partitions(calibration.jobs, cluster), cluster,
                                                   calibration.qos), cluster)
    calibration = dataclasses.replace(calibration, jobs=fitted)
    notes += memory_notes
    config = parse_show_config(run_dir.slurm_text("show_config", lambda: ask(
        module, SHOW_CONFIG_COMMAND, "the model's scheduler")))
    fair_share = fair_share_used(config)
    user, default_account = submitter(module, run_dir) if fair_share or calibration.qos else ("", "")
    finished = run_dir.finished_runs()
    for run in range(1, run_dir.runs + 1):
        if run not in finished:
            replay_run(calibration, module, run_dir, run, job_modules(calibration, module), fair_share,
                       config.get("PriorityType") == "priority/multifactor", ctld_log_file(config))
    replays = {f"slurm_{run}": table for run, table in run_dir.finished_runs().items()}
    notes += kill_note(calibration.jobs, replays["slurm_1"]) + unlogged_note(config, replays["slurm_1"])
    passes = pd.concat([run_dir.run_table(run, "passes") for run in range(1, run_dir.runs + 1)],
                       ignore_index=True)
    passes.to_csv(run_dir.path / "passes.csv", index=False)
    first = passes[passes["run"] == 1]
    origin = float(replays["slurm_1"]["origin"].iloc[0])
    decay = first[first["scheduler"] == DECAY_THREAD]
    decay_runs = [(origin + t - u, origin + t + u)
                  for t, u in zip(decay["time"], decay["uncertainty"], strict=True)]
    sshare = run_dir.run_table(1, "sshare") if fair_share else None
    slurm, model_notes = slurm_model(module, run_dir, calibration,
                                     usage_at(sshare, "before") if sshare is not None else None, decay_runs)
    notes += model_notes
    if calibration.machine:
        done = run_dir.run_table(1, "machine")
        slurm = dataclasses.replace(slurm, cluster=model_machine(slurm.cluster, done, origin))
    observed = {name: first.loc[first["scheduler"] == name, "time"].tolist() for name in SCHEDULERS}
    if not observed["main"]:
        notes.append("sdiag showed no main scheduler pass: the model's run at submissions, job ends and "
                     "every sched_interval")
    if not observed["backfill"] and "bf_phase" not in calibration.model:
        scheduler, phase_notes = with_backfill_phase(slurm.scheduler, module)
        slurm = dataclasses.replace(slurm, scheduler=scheduler)
        notes += ["sdiag showed no backfill pass during the replay: the model's passes are periodic",
                  *phase_notes]
    jobs = calibration.jobs
    if fair_share or calibration.qos:
        # the model's associations are Slurm's: the submitting user in each job's account (and its
        # QoS limits per user are that user's)
        jobs = [dataclasses.replace(job, user=user, account=job.account if calibration.accounts
                                    else default_account) for job in jobs]
    priority = slurm.priority()
    watched = {name: times for name, times in observed.items() if times}
    model = model_replay(jobs, replays["slurm_1"], slurm, calibration.seed, passes=watched, priority=priority,
                         dependencies=calibration.dependencies)
    notes += late_start_notes(jobs, model, watched)
    rng = random.Random(calibration.seed)
    draws = [model_replay(jobs, replays["slurm_1"], slurm, calibration.seed, priority=slurm.priority(),
                          passes=drawn_passes(first, list(watched), rng),
                          dependencies=calibration.dependencies)
             for _ in range(calibration.watch_draws if watched else 0)]
    replays = {"slurm_1": replays["slurm_1"], "model": model,
               **{name: r for name, r in replays.items() if name != "slurm_1"}}
    return write_outputs(run_dir, replays, slurm, priority, notes, passes, observed,
                         usage_table(sshare, priority) if sshare is not None else None, draws)

