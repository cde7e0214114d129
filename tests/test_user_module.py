"""A user's job module loaded by path runs the benchmark through the paper's command API."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from djsb.cli import main
from djsb.errors import ConfigError
from djsb.jobs import CommandJobModule
from djsb.jobs.loader import load_job_module
from djsb.transport import LocalTransport

FIXTURE = Path(__file__).parent / "fixtures" / "shell_module.py"


def test_module_file_is_loaded_by_path() -> None:
    module = load_job_module(str(FIXTURE), {}, LocalTransport())
    assert isinstance(module, CommandJobModule)
    assert module.name == "shell"


def test_file_without_module_class_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "empty_module.py"
    path.write_text("X = 1\n")
    with pytest.raises(ConfigError, match="MODULE"):
        load_job_module(str(path), {}, LocalTransport())


def test_benchmark_through_the_command_api(tmp_path: Path, apps_bin: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "shell.yaml"
    config.write_text(f"""\
general: {{num_of_samples: 1, sleep_min_time: 0.1, sleep_max_time: 0.2, num_of_ref_analysis: 1,
          num_of_dyn_analysis: 1, scenarios: [stopcont], poll_interval: 0.1}}
job_module: {{name: {FIXTURE}}}
simulation: {{total_tasks: 1, cpus_per_task: 2, total_memory: 64MiB, exec_time: 2}}
analytics: {{total_tasks: 1, cpus_per_task: 1, total_memory: 16MiB, exec_time: 0.5}}
""")
    assert main(["run", str(config), "-o", str(tmp_path / "run")]) == 0
    jobs = pd.read_csv(tmp_path / "run" / "jobs.csv")
    assert len(jobs) == 2 + 2 + 2
    assert (jobs["state"] == "COMPLETED").all()
    assert (jobs["times_source"] == "harness").all()
    sim = jobs[(jobs["stage"] == "execution") & (jobs["app"] == "simulation")].iloc[0]
    ana = jobs[(jobs["stage"] == "execution") & (jobs["app"] == "analytics")].iloc[0]
    # the suspend/resume commands really stopped the simulation for the analytics' duration, and
    # that time is inside its execution time, on top of some running (compared with what this run
    # measured, not with the reference run, which a loaded machine may have slowed more)
    assert sim["suspended_s"] > 0.5 * ana["exec"]
    assert sim["exec"] > sim["suspended_s"] > 0
