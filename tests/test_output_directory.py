"""Nothing a user wrote is lost and no two commands' files mix (djsb.outdir), through the real
command line: every output directory carries a marker of what wrote it, ``--force`` replaces and
``--resume`` continues only a directory of its own command's kind, one writer at a time, results
renamed into place whole, and SIGINT/SIGTERM (real signals) leave either the old directory as it
was or one marked unfinished."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import wait_until

from djsb.errors import Signalled
from djsb.filelock import FileLock
from djsb.outdir import MARKER, mark_finished, new_marker, output_directory, write_marker

REPO = Path(__file__).resolve().parent.parent
CONFIGS = REPO / "configs"
SIMULATE = (CONFIGS / "sweep-seeds.yaml").read_text().split("sweep:")[0].replace("n_jobs: 500", "n_jobs: 50")
"""A djsb simulate config: 50 generated jobs on 4 nodes of 4 cores (configs/sweep-seeds.yaml's base)."""
LONG_SIMULATE = SIMULATE.replace("n_jobs: 50", "n_jobs: 300000")
"""The same with 300,000 jobs: many seconds of replay, long enough to be interrupted while it runs."""


def djsb(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "djsb", *argv, "-q"], cwd=cwd, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def start(cwd: Path, *argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "djsb", *argv, "-q"], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)


def contents(directory: Path) -> dict[str, str]:
    """Every file under ``directory`` (relative path -> sha256 of its bytes)."""
    return {str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(directory.rglob("*")) if path.is_file()}


def hidden(directory: Path) -> list[str]:
    """The hidden entries of ``directory``: a lock, scratch or aside a command left behind."""
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def scratches(directory: Path, out: str) -> list[Path]:
    """The scratch directories a command writing ``directory/out`` has beside it."""
    return list(directory.glob(f".{out}.djsb-new-*"))


def refused(done: subprocess.CompletedProcess[str], line: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [line]


def refused_starting(done: subprocess.CompletedProcess[str], start: str, end: str) -> None:
    """Exit 2 with one line from ``start`` to ``end`` (a marker's times between them)."""
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(start) and done.stderr.rstrip("\n").endswith(end), done.stderr


@pytest.fixture
def measured(tmp_path: Path) -> Path:
    """A directory holding a measured run's results (configs/simulated-quick.yaml, 14 cells)."""
    done = djsb(tmp_path, "run", str(CONFIGS / "simulated-quick.yaml"), "-o", "measured")
    assert done.returncode == 0, done.stderr
    return tmp_path / "measured"


@pytest.fixture
def simulated(tmp_path: Path) -> Path:
    """A directory djsb simulate wrote (SIMULATE's 50 jobs), and simulate.yaml beside it."""
    (tmp_path / "simulate.yaml").write_text(SIMULATE)
    assert djsb(tmp_path, "simulate", "simulate.yaml", "-o", "simulated").returncode == 0
    return tmp_path / "simulated"


def test_every_output_says_what_wrote_it(tmp_path: Path, simulated: Path) -> None:
    marker = json.loads((simulated / MARKER).read_text())
    assert marker["kind"] == "simulate"
    assert marker["command"] == "djsb simulate simulate.yaml -o simulated -q"  # as typed
    assert marker["version"] == subprocess.run([sys.executable, "-m", "djsb", "--version"], capture_output=True,
                                               text=True, timeout=60).stdout.split()[-1]
    assert marker["started"] <= marker["finished"]  # ISO 8601 times of one zone sort as they happened


def test_simulate_into_a_measured_run_is_refused_and_it_still_reports(tmp_path: Path, measured: Path) -> None:
    (tmp_path / "simulate.yaml").write_text(SIMULATE)
    before = contents(measured)
    for force in ((), ("--force",)):
        refused_starting(djsb(tmp_path, "simulate", "simulate.yaml", "-o", "measured", *force),
                         "djsb: error: -o: measured already exists and holds a complete djsb run output (started ",
                         "--force replaces only a djsb simulate output" + (
                             ": remove it yourself or give another directory" if force else ")"))
    assert contents(measured) == before
    assert djsb(tmp_path, "report", "measured").returncode == 0


def test_force_replaces_its_own_kind_whole(tmp_path: Path, simulated: Path) -> None:
    (tmp_path / "other.yaml").write_text(SIMULATE.replace("seed: 1", "seed: 2"))
    assert djsb(tmp_path, "simulate", "other.yaml", "-o", "alone").returncode == 0
    done = djsb(tmp_path, "simulate", "other.yaml", "-o", "simulated", "--force")
    assert done.returncode == 0, done.stderr
    replaced, alone = contents(simulated), contents(tmp_path / "alone")
    assert sorted(replaced) == sorted(alone)
    assert replaced["jobs.csv"] == alone["jobs.csv"]  # seed 2's jobs, none of seed 1's
    assert hidden(tmp_path) == []  # no lock, scratch or old directory left beside it


def test_a_force_that_fails_leaves_the_old_directory_as_it_was(tmp_path: Path, simulated: Path) -> None:
    path = tmp_path / "simulate.yaml"
    path.write_text(SIMULATE.replace("n_jobs: 50,", "n_jobs: -1,"))
    before = contents(simulated)
    refused(djsb(tmp_path, "simulate", "simulate.yaml", "-o", "simulated", "--force"),
            f"djsb: error: {path.name}:9: workload.params.n_jobs: must be an integer >= 0, got -1")
    assert contents(simulated) == before
    assert hidden(tmp_path) == []


def test_force_deletes_nothing_djsb_did_not_write(tmp_path: Path) -> None:
    """A file named as a DJSB result (report.html one level down) does not make a directory DJSB's:
    the reported case, ``x/website/report.html`` and ``x/id``, and a home directory."""
    (tmp_path / "simulate.yaml").write_text(SIMULATE)
    (tmp_path / "x" / "website").mkdir(parents=True)
    (tmp_path / "x" / "website" / "report.html").write_text("hi\n")
    (tmp_path / "x" / "id").write_text("key\n")
    home = tmp_path / "home"
    for name, text in {".ssh/id_ed25519": "secret\n", "thesis/jobs.csv": "mine\n",
                       "website/report.html": "<p>me</p>\n", "config.yaml": "me: 1\n"}.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text)
    before = {"x": contents(tmp_path / "x"), "home": contents(home)}
    refused(djsb(tmp_path, "simulate", "simulate.yaml", "-o", "x", "--force"),
            "djsb: error: -o: x already exists and holds files no DJSB command marked as its output (id, "
            "website/): --force replaces only a djsb simulate output: remove it yourself or give another "
            "directory")
    refused(djsb(tmp_path, "run", str(CONFIGS / "simulated-quick.yaml"), "-o", "home", "--force"),
            "djsb: error: -o: home already exists and holds files no DJSB command marked as its output (.ssh/, "
            "config.yaml, thesis/, website/): --force replaces only a djsb run output: remove it yourself or "
            "give another directory")
    assert {"x": contents(tmp_path / "x"), "home": contents(home)} == before
    assert hidden(tmp_path) == []


def test_resume_continues_only_its_own_kind(tmp_path: Path) -> None:
    """``sweep --resume -o d`` on a directory holding no sweep adopted it, and a later --force then
    deleted the user's file; both are refused now."""
    sweep = str(CONFIGS / "sweep-seeds.yaml")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "hello.txt").write_text("hello\n")
    refused(djsb(tmp_path, "sweep", sweep, "--resume", "-o", "d"),
            "djsb: error: --resume: d holds files no DJSB command marked as its output (hello.txt): only a djsb "
            "sweep output can be continued")
    refused(djsb(tmp_path, "sweep", sweep, "-o", "d", "--force"),
            "djsb: error: -o: d already exists and holds files no DJSB command marked as its output "
            "(hello.txt): --force replaces only a djsb sweep output: remove it yourself or give another directory")
    refused(djsb(tmp_path, "run", "--resume", "d"), "djsb: error: RUN_DIR: d is not a DJSB run directory (no "
            "config.yaml)")
    (tmp_path / "d" / "config.yaml").write_text((CONFIGS / "simulated-quick.yaml").read_text())
    refused(djsb(tmp_path, "run", "--resume", "d"),
            "djsb: error: --resume: d holds files no DJSB command marked as its output (config.yaml, hello.txt, "
            "run.lock): only a djsb run output can be continued")
    (tmp_path / "d" / "config.yaml").unlink()
    (tmp_path / "d" / "run.lock").unlink()
    assert contents(tmp_path / "d") == {"hello.txt": hashlib.sha256(b"hello\n").hexdigest()}


def test_force_leaves_a_directory_a_live_run_holds(tmp_path: Path, measured: Path) -> None:
    lock = FileLock.acquire(measured / "run.lock", "4242")  # this process is the live run
    before = contents(measured)
    try:
        refused(djsb(tmp_path, "run", str(CONFIGS / "simulated-quick.yaml"), "-o", "measured", "--force"),
                "djsb: error: -o: measured is in use by a live djsb process (4242); wait for it to end, or stop "
                "it")
    finally:
        lock.release()
    assert contents(measured) == before


def test_a_second_writer_fails_at_once_and_the_first_completes(tmp_path: Path) -> None:
    (tmp_path / "long.yaml").write_text(LONG_SIMULATE)
    (tmp_path / "simulate.yaml").write_text(SIMULATE)
    first = start(tmp_path, "simulate", "long.yaml", "-o", "out")
    try:
        wait_until(lambda: (tmp_path / ".out.djsb-lock").exists(), 120, "the first command's lock")
        second = djsb(tmp_path, "simulate", "simulate.yaml", "-o", "out")
        assert first.poll() is None  # it failed while the first still ran
        refused(second, f"djsb: error: -o: out is being written by another djsb command (pid {first.pid}: djsb "
                "simulate long.yaml -o out -q); wait for it to end, or give another directory")
    finally:
        _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["jobs"] == 300000  # the first command's result, whole
    assert json.loads((tmp_path / "out" / MARKER).read_text())["command"] == "djsb simulate long.yaml -o out -q"
    assert hidden(tmp_path) == []


def test_force_through_a_symlink_replaces_its_target_and_keeps_the_link(tmp_path: Path, simulated: Path) -> None:
    (tmp_path / "link").symlink_to("simulated")
    (tmp_path / "other.yaml").write_text(SIMULATE.replace("seed: 1", "seed: 2"))
    done = djsb(tmp_path, "simulate", "other.yaml", "-o", "link", "--force")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "link").is_symlink() and os.readlink(tmp_path / "link") == "simulated"
    assert json.loads((simulated / MARKER).read_text())["command"].startswith("djsb simulate other.yaml")
    assert hidden(tmp_path) == []


@pytest.mark.parametrize("command", [["simulate", "simulate.yaml"], ["run", str(CONFIGS / "simulated-quick.yaml")],
                                     ["history", "dump.txt", "--slurm-conf", "slurm.conf"]])
def test_an_empty_output_is_an_error(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "simulate.yaml").write_text(SIMULATE)
    done = djsb(tmp_path, *command, "-o", "")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].endswith("argument -o/--output: an empty path names no directory")
    assert list(tmp_path.iterdir()) == [tmp_path / "simulate.yaml"]


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_it_writes_leaves_nothing_that_looks_complete(tmp_path: Path, simulated: Path,
                                                                    sig: signal.Signals, status: int) -> None:
    """Into a new directory, nothing; over an old one with --force, the old one as it was; no
    traceback, one line saying so."""
    (tmp_path / "long.yaml").write_text(LONG_SIMULATE)
    before = contents(simulated)
    for out, force in (("new", ()), ("simulated", ("--force",))):
        running = start(tmp_path, "simulate", "long.yaml", "-o", out, *force)
        wait_until(functools.partial(scratches, tmp_path, out), 120, "the command's scratch directory")
        running.send_signal(sig)
        _, err = running.communicate(timeout=120)
        assert running.returncode == status, err
        assert err.splitlines() == [f"djsb: interrupted by {sig.name}: nothing written; {out} is as it was"]
        assert hidden(tmp_path) == []
    assert not (tmp_path / "new").exists()
    assert contents(simulated) == before


def test_a_killed_command_s_scratch_is_removed_by_the_next(tmp_path: Path) -> None:
    """SIGKILL cannot be handled: the scratch stays, hidden, and the next command on the directory
    removes it, saying so."""
    (tmp_path / "long.yaml").write_text(LONG_SIMULATE)
    (tmp_path / "simulate.yaml").write_text(SIMULATE)
    running = start(tmp_path, "simulate", "long.yaml", "-o", "out")
    scratch = wait_until(functools.partial(scratches, tmp_path, "out"), 120, "the command's scratch directory")
    running.kill()
    running.communicate(timeout=60)
    done = subprocess.run([sys.executable, "-m", "djsb", "simulate", "simulate.yaml", "-o", "out"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert f"djsb: removed {scratch[0].name}, left by a djsb command that was killed" in done.stderr.splitlines()
    assert hidden(tmp_path) == []
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["jobs"] == 50


@pytest.mark.parametrize("inside", [[], [f"{MARKER}.partial"]], ids=["empty", "partial-marker"])
def test_a_scratch_killed_before_its_marker_is_removed_and_one_with_files_is_kept(
        tmp_path: Path, inside: list[str]) -> None:
    """A command killed between making its scratch and writing the marker leaves a directory with
    nothing (or half a marker) in it: removed by the next command. A directory of that name holding
    anything else is not known to be DJSB's and stays."""
    (tmp_path / "simulate.yaml").write_text(SIMULATE)
    unmarked = tmp_path / ".out.djsb-new-0badf00d"
    unmarked.mkdir()
    for name in inside:
        (unmarked / name).write_text('{"kind": "simu')
    foreign = tmp_path / ".out.djsb-new-feedbeef"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine\n")
    done = subprocess.run([sys.executable, "-m", "djsb", "simulate", "simulate.yaml", "-o", "out"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert f"djsb: removed {unmarked.name}, left by a djsb command that was killed" in done.stderr.splitlines()
    assert hidden(tmp_path) == [foreign.name]
    assert (foreign / "notes.txt").read_text() == "mine\n"


def test_an_interrupted_sweep_is_named_unfinished_by_a_rerun(tmp_path: Path) -> None:
    """A command that writes as it goes keeps what it finished when stopped, and its marker says it
    did not finish: a rerun without --resume names it so and says how to continue."""
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text((CONFIGS / "sweep-seeds.yaml").read_text().replace("n_jobs: 500", "n_jobs: 20000"))
    running = start(tmp_path, "sweep", "sweep.yaml", "-o", "out", "--jobs", "1")
    wait_until(lambda: list((tmp_path / "out" / "points").glob("[0-9]*")), 300, "a finished point")
    running.send_signal(signal.SIGTERM)
    _, err = running.communicate(timeout=120)
    assert running.returncode == 143, err
    refused_starting(djsb(tmp_path, "sweep", "sweep.yaml", "-o", "out"),
                     "djsb: error: -o: out already exists and holds an unfinished (interrupted or failed) djsb "
                     "sweep output (started ",
                     "continue it with djsb sweep sweep.yaml -o out --resume, replace it with --force, or give "
                     "another directory")


RESULTS = {"jobs.csv": "job_id,wait\n1,0\n", "report.html": "<p>measured</p>\n"}
COMMANDS = {
    "run": ["run", str(CONFIGS / "simulated-quick.yaml")],
    "simulate": ["simulate", "simulate.yaml"],
    "replay-stats": ["replay-stats", "simulate.yaml"],
    "pool": ["pool", str(CONFIGS / "pool-baseline.yaml")],
    "sweep": ["sweep", str(CONFIGS / "sweep-seeds.yaml")],
    "calibrate": ["calibrate", "calibration.yaml"],
    "reproduce": ["reproduce", "002"],
    "compare": ["compare", "run-a", "run-b"],
    "history": ["history", str(REPO / "tests" / "fixtures" / "sacct" / "minicluster-22.05-allocations.txt"),
                "--slurm-conf", str(REPO / "tests" / "fixtures" / "sacct" / "minicluster-slurm.conf")],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_that_writes_a_directory_refuses_one_with_files(tmp_path: Path, command: str) -> None:
    (tmp_path / "simulate.yaml").write_text(SIMULATE)
    out = tmp_path / "out"
    out.mkdir()
    for name, text in RESULTS.items():
        (out / name).write_text(text)
    kind = command
    for force in ((), ("--force",)):
        refusal = ("--force replaces only a djsb {kind} output: remove it yourself or give another directory"
                   if force else "give another directory (--force replaces only a djsb {kind} output)")
        refused(djsb(tmp_path, *COMMANDS[command], "-o", "out", *force),
                "djsb: error: -o: out already exists and holds files no DJSB command marked as its output "
                f"(jobs.csv, report.html): {refusal.format(kind=kind)}")
    assert {path.name: path.read_text() for path in out.iterdir()} == RESULTS
    assert hidden(tmp_path) == []


def test_report_on_a_replay_s_files_is_one_line(tmp_path: Path, simulated: Path) -> None:
    """A directory where a replay's jobs.csv sits beside a run's config.yaml is named as not a
    run's, not a KeyError traceback."""
    (simulated / "config.yaml").write_text((CONFIGS / "simulated-quick.yaml").read_text())
    refused(djsb(tmp_path, "report", "simulated"),
            "djsb: error: RUN_DIR: simulated/jobs.csv is not a run's (no stage, scenario, n_a, sample, state "
            "columns: a model replay's?)")


def _signal_after(real: Callable[..., Any], marked: str) -> Callable[..., Any]:
    """``real`` (Path.mkdir, os.rename) done, then SIGTERM's Signalled raised as it returns, when its
    last argument names ``marked``: a signal that lands just after the call did its work."""
    def call(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        if marked in str(args[-1] if len(args) > 1 else args[0]):
            raise Signalled("SIGTERM")
        return result
    return call


def test_a_signal_as_the_scratch_is_made_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fresh-clone CI sent SIGTERM just as a scratch directory was made (after mkdir, before the
    block that removes it on a signal): the line lacked what was left, and the scratch stayed."""
    monkeypatch.setattr(Path, "mkdir", _signal_after(Path.mkdir, ".djsb-new-"))
    out = tmp_path / "out"
    with pytest.raises(Signalled) as signalled, output_directory(out, kind="simulate"):
        pass
    assert signalled.value.left == f"nothing written; {out} is as it was"
    assert list(tmp_path.iterdir()) == []


def test_a_signal_as_an_old_run_is_moved_aside_puts_it_back(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A command that writes in place moves the output it replaces aside first: a signal just after
    the move puts it back, whole, and says so."""
    out = tmp_path / "run"
    out.mkdir()
    write_marker(out, new_marker("run"))
    mark_finished(out)
    (out / "jobs.csv").write_text("job_id,wait\n1,0\n")
    before = contents(out)
    monkeypatch.setattr(os, "rename", _signal_after(os.rename, ".djsb-old-"))
    with pytest.raises(Signalled) as signalled, output_directory(out, kind="run", force=True, in_place=True):
        pass
    assert signalled.value.left == f"nothing written; {out} is as it was"
    assert contents(out) == before and hidden(tmp_path) == []
