#!/usr/bin/env python3
"""Ground truth for ``djsb history``: site-like histories recorded on a Slurm mini-cluster of their own.

Starts a third mini-cluster (docker/slurm-cluster.sh with :data:`CLUSTER`: 16 virtual nodes of 2
CPUs, slurmdbd, daemons at niceness -10, beside the test suite's two), gives it a site's settings
(:data:`SITE`: three partitions over overlapping nodes, multifactor priority with Fair Tree over
three accounts, a QoS with a per-user job limit, memory per CPU; PriorityDecayHalfLife and
PriorityMaxAge compressed as the jobs are) and records:

* ``site-1``, ``site-2``: the same drawn jobs (:func:`draw_jobs`, seeded: sizes 1-8 CPUs, sleeps of
  1-40 s, limits in whole minutes, Poisson arrivals at 90 % of the CPUs) submitted twice at the
  same instants from the recording's start, so that the two records measure Slurm's own
  run-to-run spread on one history;
* ``features`` (with ``--features``; ``--features-name features-2`` records the same history again,
  so that Slurm's own spread on it is measured): a shorter history with what a machine changes under
  the schedule: a reservation on four nodes, a node drained then resumed, job arrays throttled with
  ``%``, and dependencies;
* ``gpu-1``, ``gpu-2`` (with ``--gpus-only``, on a cluster whose nodes have two a100 GPUs each): a
  history of GPU and CPU jobs, recorded twice like the site records: every third job of ``batch`` goes
  to the partition ``gpu`` (:data:`GPU_PARTITION`: the nodes of ``long``, billing a GPU as four CPUs)
  under the QoS ``gpu`` (:data:`GPU_QOS`: eight GPUs per user at most), asking GPUs per node, per task
  or per job (:func:`with_gpus`).

``--time-scale K`` multiplies every duration of the history by K: the jobs' sleeps and limits, the
partitions' MaxTime, and the site's PriorityDecayHalfLife and PriorityMaxAge. The arrivals are
drawn for the same load counting one second of scheduling per job, which does not scale: Slurm's
mini-cluster starts a waiting job about a second after the end that made room (its passes at the
submissions), a fifth of a 5-s job and a twentieth of a 20-s one. The records at K = 1 and K > 1
tell how much of the model's error on them comes from that second.

Each record is a directory holding the files a site gives ``djsb history`` (docs/history.md): the
sacct dump, slurm.conf, sacctmgr's associations, QoS, node events and reservations, the lines of
slurmctld's log that submit, start or end its jobs (``slurmctld.log.gz``: to the millisecond;
bench/history_counterfactuals.py reads them), and ``provenance.json`` (machine, Slurm, load,
command, seed, time scale). tests/test_history_ground_truth.py replays the committed records
offline. The figures (each record replayed, and the two records against each other) are printed and
written to ``OUT/figures.csv``.

Usage (root; minutes: a record lasts about its jobs' submission span plus the queue's drain)::

    python3 bench/record_history.py OUT [--jobs 2000] [--features-jobs 600] [--features] [--seed 1]
        [--time-scale 1] [--debug-flags Backfill]
        [--log-level debug3]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import platform
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from djsb.report.replay_error import records_paired, summary  # noqa: E402
from djsb.slurmsite.qos_text import QOS_COMMAND  # noqa: E402
from djsb.slurmsite.site_events import EVENTS_COMMAND, RESERVATIONS_COMMAND  # noqa: E402
from djsb.slurmsite.slurm_config import ASSOCIATIONS_COMMAND  # noqa: E402
from djsb.slurmsite.slurmctld_log import BACKFILL, END, MAIN, SUBMIT  # noqa: E402
from djsb.workloads.sacct_columns import SACCT_FORMAT  # noqa: E402

DIR = "/var/lib/djsb-slurm-history"
CLUSTER = {"DJSB_SLURM_DIR": DIR, "DJSB_SLURM_NODE_PREFIX": "h", "DJSB_SLURM_CTLD_PORT": "6837",
           "DJSB_SLURM_DBD_PORT": "6839", "DJSB_SLURM_PORT": "17200", "DJSB_SLURM_FIRST_JOB_ID": "900000",
           "DJSB_SLURM_LINK": "", "DJSB_SLURM_NICE": "-10", "DJSB_SLURM_NODES": "16", "DJSB_SLURM_CPUS": "2",
           "DJSB_SLURM_MEMORY": "2048", "DJSB_SLURM_ACCOUNTING": "1", "SLURM_CONF": f"{DIR}/etc/slurm.conf"}
"""The recording cluster: docker/slurm-cluster.sh's settings for a cluster beside the test suite's."""
SITE = {"PriorityType": "priority/multifactor", "PriorityWeightFairshare": "10000",
        "PriorityWeightAge": "1000", "PriorityWeightJobSize": "100", "PriorityWeightQOS": "2000",
        "PriorityMaxAge": "00:10:00",
        "PriorityDecayHalfLife": "00:05:00", "PriorityCalcPeriod": "1",
        "AccountingStorageEnforce": "associations,limits,qos"}
"""The site's scheduling settings (slurm.conf keys), its decay and age compressed to the jobs' scale."""
PARTITIONS = (("debug", "h[1-4]", 2, ""), ("batch", "h[3-16]", 10, ""),
              ("long", "h[9-16]", 30, " PriorityJobFactor=10"))
"""Three partitions over overlapping nodes (name, nodes, MaxTime in minutes, other settings), beside
the mini-cluster's own (which its script waits on; no job runs in them)."""


def partition_lines(scale: int, gpus: bool = False) -> tuple[str, ...]:
    """slurm.conf's lines of :data:`PARTITIONS` (and with ``gpus`` :data:`GPU_PARTITION`), their
    MaxTime ``scale`` times longer."""
    return tuple(f"PartitionName={name} Nodes={nodes} MaxTime={scale * minutes}{other} State=UP"
                 for name, nodes, minutes, other in (*PARTITIONS, *((GPU_PARTITION,) if gpus else ())))


def site_settings(scale: int) -> dict[str, str]:
    """:data:`SITE` with its decay half-life and maximum age ``scale`` times longer."""
    stretched = {key: f"{scale * int(SITE[key][:2]):02d}:{SITE[key][3:]}"
                 for key in ("PriorityDecayHalfLife", "PriorityMaxAge")}
    return {**SITE, **stretched}
ACCOUNTS = {"physics": 50, "biology": 30, "climate": 20}
"""Fair-share accounts and their RawShares (root is a user of each)."""
QOS = ("high", 100, 4)
"""A QoS: name, Priority, MaxJobsPerUser."""
GPUS = "a100:2"
"""The GPU records' GPUs per node (docker/slurm-cluster.sh's DJSB_SLURM_GPUS)."""
GPU_PARTITION = ("gpu", "h[9-16]", 10, " TRESBillingWeights=CPU=1.0,GRES/gpu=4.0")
"""The GPU records' fourth partition (as :data:`PARTITIONS`): the nodes of ``long``, a GPU billed as
four CPUs in fair share."""
GPU_QOS = ("gpu", 50, "gres/gpu=8")
"""The GPU records' QoS: name, Priority, MaxTRESPerUser (every job is root's: at most 8 of the 16
GPUs held by its jobs at once)."""
GPU_OPTIONS = ("--gpus-per-node=1", "--gpus-per-node=2", "--gpus-per-task=1", "--gpus=2")
"""What the GPU jobs ask, in turn: sbatch's three ways of counting GPUs."""
FORMAT = f"{SACCT_FORMAT},AllocTRES"
"""The sacct format ``djsb history`` asks a site for, and the trackable resources each job asked and
was given, which the model does not read yet: a record keeps them for when it does."""
CPUS = 32
LOAD = 0.9
WINDOW, STEP = 120.0, 30.0
"""The moving average of the figures: 2 minutes sampled every 30 s (a record spans 15-25 minutes,
about as many windows as FastSim's two weeks in its four months)."""


@dataclass(frozen=True)
class Draw:
    """One job to submit: when (s from the record's start), where and what it runs."""

    at: float
    cpus: int
    sleep: int
    limit_min: int
    partition: str
    account: str
    qos: str
    mem_per_cpu: int
    extra: tuple[str, ...] = ()


def draw_jobs(count: int, seed: int, load: float = LOAD, scale: int = 1) -> list[Draw]:
    """``count`` jobs: 1-8 CPUs (mostly small), sleeps lognormal around 4 s within 1-40 s, limits
    the sleep times 1.2-4 in whole minutes; partition by limit (``debug`` for some jobs of a
    minute, ``long`` above 10 minutes' worth); Poisson arrivals offering ``load`` of the CPUs, each
    job counted for its sleep plus the second Slurm takes to start the next. With ``scale`` every
    sleep and limit is ``scale`` times longer; the draw (sizes, partitions, accounts) is the same."""
    rng = random.Random(seed)
    jobs = []
    for _ in range(count):
        cpus = rng.choices((1, 2, 4, 8), weights=(55, 25, 12, 8))[0]
        sleep = int(min(40, max(1, round(rng.lognormvariate(math.log(4), 0.8)))))
        stretch = rng.uniform(1.2, 4.0)
        limit = max(1, math.ceil(sleep * stretch / 60))
        partition = "debug" if limit <= 1 and cpus <= 4 and rng.random() < 0.3 else \
            "long" if rng.random() < 0.1 else "batch"
        limit = max(1, math.ceil(scale * sleep * stretch / 60))
        limit = max(limit, 11 * scale) if partition == "long" else limit
        account = rng.choices(list(ACCOUNTS), list(ACCOUNTS.values()))[0]
        qos = QOS[0] if rng.random() < 0.15 else "normal"
        memory = rng.choice((100, 200, 400))
        jobs.append(Draw(0.0, cpus, scale * sleep, limit, partition, account, qos, memory))
    rate = load * CPUS / (sum(j.cpus * (j.sleep + 1) for j in jobs) / count)
    at = 0.0
    timed = []
    for job in jobs:
        timed.append(Draw(round(at, 2), job.cpus, job.sleep, job.limit_min, job.partition, job.account,
                          job.qos, job.mem_per_cpu))
        at += rng.expovariate(rate)
    return timed


def with_features(jobs: list[Draw]) -> list[Draw]:
    """The features history's jobs: every 25th job an array of 6 tasks throttled to 2 at a time,
    every 40th waiting for the job submitted 3 before it (afterany); arrays of at most 2 CPUs."""
    out = []
    for index, job in enumerate(jobs):
        extra = ("--array=1-6%2",) if index % 25 == 24 else ("DEPENDENCY",) if index % 40 == 39 else ()
        cpus = min(job.cpus, 2) if extra[:1] == ("--array=1-6%2",) else job.cpus
        out.append(Draw(job.at, cpus, job.sleep, job.limit_min, job.partition, job.account, job.qos,
                        job.mem_per_cpu, extra))
    return out


def with_gpus(jobs: list[Draw]) -> list[Draw]:
    """The GPU history's jobs: every third job of ``batch`` runs in the partition ``gpu`` under the
    QoS ``gpu`` with at most 4 tasks, asking GPUs the ways of :data:`GPU_OPTIONS` in turn (a job
    of one task asking ``--gpus=2`` holds both GPUs of one node)."""
    out = []
    batch = 0
    for job in jobs:
        if job.partition == "batch":
            batch += 1
            if batch % 3 == 0:
                option = GPU_OPTIONS[(batch // 3) % len(GPU_OPTIONS)]
                job = Draw(job.at, min(job.cpus, 4), job.sleep, job.limit_min, GPU_PARTITION[0], job.account,
                           GPU_QOS[0], job.mem_per_cpu, (option,))
        out.append(job)
    return out


def slurm(*args: str, check: bool = True) -> str:
    env = {**os.environ, **CLUSTER}
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=120, env=env, check=False)
    if check and done.returncode != 0 and "Nothing" not in done.stdout + done.stderr:
        reason = done.stderr.strip() or done.stdout.strip()
        raise SystemExit(f"record_history: {' '.join(args)} failed: {reason}")
    return done.stdout


def start_cluster(scale: int, debug: dict[str, str] | None = None, gpus: bool = False) -> None:
    """Start the recording cluster, give it the site's partitions and settings (durations ``scale``
    times longer; ``debug``: slurmctld's DebugFlags and SlurmctldDebug, e.g. ``Backfill`` and
    ``debug3``, to see its reservations and each job's state pass by pass), accounts and QoS (with
    ``gpus``: GPUs on every node, the partition ``gpu`` and the QoS ``gpu``)."""
    script = ROOT / ".ci" / "slurm.sh"
    CLUSTER["DJSB_SLURM_GPUS"] = GPUS if gpus else ""
    slurm("bash", str(script), "start")
    conf = Path(CLUSTER["SLURM_CONF"])
    settings = {**site_settings(scale), **(debug or {})}
    lines = [line for line in conf.read_text().splitlines() if line.split("=", 1)[0] not in settings]
    first_node = next(i for i, line in enumerate(lines) if line.startswith("NodeName="))
    lines[first_node:first_node] = [f"{key}={value}" for key, value in settings.items()]
    conf.write_text("\n".join([*lines, *partition_lines(scale, gpus)]) + "\n")
    slurm("bash", str(script), "restart-ctld")
    name, priority, per_user = QOS
    slurm("sacctmgr", "-i", "add", "qos", name, f"priority={priority}", f"maxjobsperuser={per_user}")
    qos = f"normal,{name}"
    if gpus:
        gpu_name, gpu_priority, per_user_tres = GPU_QOS
        slurm("sacctmgr", "-i", "add", "qos", gpu_name, f"priority={gpu_priority}",
              f"maxtresperuser={per_user_tres}")
        qos += f",{gpu_name}"
    for account, shares in ACCOUNTS.items():
        slurm("sacctmgr", "-i", "add", "account", account, f"fairshare={shares}")
        slurm("sacctmgr", "-i", "add", "user", "root", f"account={account}", f"qos={qos}")
    # The cluster's database outlives it: a user added by an earlier record keeps its QoS unless set.
    slurm("sacctmgr", "-i", "modify", "user", "root", "set", f"qos={qos}")
    slurm("scontrol", "reconfigure")


def wait_empty(timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while slurm("squeue", "--noheader", "--format=%i").strip():
        if time.monotonic() > deadline:
            raise SystemExit("record_history: jobs still queued after the record's time")
        time.sleep(2)


def record(jobs: list[Draw], out: Path, features: bool, seed: int, scale: int,
           whole_log: bool = False) -> None:
    """Submit ``jobs`` at their instants, wait for the queue to drain, write the site's files (and
    with ``whole_log`` slurmctld's whole log so far, ``slurmctld-whole.log.gz``: its debug lines)."""
    out.mkdir(parents=True, exist_ok=True)
    wait_empty(600)
    time.sleep(2)  # sacct's -S is whole seconds: the record starts after the last one's end
    begin = time.time()
    started = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(begin - 1))
    ids: list[str] = []
    load_before = os.getloadavg()[0]
    drained = resumed = reserved = False
    span = jobs[-1].at if jobs else 0.0  # the reservation, the drain and the resume fall inside it
    for index, job in enumerate(jobs):
        delay = begin + job.at - time.time()
        if delay > 0:
            time.sleep(delay)
        if features and not reserved and job.at >= 0.1 * span:
            slurm("scontrol", "create", "reservation", "reservationname=maintenance", "starttime=now+60",
                  "duration=3", "nodes=h[1-4]", "users=root", "flags=maint,ignore_jobs")
            reserved = True
        if features and not drained and job.at >= 0.35 * span:
            slurm("scontrol", "update", "nodename=h12", "state=drain", "reason=bench drain")
            drained = True
        if features and drained and not resumed and job.at >= 0.7 * span:
            slurm("scontrol", "update", "nodename=h12", "state=resume")
            resumed = True
        extra = [f"--dependency=afterany:{ids[index - 3]}" if option == "DEPENDENCY" else option
                 for option in job.extra]
        done = subprocess.run(["sbatch", "--parsable", "--output=/dev/null", f"--partition={job.partition}",
                               f"--ntasks={job.cpus}", f"--time={job.limit_min}", f"--account={job.account}",
                               f"--qos={job.qos}", f"--mem-per-cpu={job.mem_per_cpu}", f"--job-name=g{index}",
                               *extra, f"--wrap=sleep {job.sleep}"],
                              capture_output=True, text=True, timeout=120, env={**os.environ, **CLUSTER})
        if done.returncode != 0:
            raise SystemExit(f"record_history: sbatch of job {index} failed: {done.stderr.strip()}")
        ids.append(done.stdout.strip().split(";")[0])
        if index % 200 == 0:
            print(f"record_history: {out.name}: {index}/{len(jobs)} submitted", file=sys.stderr)
    wait_empty(3600)
    time.sleep(5)  # slurmdbd records an end a moment after squeue forgets the job
    ended = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
    dump = slurm("sacct", "-a", "-X", "-P", "-S", started, "-E", ended, f"--format={FORMAT}")
    (out / "dump.txt.gz").write_bytes(gzip.compress(dump.encode(), mtime=0))
    whole = (Path(DIR) / "log" / "slurmctld.log").read_text(errors="replace")
    (out / "slurmctld.log.gz").write_bytes(gzip.compress(scheduler_lines(whole, dump).encode(), mtime=0))
    if whole_log:
        (out / "slurmctld-whole.log.gz").write_bytes(gzip.compress(whole.encode(), mtime=0))
    shutil.copy(CLUSTER["SLURM_CONF"], out / "slurm.conf")
    gres_conf = Path(CLUSTER["SLURM_CONF"]).parent / "gres.conf"
    if CLUSTER.get("DJSB_SLURM_GPUS") and gres_conf.is_file():
        shutil.copy(gres_conf, out / "gres.conf")
    (out / "assoc.txt").write_text(slurm(*ASSOCIATIONS_COMMAND))
    (out / "qos.txt").write_text(slurm(*QOS_COMMAND))
    for name, command in (("events.txt", EVENTS_COMMAND), ("reservations.txt", RESERVATIONS_COMMAND)):
        argv = command.replace("START", started).replace("END", ended).split()
        (out / name).write_text(slurm(*argv))
    if features and reserved:
        slurm("scontrol", "delete", "reservationname=maintenance", check=False)
    version = slurm("sinfo", "--version").strip()
    (out / "provenance.json").write_text(json.dumps({
        "what": "bench/record_history.py: jobs drawn by draw_jobs(seed) submitted at their instants",
        "jobs": len(jobs), "seed": seed, "time_scale": scale, "features": features, "slurm": version,
        "machine": f"{platform.node()}, {os.cpu_count()} CPUs, {platform.platform()}",
        "recorded": f"{started} to {ended} (UTC)", "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "cluster": "16 virtual nodes x 2 CPUs, 2048 MiB, on one host (docker/slurm-cluster.sh)",
        "site_settings": site_settings(scale),
        "partitions": partition_lines(scale, bool(CLUSTER.get("DJSB_SLURM_GPUS"))), "accounts": ACCOUNTS,
        "qos": QOS, "gpus_per_node": CLUSTER.get("DJSB_SLURM_GPUS", ""),
        "gpu_qos": GPU_QOS if CLUSTER.get("DJSB_SLURM_GPUS") else None,
        "command": " ".join(sys.argv)}, indent=2) + "\n")
    print(f"record_history: {out.name}: {len(jobs)} jobs recorded {started} to {ended}", file=sys.stderr)


def scheduler_lines(log: str, dump: str) -> str:
    """The lines of slurmctld's log ``log`` that submit, start or end a job of the sacct ``dump`` (by
    its JobIDRaw): each to the millisecond, where the dump has whole seconds."""
    lines = dump.splitlines()
    raw = lines[0].split("|").index("JobIDRaw")
    ids = {line.split("|")[raw] for line in lines[1:]}
    kept = [line for line in log.splitlines()
            if (match := MAIN.search(line) or BACKFILL.search(line) or END.search(line))
            and (match.group(1) or match.group(2)) in ids
            or (submitted := SUBMIT.search(line)) and submitted.group(1) in ids]
    return "\n".join(kept) + "\n"


def replay(record_dir: Path, earlier: Path | None = None) -> Path:
    """``djsb history`` on a record's files (``earlier``: the record made before it on the same
    cluster, which kept its fair-share usage); the output directory."""
    out = record_dir.parent / f"{record_dir.name}-replay"
    before = ["--earlier", str(earlier / "dump.txt.gz")] if earlier is not None else []
    files = ["--associations", str(record_dir / "assoc.txt"), "--qos", str(record_dir / "qos.txt"),
             "--events", str(record_dir / "events.txt"),
             "--reservations", str(record_dir / "reservations.txt")]
    subprocess.run([sys.executable, "-m", "djsb", "history", str(record_dir / "dump.txt.gz"), *before,
                    "--slurm-conf", str(record_dir / "slurm.conf"), *files, "--window", str(WINDOW),
                    "--step", str(STEP), "-o", str(out), "--force"],
                   check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--features-jobs", type=int, default=600)
    parser.add_argument("--features", action="store_true", help="also record the features history")
    parser.add_argument("--features-only", action="store_true",
                        help="record the features history only (the site records of OUT are kept)")
    parser.add_argument("--features-name", default="features", metavar="NAME",
                        help="the features record's directory in OUT (features-2: a second record of "
                             "the same history, for Slurm's own spread on it)")
    parser.add_argument("--gpus-only", action="store_true",
                        help="record the GPU history twice (gpu-1, gpu-2) only, on nodes with GPUs")
    parser.add_argument("--gpu-jobs", type=int, default=600)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="leave the recording cluster running")
    parser.add_argument("--time-scale", type=int, default=1,
                        help="every duration (sleeps, limits, MaxTime, decay, age) K times longer")
    parser.add_argument("--debug-flags", default="", metavar="FLAGS",
                        help="slurmctld's DebugFlags during the records (e.g. Backfill); each record "
                             "then keeps the whole log too")
    parser.add_argument("--log-level", default="", choices=("", "info", "verbose", "debug", "debug2",
                                                             "debug3"),
                        help="slurmctld's SlurmctldDebug during the records (debug3: why each job waits, "
                             "pass by pass); each record then keeps the whole log too")
    args = parser.parse_args()
    if not re.fullmatch(r"([A-Za-z]+(,[A-Za-z]+)*)?", args.debug_flags):
        parser.error("--debug-flags: DebugFlags names separated by commas, e.g. Backfill,BackfillMap")
    debug = {key: value for key, value in (("DebugFlags", args.debug_flags),
                                           ("SlurmctldDebug", args.log_level)) if value}
    if not all(1 <= count <= 20000 for count in (args.jobs, args.features_jobs, args.gpu_jobs)):
        parser.error("--jobs, --features-jobs and --gpu-jobs: 1 to 20000")
    if args.gpus_only and (args.features or args.features_only):
        parser.error("--gpus-only records on nodes with GPUs: record the features history in another run")
    if not 1 <= args.time_scale <= 10:
        parser.error("--time-scale: 1 to 10 (a record lasts about 16 minutes times K per 2,000 jobs)")
    if os.geteuid() != 0:
        parser.error("the recording cluster's daemons run as root: run as root")
    pairs = [("gpu-1", "gpu-2")] if args.gpus_only else [] if args.features_only else [("site-1", "site-2")]
    names = [name for pair in pairs for name in pair]
    names += [args.features_name] if args.features or args.features_only else []
    recorded = [name for name in names if (args.out / name / "dump.txt.gz").exists()]
    if recorded:
        parser.error(f"{args.out} already holds the record(s) {', '.join(recorded)}: give another OUT")
    # SIGTERM ends the run as Ctrl-C does, through the finally below: the cluster's stop cancels
    # every job the record submitted.
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(143))
    scale = args.time_scale
    start_cluster(scale, debug, gpus=args.gpus_only)
    try:
        jobs = with_gpus(draw_jobs(args.gpu_jobs, args.seed + 2, scale=scale)) if args.gpus_only \
            else draw_jobs(args.jobs, args.seed, scale=scale)
        for name in names:
            record(jobs, args.out / name, False, args.seed + 2 * args.gpus_only, scale, bool(debug))
        if args.features or args.features_only:
            features = with_features(draw_jobs(args.features_jobs, args.seed + 1, scale=scale))
            record(features, args.out / args.features_name, True, args.seed + 1, scale, bool(debug))
    except BaseException:
        slurm("scancel", "--user=root", check=False)  # a record left unfinished leaves no job, --keep or not
        raise
    finally:
        if not args.keep:
            slurm("bash", str(ROOT / ".ci" / "slurm.sh"), "stop", check=False)
    rows = []
    for one, two in pairs:
        first = pd.read_csv(replay(args.out / one) / "errors.csv")
        second = pd.read_csv(replay(args.out / two, earlier=args.out / one) / "errors.csv")
        rows += [{"compared": f"Slurm {two} against {one} (run to run)",
                  **summary(records_paired(first, second), WINDOW, STEP)},
                 {"compared": f"model against {one}", **summary(first, WINDOW, STEP)},
                 {"compared": f"model against {two}", **summary(second, WINDOW, STEP)}]
    if args.features or args.features_only:
        name = args.features_name
        rows.append({"compared": f"model against {name}",
                     **summary(pd.read_csv(replay(args.out / name) / "errors.csv"), WINDOW, STEP)})
    table = pd.DataFrame(rows)
    table.to_csv(args.out / "figures.csv", index=False)
    print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
