"""Ordinary mistakes through the real command line, each refused where the value is read: a job module
file that does not import, CPUs this machine does not give, a run compared with itself, absurd or
mistyped values, a file that is no config, several files validated at once, and traces whose records
are skipped or whose jobs are all rejected. One line on stderr naming the file, line and key, exit 2,
nothing left behind; what a replay drops is said on stderr."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_cli_errors import CONFIGS, RUN, SIMULATE, one_line_failure, written

from djsb.cli import main
from job_modules.local import cpu_list_text, parse_cpu_list

MODULE_RUN = RUN.replace("job_module: {name: local, options: {cpus: '0'}}", "job_module: {name: ./mymod.py}")
"""The run config with its job module a file beside it (the module's name is on line 3)."""


@pytest.mark.parametrize(("source", "line", "error"), [
    ("import os\nimport djsb_no_such_package\n", 2,
     "ModuleNotFoundError: No module named 'djsb_no_such_package'"),
    ("import os\ndef broken(:\n    pass\n", 2, "SyntaxError: invalid syntax"),
    ("LIMIT = 3\n\n\nraise RuntimeError('no licence server')\n", 4, "RuntimeError: no licence server"),
])
def test_a_module_file_that_does_not_import(tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str,
                                            line: int, error: str) -> None:
    module = tmp_path / "mymod.py"
    module.write_text(source)
    path = written(tmp_path, MODULE_RUN)
    message = f"{path}:3: job_module.name: cannot import the module: {module}:{line}: {error}"
    one_line_failure(capsys, ["validate", str(path)], 2, message)
    one_line_failure(capsys, ["run", str(path), "-o", str(tmp_path / "out")], 2, message, tmp_path / "out")
    assert main(["validate", "-v", str(path)]) == 2  # -v: the module's own traceback, then the line
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and f'File "{module}", line {line}' in err
    assert err.splitlines()[-1] == f"djsb: error: {message}"


def test_cpus_this_process_may_not_run_on_are_refused_before_the_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    beyond = max(os.sched_getaffinity(0)) + 1
    path = written(tmp_path, RUN.replace("cpus: '0'", f"cpus: '{beyond}-{beyond + 4}'"))
    for argv in (["validate", str(path)], ["run", str(path), "-o", str(tmp_path / "out")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        prefix = (f"djsb: error: {path}:3: job_module.options.cpus: '{beyond}-{beyond + 4}' names CPUs this "
                  "process may not run on: it may use CPUs ")
        assert err.startswith(prefix) and err.endswith(" (its affinity mask)\n") and err.count("\n") == 1, err
        assert set(parse_cpu_list(err[len(prefix):-len(" (its affinity mask)\n")])) == os.sched_getaffinity(0)
        assert not (tmp_path / "out").exists()


def test_a_cpu_list_is_written_as_linux_writes_one() -> None:
    assert cpu_list_text([0, 1, 2, 5]) == "0-2,5"
    assert cpu_list_text([3]) == "3"
    assert cpu_list_text([0, 2, 3, 4, 7, 8]) == "0,2-4,7-8"


def test_a_run_compared_with_itself(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "R"
    run.mkdir()
    (run / "config.yaml").write_text("job_module: {name: simulated}\n")
    pd.DataFrame([{"scenario": "dynamic", "n_a": 1, "sample": k, "slowdown_s": 1.0 + k, "slowdown_a": 1.0,
                   "t_s": 10.0, "t_a": 5.0, "w_s": 0.0, "w_a": 0.0, "dynamicity": 0.1} for k in range(2)]
                 ).to_csv(run / "samples.csv", index=False)
    out = tmp_path / "cmp"
    one_line_failure(capsys, ["compare", str(run), str(run), "-o", str(out)], 2,
                     f"RUN_DIR: {run} is given twice: a run compared with itself differs in nothing", out)
    one_line_failure(capsys, ["compare", str(run), f"{tmp_path}/./R/", "-o", str(out)], 2,
                     f"RUN_DIR: {run} is given twice: a run compared with itself differs in nothing", out)


def test_a_task_count_no_scheduler_holds_is_blamed_not_the_memory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = written(tmp_path, RUN.replace("  total_tasks: 1\n", "  total_tasks: 100000000000000000000\n", 1))
    one_line_failure(capsys, ["run", str(path), "-o", str(tmp_path / "out")], 2,
                     f"{path}:5: simulation.total_tasks: must be at most 4294967293 (a scheduler counts a job's "
                     "tasks in 32 bits), got 100000000000000000000", tmp_path / "out")
    path = written(tmp_path, RUN.replace("  total_tasks: 1\n", "  total_tasks: 1e20\n", 1))  # YAML: a string
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"djsb: error: {path}:5: simulation.total_tasks: ") and err.count("\n") == 1, err
    # 2^32 - 3 tasks pass the bound; 64 MiB then is less than a byte each, which total_memory says
    path = written(tmp_path, RUN.replace("  total_tasks: 1\n", "  total_tasks: 4294967293\n", 1))
    one_line_failure(capsys, ["validate", str(path)], 2, f"{path}:7: simulation.total_memory: less than one "
                     "byte for each of the 4294967293 tasks (total_tasks)")


def test_a_word_where_a_generator_takes_a_number(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (CONFIGS / "sweep-seeds.yaml").read_text()
    path = written(tmp_path, text.replace("arrival_rate: [0.08, 0.144]", "arrival_rate: [0.08, fast]"))
    message = f"{path}:18: sweep.grid.workload.params.arrival_rate[1]: expected a number, got str 'fast'"
    one_line_failure(capsys, ["validate", str(path)], 2, message)
    one_line_failure(capsys, ["sweep", str(path), "-o", str(tmp_path / "out")], 2, message, tmp_path / "out")
    path = written(tmp_path, text[:text.index("sweep:")].replace("n_jobs: 500", "n_jobs: 500.5"), "one.yaml")
    one_line_failure(capsys, ["simulate", str(path), "-o", str(tmp_path / "out")], 2,
                     f"{path}:9: workload.params.n_jobs: expected a whole number, got float 500.5", tmp_path / "out")


def test_a_csv_given_as_a_config_is_quoted_short(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = "name,value,cv\n" + "".join(f"metric_{i},{i * 1.5},0.{i:04d}\n" for i in range(150))
    path = written(tmp_path, text, "footprint.csv")
    assert len(text) > 3000
    scalar = yaml.safe_load(text)  # YAML reads the whole file as one string, its lines joined
    message = (f"{path}:1: (top level): expected a mapping of keys, got str of {len(scalar)} characters "
               f"{scalar[:60]!r}...")
    one_line_failure(capsys, ["validate", str(path)], 2, message)
    one_line_failure(capsys, ["simulate", str(path), "-o", str(tmp_path / "out")], 2, message, tmp_path / "out")
    assert len(message) < 250


def test_validate_checks_every_file_and_names_each_bad_one(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "trace.swf").write_text("1 0 0 10 1 -1 -1 1 100 -1 1 1 1 1 1 1 -1 -1\n")
    good = written(tmp_path, SIMULATE, "good.yaml")
    bad_value = written(tmp_path, SIMULATE.replace("count: 2", "count: two"), "bad.yaml")
    missing = tmp_path / "missing.yaml"
    (tmp_path / "empty.swf").write_text("")
    empty_trace = written(tmp_path, SIMULATE.replace("trace.swf", "empty.swf"), "empty.yaml")
    assert main(["validate", str(bad_value), str(good), str(missing), str(empty_trace)]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"djsb: error: {bad_value}:4: cluster.nodes[0].count: expected a whole number >= 1, got str 'two'",
        f"djsb: error: {missing}: cannot read the file (No such file or directory)",
        f"djsb: error: {empty_trace}: {tmp_path / 'empty.swf'}: no job in the trace: it has no record (empty, "
        "or a header alone)"]
    assert captured.out == f"{good}: valid simulate config; 1 job(s) on 8 cores\n"  # no summary: it failed


SWF_JOB = "{id} {submit} 0 10 {cpus} -1 -1 {cpus} 100 -1 1 1 1 1 1 1 -1 -1\n"


def test_skipped_trace_records_are_said_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "trace.swf").write_text(SWF_JOB.format(id=1, submit=0, cpus=1) + "hello world garbage\n"
                                        + SWF_JOB.format(id=2, submit=5, cpus=2) + "3 5 x 10 1\n")
    path = written(tmp_path, SIMULATE)
    out = tmp_path / "out"
    assert main(["simulate", str(path), "-o", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert "djsb: 2 trace record(s) skipped (2 malformed_field_count): skipped.csv lists each" in err
    assert pd.read_csv(out / "skipped.csv")["line"].tolist() == [2, 4]
    assert pd.read_csv(out / "jobs.csv")["job_id"].tolist() == [1, 2]
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (f"{path}: valid simulate config; 2 job(s) on 8 cores, "
                                                       "2 trace record(s) skipped (2 malformed_field_count)")


def test_rejected_jobs_are_said_and_a_trace_of_none_that_fits_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the cluster is 2 nodes of 4 cores: a job of 16 or 32 CPUs can never start
    (tmp_path / "trace.swf").write_text(SWF_JOB.format(id=1, submit=0, cpus=1) + SWF_JOB.format(id=2, submit=5,
                                                                                               cpus=32))
    path = written(tmp_path, SIMULATE)
    out = tmp_path / "out"
    assert main(["simulate", str(path), "-o", str(out)]) == 0
    assert ("djsb: 1 job(s) rejected (job 2: 32 CPUs exceed partition batch's size): rejected.csv lists each"
            in capsys.readouterr().err.splitlines())
    assert pd.read_csv(out / "rejected.csv")["job_id"].tolist() == [2]

    (tmp_path / "trace.swf").write_text(SWF_JOB.format(id=1, submit=0, cpus=16) + SWF_JOB.format(id=2, submit=5,
                                                                                                cpus=32))
    message = (f"{path}:2: workload.swf: no job of the workload can run on this cluster: each of its 2 job(s) "
               "would be rejected (job 1: 16 CPUs exceed partition batch's size)")
    one_line_failure(capsys, ["validate", str(path)], 2, message)
    one_line_failure(capsys, ["simulate", str(path), "-o", str(tmp_path / "none")], 2, message, tmp_path / "none")
    one_line_failure(capsys, ["replay-stats", str(path), "-o", str(tmp_path / "none")], 2, message,
                     tmp_path / "none")
