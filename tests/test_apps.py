"""Tests of the DJSB benchmark application djsb/apps/djsb_stream.c.

Paper 001 sec. 2.3: the DJSB mock-up application is STREAM (McCalpin), OpenMP and MPI+OpenMP,
sized by memory and run for a given time; the reference stage runs it with ``--time`` and the
execution stage with ``--iterations`` (the reference's count), and the cooperative scenario
(sec. 3) shrinks/expands it at run time (our ``--control`` file stands in for DLB-DROM).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support import cpu_seconds, wait_until

ROOT = Path(__file__).resolve().parent.parent
APPS = ROOT / "apps"
BIN = APPS / "bin" / "djsb-stream"
MPI_BIN = APPS / "bin" / "djsb-stream-mpi"
KERNELS = ("copy", "scale", "add", "triad")


@pytest.fixture(scope="session")
def app() -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed: cannot build apps/djsb-stream")
    if shutil.which("make") is None:
        pytest.skip("make is not installed: cannot build apps/djsb-stream")
    subprocess.run(["make", "-C", str(APPS)], check=True, capture_output=True, timeout=300)
    assert BIN.is_file()
    return BIN


def _env(threads: int | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_", "DJSB_STREAM_"))}
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    return env


def run_app(binary: Path, *args: str, threads: int | None = None, expect: int = 0,
            env: dict[str, str] | None = None, timeout: float = 120) -> dict:
    """Run the program, check the exit status and that stdout is exactly one JSON line."""
    p = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=timeout,
                       env=env if env is not None else _env(threads))
    assert p.returncode == expect, (p.returncode, p.stdout, p.stderr)
    lines = p.stdout.splitlines()
    assert len(lines) == 1, p.stdout
    return json.loads(lines[0])


def _cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


# --------------------------------------------------------------------------- output, validation

def test_json_line_parses_and_validates(app: Path) -> None:
    d = run_app(app, "--elements", "100000", "--iterations", "3", "--threads", "2")
    for key in ("app", "version", "elements", "bytes_per_array", "threads_initial", "threads_min_seen",
                "threads_max_seen", "thread_changes", "iterations", "elapsed_s", "start_unix",
                "end_unix", "best_rate_MBps", "avg_time_s", "validated", "mpi_ranks"):
        assert key in d, key
    assert d["app"] == "djsb-stream" and d["version"] == 1
    assert d["validated"] is True
    assert d["mpi_ranks"] == 1
    assert d["elements"] == 100000 and d["bytes_per_array"] == 8 * 100000
    assert d["threads_initial"] == d["threads_min_seen"] == d["threads_max_seen"] == 2
    assert d["thread_changes"] == []
    assert d["rel_err"] == {"a": 0.0, "b": 0.0, "c": 0.0}
    assert d["start_unix"] <= d["end_unix"]
    assert d["end_unix"] - d["start_unix"] == pytest.approx(d["elapsed_s"], abs=0.05)
    assert abs(d["start_unix"] - time.time()) < 60


def test_default_threads_follow_omp_num_threads(app: Path) -> None:
    d = run_app(app, "--elements", "1000", "--iterations", "2", threads=1)
    assert d["threads_initial"] == 1


def test_output_file_gets_the_same_line(app: Path, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    p = subprocess.run([str(app), "--elements", "1000", "--iterations", "2", "--output", str(out)],
                       capture_output=True, text=True, timeout=60, env=_env(1))
    assert p.returncode == 0, p.stderr
    assert out.read_text() == p.stdout


def test_validation_failure_exits_1(app: Path) -> None:
    env = _env(1)
    env["DJSB_STREAM_TEST_CORRUPT"] = "1"
    d = run_app(app, "--elements", "1000", "--iterations", "2", env=env, expect=1)
    assert d["validated"] is False
    assert d["rel_err"]["a"] > d["epsilon"] == 1e-13


# --------------------------------------------------------------------------- amount of work

@pytest.mark.parametrize("n", [1, 2, 7])
def test_iterations_exact(app: Path, n: int) -> None:
    d = run_app(app, "--elements", "20000", "--iterations", str(n), "--threads", "2")
    assert d["iterations"] == n
    assert d["mode"] == "iterations" and d["time_limit_s"] is None
    assert d["validated"] is True
    assert all(d["best_rate_MBps"][k] > 0 for k in KERNELS)


def test_long_run_past_double_overflow_still_validates(app: Path) -> None:
    # STREAM's scalar 3 multiplies a by 15 per iteration: a double overflows after ~260
    # iterations. The rescaled scalar keeps the values finite and the check analytic.
    d = run_app(app, "--elements", "64", "--iterations", "3000", "--threads", "1")
    assert d["iterations"] == 3000 and d["validated"] is True


def test_time_runs_about_the_requested_time(app: Path) -> None:
    t = 1.0
    start = time.monotonic()
    d = run_app(app, "--elements", "200000", "--time", str(t), "--threads", "2")
    wall = time.monotonic() - start
    assert d["mode"] == "time" and d["time_limit_s"] == t
    assert d["iterations"] >= 2 and d["validated"] is True
    # Whole iterations until the deadline: the loop ends in the first iteration that ends past
    # t, so t <= loop_s <= t + one iteration (+ bookkeeping, and 0.25 s in case the process is
    # descheduled at that moment on a loaded machine).
    assert t <= d["loop_s"] <= t + d["max_iteration_s"] + 0.25
    # From outside: plus start-up (allocation and first touch of 4.8 MB) and process exit; 1.5 s
    # of slack absorbs a loaded (shared) machine.
    assert t <= wall <= t + d["max_iteration_s"] + 1.5


def test_stopped_job_takes_longer_with_fixed_iterations(app: Path) -> None:
    # Execution stage: --iterations fixes the work, so stop&continue lengthens the run.
    # 2M elements = 48 MB, beyond the caches: ~160 MB moved per iteration, so 150 iterations
    # take about a second on one thread at 25 GB/s, and the process is still running at 0.2 s.
    n = 150
    proc = subprocess.Popen([str(app), "--elements", "2000000", "--iterations", str(n), "--threads", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    # stopped once it has done some of its work (0.1 s of CPU, a tenth of the run)
    wait_until(lambda: proc.poll() is not None or cpu_seconds(proc.pid) >= 0.1, 30, "the app to be computing")
    assert proc.poll() is None, "finished before it could be stopped: increase the work"
    proc.send_signal(signal.SIGSTOP)
    time.sleep(1.0)  # the stop itself: the run must take this second longer
    proc.send_signal(signal.SIGCONT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    d = json.loads(out)
    assert d["iterations"] == n and d["validated"] is True
    assert d["elapsed_s"] >= 1.0 and d["loop_s"] >= 1.0


# --------------------------------------------------------------------------- bytes and rates

def test_bytes_per_kernel_and_rate_formula(app: Path) -> None:
    n = 1_000_000
    d = run_app(app, "--elements", str(n), "--iterations", "4", "--threads", "2")
    # STREAM's accounting: copy and scale move 2 arrays, add and triad 3, of 8-byte doubles.
    assert d["bytes_per_kernel"] == {"copy": 2 * 8 * n, "scale": 2 * 8 * n, "add": 3 * 8 * n,
                                     "triad": 3 * 8 * n}
    assert d["bytes_per_array"] == 8 * n and d["memory_bytes"] == 3 * 8 * n
    for k in KERNELS:
        rate, tmin = d["best_rate_MBps"][k], d["min_time_s"][k]
        assert rate > 0 and tmin > 0
        # best rate = 1e-6 * bytes / min time (MB/s = 1e6 bytes/s)
        assert rate == pytest.approx(1e-6 * d["bytes_per_kernel"][k] / tmin, rel=1e-3)
        assert d["min_time_s"][k] <= d["avg_time_s"][k] <= d["max_time_s"][k]


@pytest.mark.parametrize("memory, elements", [
    ("48", 2), ("24K", 1024), ("24KiB", 1024), ("3MiB", 131072), ("3m", 131072),
    ("2.4KB", 100), ("1.5K", 64), ("24kb", 1000),
])
def test_memory_sizes_the_arrays(app: Path, memory: str, elements: int) -> None:
    d = run_app(app, "--memory", memory, "--iterations", "2", "--threads", "1")
    assert d["elements"] == elements
    assert d["bytes_per_kernel"]["triad"] == 3 * 8 * elements


# --------------------------------------------------------------------------- malleability

def _thread_affinity(pid: int) -> set[int]:
    # the main thread (tid == pid) is OpenMP thread 0 of every team
    return os.sched_getaffinity(pid)


def test_control_file_shrink_and_grow(app: Path, tmp_path: Path) -> None:
    cpus = _cpus()
    if len(cpus) < 2:
        pytest.skip("needs at least 2 CPUs in the affinity mask")
    control = tmp_path / "threads"
    _write_atomic(control, "2\n")
    proc = subprocess.Popen([str(app), "--elements", "500000", "--threads", "2", "--time", "3",
                             "--control", str(control)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        wait_until(lambda: cpu_seconds(proc.pid) >= 0.1, 30, "the app to be computing on 2 threads")
        _write_atomic(control, "1\n")
        # shrunk: thread 0 pinned to the first CPU of the initial mask
        wait_until(lambda: _thread_affinity(proc.pid) == {cpus[0]}, 10, "thread 0 pinned to the first CPU")
        shrunk_at = cpu_seconds(proc.pid)
        wait_until(lambda: cpu_seconds(proc.pid) >= shrunk_at + 0.1, 30, "the app to compute on 1 thread")
        _write_atomic(control, "2\n")
        # grown back: initial affinity restored
        wait_until(lambda: _thread_affinity(proc.pid) == set(cpus), 10, "the initial affinity restored")
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    d = json.loads(out)
    assert d["validated"] is True
    assert d["threads_initial"] == 2 and d["threads_min_seen"] == 1 and d["threads_max_seen"] == 2
    changes = d["thread_changes"]
    assert [k for _, k in changes] == [1, 2]
    (t1, _), (t2, _) = changes
    # between the two, the process used 0.1 s of CPU on at most 2 threads: at least 0.05 s of wall time
    assert 0 < t1 < t2 < d["elapsed_s"]
    assert t2 - t1 >= 0.05


def test_control_file_edge_cases(app: Path, tmp_path: Path) -> None:
    control = tmp_path / "threads"
    # missing file: no change
    d = run_app(app, "--elements", "1000", "--iterations", "3", "--threads", "2",
                "--control", str(control))
    assert d["thread_changes"] == [] and d["threads_min_seen"] == 2
    # garbage and non-positive values are ignored
    for text in ("abc", "", "0", "-1", "1 2", "1.5"):
        control.write_text(text)
        d = run_app(app, "--elements", "1000", "--iterations", "3", "--threads", "2",
                    "--control", str(control))
        assert d["thread_changes"] == [], text
    # a request from the start is applied before the first iteration
    control.write_text("1\n")
    d = run_app(app, "--elements", "1000", "--iterations", "3", "--threads", "2", "--control", str(control))
    assert [k for _, k in d["thread_changes"]] == [1] and d["threads_min_seen"] == 1
    assert d["validated"] is True
    # more than the initial count is clamped to it
    control.write_text("64")
    d = run_app(app, "--elements", "1000", "--iterations", "3", "--threads", "2", "--control", str(control))
    assert d["thread_changes"] == [] and d["threads_max_seen"] == 2


# --------------------------------------------------------------------------- command line

@pytest.mark.parametrize("args", [
    ["--bogus"], ["extra"], ["--elements"], ["--elements", "0"], ["--elements", "abc"],
    ["--elements", "-5"], ["--threads", "0"], ["--threads", "x"], ["--time", "-1"], ["--time", "nan"],
    ["--time", "0"], ["--iterations", "0"], ["--iterations", "1.5"], ["--memory", "12XB"],
    ["--memory", "10"], ["--memory", "-1G"], ["--time", "1", "--iterations", "2"],
    ["--memory", "1M", "--elements", "5"], ["--control", ""], ["--elements=1e3"],
])
def test_bad_arguments_exit_2_with_one_line(app: Path, args: list[str]) -> None:
    p = subprocess.run([str(app), *args], capture_output=True, text=True, timeout=30, env=_env(1))
    assert p.returncode == 2, (args, p.stdout, p.stderr)
    assert p.stdout == ""
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("djsb-stream: error:"), p.stderr


def test_help_documents_the_options(app: Path) -> None:
    p = subprocess.run([str(app), "--help"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0
    for opt in ("--memory", "--elements", "--threads", "--time", "--iterations", "--control", "--output"):
        assert opt in p.stdout


def test_equals_form_of_options(app: Path) -> None:
    d = run_app(app, "--elements=3000", "--iterations=2", "--threads=1")
    assert d["elements"] == 3000 and d["iterations"] == 2


# --------------------------------------------------------------------------- MPI variant

def test_mpi_variant(app: Path) -> None:
    mpirun = shutil.which("mpirun")
    if shutil.which("mpicc") is None or mpirun is None:
        pytest.skip("mpicc/mpirun not installed (Debian: openmpi-bin libopenmpi-dev): "
                    "the MPI variant is not built")
    assert MPI_BIN.is_file(), "mpicc exists but make did not build djsb-stream-mpi"
    n = 100000
    cmd = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", str(MPI_BIN),
           "--elements", str(n), "--iterations", "4", "--threads", "1"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=_env())
    assert p.returncode == 0, (p.stdout, p.stderr)
    lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stdout  # rank 0 only
    d = json.loads(lines[0])
    assert d["mpi_ranks"] == 2 and d["validated"] is True and d["iterations"] == 4
    assert d["elements"] == n  # per rank
    # aggregate: total bytes over the ranks / slowest rank's (barrier-bracketed) time
    assert d["bytes_per_kernel"]["triad"] == 2 * 3 * 8 * n
    assert d["best_rate_MBps"]["triad"] == pytest.approx(
        1e-6 * d["bytes_per_kernel"]["triad"] / d["min_time_s"]["triad"], rel=1e-3)
    # --time: rank 0 decides when to stop, all ranks agree
    cmd_t = cmd[:6] + ["--elements", str(n), "--time", "0.5", "--threads", "1"]
    p = subprocess.run(cmd_t, capture_output=True, text=True, timeout=120, env=_env())
    assert p.returncode == 0, (p.stdout, p.stderr)
    d = json.loads(p.stdout.strip().splitlines()[-1])
    assert d["validated"] is True and d["loop_s"] >= 0.5
