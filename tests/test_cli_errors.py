"""A user's mistake through the real command line: one line on stderr naming what and where, exit 2
(bad input) or 1 (the run failed), no traceback, and no output directory left behind."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from djsb.cli import main

REPO = Path(__file__).resolve().parent.parent
CONFIGS = REPO / "configs"

RUN = """\
general: {num_of_samples: 1, sleep_min_time: 1, sleep_max_time: 2, num_of_dyn_analysis: [1],
          scenarios: [oversubscription]}
job_module: {name: local, options: {cpus: '0'}}
simulation:
  total_tasks: 1
  cpus_per_task: 1
  total_memory: 64MiB
  exec_time: 2
analytics:
  total_tasks: 1
  cpus_per_task: 1
  total_memory: 16MiB
  exec_time: 1
"""

SIMULATE = """\
workload:
  swf: trace.swf
cluster:
  nodes: [{count: 2, cores: 4}]
policy:
  scheduler: {backfill: easy}
"""


def one_line_failure(capsys: pytest.CaptureFixture[str], argv: list[str], status: int, message: str,
                     out: Path | None = None) -> None:
    """``djsb ARGV`` exits with ``status`` after one error line ending with ``message`` (the last on
    stderr, after progress lines if any), and ``out`` (the command's output directory) does not exist
    afterwards."""
    assert main(argv) == status
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    failures = [line for line in err.splitlines() if line.startswith(("djsb: error:", "djsb: run failed:"))]
    assert failures == err.splitlines()[-1:] and failures[0].endswith(message), err
    if out is not None:
        assert not out.exists()


def written(tmp_path: Path, text: str, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(("change", "line", "message"), [
    (("  cpus_per_task: 1\n  total_memory: 64MiB", "  cpus_per_task: 4\n  total_memory: 64MiB"), 6,
     "simulation.cpus_per_task: 4 CPUs per task, but this machine has 1 for jobs (CPUs 0)"),
    (("  total_tasks: 1\n  cpus_per_task: 1\n  total_memory: 16MiB",
      "  total_tasks: 2\n  cpus_per_task: 1\n  total_memory: 16MiB"), 10,
     "analytics.total_tasks: 2 tasks x 1 CPUs = 2 CPUs, but this machine has 1 for jobs (CPUs 0)"),
    (("  exec_time: 1\n", "  exec_time: 1\n  command: [/no/such/program, '{work}']\n"), 14,
     "analytics.command: the command's program /no/such/program does not exist"),
    (("  exec_time: 1\n", "  exec_time: 1\n  command: no-such-program-djsb {work}\n"), 14,
     "analytics.command: command not found: no 'no-such-program-djsb' on PATH"),
    (("  exec_time: 1\n", "  exec_time: 1\n  command: [sleep, '{seconds}']\n"), 14,
     "analytics.command[1]: unknown placeholder {seconds} in '{seconds}' (known: {apps}, {cpus_per_task}, "
     "{total_tasks}, {memory_per_task}, {exec_time}, {control_file}, {name}, and {work} as a whole argument)"),
    (("  exec_time: 1\n", "  exec_time: 1\n  command: [sleep, '--work={work}']\n"), 14,
     "analytics.command[1]: {work} must be a whole argument (it becomes two: --time SECONDS or "
     "--iterations N), not part of '--work={work}'"),
    (("  exec_time: 2\n", "  exec_time: 2\n  exec_tme: 3\n"), 9, "simulation.exec_tme: unknown key: did you mean "
     "'exec_time'?"),
])
def test_a_run_config_that_could_not_run_is_refused_by_validate_and_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], change: tuple[str, str], line: int,
        message: str) -> None:
    old, new = change
    assert old in RUN
    path = written(tmp_path, RUN.replace(old, new, 1))
    one_line_failure(capsys, ["validate", str(path)], 2, f"{path}:{line}: {message}")
    one_line_failure(capsys, ["run", str(path), "-o", str(tmp_path / "out")], 2, f"{path}:{line}: {message}",
                     tmp_path / "out")


def test_a_command_that_is_not_executable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = tmp_path / "program"
    program.write_text("#!/bin/sh\n")
    path = written(tmp_path, RUN.replace("  exec_time: 1\n", f"  exec_time: 1\n  command: {program} {{work}}\n"))
    one_line_failure(capsys, ["run", str(path), "-o", str(tmp_path / "out")], 2,
                     f"{path}:14: analytics.command: the command's program {program} is not an executable file",
                     tmp_path / "out")


def test_more_cpus_per_task_than_a_simulated_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (CONFIGS / "simulated-quick.yaml").read_text().replace("  cpus_per_task: 4\n", "  cpus_per_task: 9\n")
    path = written(tmp_path, text)
    one_line_failure(capsys, ["run", str(path), "-o", str(tmp_path / "out")], 2,
                     f"{path}:32: simulation.cpus_per_task: 9 CPUs per task, but a node of the simulated cluster "
                     "has 8 (cores_per_node)", tmp_path / "out")


@pytest.mark.parametrize(("trace", "message"), [
    ("", "no job in the trace: it has no record (empty, or a header alone)"),
    ("; Version: 2.2\n; MaxProcs: 8\n", "no job in the trace: it has no record (empty, or a header alone)"),
    ("1 0 0 -1 1 -1 -1 1 100 -1 1 1 1 1 1 1 -1 -1\n",
     "no usable job in the trace: all 1 record(s) skipped (1 run_time_unknown)"),
])
def test_a_trace_without_a_usable_job(tmp_path: Path, capsys: pytest.CaptureFixture[str], trace: str,
                                      message: str) -> None:
    (tmp_path / "trace.swf").write_text(trace)
    path = written(tmp_path, SIMULATE)
    one_line_failure(capsys, ["validate", str(path)], 2, f"{tmp_path / 'trace.swf'}: {message}")
    one_line_failure(capsys, ["simulate", str(path), "-o", str(tmp_path / "out")], 2,
                     f"{tmp_path / 'trace.swf'}: {message}", tmp_path / "out")


def test_a_missing_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = written(tmp_path, SIMULATE)
    one_line_failure(capsys, ["simulate", str(path), "-o", str(tmp_path / "out")], 2,
                     f"{path}:2: workload.swf: file not found: {tmp_path / 'trace.swf'}", tmp_path / "out")


def test_a_misspelt_generator_parameter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (CONFIGS / "sweep-seeds.yaml").read_text()
    path = written(tmp_path, text[:text.index("sweep:")].replace("arrival_rate", "arival_rate"))
    one_line_failure(capsys, ["validate", str(path)], 2,
                     f"{path}:9: workload.params.arival_rate: unknown key: did you mean 'arrival_rate'?")
    one_line_failure(capsys, ["simulate", str(path), "-o", str(tmp_path / "out")], 2,
                     f"{path}:9: workload.params.arival_rate: unknown key: did you mean 'arrival_rate'?",
                     tmp_path / "out")


def test_a_sweep_value_out_of_range_is_refused_before_the_sweep_directory_exists(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = written(tmp_path, (CONFIGS / "sweep-seeds.yaml").read_text().replace(
        "arrival_rate: [0.08, 0.144]", "arrival_rate: [0.08, -1]"))
    one_line_failure(capsys, ["sweep", str(path), "-o", str(tmp_path / "out")], 2,
                     f"{path}:18: sweep.grid.workload.params.arrival_rate[1]: must be > 0 (jobs per second), got -1",
                     tmp_path / "out")


def test_a_pool_sweep_value_out_of_range(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = written(tmp_path, "seed: 1\npool: {days: 35, generate: {clusters: 2, computers: 10}}\n"
                   "workload: {generate: {tasks: 20, days: 14}}\npolicy: {abandon: {rule: N1, n: 1}}\n"
                   "sweep:\n  runner: pool\n  grid:\n    policy.abandon.n: [1, -2]\n")
    one_line_failure(capsys, ["pool", str(path), "-o", str(tmp_path / "out")], 2,
                     f"{path}:8: sweep.grid.policy.abandon.n[1]: must be >= 1, got -2", tmp_path / "out")


def test_a_config_that_is_not_utf8_gives_no_traceback(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("# caf\u00e9\nseed: 1\n".encode("latin-1"))
    done = subprocess.run([sys.executable, "-m", "djsb", "validate", str(path)], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert done.stderr == (f"djsb: error: {path}:1: not UTF-8 text (byte 0xe9 at offset 5): "
                           "save the file as UTF-8\n")


@pytest.mark.parametrize("output", ["/proc/djsb-out", "{tmp}/a-file/out"])
def test_an_impossible_output_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str], output: str) -> None:
    (tmp_path / "trace.swf").write_text("1 0 0 10 1 -1 -1 1 100 -1 1 1 1 1 1 1 -1 -1\n")
    (tmp_path / "a-file").write_text("")
    out = output.format(tmp=tmp_path)
    reason = "No such file or directory" if out.startswith("/proc") else "Not a directory"
    one_line_failure(capsys, ["simulate", str(written(tmp_path, SIMULATE)), "-o", out], 2,
                     f"-o: cannot create the output directory {out}: {reason}", Path(out))


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs: writing a simulation's results into it fills it (root only)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    if shutil.which("mount") is None or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True,
            timeout=30).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True, timeout=30)


def test_a_full_disk(full_disk: Path, capsys: pytest.CaptureFixture[str],
                     trace: Callable[[str], Path]) -> None:
    trace("KTH-SP2-1996-2.1-cln.swf.gz")  # the config replays it (skipped without ../shared)
    out = full_disk / "out"
    # the line names the file being written (jobs.csv, the first result written), not only the disk
    one_line_failure(capsys, ["simulate", str(CONFIGS / "simulate-kth-easy.yaml"), "-o", str(out)], 1,
                     f"{out}/jobs.csv: No space left on device (nothing written; {out} is as it was)", out)


LOCAL_RUN = """\
general: {num_of_samples: 1, sleep_min_time: 0.3, sleep_max_time: 0.5, num_of_ref_analysis: 1,
          num_of_dyn_analysis: [1], scenarios: [oversubscription, stopcont], poll_interval: 0.1, seed: 3}
job_module: {name: local}
simulation: {total_tasks: 1, cpus_per_task: 1, total_memory: 32MiB, exec_time: 1}
analytics: {total_tasks: 1, cpus_per_task: 1, total_memory: 16MiB, exec_time: 0.3, same_nodes_as_sim: true}
output: {plots: false}
"""


def test_a_run_on_a_full_disk_ends_with_one_line_naming_the_file(full_disk: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str],
                                                                  apps_bin: Path) -> None:
    # the run's records and its jobs' reports fill the 64 KiB: whichever write fails first (a record,
    # a control file, or a job's report the application could not write), the run stops there with
    # one line naming that file, and no cell is blamed for the disk
    out = full_disk / "run"
    assert main(["run", str(written(tmp_path, LOCAL_RUN)), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    last = err.splitlines()[-1]
    named = re.fullmatch(rf"djsb: run failed: ({re.escape(str(out))}/\S+): No space left on device", last)
    assert named, err
    assert sum("No space left on device" in line for line in err.splitlines()) == 1, err
    assert not any("failed:" in line and "left no report" in line for line in err.splitlines()), err
    assert shutil.disk_usage(full_disk).free == 0


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.skipif(shutil.which("ssh") is None, reason="no OpenSSH client")
def test_a_dead_ssh_host(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port = closed_port()
    text = (CONFIGS / "slurm-mini.yaml").read_text().replace(
        "    time_margin: 60\n", f"    time_margin: 60\n  ssh: {{host: 127.0.0.1, port: {port}, connect_timeout: 2, "
        "reconnect_for: 0, transport: openssh, remote_dir: /tmp/djsb-never}\n")
    path = written(tmp_path, text)
    one_line_failure(capsys, ["run", str(path), "-o", str(tmp_path / "out")], 2,
                     f"ssh: connect to host 127.0.0.1 port {port}: Connection refused", tmp_path / "out")
