"""The ``djsb`` command and its subcommands (``djsb --help`` lists them).

Exit status: 0 ok, 1 the run failed, 2 bad input (a one-line message naming file, line and key),
130/143 interrupted by SIGINT/SIGTERM (the run's jobs cancelled, its records kept for --resume).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import shlex
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath
from types import FrameType

import pandas as pd

from djsb.apps import SOURCE_DIR, apps_dir
from djsb.clock import VirtualClock, WallClock
from djsb.completion import SHELLS, subcommands
from djsb.completion import script as completion_script
from djsb.config import Config, check_node_capacity, load_config, open_module
from djsb.errors import DjsbError, InputError, RunError, Signalled, os_error_line
from djsb.harness.driver import Driver, planned_cells
from djsb.harness.resume import cancel_earlier_jobs
from djsb.harness.rundir import (
    CellKey,
    RunDirectory,
    describe_cell,
    machine_metadata,
    never_started,
    row_cell,
)
from djsb.harness.stop import Interrupted
from djsb.interrupts import EXIT_STATUS, signals_raise
from djsb.jobs import JobModule
from djsb.outcome import DIMENSIONLESS, Headline, Outcome, as_json, headlines, summary_block
from djsb.outdir import is_empty, mark_finished, output_directory, require_output, with_written_file
from djsb.progress import NORMAL, QUIET, VERBOSE, Progress, say, set_verbosity
from djsb.remote.connect import open_remote
from djsb.remote.staging import ResultFetcher, stage_apps
from djsb.report import summary_warnings, write_report
from djsb.transport import LocalTransport, Transport
from djsb.version import djsb_version

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def resolved_config(config: Config, config_path: Path) -> dict:
    """The config as plain data, with a module file path made absolute so --resume finds it."""
    data = config.to_dict()
    name = data["job_module"]["name"]
    if name.endswith(".py") or "/" in name:
        data["job_module"]["name"] = str((config_path.parent / name).resolve())
    return data


def new_run_dir(config: Config, config_path: Path, override: str | None) -> Path:
    if override:
        return Path(override)
    if config.output.directory:
        return Path(config.output.directory)
    return default_out_dir(config_path)


def default_out_dir(config_path: Path) -> Path:
    """runs/NAME-DATE-TIME under the current directory."""
    return Path("runs") / f"{config_path.stem}-{time.strftime('%Y%m%d-%H%M%S')}"


def open_transport(config: Config) -> Transport:
    """Where the module's commands run: this machine, or the login node of job_module.ssh (connected)."""
    ssh = config.job_module.ssh
    return open_remote(ssh, config.source) if ssh is not None else LocalTransport()


def job_paths(config: Config, run_path: Path, transport: Transport) -> tuple[PurePath, PurePath]:
    """The apps directory and the job files directory as the host that runs the jobs sees them
    (over SSH, the files directory is made there, and the apps staged unless ssh.apps_dir names
    binaries already built)."""
    ssh = config.job_module.ssh
    if ssh is None:
        return apps_dir(build=False), run_path
    files_dir = PurePosixPath(ssh.remote_dir) / run_path.name
    made = transport.run(shlex.join(["mkdir", "-p", str(files_dir / "jobs"), str(files_dir / "control")]))
    if made.returncode != 0:
        raise RunError(f"cannot create {files_dir} on {ssh.host}: {made.stderr.strip()}")
    if ssh.apps_dir is not None:
        return PurePosixPath(ssh.apps_dir), files_dir
    try:
        return stage_apps(transport, ssh.remote_dir, SOURCE_DIR, ssh.modules), files_dir
    except InputError as exc:
        exc.source = config.source
        raise


@dataclass(frozen=True)
class Session:
    """What a run needs besides its directory: the module on its transport, connected, and where
    the apps and the job files are on the host that runs the jobs."""

    transport: Transport
    module: JobModule
    apps_dir: PurePath
    files_dir: PurePath

    def close(self) -> None:
        self.module.close()
        self.transport.close()


def open_session(config: Config, run_path: Path) -> Session:
    """Build the module and connect its transport, check the config's CPUs against what the
    scheduler says its nodes have (before anything is made on the host that runs the jobs); if any
    of it fails, nothing is left open."""
    with contextlib.ExitStack() as opened:
        transport = open_transport(config)
        opened.callback(transport.close)
        module = open_module(config, transport)
        opened.callback(module.close)
        capacity = module.node_capacity()
        if capacity is not None:
            check_node_capacity(config, capacity)
        apps_dir, files_dir = job_paths(config, run_path, transport)
        opened.pop_all()
    return Session(transport, module, apps_dir, files_dir)


def start_run(args: argparse.Namespace) -> tuple[RunDirectory, Config, Session]:
    """A new run: its directory is created (and locked) only once the run can start."""
    if not args.config:
        raise InputError("give a config file, or --resume RUN_DIR", key="CONFIG")
    config_path = Path(args.config)
    config = load_config(config_path)
    path = new_run_dir(config, config_path, args.output)
    meta = {**machine_metadata(), "config_file": str(config_path.resolve()),
            "job_module": config.job_module.name, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    with output_directory(path, kind="run", key="-o" if args.output else "output.directory", force=args.force,
                          resume=f"djsb run --resume {path}", reusable=never_started, in_place=True,
                          ends_with_block=False) as path, \
            contextlib.ExitStack() as opened:
        session = open_session(config, path)
        opened.callback(session.close)
        run = RunDirectory.create(path, resolved_config(config, config_path), meta)
        opened.pop_all()
    say(f"run directory {run.path}")
    return run, config, session


def resume_run(path: Path, *, skip_failed: bool = False) -> tuple[RunDirectory, Config, Session]:
    """An interrupted run, locked: the jobs its earlier attempts left alive cancelled, the records
    of its unfinished cells, and of its failed ones unless ``skip_failed``, moved aside to be redone."""
    run = RunDirectory.resume(path)
    with contextlib.ExitStack() as opened:
        opened.callback(run.release)
        require_output(path, "run", key="--resume")
        config = load_config(run.config_path)
        session = open_session(config, run.path)
        opened.callback(session.close)
        cancelled, looked_for = cancel_earlier_jobs(run, session.module, session.module.clock or WallClock(),
                                                    config.general.poll_interval, progress=say)
        opened.pop_all()
    if looked_for:
        say(f"cancelled {len(cancelled)} job(s) of an earlier attempt the scheduler still held"
            + (": " + ", ".join(s.describe() for s in cancelled) if cancelled else "")
            + f" (of the {looked_for} in its ledger)")
    reopened = [] if skip_failed else run.reopen_failed_cells()
    if reopened:
        say(f"redoing {len(reopened)} failed cell(s) (--skip-failed keeps them failed): "
            + "; ".join(f"{describe_cell(row_cell(row))}: {row.get('reason', '')}" for row in reopened))
    moved = run.discard_unfinished()
    say(f"resuming {run.path}" + (f" ({moved} record(s) of unfinished or failed cells moved to "
                                  "discarded.csv)" if moved else ""))
    return run, config, session


def command_run(args: argparse.Namespace) -> int:
    if args.skip_failed and not args.resume:
        raise InputError("--skip-failed goes with --resume RUN_DIR", key="--skip-failed")
    if args.force and args.resume:
        raise InputError("--force starts a new run; --resume continues one: give one of them", key="--force")
    run, config, session = (resume_run(Path(args.resume), skip_failed=args.skip_failed) if args.resume
                            else start_run(args))
    try:
        status, summary = run_experiment(run, config, session, include_outages=args.include_outages)
    except OSError as exc:
        raise with_written_file(exc, run.path) from exc
    finally:
        run.release()
    if summary is not None:
        finish(args, run_outcome("run", run, summary), summary_text(summary))
    return status


def run_experiment(run: RunDirectory, config: Config, session: Session, *,
                   include_outages: bool) -> tuple[int, pd.DataFrame | None]:
    """Drive the run's cells, then write its report (cells that overlapped an outage left out of the
    summary unless ``include_outages``); the session is closed however it ends. Returns the exit
    status and summary.csv's table (None when the run was interrupted)."""
    module, transport = session.module, session.transport
    apps_dir, files_dir = session.apps_dir, session.files_dir
    run.durable = not isinstance(module.clock, VirtualClock)
    cells = planned_cells(config.general)
    bar = Progress("cells", len(cells), done=len(run.finished_cells() & set(cells)))
    fetcher = (ResultFetcher(transport, PurePosixPath(files_dir), run.path)
               if config.job_module.ssh is not None else None)

    def cell_finished(key: CellKey) -> None:
        bar.advance()
        if fetcher is not None:
            fetcher.fetch()

    driver = Driver(config, module, run, module.clock or WallClock(), transport, apps_dir, files_dir,
                    progress=bar.log, cell_finished=cell_finished)
    watch_outages = getattr(transport, "watch_outages", None)  # a remote transport's reconnections
    if watch_outages is not None:
        watch_outages(driver.records.outage_ended)
    bar.update(bar.done)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        driver.request_stop(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        driver.run()
    except Interrupted as exc:
        outcome = cancel_outcome(run, driver.ender.uncancelled)
        say(f"{exc}: {outcome}; resume with: djsb run --resume {run.path}", QUIET)
        if (run.path / "jobs.csv").exists():
            write_report(run.path, plots=False, include_outages=include_outages)
        return EXIT_STATUS.get(exc.signal_name, EXIT_FAILED), None
    finally:
        bar.close()
        session.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    run.update_meta(finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    mark_finished(run.path)
    summary = write_report(run.path, plots=config.output.plots, include_outages=include_outages)
    for warning in summary_warnings(summary):
        say(f"warning: {warning}", QUIET)
    for line in untrusted_cells(run, include_outages):
        say(line, QUIET)
    return EXIT_OK, summary


def run_outcome(command: str, run: RunDirectory, summary: pd.DataFrame) -> Outcome:
    """A run's end (``djsb run``, ``djsb report``): its cells, failed and in outages, and each
    scenario's slowdowns and dynamicity at its largest number of analytics (figs. 3-5 of 001)."""
    rows = run.cell_rows()
    failed = sum(1 for row in rows if row.get("status") == "failed")
    outage = sum(1 for row in rows if row.get("outage") == "True")
    numbers = [Headline("cells", len(rows) - failed, "cells"), Headline("failed_cells", failed, "cells"),
               Headline("outage_cells", outage, "cells")]
    for scenario, rows_of in summary.groupby("scenario", sort=False):
        last = rows_of.sort_values("n_a").iloc[-1]
        numbers += [Headline(f"{name}[{scenario}, n_a={int(last['n_a'])}]", float(last[name]), DIMENSIONLESS)
                    for name in ("slowdown_s", "slowdown_a", "dynamicity")]
    config = run.meta().get("config_file", run.path.name)
    return Outcome(command, f"{config}: {len(rows)} cell(s) of its stages", run.path, numbers,
                   details=summary.to_dict(orient="records"))


def cancel_outcome(run: RunDirectory, uncancelled: dict[str, str]) -> str:
    """What became of the run's jobs: all cancelled, or which ids are left (in uncancelled.txt)."""
    if not uncancelled:
        return "every job of the run was cancelled"
    ids = " ".join(uncancelled)
    return (f"could not cancel job(s) {ids} (the scheduler did not answer; listed in "
            f"{run.path / 'uncancelled.txt'}): cancel them yourself (scancel {ids}) or with --resume")


def untrusted_cells(run: RunDirectory, include_outages: bool) -> list[str]:
    """End-of-run lines naming the failed cells (with why) and the cells that overlapped an outage."""
    lines = []
    for row in run.cell_rows():
        cell = describe_cell(row_cell(row))
        if row.get("status") == "failed":
            lines.append(f"failed cell: {cell}: {row.get('reason', '')}")
        if row.get("outage") == "True":
            kept = "kept in" if include_outages else "left out of"
            lines.append(f"cell overlapped a scheduler outage ({kept} summary.csv; see outages.csv): {cell}")
    return lines


def command_validate(args: argparse.Namespace) -> int:
    """Check every file given, a bad one not stopping the others: a line on stdout for each valid
    file and one error line on stderr for each invalid one; if any was, exit 2 without the summary
    block (as every command that fails)."""
    from djsb.validate import Validated, validate

    read: dict[str, Validated] = {}
    invalid = 0
    for name in args.config:
        try:
            read[name] = validate(Path(name))
        except InputError as exc:
            if exc.source != str(Path(name)):  # a trace's error: say which config led to it
                named = InputError(exc.one_line(), source=name)
                named.__cause__, exc = exc, named
            report_failure(exc, args.verbosity)
            invalid += 1
    lines = "\n".join(checked.line(Path(name)) for name, checked in read.items())
    if invalid:
        if lines and not args.json:
            print(lines)
        return EXIT_BAD_INPUT
    kinds = [checked.kind for checked in read.values()]
    finish(args, Outcome("validate", f"{len(read)} config file(s) checked, every one valid", None,
                         [Headline(f"{kind}_configs", kinds.count(kind), "files")
                          for kind in dict.fromkeys(kinds)],
                         details=[{"file": name, "kind": checked.kind, "details": checked.details}
                                  for name, checked in read.items()]),
           lines)
    return EXIT_OK


def command_report(args: argparse.Namespace) -> int:
    run = RunDirectory.open(Path(args.run_dir))
    summary = write_report(run.path, include_outages=args.include_outages)
    for warning in summary_warnings(summary):
        say(f"warning: {warning}", QUIET)
    finish(args, run_outcome("report", run, summary), summary_text(summary))
    return EXIT_OK


def command_compare(args: argparse.Namespace) -> int:
    from djsb.report.compare import text_table, write_comparison
    from djsb.report.compare_history import is_history_output

    out_dir = Path(args.output) if args.output else Path("runs") / f"compare-{time.strftime('%Y%m%d-%H%M%S')}"
    histories = [is_history_output(Path(run_dir)) for run_dir in args.run_dirs]
    if any(histories):
        return compare_histories(args, out_dir, histories)
    with output_directory(out_dir, kind="compare", force=args.force) as scratch:
        side = write_comparison([Path(run_dir) for run_dir in args.run_dirs], scratch)
    tidy = pd.read_csv(out_dir / "compare.csv")
    tested = tidy[tidy["p_value"].notna()]
    finish(args, Outcome("compare", f"{len(args.run_dirs)} runs against {side.columns[3]} (Welch's t-test, "
                         "* significant at 0.05)", out_dir,
                         [Headline("cells", len(tidy.drop_duplicates(["scenario", "n_a"])), "cells"),
                          Headline("differences_tested", len(tested), "tests"),
                          Headline("significant", int(tested["significant"].astype(bool).sum()), "tests")],
                         details=tidy.to_dict(orient="records")),
           text_table(side))
    return EXIT_OK


def compare_histories(args: argparse.Namespace, out_dir: Path, histories: list[bool]) -> int:
    """``djsb compare`` on ``djsb history`` outputs (all of them: a history is not compared with a run)."""
    from djsb.report.compare import text_table
    from djsb.report.compare_history import display, write_history_comparison

    if not all(histories):
        history, other = (args.run_dirs[histories.index(flag)] for flag in (True, False))
        raise InputError(f"{history} is a djsb history output and {other} is not: compare runs with runs, "
                         "histories with histories", key="RUN_DIR")
    if len(args.run_dirs) < 2:
        raise InputError("djsb compare needs two history outputs or more", key="RUN_DIR")
    with output_directory(out_dir, kind="compare", force=args.force) as scratch:
        table = write_history_comparison([Path(run_dir) for run_dir in args.run_dirs], scratch)
    overall = table[table["group_by"] == "all"]
    judged = table[table["beyond_error"].notna()]
    shown = display(overall.drop(columns=["group_by", "group"]))
    finish(args, Outcome("compare", f"{len(args.run_dirs) - 1} replay(s) of one history against "
                         f"{args.run_dirs[0]}, the baseline's error against the record as uncertainty",
                         out_dir,
                         [Headline("groups", len(table.drop_duplicates(["group_by", "group"])), "groups"),
                          Headline("changes_judged", len(judged), "figures"),
                          Headline("beyond_baseline_error", int(judged["beyond_error"].astype(bool).sum()),
                                   "figures")],
                         details=table.to_dict(orient="records")),
           text_table(shown))
    return EXIT_OK


def command_psp_report(args: argparse.Namespace) -> int:
    from djsb.report.psp_scenarios import write_psp_report

    written = write_psp_report(Path(args.sweep_dir))
    finish(args, Outcome("psp-report", f"Tables 5-6 of paper 000 from {args.sweep_dir}", written))
    return EXIT_OK


def command_replay_stats(args: argparse.Namespace) -> int:
    from djsb.simulate.replay_stats import replay_and_compare

    config_path = Path(args.config)
    out = Path(args.output) if args.output else default_out_dir(config_path)
    with output_directory(out, kind="replay-stats", force=args.force) as scratch:
        replay_and_compare(config_path, scratch)
    finish(args, replay_outcome("replay-stats", f"{config_path} replayed and compared with its trace", out))
    return EXIT_OK


def summary_text(summary: pd.DataFrame) -> str:
    """summary.csv's numbers as a text table (its warnings column aside: they go to stderr)."""
    if summary.empty:
        return "no complete execution cell"
    return summary.drop(columns="warnings").to_string(index=False, float_format=lambda v: f"{v:.3f}",
                                                      na_rep="-")


def finish(args: argparse.Namespace, outcome: Outcome, text: str | None = None) -> None:
    """Print a command's end on stdout: ``text`` (its table, if any) then the summary block, or,
    with ``--json``, the same as one JSON object and nothing else."""
    if args.json:
        print(as_json(outcome))
        return
    if text:
        print(text)
    print(summary_block(outcome))


def replay_outcome(command: str, ran: str, out: Path) -> Outcome:
    """A model replay's end: its metrics.json's headline numbers, in their units."""
    metrics = json.loads((out / "metrics.json").read_text())
    return Outcome(command, ran, out, headlines(metrics, metrics.get("units", {}), (
        "jobs", "rejected", "mean_wait", "p95_wait", "mean_bounded_slowdown", "utilisation", "makespan")))


def command_simulate(args: argparse.Namespace) -> int:
    from djsb.simulate.command import run_simulate

    config_path = Path(args.config)
    out = Path(args.output) if args.output else default_out_dir(config_path)
    with output_directory(out, kind="simulate", force=args.force) as scratch:
        run_simulate(config_path, scratch)
    finish(args, replay_outcome("simulate", f"{config_path} replayed on the scheduler model", out))
    return EXIT_OK


def command_pool(args: argparse.Namespace) -> int:
    from djsb.sweep.pool_command import run_pool
    from djsb.validate import validate
    from djsb.yamlnodes import load_yaml

    config_path = Path(args.config)
    validate(config_path)  # every value of a sweep checked before its directory exists
    if args.resume and (not args.output or args.force or load_yaml(config_path).get("sweep") is None):
        raise InputError("--resume continues a pool sweep (a config with a sweep section) in -o DIR, "
                         "without --force", key="--resume")
    out = Path(args.output) if args.output else default_out_dir(config_path)
    with output_directory(out, kind="pool", force=args.force,
                          resume=f"djsb pool {config_path} -o {out} --resume",
                          reusable=resumable(args.resume, "pool"), keep=holds_points, in_place=True) as out:
        finish(args, run_pool(config_path, out))
    return EXIT_OK


def resumable(resume: bool, kind: str) -> Callable[[Path], bool]:
    """Which output directories a command of ``kind`` may write into as they are: with ``--resume``
    an empty one or one a ``djsb {kind}`` wrote (any other is refused, naming what it holds: the
    command would continue what is not its own), else only an empty one."""
    if not resume:
        return is_empty

    def continues(path: Path) -> bool:
        if not is_empty(path):
            require_output(path, kind, key="--resume")
        return True
    return continues


def holds_points(path: Path) -> bool:
    """Whether a sweep directory holds a finished point (kept for --resume if the sweep fails)."""
    from djsb.sweep.sweep_dir import SweepDirectory

    return bool(SweepDirectory(path).finished())


def command_wrappers(args: argparse.Namespace) -> int:
    from djsb.simulate.wrappers import compare_strategies
    from djsb.workflows.compare import as_table

    outcomes = compare_strategies(Path(args.config))
    best = outcomes[0]
    finish(args, Outcome("wrappers", f"{args.config}: {len(outcomes)} wrapper strategies ranked, best "
                         f"{best.strategy}", None,
                         [Headline("best_makespan", best.makespan_s, "s"),
                          Headline("best_queue_time", best.queue_time_s, "s"),
                          Headline("best_submissions", best.submissions, "jobs")],
                         details=[o.as_dict() for o in outcomes]),
           as_table(outcomes))
    return EXIT_OK


def command_sweep(args: argparse.Namespace) -> int:
    from djsb.sweep.local import worker_count
    from djsb.sweep.run import SweepRequest, latest_sweep, run_sweep
    from djsb.validate import validate

    config_path = Path(args.config)
    request = SweepRequest(config_path, Path(args.output) if args.output else None, args.jobs, args.executor,
                           args.resume, args.point, args.array_task)
    if args.force and (args.resume or args.point is not None or args.array_task):
        raise InputError("--force starts a new sweep; --resume, --point and --array-task continue one",
                         key="--force")
    if args.point is not None or args.array_task:
        # a point (an array task) is checked when it runs, into its sweep's directory
        status, outcome = run_sweep(request, default_out_dir(config_path))
    else:
        worker_count(args.jobs)
        validate(config_path)
        out = request.out or (latest_sweep(config_path) if args.resume else default_out_dir(config_path))
        with output_directory(out, kind="sweep", force=args.force,
                              resume=f"djsb sweep {config_path} -o {out} --resume",
                              reusable=resumable(args.resume, "sweep"), keep=holds_points, in_place=True,
                              ends_with_block=False) as out:
            status, outcome = run_sweep(dataclasses.replace(request, out=out), out)
            if status == EXIT_OK:
                mark_finished(out)
    finish(args, outcome)
    return status


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def output_path(text: str) -> str:
    """An argparse type: an output directory's path, not empty (``-o ""`` would name the current
    directory's parent's entry "", which no command can write)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path names no directory")
    return text


def duration_seconds(text: str) -> float:
    """An argparse type: a number of seconds, or a Slurm time (``14-00:00:00``, ``2:00:00``...)."""
    from djsb.yamlnodes import parse_duration

    try:
        seconds = parse_duration(text, "s")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"expected a time > 0, got {text!r}")
    return seconds


def command_history(args: argparse.Namespace) -> int:
    from djsb.calibrate.history import (
        HistoryReplay,
        SiteFiles,
        compare_what_if,
        replay_history,
        what_if_settings,
        write_history,
    )
    from djsb.machine import collector_paused

    files = SiteFiles(Path(args.sacct), Path(args.slurm_conf),
                      Path(args.associations) if args.associations else None,
                      Path(args.qos) if args.qos else None, Path(args.usage) if args.usage else None,
                      Path(args.events) if args.events else None,
                      Path(args.reservations) if args.reservations else None,
                      earlier=tuple(Path(path) for path in args.earlier or ()),
                      slurmctld_log=Path(args.slurmctld_log) if args.slurmctld_log else None)
    settings = what_if_settings(args.set or [])

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

    out = Path(args.output) if args.output else default_out_dir(files.sacct)
    with collector_paused(), output_directory(out, kind="history", force=args.force) as scratch:
        baseline = replay({}, "jobs")
        write_history(baseline, scratch, f"DJSB history {files.sacct.name} under {files.slurm_conf.name}")
        if settings:
            what_if = replay(settings, "what-if jobs")
            (scratch / "what-if").mkdir()
            changed = " ".join(f"{key}={value}" for key, value in settings.items())
            write_history(what_if, scratch / "what-if", f"DJSB history {files.sacct.name}, what-if {changed}")
            compare_what_if(baseline, what_if).to_csv(scratch / "what-if.csv", index=False)
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
                Headline("pass_agreement", figures["pass_agreement"], DIMENSIONLESS)]
    ran = f"{files.sacct} replayed under {files.slurm_conf}"
    if settings:
        headline.append(Headline("what_if_mean_wait", what_if.figures["simulated_mean_wait"], "s"))
        ran += " and with " + " ".join(f"{key}={value}" for key, value in settings.items())
    finish(args, Outcome("history", ran, out, headline))
    return EXIT_OK


def command_calibrate(args: argparse.Namespace) -> int:
    from djsb.calibrate.run import resume_calibration, run_calibration
    from djsb.calibrate.run_dir import submitted_any

    if args.resume:
        if args.config or args.output or args.runs or args.force:
            raise InputError("--resume RUN_DIR takes no CONFIG, -o, --runs or --force: they are the "
                             "calibration's", key="--resume")
        out = Path(args.resume)
    elif not args.config:
        raise InputError("give a calibration file, or --resume RUN_DIR", key="CONFIG")
    else:
        out = Path(args.output) if args.output else default_out_dir(Path(args.config))
    try:
        if args.resume:
            config_path = out
            require_output(out, "calibrate", key="--resume")
            lines = resume_calibration(out)
        else:
            config_path = Path(args.config)
            with output_directory(out, kind="calibrate", force=args.force,
                                  resume=f"djsb calibrate --resume {out}", keep=submitted_any,
                                  in_place=True) as made:
                lines = run_calibration(config_path, made, runs=args.runs)
    except RunError as exc:
        if submitted_any(out):
            raise RunError(f"{exc}; continue with: djsb calibrate --resume {out}") from exc
        raise
    finish(args, calibration_outcome(config_path, out, lines), lines)
    return EXIT_OK


def calibration_outcome(config_path: Path, out: Path, lines: str) -> Outcome:
    """A calibration's end: the model against Slurm's first replay (comparison.json), in units."""
    model = json.loads((out / "comparison.json").read_text())["model vs slurm_1"]
    return Outcome("calibrate", f"{config_path} replayed on Slurm and on the model", out,
                   [Headline("jobs", model["jobs"], "jobs"),
                    Headline("kendall_tau", model["tau"], DIMENSIONLESS),
                    Headline("start_error_mean", model["start_error_mean"], "s"),
                    Headline("start_error_max", model["start_error_max"], "s"),
                    Headline("mean_wait_error", 100 * model["mean_wait_error"], "%")],
                   details=lines.splitlines())


def command_init(args: argparse.Namespace) -> int:
    from djsb.examples import copy_examples

    out = Path(args.directory)
    with output_directory(out, kind="init", key="DIRECTORY", force=args.force) as scratch:
        names = copy_examples(scratch)
    finish(args, Outcome("init", "the example configs copied", out,
                         [Headline("configs", len(names), "files")], details=names),
           f"try: djsb run {out / 'local-quick.yaml'}")
    return EXIT_OK


def command_completion(args: argparse.Namespace) -> int:
    print(completion_script(build_parser(), args.shell), end="")
    return EXIT_OK


def command_reproduce(args: argparse.Namespace) -> int:
    from djsb.registry import UnknownName
    from djsb.reproduce import PAPERS, reproduce
    from djsb.reproduce.checks import VERDICTS

    try:
        PAPERS.canonical(args.paper)
    except UnknownName as exc:
        raise InputError(f"paper {args.paper} has no reproduction yet ({exc})", key="PAPER") from exc
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = Path(args.output) if args.output else Path("runs") / f"reproduce-{args.paper}-{stamp}"
    with output_directory(out, kind="reproduce", force=args.force) as scratch:
        rows = pd.read_csv(reproduce(args.paper, scratch, full=args.full), keep_default_na=False)
    verdicts = rows["verdict"].value_counts()
    size = " at the paper's size" if args.full else ""
    finish(args, Outcome("reproduce", f"paper {args.paper}'s headline experiments{size}", out,
                         [Headline("claims", len(rows), "claims"),
                          *(Headline(verdict.replace(" ", "_"), int(verdicts.get(verdict, 0)), "claims")
                            for verdict in VERDICTS)],
                         details=rows.to_dict(orient="records")))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="djsb", description="Dynamic Job Scheduling Benchmark")
    parser.add_argument("--version", action="version", version=f"djsb {djsb_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the DJSB benchmark (reference and execution stages)")
    run.add_argument("config", nargs="?", help="experiment YAML file")
    run.add_argument("-o", "--output", type=output_path,
                     help="run directory (default: output.directory or runs/NAME-DATE)")
    run.add_argument("--resume", metavar="RUN_DIR",
                     help="complete an interrupted run, redoing its failed cells")
    add_force(run, "run directory")
    run.add_argument("--skip-failed", action="store_true",
                     help="with --resume: keep the failed cells failed instead of redoing them")
    run.add_argument("--include-outages", action="store_true",
                     help="keep cells that overlapped a scheduler outage in summary.csv")
    run.set_defaults(func=command_run)
    validate = sub.add_parser("validate", help="check config files of any kind (run, simulate, wrappers, "
                              "sweep, pool, calibrate) and exit")
    validate.add_argument("config", nargs="+")
    validate.set_defaults(func=command_validate)
    report = sub.add_parser("report", help="recompute summary.csv and the figures from a run's jobs.csv")
    report.add_argument("run_dir")
    report.add_argument("--include-outages", action="store_true",
                        help="keep cells that overlapped a scheduler outage in summary.csv")
    report.set_defaults(func=command_report)
    compare = sub.add_parser("compare", help="the cells of two or more runs side by side, with Welch's "
                             "t-test of each against the first; or replays of one history (djsb history "
                             "outputs) beside the first, with its error against the record as uncertainty")
    compare.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                         help="run directories, or djsb history output directories; the first is the base")
    compare.add_argument("-o", "--output", type=output_path,
                         help="output directory (default: runs/compare-DATE-TIME)")
    add_force(compare, "output directory")
    compare.set_defaults(func=command_compare)
    psp_report = sub.add_parser("psp-report", help="Tables 5-6 of paper 000 from its six-scenario sweep")
    psp_report.add_argument("sweep_dir")
    psp_report.set_defaults(func=command_psp_report)
    replay = sub.add_parser("replay-stats", help="simulate a trace replay and compare it with the trace "
                            "(paper 003 Tables 2-6, wait ECDFs, KS)")
    replay.add_argument("config")
    replay.add_argument("-o", "--output", type=output_path, help="output directory")
    add_force(replay, "output directory")
    replay.set_defaults(func=command_replay_stats)
    simulate = sub.add_parser("simulate", help="replay a workload on the built-in scheduler model")
    simulate.add_argument("config")
    simulate.add_argument("-o", "--output", type=output_path, help="output directory")
    add_force(simulate, "output directory")
    simulate.set_defaults(func=command_simulate)
    pool = sub.add_parser("pool", help="simulate a cycle-stealing pool under paper 002's policies")
    pool.add_argument("config")
    pool.add_argument("-o", "--output", type=output_path, help="output directory")
    add_force(pool, "output directory")
    pool.add_argument("--resume", action="store_true",
                      help="continue the pool sweep in -o DIR; its finished points are kept")
    pool.set_defaults(func=command_pool)
    wrappers = sub.add_parser("wrappers", help="rank wrapper strategies for a workflow on the model")
    wrappers.add_argument("config", help="a simulate config with a workflow section")
    wrappers.set_defaults(func=command_wrappers)
    sweep = sub.add_parser("sweep", help="run a config at every point of its sweep: grid (djsb/sweep/)")
    sweep.add_argument("config")
    sweep.add_argument("-o", "--output", type=output_path, help="sweep directory (default: runs/NAME-DATE)")
    sweep.add_argument("--jobs", type=positive_int,
                       help="worker processes, at most one per CPU this process may use (default: that many)")
    sweep.add_argument("--executor", choices=("local", "slurm"), default="local",
                       help="run the points here, or as one Slurm job array (the config's sweep.slurm)")
    sweep.add_argument("--resume", action="store_true",
                       help="continue the latest sweep of CONFIG (or -o's); finished points are kept "
                       "(without it an existing non-empty directory is refused)")
    add_force(sweep, "sweep directory")
    sweep.add_argument("--point", type=int, help="run only point K (what a Slurm array task does)")
    sweep.add_argument("--array-task", action="store_true", help="run only point $SLURM_ARRAY_TASK_ID")
    sweep.set_defaults(func=command_sweep)
    calibrate = sub.add_parser("calibrate",
                               help="replay a workload on a real Slurm and on the model, side by side",
                               description="Replay a workload on a real Slurm (this machine, or a login "
                               "node with slurm.ssh) and on the model built from its scontrol answers; "
                               "report start order (Kendall tau), start and mean-wait errors, backfilled "
                               "jobs and Slurm's own run-to-run spread. File format: djsb/calibrate/spec.py.")
    calibrate.add_argument("config", nargs="?", help="calibration file (YAML)")
    calibrate.add_argument("-o", "--output", type=output_path, help="output directory")
    calibrate.add_argument("--runs", type=positive_int,
                           help="replays on Slurm (default: the file's slurm.runs)")
    calibrate.add_argument("--resume", metavar="RUN_DIR",
                           help="continue an interrupted calibration: its finished replays kept, what the "
                           "interrupted one left on Slurm cancelled")
    add_force(calibrate, "output directory")
    calibrate.set_defaults(func=command_calibrate)
    history = sub.add_parser("history", help="replay a site's sacct dump offline under its slurm.conf and "
                             "measure each start and the moving-average wait against the record",
                             description="Replay a site's own Slurm history on the model of its own "
                             "configuration: the dump of sacct -a -X -P --format=JobIDRaw,JobID,User,Account,"
                             "Partition,QOS,Submit,Eligible,Start,End,Elapsed,Timelimit,ReqCPUS,AllocCPUS,"
                             "ReqMem,NNodes,NodeList,State,Reason,Flags,Priority and slurm.conf (with its "
                             "includes). Writes errors.csv (one row per job), summary.csv (overall and by "
                             "partition, QoS, account, size), moving_average.csv, notes.txt.")
    history.add_argument("sacct", help="sacct --parsable2 --allocations dump (plain or gzip)")
    history.add_argument("--slurm-conf", required=True, help="the site's slurm.conf")
    history.add_argument("--associations", help="sacctmgr --noheader --parsable2 show associations "
                         "format=Account,User,ParentName,Share (fair share's tree)")
    history.add_argument("--qos", help="sacctmgr --noheader --parsable2 show qos "
                         "format=Name,Priority,MaxJobsPU")
    history.add_argument("--events", help="sacctmgr --noheader --parsable2 show events start=START end=END "
                         "format=NodeName,Start,End,State,Reason,User (nodes DOWN or DRAIN: noted, the model "
                         "keeps them in service)")
    history.add_argument("--reservations", help="sacctmgr --noheader --parsable2 show reservation "
                         "start=START end=END format=Name,NodeNames,TimeStart,TimeEnd,Flags (noted: the "
                         "model holds none)")
    history.add_argument("--earlier", action="append", metavar="DUMP",
                         help="a sacct dump of the history before DUMP's (the same format; repeatable, in "
                         "time order): its jobs charge fair share before the replay starts, at DUMP's "
                         "first submission unless --start says otherwise")
    history.add_argument("--slurmctld-log", help="slurmctld's log over the dump's span (plain or gzip; the "
                         "default level, info): the jobs' submissions, starts and ends to the millisecond, "
                         "and the instants of Slurm's main and backfill passes, which sacct does not keep")
    history.add_argument("--start", metavar="YYYY-MM-DDTHH:MM:SS",
                         help="replay from this instant of the history (as the dump's times): jobs running "
                         "then are placed where the record put them, jobs ended before it charge fair "
                         "share (default: the dump's first submission)")
    history.add_argument("--usage", help="sshare --all --noheader --parsable2 --format=Account,User,RawUsage "
                         "taken at --start: the fair-share usage then (default: accrued from the dump)")
    history.add_argument("--window", type=duration_seconds, default=14 * 86400.0,
                         help="moving-average window: seconds or a Slurm time (default 14-00:00:00, "
                         "FastSim's)")
    history.add_argument("--step", type=duration_seconds, default=86400.0,
                         help="moving-average sampling step: seconds or a Slurm time (default 1-00:00:00)")
    history.add_argument("--set", action="append", metavar="KEY=VALUE",
                         help="a what-if: replay again with this slurm.conf setting changed (repeatable; "
                         "e.g. PriorityWeightFairShare=10000), written to what-if/ and what-if.csv")
    history.add_argument("-o", "--output", type=output_path, help="output directory")
    add_force(history, "output directory")
    history.set_defaults(func=command_history)
    reproduce = sub.add_parser("reproduce", help="a paper's headline experiments beside the paper's values "
                               "(reproduce.csv, report.html)")
    reproduce.add_argument("paper", choices=("000", "001", "002", "003", "004"))
    reproduce.add_argument("-o", "--output", type=output_path,
                           help="output directory (default: runs/reproduce-PAPER-DATE)")
    reproduce.add_argument("--full", action="store_true",
                           help="at the paper's size (long) instead of a laptop's")
    add_force(reproduce, "output directory")
    reproduce.set_defaults(func=command_reproduce)
    init = sub.add_parser("init", help="copy the example configs (the checkout's configs/) into DIRECTORY")
    init.add_argument("directory", type=output_path, help="where to copy them (a new or empty directory)")
    add_force(init, "directory")
    init.set_defaults(func=command_init)
    completion = sub.add_parser("completion", help="print a shell completion script (source <(djsb "
                                "completion bash); zsh: the same, or save it as _djsb on $fpath)")
    completion.add_argument("shell", choices=SHELLS)
    completion.set_defaults(func=command_completion)
    add_verbosity(parser)
    add_json(parser)
    return parser


def add_force(parser: argparse.ArgumentParser, what: str) -> None:
    """--force on a command that writes a directory (djsb.outdir): without it an existing non-empty
    one is refused."""
    parser.add_argument("--force", action="store_true",
                        help=f"replace an existing {what} that DJSB wrote (its old files are deleted once "
                        "the command succeeds); without it a non-empty one is refused")


def add_json(parser: argparse.ArgumentParser) -> None:
    """--json on every subcommand that ends with a summary block (all but ``completion``, whose
    output is the script itself): the block as one JSON object on stdout (djsb.outcome)."""
    for name, sub in subcommands(parser).items():
        if name != "completion":
            sub.parser.add_argument("--json", action="store_true",
                                    help="print the end summary as one JSON object on stdout, nothing else")


def add_verbosity(parser: argparse.ArgumentParser) -> None:
    """-v/--verbose and -q/--quiet on every subcommand (djsb.progress: what each level shows)."""
    for sub in subcommands(parser).values():
        chosen = sub.parser.add_mutually_exclusive_group()
        chosen.add_argument("-v", "--verbose", dest="verbosity", action="store_const", const=VERBOSE,
                            default=NORMAL, help="every progress update as a line; a traceback with an error")
        chosen.add_argument("-q", "--quiet", dest="verbosity", action="store_const", const=QUIET,
                            help="no progress on stderr: only errors and what needs attention")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    set_verbosity(args.verbosity)
    with signals_raise():
        try:
            return int(args.func(args))
        except (DjsbError, OSError) as exc:
            return report_failure(exc, args.verbosity)
        except Signalled as stop:
            left = f": {stop.left}" if stop.left else ""
            print(f"djsb: interrupted by {stop.signal_name}{left}", file=sys.stderr)
            return EXIT_STATUS[stop.signal_name]


def report_failure(exc: DjsbError | OSError, verbosity: int) -> int:
    """Print an error's one line on stderr (after its traceback with ``-v``); return its exit status."""
    if verbosity == VERBOSE:
        traceback.print_exception(exc)
    status, line = failure(exc)
    print(f"djsb: {line}", file=sys.stderr)
    return status


def failure(exc: DjsbError | OSError) -> tuple[int, str]:
    """An error's exit status and its one line: bad input (2) names file, line and key; a failed
    run or a refused write or connection (a full disk, a dead host) is 1."""
    if isinstance(exc, InputError):
        return EXIT_BAD_INPUT, f"error: {exc.one_line()}"
    if isinstance(exc, RunError):
        return EXIT_FAILED, f"run failed: {exc}"
    if isinstance(exc, OSError):
        return EXIT_FAILED, f"run failed: {os_error_line(exc)}"
    return EXIT_FAILED, f"error: {exc}"


if __name__ == "__main__":
    sys.exit(main())
