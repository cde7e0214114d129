"""``djsb history DUMP --slurm-conf slurm.conf``: a site's own Slurm history (its sacct dump)
replayed offline on the model of its own configuration, measured against the record; ``--set``
replays it again as a what-if."""

from __future__ import annotations

import argparse
from pathlib import Path

from djsb.commands.frame import (
    EXIT_OK,
    Command,
    add_output,
    default_out_dir,
    duration_seconds,
    finish,
    into_output,
)
from djsb.outcome import DIMENSIONLESS, Headline, Outcome
from djsb.progress import Progress, say
from djsb.slurmsite.qos_text import QOS_FORMAT
from djsb.slurmsite.slurm_config import ASSOCIATIONS_COMMAND
from djsb.workloads.sacct_columns import SACCT_FORMAT


def command_history(args: argparse.Namespace) -> int:
    from djsb.history.inputs import SiteFiles, check_settings, what_if_settings
    from djsb.history.replay import HistoryReplay, compare_what_if, replay_history, write_history
    from djsb.machine import collector_paused

    files = SiteFiles(Path(args.sacct), Path(args.slurm_conf),
                      Path(args.associations) if args.associations else None,
                      Path(args.qos) if args.qos else None, Path(args.usage) if args.usage else None,
                      Path(args.events) if args.events else None,
                      Path(args.reservations) if args.reservations else None,
                      earlier=tuple(Path(path) for path in args.earlier or ()),
                      slurmctld_log=Path(args.slurmctld_log) if args.slurmctld_log else None)
    settings = what_if_settings(args.set or [])
    check_settings(files.slurm_conf, settings)

    def replay(changes: dict[str, str], label: str) -> HistoryReplay:
        bars: list[Progress] = []

        def progress(done: int, total: int) -> None:
            if not bars:
                bars.append(Progress(label, total, line_every=10.0))
            bars[0].update(done)

        replayed = replay_history(files, window=args.window, step=args.step, settings=changes,
                                  start=args.start, on_progress=progress)
        for bar in bars:
            bar.update(bar.total)  # the replay ends between two reports: its end is shown once
            bar.close()
        return replayed

    def write(scratch: Path) -> tuple[HistoryReplay, HistoryReplay | None]:
        baseline = replay({}, "jobs")
        write_history(baseline, scratch, f"DJSB history {files.sacct.name} under {files.slurm_conf.name}")
        if not settings:
            return baseline, None
        what_if = replay(settings, "what-if jobs")
        (scratch / "what-if").mkdir()
        changed = " ".join(f"{key}={value}" for key, value in settings.items())
        write_history(what_if, scratch / "what-if", f"DJSB history {files.sacct.name}, what-if {changed}")
        compare_what_if(baseline, what_if).to_csv(scratch / "what-if.csv", index=False)
        return baseline, what_if

    with collector_paused():
        out, (baseline, what_if) = into_output(args, "history", default_out_dir(files.sacct), write)
    for note in baseline.notes:
        say(f"note: {note}")
    figures = baseline.figures
    headline = [Headline("jobs", figures["jobs"], "jobs"),
                Headline("not_started", figures["not_started"], "jobs"),
                Headline("recorded_mean_wait", figures["recorded_mean_wait"], "s"),
                Headline("simulated_mean_wait", figures["simulated_mean_wait"], "s"),
                Headline("mean_abs_start_error", figures["mean_abs_start_error"], "s"),
                Headline("moving_average_mape", 100 * figures["moving_average_mape"], "%"),
                Headline("ks_wait", figures["ks_wait"], DIMENSIONLESS),
                Headline("pass_agreement", figures["pass_agreement"], DIMENSIONLESS),
                Headline("reason_agreement", figures["reason_agreement"], DIMENSIONLESS)]
    ran = f"{files.sacct} replayed under {files.slurm_conf}"
    if what_if is not None:
        headline.append(Headline("what_if_mean_wait", what_if.figures["simulated_mean_wait"], "s"))
        ran += " and with " + " ".join(f"{key}={value}" for key, value in settings.items())
    finish(args, Outcome("history", ran, out, headline))
    return EXIT_OK


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sacct", help="sacct --parsable2 --allocations dump (plain or gzip)")
    parser.add_argument("--slurm-conf", required=True, help="the site's slurm.conf")
    parser.add_argument("--associations", help=" ".join(ASSOCIATIONS_COMMAND[1:]) + " (fair share's tree "
                        "and the associations' limits; the first four columns alone still read)")
    parser.add_argument("--qos", help="sacctmgr --noheader --parsable2 show qos format="
                        + ",".join(QOS_FORMAT) + " (its limits; the first three columns alone still read)")
    parser.add_argument("--events", help="sacctmgr --noheader --parsable2 show events start=START end=END "
                        "format=NodeName,Start,End,State,Reason,User (nodes DOWN or DRAIN: noted, the model "
                        "keeps them in service)")
    parser.add_argument("--reservations", help="sacctmgr --noheader --parsable2 show reservation "
                        "start=START end=END format=Name,NodeNames,TimeStart,TimeEnd,Flags (noted: the "
                        "model holds none)")
    parser.add_argument("--earlier", action="append", metavar="DUMP",
                        help="a sacct dump of the history before DUMP's (the same format; repeatable, in "
                        "time order): its jobs charge fair share before the replay starts, at DUMP's "
                        "first submission unless --start says otherwise")
    parser.add_argument("--slurmctld-log", help="slurmctld's log over the dump's span (plain or gzip; the "
                        "default level, info): the jobs' submissions, starts and ends to the millisecond, "
                        "and the instants of Slurm's main and backfill passes, which sacct does not keep")
    parser.add_argument("--start", metavar="YYYY-MM-DDTHH:MM:SS",
                        help="replay from this instant of the history (as the dump's times): jobs running "
                        "then are placed where the record put them, jobs ended before it charge fair "
                        "share (default: the dump's first submission)")
    parser.add_argument("--usage", help="sshare --all --noheader --parsable2 --format=Account,User,RawUsage "
                        "taken at --start: the fair-share usage then (default: accrued from the dump)")
    parser.add_argument("--window", type=duration_seconds, default=14 * 86400.0,
                        help="moving-average window: seconds or a Slurm time (default 14-00:00:00, "
                        "FastSim's)")
    parser.add_argument("--step", type=duration_seconds, default=86400.0,
                        help="moving-average sampling step: seconds or a Slurm time (default 1-00:00:00)")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE",
                        help="a what-if: replay again with this slurm.conf setting changed (repeatable; "
                        "e.g. PriorityWeightFairShare=10000), written to what-if/ and what-if.csv")
    add_output(parser)


COMMAND = Command(
    "history", "replay a site's sacct dump offline under its slurm.conf and measure each start and the "
    "moving-average wait against the record", arguments, command_history,
    description="Replay a site's own Slurm history on the model of its own configuration: the dump of sacct "
    f"-a -X -P --format={SACCT_FORMAT} and slurm.conf (with its includes). Writes errors.csv (one row per "
    "job), summary.csv (overall and by partition, QoS, account, size), moving_average.csv, notes.txt.")
