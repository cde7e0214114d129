"""``djsb sweep CONFIG``: a config at every point of its sweep grid, here or as one Slurm job array;
``--resume`` continues one, ``--point``/``--array-task`` run one point (what an array task does)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from djsb.commands import frame
from djsb.errors import InputError
from djsb.outdir import mark_finished, output_directory


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
        status, outcome = run_sweep(request, frame.default_out_dir(config_path))
    else:
        worker_count(args.jobs)
        validate(config_path)
        out = request.out or (latest_sweep(config_path) if args.resume
                              else frame.default_out_dir(config_path))
        with output_directory(out, kind="sweep", force=args.force,
                              resume=f"djsb sweep {config_path} -o {out} --resume",
                              reusable=frame.resumable(args.resume, "sweep"), keep=frame.holds_points,
                              in_place=True, ends_with_block=False) as out:
            status, outcome = run_sweep(dataclasses.replace(request, out=out), out)
            if status == frame.EXIT_OK:
                mark_finished(out)
    frame.finish(args, outcome)
    return status

def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config")
    parser.add_argument("-o", "--output", type=frame.output_path,
                        help="sweep directory (default: runs/NAME-DATE)")
    parser.add_argument("--jobs", type=frame.positive_int,
                        help="worker processes, at most one per CPU this process may use (default: "
                        "that many)")
    parser.add_argument("--executor", choices=("local", "slurm"), default="local",
                        help="run the points here, or as one Slurm job array (the config's sweep.slurm)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the latest sweep of CONFIG (or -o's); finished points are kept "
                        "(without it an existing non-empty directory is refused)")
    frame.add_force(parser, "sweep directory")
    parser.add_argument("--point", type=int, help="run only point K (what a Slurm array task does)")
    parser.add_argument("--array-task", action="store_true", help="run only point $SLURM_ARRAY_TASK_ID")


COMMAND = frame.Command("sweep", "run a config at every point of its sweep: grid (djsb/sweep/)", arguments,
                        command_sweep)
