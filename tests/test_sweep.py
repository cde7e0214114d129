"""``djsb sweep``: points from grid x zip, resume, sweep.csv, bad keys, stopping.

Point counts and values are worked by hand next to each case. The runs are real ``djsb simulate``
points (a Poisson workload of a few jobs); the oracle of a point's results is ``djsb simulate`` of a
config file in which the point's values were written by hand.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from support import wait_until

from djsb.cli import main
from djsb.outdir import MARKER
from djsb.sweep.runners import register_mapping_runner
from djsb.sweep.spec import read_sweep
from djsb.sweep.sweep_dir import scalar_metrics

BASE = """\
seed: 1
workload:
  generator: poisson_exponential
  params: {n_jobs: 12, arrival_rate: 0.1, service_rate: 0.01}
cluster:
  nodes:
    - {count: 2, cores: 4}
policy:
  priority: {weights: {age: 1000, fairshare: 500}}
"""

GRID_AND_ZIP = BASE + """\
sweep:
  grid:
    seed: [1, 2, 3]
    policy.priority.weights.fairshare: [1000, 2000]
  zip:
    workload.params.n_jobs: [10, 20]
    cluster.nodes.0.count: [1, 3]
"""

SMALL = BASE + """\
sweep:
  grid:
    seed: [1, 2]
  zip:
    workload.params.n_jobs: [6, 9]
    cluster.nodes.0.count: [1, 2]
"""


def write(tmp_path: Path, text: str, name: str = "sweep.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def djsb(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "djsb.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


# -- points -------------------------------------------------------------------------------------------

def test_grid_times_zip_points_worked_by_hand(tmp_path: Path) -> None:
    spec = read_sweep(write(tmp_path, GRID_AND_ZIP))
    # 3 seeds x 2 fair-share weights x 2 zip rows = 12 points; the zip rows are the fastest axis, then
    # the grid's last key (itertools.product order)
    assert len(spec.points) == 3 * 2 * 2
    assert spec.keys == ("seed", "policy.priority.weights.fairshare", "workload.params.n_jobs",
                         "cluster.nodes.0.count")
    expected = [(seed, fairshare, jobs, count) for seed in (1, 2, 3) for fairshare in (1000, 2000)
                for jobs, count in ((10, 1), (20, 3))]
    assert [tuple(spec.point_values(k).values()) for k in range(12)] == expected
    # point 7 = seed 2 (7 // 4 = 1), fairshare 2000 ((7 // 2) % 2 = 1), zip row 1 (7 % 2 = 1)
    tree = spec.point_tree(7).plain()
    assert tree == {"seed": 2,
                    "workload": {"generator": "poisson_exponential",
                                 "params": {"n_jobs": 20, "arrival_rate": 0.1, "service_rate": 0.01}},
                    "cluster": {"nodes": [{"count": 3, "cores": 4}]},
                    "policy": {"priority": {"weights": {"age": 1000, "fairshare": 2000}}}}
    # the base is untouched, and a replaced value keeps the line it was written on in sweep: (line 12)
    assert spec.base.plain()["seed"] == 1
    assert spec.point_tree(7).mapping()["seed"].line == 12


def test_grid_only_and_zip_only_counts(tmp_path: Path) -> None:
    grid_only = BASE + "sweep:\n  grid:\n    seed: [1, 2, 3, 4]\n    cluster.nodes.0.cores: [1, 2, 8]\n"
    assert len(read_sweep(write(tmp_path, grid_only)).points) == 4 * 3
    zip_only = BASE + "sweep:\n  zip:\n    seed: [1, 2, 3, 4]\n    cluster.nodes.0.cores: [1, 2, 8, 16]\n"
    spec = read_sweep(write(tmp_path, zip_only))
    assert [tuple(spec.point_values(k).values()) for k in range(len(spec.points))] == \
        [(1, 1), (2, 2), (3, 8), (4, 16)]


@pytest.mark.parametrize(("sweep", "line", "message"), [
    ("  grid:\n    workload.params.n_job: [1, 2]\n", 12,
     "sweep.grid.workload.params.n_job: unknown key path: no key 'n_job' in workload.params "
     "(the base config must have the value a sweep varies)"),
    ("  grid:\n    cluster.nodes.1.count: [1, 2]\n", 12,
     "sweep.grid.cluster.nodes.1.count: unknown key path: cluster.nodes is a list of 1: '1' is not an "
     "index of it"),
    ("  grid:\n    seed.x: [1]\n", 12,
     "sweep.grid.seed.x: unknown key path: seed is int 1, which has no key 'x'"),
    ("  zip:\n    seed: [1, 2, 3]\n    cluster.nodes.0.count: [1, 2]\n", 13,
     "sweep.zip.cluster.nodes.0.count: zip lists must have equal lengths: 2 values here, 3 in sweep.zip.seed"),
    ("  grid:\n    seed: []\n", 12, "sweep.grid.seed: expected a non-empty list of values, got a list"),
    ("  grid:\n    seed: [1]\n  zip:\n    seed: [2]\n", 14,
     "sweep.zip.seed: this key path is varied by the grid too: give it in one of them"),
    ("  grid:\n    seed: [1]\n  runner: simulat\n", 13,
     "sweep.runner: unknown sweep runner 'simulat' (choose from "),
    ("  grids:\n    seed: [1]\n", 11, "sweep.grids: unknown key: did you mean 'grid'?"),
])
def test_a_bad_sweep_key_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                sweep: str, line: int, message: str) -> None:
    path = write(tmp_path, BASE + "sweep:\n" + sweep)
    assert main(["sweep", str(path), "-o", str(tmp_path / "out")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"djsb: error: {path}:{line}: {message}")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("slurm", "line", "message"), [
    ("    options: {partiton: shared}\n", 14, "sweep.slurm.options.partiton: unknown"),
    ("    memory: lots\n", 14, "sweep.slurm.memory: "),
    ("    ssh: {port: 22}\n", 14, "sweep.slurm.ssh: missing key 'host'"),
    ("    max_parallel: 0\n", 14, "sweep.slurm.max_parallel: must be >= 1, got 0"),
])
def test_a_bad_slurm_setting_is_one_line_before_anything_is_made(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], slurm: str, line: int, message: str) -> None:
    path = write(tmp_path, BASE + "sweep:\n  grid:\n    seed: [1]\n  slurm:\n" + slurm)
    assert main(["sweep", str(path), "-o", str(tmp_path / "out"), "--executor", "slurm"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"djsb: error: {path}:{line}: {message}"), lines
    assert not (tmp_path / "out").exists()


def test_a_bad_swept_value_is_reported_at_its_line_in_sweep(tmp_path: Path) -> None:
    # seed must be >= 0 (djsb simulate's rule); -4 is written on line 12, in the sweep section
    write(tmp_path, BASE + "sweep:\n  grid:\n    seed: [1, -4]\n")
    done = djsb(tmp_path, "sweep", "sweep.yaml", "-o", "out", "--jobs", "1")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == "djsb: error: sweep.yaml:12: sweep.grid.seed[1]: must be >= 0, got -4"


# -- running, sweep.csv, resume ----------------------------------------------------------------------

def files_stat(directory: Path) -> dict[str, tuple[int, int]]:
    """Each file's (inode, mtime in ns): a rewritten file changes at least one of them."""
    return {str(p.relative_to(directory)): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in sorted(directory.rglob("*")) if p.is_file()}


def test_sweep_csv_equals_each_points_metrics_and_simulate_of_the_same_values(tmp_path: Path) -> None:
    write(tmp_path, SMALL)
    done = djsb(tmp_path, "sweep", "sweep.yaml", "-o", "out", "--jobs", "2")
    assert done.returncode == 0, done.stderr
    # 2 seeds x 2 zip rows = 4 points: (seed, n_jobs, node count) = (1,6,1) (1,9,2) (2,6,1) (2,9,2)
    table = pd.read_csv(tmp_path / "out" / "sweep.csv")
    assert table["point"].tolist() == [0, 1, 2, 3]
    assert table[["seed", "workload.params.n_jobs", "cluster.nodes.0.count"]].values.tolist() == \
        [[1, 6, 1], [1, 9, 2], [2, 6, 1], [2, 9, 2]]
    for row in table.to_dict("records"):
        metrics = json.loads((tmp_path / "out" / "points" / str(row["point"]) / "metrics.json").read_text())
        scalars = scalar_metrics(metrics)
        renamed = {("metrics.seed" if name == "seed" else name): value for name, value in scalars.items()}
        for name, value in renamed.items():
            assert row[name] == (pytest.approx(value) if isinstance(value, float) else value), name
        assert set(row) == {"point", "seed", "workload.params.n_jobs", "cluster.nodes.0.count", *renamed}
        # independent facts: every generated job ran, on 4 cores per node
        assert row["jobs"] == row["workload.params.n_jobs"]
        assert row["total_cores"] == 4 * row["cluster.nodes.0.count"]
    # oracle: point 2 is djsb simulate of the base with seed 2, 6 jobs and 1 node written by hand
    by_hand = BASE.replace("seed: 1", "seed: 2").replace("n_jobs: 12", "n_jobs: 6").replace("count: 2", "count: 1")
    write(tmp_path, by_hand, "point2.yaml")
    assert djsb(tmp_path, "simulate", "point2.yaml", "-o", "simulated").returncode == 0
    simulated = json.loads((tmp_path / "simulated" / "metrics.json").read_text())
    assert json.loads((tmp_path / "out" / "points" / "2" / "metrics.json").read_text()) == simulated
    # the same files, and the name of the point's one writer
    # (the sweep's marker is at its top: a point is not an output of its own)
    assert sorted(p.name for p in (tmp_path / "out" / "points" / "2").iterdir()) == \
        sorted([*(p.name for p in (tmp_path / "simulated").iterdir() if p.name != MARKER), "writer.txt"])


def test_a_rerun_and_resume_never_rewrite_a_finished_point(tmp_path: Path) -> None:
    write(tmp_path, SMALL)
    assert djsb(tmp_path, "sweep", "sweep.yaml", "-o", "out", "--jobs", "2").returncode == 0
    points = tmp_path / "out" / "points"
    # make point 2 unfinished, as a stopped sweep leaves it: no points/2, a scratch directory instead
    (points / "2").rename(points / ".2.partial-stale")
    before = {k: files_stat(points / str(k)) for k in (0, 1, 3)}
    time.sleep(0.05)
    done = djsb(tmp_path, "sweep", "sweep.yaml", "-o", "out", "--resume", "--jobs", "2")
    assert done.returncode == 0, done.stderr
    assert "4 point(s), 3 finished before, 1 to run" in done.stderr
    assert {k: files_stat(points / str(k)) for k in (0, 1, 3)} == before
    assert (points / "2" / "metrics.json").exists() and not list(points.glob(".*partial*"))
    assert len(pd.read_csv(tmp_path / "out" / "sweep.csv")) == 4
    # a plain rerun into the same directory is refused, touching nothing; --resume runs nothing at all
    refused = djsb(tmp_path, "sweep", "sweep.yaml", "-o", "out")
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1
    assert refused.stderr.startswith("djsb: error: -o: out already exists and holds a complete djsb sweep output "
                                     "(started ")
    assert refused.stderr.endswith("): continue it with djsb sweep sweep.yaml -o out --resume, replace it with "
                                   "--force, or give another directory\n")
    again = djsb(tmp_path, "sweep", "sweep.yaml", "-o", "out", "--resume")
    assert again.returncode == 0 and "4 finished before, 0 to run" in again.stderr
    assert {k: files_stat(points / str(k)) for k in (0, 1, 3)} == before


def test_resume_without_o_continues_the_latest_sweep_of_the_config(tmp_path: Path) -> None:
    write(tmp_path, BASE + "sweep:\n  grid:\n    seed: [1]\n")
    first = djsb(tmp_path, "sweep", "sweep.yaml", "--jobs", "1")
    assert first.returncode == 0, first.stderr
    [made] = list((tmp_path / "runs").iterdir())
    resumed = djsb(tmp_path, "sweep", "sweep.yaml", "--resume")
    assert resumed.returncode == 0 and f"sweep runs/{made.name}: 1 point(s), 1 finished before" in resumed.stderr


def test_another_sweep_into_the_same_directory_is_refused(tmp_path: Path) -> None:
    write(tmp_path, BASE + "sweep:\n  grid:\n    seed: [1]\n")
    assert djsb(tmp_path, "sweep", "sweep.yaml", "-o", "out", "--jobs", "1").returncode == 0
    write(tmp_path, BASE + "sweep:\n  grid:\n    seed: [1, 2]\n")
    done = djsb(tmp_path, "sweep", "sweep.yaml", "-o", "out", "--resume")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "djsb: error: sweep.yaml: sweep: out holds another sweep (other points, runner or base config); "
        "give another output directory"]


def test_point_k_runs_that_point_only(tmp_path: Path) -> None:
    write(tmp_path, SMALL)
    assert djsb(tmp_path, "sweep", "sweep.yaml", "-o", "out", "--point", "1").returncode == 0
    assert sorted(p.name for p in (tmp_path / "out" / "points").iterdir()) == ["1"]
    # point 1 = seed 1, zip row 1: 9 jobs
    assert json.loads((tmp_path / "out" / "points" / "1" / "metrics.json").read_text())["jobs"] == 9
    done = djsb(tmp_path, "sweep", "sweep.yaml", "-o", "out", "--point", "4")
    assert done.returncode == 2 and "no point 4: the sweep has points 0..3" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("stop", "status"), [
    (lambda pid: os.kill(pid, signal.SIGTERM), 143),  # kill PID: the sweep alone gets it
    (lambda pid: os.killpg(pid, signal.SIGINT), 130),  # Ctrl-C: the whole process group gets it
])
def test_a_stop_signal_ends_the_workers_and_keeps_finished_points(
        tmp_path: Path, stop: Callable[[int], None], status: int) -> None:
    write(tmp_path, BASE + "sweep:\n  grid:\n    seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]\n")
    sweep = subprocess.Popen([sys.executable, "-m", "djsb.cli", "sweep", "sweep.yaml", "-o", "out", "--jobs", "2"],
                             cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    points = tmp_path / "out" / "points"
    wait_until(lambda: (points / "0").exists() or sweep.poll() is not None, 120, "the sweep's first point")
    assert sweep.poll() is None, "the sweep ended before its first point was done"
    stop(sweep.pid)
    _, err = sweep.communicate(timeout=60)
    assert sweep.returncode == status, err
    assert "Traceback" not in err
    finished = sorted(int(p.name) for p in points.iterdir() if p.name.isdigit())
    assert 0 in finished and len(finished) < 12
    assert not list(points.glob(".*partial*"))  # the point being run when stopped left nothing
    for k in finished:
        assert (points / str(k) / "report.html").exists()
    assert pd.read_csv(tmp_path / "out" / "sweep.csv")["point"].tolist() == finished
    # no worker outlived the sweep: none of its children is left
    children = subprocess.run(["pgrep", "-P", str(sweep.pid)], capture_output=True, text=True)
    assert children.stdout.strip() == ""
    resumed = djsb(tmp_path, "sweep", "sweep.yaml", "-o", "out", "--resume", "--jobs", "2")
    assert resumed.returncode == 0
    assert f"{len(finished)} finished before, {12 - len(finished)} to run" in resumed.stderr


def test_the_example_sweep_config_reads() -> None:
    spec = read_sweep(Path(__file__).resolve().parents[1] / "configs" / "sweep-seeds.yaml")
    # 8 seeds x 2 arrival rates; load = rate x 100 s mean service / 16 CPUs: 0.08 -> 0.5, 0.144 -> 0.9
    assert len(spec.points) == 8 * 2
    assert spec.point_values(1) == {"seed": 1, "workload.params.arrival_rate": 0.144}
    assert spec.point_values(15) == {"seed": 8, "workload.params.arrival_rate": 0.144}


@register_mapping_runner("test-product")
def product_point(config: dict[str, Any], out_dir: Path) -> dict[str, float]:
    """A point runner of the shared interface's shape: plain mapping in, metrics out (no files);
    it fails when a is 0."""
    if config["a"] == 0:
        raise RuntimeError("a is 0")
    return {"product": config["a"] * config["b"]["c"]}


def test_a_registered_run_point_function_is_a_runner(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "a: 1\nb: {c: 1}\nsweep:\n  runner: test-product\n  grid:\n    a: [2, 3]\n"
                           "    b.c: [5, 7]\n")
    assert main(["sweep", "--json", str(path), "-o", str(tmp_path / "out"), "--jobs", "1"]) == 0
    ended = json.loads(capsys.readouterr().out)  # --json: one object, the whole of stdout
    assert ended["results"] == str(tmp_path / "out" / "sweep.csv")
    assert ended["headline"]["finished"] == ended["headline"]["run_now"] == {"value": 2 * 2, "unit": "points"}
    assert ended["headline"]["failed"]["value"] == 0
    table = pd.read_csv(tmp_path / "out" / "sweep.csv")
    # a x b.c at (2,5) (2,7) (3,5) (3,7)
    assert table.values.tolist() == [[0, 2, 5, 10], [1, 2, 7, 14], [2, 3, 5, 15], [3, 3, 7, 21]]
    assert list(table.columns) == ["point", "a", "b.c", "product"]
    # the runner wrote no metrics.json: the sweep wrote what it returned
    assert json.loads((tmp_path / "out" / "points" / "3" / "metrics.json").read_text()) == {"product": 21}


def test_a_failed_point_fails_alone_and_the_sweep_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "a: 1\nb: {c: 1}\nsweep:\n  runner: test-product\n  grid:\n    a: [0, 2]\n")
    assert main(["sweep", str(path), "-o", str(tmp_path / "out"), "--jobs", "2"]) == 1
    assert "djsb: point 0 failed: RuntimeError: a is 0" in capsys.readouterr().err.splitlines()
    points = tmp_path / "out" / "points"
    assert sorted(p.name for p in points.iterdir()) == ["1"]  # no scratch of point 0 left
    assert pd.read_csv(tmp_path / "out" / "sweep.csv").values.tolist() == [[1, 2, 2]]  # 2 x b.c 1


def test_output_plots_false_skips_the_figures_only(tmp_path: Path) -> None:
    write(tmp_path, BASE + "output: {plots: true}\nsweep:\n  grid:\n    output.plots: [true, false]\n")
    assert djsb(tmp_path, "sweep", "sweep.yaml", "-o", "out", "--jobs", "2").returncode == 0
    with_plots, without = (tmp_path / "out" / "points" / "0"), (tmp_path / "out" / "points" / "1")
    assert {p.name for p in with_plots.iterdir()} - {p.name for p in without.iterdir()} == \
        {"wait_ecdf.png", "queue_utilisation.png"}
    # the same simulation either way
    assert (with_plots / "metrics.json").read_text() == (without / "metrics.json").read_text()
    assert (with_plots / "jobs.csv").read_text() == (without / "jobs.csv").read_text()
    assert "No figures were drawn" in (without / "report.html").read_text()


# -- one writer per point ------------------------------------------------------------------------------

LOCK_HOLDER = """\
import sys
from pathlib import Path
from djsb.filelock import FileLock
lock = FileLock.acquire(Path(sys.argv[1]), "job 202_10 (212) on n1, pid 4242")
print("locked", flush=True)
sys.stdin.read()
"""


def hold_lock(path: Path) -> subprocess.Popen[str]:
    """A process holding the flock on ``path`` until its stdin closes or it is killed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
    return holder


def test_a_point_being_written_is_left_to_its_writer_and_runs_once_it_is_gone(tmp_path: Path) -> None:
    from djsb.sweep.point import run_point
    from djsb.sweep.sweep_dir import PointBusy

    path = write(tmp_path, SMALL)
    spec = read_sweep(path)
    out = tmp_path / "out"
    (out / "points").mkdir(parents=True)
    theirs = out / "points" / ".1.partial-theirs"  # the first writer's scratch, being written
    theirs.mkdir()
    holder = hold_lock(out / ".locks" / "1")
    try:
        with pytest.raises(PointBusy) as busy:
            run_point(spec, out, 1)
        assert str(busy.value) == "point 1 is being written by job 202_10 (212) on n1, pid 4242"
        assert theirs.is_dir() and not (out / "points" / "1").exists()  # its scratch untouched
        # an array task of another array refuses the same way, exits 0 and says so
        task = djsb(tmp_path, "sweep", "sweep.yaml", "-o", "out", "--point", "1")
        assert task.returncode == 0
        assert task.stderr.strip().splitlines() == [
            "djsb: point 1 is being written by job 202_10 (212) on n1, pid 4242; this task leaves it to "
            "that writer"]
    finally:
        holder.kill()  # SIGKILL: the kernel drops its flock
        holder.wait()
    written = run_point(spec, out, 1)
    assert written == out / "points" / "1" and not theirs.exists()  # the dead writer's scratch cleared
    # point 1 = seed 1, zip row 1: 9 jobs, and the point names this process as its one writer
    assert json.loads((written / "metrics.json").read_text())["jobs"] == 9
    assert (written / "writer.txt").read_text().endswith(f", pid {os.getpid()}\n")


def test_the_writer_names_its_slurm_array_task(monkeypatch: pytest.MonkeyPatch) -> None:
    from djsb.sweep.sweep_dir import writer_name

    for name in ("SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_JOB_ID"):
        monkeypatch.delenv(name, raising=False)
    assert writer_name().startswith("no Slurm job on ")
    monkeypatch.setenv("SLURM_JOB_ID", "212")
    assert writer_name().startswith("job 212 on ")
    monkeypatch.setenv("SLURM_ARRAY_JOB_ID", "202")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "10")
    assert writer_name().startswith("job 202_10 (212) on ")
    assert writer_name().endswith(f", pid {os.getpid()}")
