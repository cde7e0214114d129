"""`djsb run` end to end on real local processes: records, scenarios, interruption and --resume."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from support import wait_until

from djsb import benchmark_metrics

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")


def djsb(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "djsb.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)


def processes_mentioning(text: str) -> dict[int, str]:
    """PID -> command line of the live processes other than djsb itself that mention ``text`` (the run
    directory is in every job's argv; pytest's temporary directories are named pytest-of-USER, so
    only the word djsb.cli, not a mere mention of pytest, tells the harness apart)."""
    found = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                words = (proc / "cmdline").read_bytes().decode().split("\0")
            except OSError:
                continue
            if any(text in word for word in words) and "djsb.cli" not in words:
                found[int(proc.name)] = " ".join(words)
    return found


def test_run_writes_records_summary_and_figures(tiny_config: Path, tmp_path: Path, apps_bin: Path) -> None:
    run_dir = tmp_path / "run"
    done = djsb("run", str(tiny_config), "-o", str(run_dir))
    out, err = done.communicate(timeout=300)
    assert done.returncode == 0, err
    jobs = pd.read_csv(run_dir / "jobs.csv")
    # calibration 2 + reference 2 + 3 scenarios x (1 simulation + 1 analytics)
    assert len(jobs) == 2 + 2 + 6
    assert (jobs["state"] == "COMPLETED").all()
    assert jobs["validated"].all()
    # the columns are consistent with their definitions (sec. 2.4)
    assert (jobs["wait"] == jobs["start"] - jobs["submit"]).all()
    assert (jobs["response"] - (jobs["wait"] + jobs["exec"])).abs().max() < 1e-6
    # the work is fixed by calibration: every reference/execution job of an app does the same iterations
    for app, group in jobs[jobs["stage"] != "calibration"].groupby("app"):
        assert group["iterations"].nunique() == 1, app
    ref = jobs[jobs["stage"] == "reference"].set_index("app")["exec"]
    execution = jobs[jobs["stage"] == "execution"]
    sim = execution[execution["app"] == "simulation"].set_index("scenario")
    ana = execution[execution["app"] == "analytics"].set_index("scenario")
    # slowdown column = response / T_ref_alone (eq. 1)
    for scenario in ("oversubscription", "stopcont", "dynamic"):
        assert sim.loc[scenario, "slowdown"] == pytest.approx(sim.loc[scenario, "response"] / ref["simulation"])
    summary = pd.read_csv(run_dir / "summary.csv").set_index("scenario")
    assert set(summary.index) == {"oversubscription", "stopcont", "dynamic"}
    # a loaded machine can calibrate the simulation's work short enough for it to end before its
    # analytics starts: that cell, and only for that reason, is failed and has no number
    cells = pd.read_csv(run_dir / "cells.csv", keep_default_na=False)
    cells = cells[cells["stage"] == "execution"].set_index("scenario")
    for scenario, cell in cells.iterrows():
        if cell["status"] == "failed":
            assert "the simulation ended before analytics 1 started" in cell["reason"]
            assert summary.loc[scenario, "samples"] == 0
        else:
            assert ana.loc[scenario, "shared_with_sim"]
    if cells.loc["stopcont", "status"] == "completed":
        # stop&continue: the simulation was suspended while the analytics ran
        assert sim.loc["stopcont", "suspended_s"] == pytest.approx(ana.loc["stopcont", "exec"], abs=0.6)
        # and it lasted its suspension plus its own work: it started before the analytics, was resumed
        # once the analytics had ended, and ran for some time besides its suspension. (Its running time
        # is not compared with the reference's: on a shared 2-core machine the two ran under different
        # loads, 4.5x apart in one CI run.)
        assert sim.loc["stopcont", "start"] <= ana.loc["stopcont", "start"]
        assert sim.loc["stopcont", "end"] >= ana.loc["stopcont", "end"]
        assert sim.loc["stopcont", "exec"] - sim.loc["stopcont", "suspended_s"] > 0
        # the summary's dynamicity is eq. (2) over the jobs' own numbers (one sample)
        w_s, w_a = benchmark_metrics.weights("stopcont", 2, 1, sim.loc["stopcont", "exec"],
                                             ana.loc["stopcont", "exec"], 1)
        expected = benchmark_metrics.dynamicity(w_s, w_a, sim.loc["stopcont", "slowdown"],
                                                ana.loc["stopcont", "slowdown"])
        assert summary.loc["stopcont", "dynamicity"] == pytest.approx(expected)
    if cells.loc["dynamic", "status"] == "completed":
        # dynamic: the simulation really ran on fewer threads while it lent its CPU
        assert sim.loc["dynamic", "threads_min"] == 1
    assert sim.loc["oversubscription", "threads_min"] == 2
    for figure in ("djsb.png", "djsb.pdf", "slowdown_s.png", "slowdown_a.png", "dynamicity.png"):
        assert (run_dir / "figures" / figure).stat().st_size > 1000
    assert "dynamicity" in out
    # djsb report redraws from the CSVs alone
    (run_dir / "summary.csv").unlink()
    report = djsb("report", str(run_dir))
    report.communicate(timeout=120)
    assert report.returncode == 0
    assert pd.read_csv(run_dir / "summary.csv").shape[0] == 3


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_interrupt_cancels_jobs_and_resume_completes(tiny_config: Path, tmp_path: Path, apps_bin: Path,
                                                     signum: int, status: int) -> None:
    run_dir = tmp_path / "run"
    proc = djsb("run", str(tiny_config), "-o", str(run_dir))
    # wait until the execution stage runs: its first simulation's process is alive
    wait_until(lambda: proc.poll() is not None or processes_mentioning(str(run_dir / "control" / "oversubscription-")),
               120, "the execution stage's first simulation to run")
    assert proc.poll() is None, "the run ended before its execution stage"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == status, err
    assert "resume with: djsb run --resume" in err
    assert processes_mentioning(str(run_dir)) == {}
    cells = pd.read_csv(run_dir / "cells.csv")
    assert set(cells["stage"]) == {"calibration", "reference"}
    kept = pd.read_csv(run_dir / "jobs.csv")
    measured_before = set(kept["name"])

    resumed = djsb("run", "--resume", str(run_dir))
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    jobs = pd.read_csv(run_dir / "jobs.csv")
    # nothing finished was redone: calibration and reference rows are the ones measured before
    assert set(jobs[jobs["stage"] != "execution"]["name"]) == measured_before & set(jobs["name"])
    assert len(jobs[jobs["stage"] != "execution"]) == 4
    assert len(jobs[jobs["stage"] == "execution"]) == 6
    assert len(pd.read_csv(run_dir / "cells.csv")) == 1 + 1 + 3
    assert processes_mentioning(str(run_dir)) == {}


def test_existing_run_directory_is_refused(tiny_config: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "something").write_text("x")
    proc = djsb("run", str(tiny_config), "-o", str(run_dir))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "already exists" in err and err.count("\n") == 1


def ledger_rows(run_dir: Path) -> list[dict[str, str]]:
    path = run_dir / "ledger.csv"
    if not path.exists():
        return []
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def submitted_id(run_dir: Path, name: str) -> str | None:
    """The job id the ledger recorded for job ``name`` (None: not submitted yet)."""
    rows = ledger_rows(run_dir)
    tokens = {r["token"] for r in rows if r["event"] == "submitting" and r["name"] == name}
    return next((r["job_id"] for r in rows if r["event"] == "submitted" and r["token"] in tokens), None)


def test_resume_after_sigkill_cancels_the_killed_runs_jobs(tiny_config: Path, tmp_path: Path,
                                                         apps_bin: Path) -> None:
    # a simulation long enough to outlive the killed harness; two scenarios
    config = tmp_path / "long.yaml"
    config.write_text(tiny_config.read_text().replace("scenarios: [oversubscription, stopcont, dynamic]",
                                                      "scenarios: [oversubscription, stopcont]")
                      .replace("total_memory: 96MiB, exec_time: 3", "total_memory: 96MiB, exec_time: 10"))
    run_dir = tmp_path / "run"
    proc = djsb("run", str(config), "-o", str(run_dir))
    wait_until(lambda: proc.poll() is not None or submitted_id(run_dir, "oversubscription-na1-s0-ana0") is not None,
               180, "the execution stage's first analytics to be submitted")
    assert proc.poll() is None, "the run ended before its execution stage"
    proc.kill()
    proc.communicate(timeout=60)
    sim_control = str(run_dir / "control" / "oversubscription-na1-s0-sim0")
    orphans = processes_mentioning(sim_control)
    assert orphans  # the killed harness's simulation runs on
    for pid in orphans:  # and stays alive until the resume ends it, however long a loaded machine takes
        os.kill(pid, signal.SIGSTOP)

    try:
        resumed = djsb("run", "--resume", str(run_dir))
        _, err = resumed.communicate(timeout=300)
    finally:  # a resume that failed to end them leaves no frozen process behind
        for pid in processes_mentioning(sim_control):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert resumed.returncode == 0, err
    sim_id = submitted_id(run_dir, "oversubscription-na1-s0-sim0")
    said = next(line for line in err.splitlines() if "of an earlier attempt" in line)
    assert f"oversubscription-na1-s0-sim0 (job {sim_id})" in said, said
    assert any(r["event"] == "cancelled" and r["job_id"] == sim_id and r["attempt"] == "2"
               for r in ledger_rows(run_dir))
    assert processes_mentioning(str(run_dir)) == {}
    # every cell, and every job of it, exactly once
    cells = pd.read_csv(run_dir / "cells.csv")
    assert len(cells) == 1 + 1 + 2 and not cells.duplicated().any()
    jobs = pd.read_csv(run_dir / "jobs.csv")
    assert len(jobs) == 2 + 2 + 4
    assert not jobs.duplicated(["stage", "scenario", "n_a", "sample", "app", "index"]).any()
    assert (jobs["state"] == "COMPLETED").all()
