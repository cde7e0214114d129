"""``djsb calibrate CONFIG``: the same jobs replayed on a real Slurm and on the model built from its
answers, side by side; ``--resume RUN_DIR`` continues an interrupted calibration."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from djsb.commands import frame
from djsb.errors import InputError, RunError
from djsb.outcome import DIMENSIONLESS, Headline, Outcome
from djsb.outdir import output_directory, require_output


def command_calibrate(args: argparse.Namespace) -> int:
    from djsb.calibrate.machine_left import MachineLeft, read_left
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
        out = Path(args.output) if args.output else frame.default_out_dir(Path(args.config))
    try:
        if args.resume:
            config_path = out
            require_output(out, "calibrate", key="--resume")
            lines = resume_calibration(out)
        else:
            config_path = Path(args.config)
            # what a calibration killed in the directory --force replaces left on Slurm: read before
            # the directory is set aside, undone by the new one
            left = read_left(out) if args.force and out.is_dir() else MachineLeft()
            with output_directory(out, kind="calibrate", force=args.force,
                                  resume=f"djsb calibrate --resume {out}", keep=submitted_any,
                                  in_place=True) as made:
                lines = run_calibration(config_path, made, runs=args.runs, left=left)
    except RunError as exc:
        if submitted_any(out):
            raise RunError(f"{exc}; continue with: djsb calibrate --resume {out}") from exc
        raise
    frame.finish(args, calibration_outcome(config_path, out, lines), lines)
    return frame.EXIT_OK

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

def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", nargs="?", help="calibration file (YAML)")
    parser.add_argument("-o", "--output", type=frame.output_path, help="output directory")
    parser.add_argument("--runs", type=frame.positive_int,
                        help="replays on Slurm (default: the file's slurm.runs)")
    parser.add_argument("--resume", metavar="RUN_DIR",
                        help="continue an interrupted calibration: its finished replays kept, what the "
                        "interrupted one left on Slurm cancelled")
    frame.add_force(parser, "output directory")


COMMAND = frame.Command(
    "calibrate", "replay a workload on a real Slurm and on the model, side by side", arguments,
    command_calibrate,
    description="Replay a workload on a real Slurm (this machine, or a login node with slurm.ssh) and on the "
    "model built from its scontrol answers; report start order (Kendall tau), start and mean-wait errors, "
    "backfilled jobs and Slurm's own run-to-run spread. File format: djsb/calibrate/spec.py.")
