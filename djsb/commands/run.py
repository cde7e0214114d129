"""``djsb run CONFIG``: the DJSB benchmark (paper 001), its reference and execution stages on a job
module; ``--resume RUN_DIR`` completes an interrupted run.

Exit status: 0 ok, 1 the run failed, 2 bad input, 130/143 interrupted by SIGINT/SIGTERM (the run's
jobs cancelled, its records kept for --resume).
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import signal
import time
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath
from types import FrameType

import pandas as pd

from djsb.apps import SOURCE_DIR, apps_dir
from djsb.clock import VirtualClock, WallClock
from djsb.commands import frame
from djsb.config import Config, check_node_capacity, load_config, open_module
from djsb.errors import InputError, RunError
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
from djsb.interrupts import EXIT_STATUS
from djsb.jobs import JobModule
from djsb.outdir import mark_finished, output_directory, require_output, with_written_file
from djsb.progress import QUIET, Progress, say
from djsb.remote.connect import open_remote
from djsb.remote.staging import ResultFetcher, stage_apps
from djsb.report import summary_warnings, write_report
from djsb.report.run_outcome import run_outcome, summary_text
from djsb.transport import LocalTransport, Transport


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
    return frame.default_out_dir(config_path)

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
        frame.finish(args, run_outcome("run", run, summary), summary_text(summary))
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
        return EXIT_STATUS.get(exc.signal_name, frame.EXIT_FAILED), None
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
    return frame.EXIT_OK, summary

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

def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", nargs="?", help="experiment YAML file")
    parser.add_argument("-o", "--output", type=frame.output_path,
                        help="run directory (default: output.directory or runs/NAME-DATE)")
    parser.add_argument("--resume", metavar="RUN_DIR",
                        help="complete an interrupted run, redoing its failed cells")
    frame.add_force(parser, "run directory")
    parser.add_argument("--skip-failed", action="store_true",
                        help="with --resume: keep the failed cells failed instead of redoing them")
    parser.add_argument("--include-outages", action="store_true",
                        help="keep cells that overlapped a scheduler outage in summary.csv")


COMMAND = frame.Command("run", "run the DJSB benchmark (reference and execution stages)", arguments,
                        command_run)
