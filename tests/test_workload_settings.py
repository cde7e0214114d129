"""The workload section's replay keys, one declaration each (djsb/simulate/experiment.py's
Replay): the reference page is generated from them and the config is read through them."""

from __future__ import annotations

from pathlib import Path

from support import assert_experiment_error

from djsb.setting import declared
from djsb.simulate.experiment import Replay, load_experiment, reference

ROOT = Path(__file__).resolve().parents[1]
SIMULATE = """\
seed: 1
cluster: {nodes: [{count: 2, cores: 4}], partitions: [{name: p, max_time: 100}]}
workload:
  generator: poisson_exponential
  params: {n_jobs: 5, arrival_rate: 0.1, service_rate: 0.1}
  estimate: runtime_factor
  estimate_factor: 2
  at_time_limit: kill
"""
"""A simulate config whose replay keys are on lines 6-8."""


def test_the_reference_page_is_the_declarations() -> None:
    page = (ROOT / "docs" / "reference" / "workload.md").read_text()
    assert page == reference(), "docs/reference/workload.md is stale: run make reference"
    for name in declared(Replay):
        assert f"| `{name}` |" in page
    assert "| `estimate` | requested |" in page and "| `at_time_limit` | run |" in page


def test_the_declared_readers_read_the_replay(tmp_path: Path) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text(SIMULATE)
    experiment = load_experiment(path)
    assert experiment.replay == Replay("runtime_factor", 2.0, "kill")
    # runtime_factor 2: every job's limit is twice its run time; kill: the model does not extend limits
    assert all(job.requested_time == 2 * job.run_time for job in experiment.jobs)
    assert experiment.scheduler.extend_limit is False
    path.write_text(SIMULATE.replace("at_time_limit: kill", "at_time_limit: later"))
    assert_experiment_error(path, 8, "workload.at_time_limit", "expected one of run, kill")
