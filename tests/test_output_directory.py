"""No command writes into a directory that already holds files unless told, and --force never mixes
two commands' files (djsb.outdir), through the real command line."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from djsb.filelock import FileLock

REPO = Path(__file__).resolve().parent.parent
CONFIGS = REPO / "configs"
SIMULATE = (CONFIGS / "sweep-seeds.yaml").read_text().split("sweep:")[0].replace("n_jobs: 500", "n_jobs: 50")
"""A djsb simulate config: 50 generated jobs on 4 nodes of 4 cores (configs/sweep-seeds.yaml's base)."""


def djsb(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "djsb", *argv, "-q"], cwd=cwd, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def contents(directory: Path) -> dict[str, str]:
    """Every file under ``directory`` (relative path -> sha256 of its bytes)."""
    return {str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(directory.rglob("*")) if path.is_file()}


def refused(done: subprocess.CompletedProcess[str], line: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [line]


@pytest.fixture
def measured(tmp_path: Path) -> Path:
    """A directory holding a measured run's results (configs/simulated-quick.yaml, 14 cells)."""
    done = djsb(tmp_path, "run", str(CONFIGS / "simulated-quick.yaml"), "-o", "measured")
    assert done.returncode == 0, done.stderr
    return tmp_path / "measured"


def test_simulate_into_a_measured_run_is_refused_and_it_still_reports(tmp_path: Path, measured: Path) -> None:
    (tmp_path / "simulate.yaml").write_text(SIMULATE)
    before = contents(measured)
    refused(djsb(tmp_path, "simulate", "simulate.yaml", "-o", "measured"),
            "djsb: error: -o: measured already exists and is not empty: replace it with --force, or give "
            "another directory")
    assert contents(measured) == before
    assert djsb(tmp_path, "report", "measured").returncode == 0


def test_force_replaces_the_old_files_without_mixing_them(tmp_path: Path, measured: Path) -> None:
    (tmp_path / "simulate.yaml").write_text(SIMULATE)
    assert djsb(tmp_path, "simulate", "simulate.yaml", "-o", "alone").returncode == 0
    done = djsb(tmp_path, "simulate", "simulate.yaml", "-o", "measured", "--force")
    assert done.returncode == 0, done.stderr
    # exactly what the same replay writes into a new directory: no file of the run is left
    assert sorted(contents(measured)) == sorted(contents(tmp_path / "alone"))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # nothing left aside
    refused(djsb(tmp_path, "report", "measured"),
            "djsb: error: RUN_DIR: measured is not a DJSB run directory (no config.yaml)")


def test_a_force_that_fails_restores_the_old_directory(tmp_path: Path, measured: Path) -> None:
    path = tmp_path / "simulate.yaml"
    path.write_text(SIMULATE.replace("n_jobs: 50,", "n_jobs: -1,"))
    before = contents(measured)
    refused(djsb(tmp_path, "simulate", "simulate.yaml", "-o", "measured", "--force"),
            f"djsb: error: {path.name}:9: workload.params.n_jobs: must be an integer >= 0, got -1")
    assert contents(measured) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_force_leaves_a_directory_djsb_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "simulate.yaml").write_text(SIMULATE)
    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis" / "chapter1.tex").write_text("\\chapter{One}\n")
    done = djsb(tmp_path, "simulate", "simulate.yaml", "-o", "thesis", "--force")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith("djsb: error: -o: thesis holds no DJSB output (none of calibration.json, ")
    assert contents(tmp_path / "thesis") == {"chapter1.tex": hashlib.sha256(b"\\chapter{One}\n").hexdigest()}


def test_force_leaves_a_directory_a_live_run_holds(tmp_path: Path) -> None:
    (tmp_path / "simulate.yaml").write_text(SIMULATE)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "config.yaml").write_text("general: {}\n")
    lock = FileLock.acquire(busy / "run.lock", "4242")  # this process is the live run
    try:
        refused(djsb(tmp_path, "simulate", "simulate.yaml", "-o", "busy", "--force"),
                "djsb: error: -o: busy is in use by a live djsb process (4242); wait for it to end, or stop it")
    finally:
        lock.release()
    assert sorted(p.name for p in busy.iterdir()) == ["config.yaml", "run.lock"]


RESULTS = {"jobs.csv": "job_id,wait\n1,0\n", "report.html": "<p>measured</p>\n"}
COMMANDS = {
    "run": (["run", str(CONFIGS / "simulated-quick.yaml")], "djsb run --resume out"),
    "simulate": (["simulate", "simulate.yaml"], None),
    "replay-stats": (["replay-stats", "simulate.yaml"], None),
    "pool": (["pool", str(CONFIGS / "pool-baseline.yaml")],
             f"djsb pool {CONFIGS / 'pool-baseline.yaml'} -o out --resume"),
    "sweep": (["sweep", str(CONFIGS / "sweep-seeds.yaml")],
              f"djsb sweep {CONFIGS / 'sweep-seeds.yaml'} -o out --resume"),
    "calibrate": (["calibrate", "calibration.yaml"], "djsb calibrate --resume out"),
    "reproduce": (["reproduce", "002"], None),
    "compare": (["compare", "run-a", "run-b"], None),
    "history": (["history", str(REPO / "tests" / "fixtures" / "sacct" / "minicluster-22.05-allocations.txt"),
                 "--slurm-conf", str(REPO / "tests" / "fixtures" / "sacct" / "minicluster-slurm.conf")], None),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_that_writes_a_directory_refuses_one_with_files(tmp_path: Path, command: str) -> None:
    (tmp_path / "simulate.yaml").write_text(SIMULATE)
    out = tmp_path / "out"
    out.mkdir()
    for name, text in RESULTS.items():
        (out / name).write_text(text)
    argv, resume = COMMANDS[command]
    how = f"continue it with {resume}, " if resume else ""
    refused(djsb(tmp_path, *argv, "-o", "out"),
            f"djsb: error: -o: out already exists and is not empty: {how}replace it with --force, or give "
            "another directory")
    assert {path.name: path.read_text() for path in out.iterdir()} == RESULTS


def test_report_on_a_replay_s_files_is_one_line(tmp_path: Path) -> None:
    """A directory where a replay's jobs.csv sits beside a run's config.yaml (as the old simulate left
    a run it overwrote) is named as not a run's, not a KeyError traceback."""
    (tmp_path / "simulate.yaml").write_text(SIMULATE)
    assert djsb(tmp_path, "simulate", "simulate.yaml", "-o", "mixed").returncode == 0
    (tmp_path / "mixed" / "config.yaml").write_text((CONFIGS / "simulated-quick.yaml").read_text())
    refused(djsb(tmp_path, "report", "mixed"),
            "djsb: error: RUN_DIR: mixed/jobs.csv is not a run's (no stage, scenario, n_a, sample, state columns: "
            "a model replay's?)")
