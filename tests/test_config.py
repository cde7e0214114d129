"""Config validation: each bad config gives one line naming file, line and key, and exit status 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from djsb.cli import main
from djsb.config import load_config
from djsb.yamlnodes import load_yaml, parse_size

GOOD = """\
general:
  num_of_samples: 2
  sleep_min_time: 1
  sleep_max_time: 2
  num_of_ref_analysis: 2
  num_of_dyn_analysis: [1, 2]
  scenarios: [oversubscription, stopcont, dynamic]
  seed: 3
job_module: {name: local}
simulation:
  total_tasks: 1
  cpus_per_task: 2
  total_memory: 4GiB
  exec_time: 300
analytics:
  total_tasks: 1
  cpus_per_task: 1
  total_memory: 50MiB
  exec_time: 10
  same_nodes_as_sim: true
"""


def test_good_config_loads_with_units(tmp_path: Path) -> None:
    path = tmp_path / "good.yaml"
    path.write_text(GOOD)
    config = load_config(path)
    assert config.simulation.total_memory == 4 * 1024**3
    assert config.analytics.total_memory == 50 * 1024**2
    assert config.general.num_of_dyn_analysis == (1, 2)
    assert config.general.scenarios == ("oversubscription", "stopcont", "dynamic")


@pytest.mark.parametrize(("text", "size"), [("4GiB", 4 * 2**30), ("50MiB", 50 * 2**20), ("1.5G", 1.5 * 2**30),
                                            ("512M", 512 * 2**20), ("2GB", 2_000_000_000), (1024, 1024), ("2 kib", 2048)])
def test_parse_size(text: str | int, size: int) -> None:
    assert parse_size(text) == size


# (description, replace old -> new in GOOD, expected line, text the message must contain)
BAD = [
    ("unknown top key", ("general:\n", "generl:\n"), 1, "generl: unknown key"),
    ("unknown general key", ("  seed: 3", "  sed: 3"), 8, "general.sed: unknown key"),
    ("samples zero", ("num_of_samples: 2", "num_of_samples: 0"), 2, "general.num_of_samples: must be >= 1"),
    ("samples a string", ("num_of_samples: 2", "num_of_samples: two"), 2, "expected a whole number"),
    ("samples a float", ("num_of_samples: 2", "num_of_samples: 2.5"), 2, "expected a whole number"),
    ("sleep min > max", ("sleep_min_time: 1", "sleep_min_time: 5"), 4, "general.sleep_max_time: sleep_max_time (2)"),
    ("negative sleep", ("sleep_min_time: 1", "sleep_min_time: -1"), 3, "general.sleep_min_time: must be"),
    ("unknown scenario", ("[oversubscription, stopcont, dynamic]", "[oversubscription, gang]"), 7,
     "general.scenarios[1]: unknown scenario"),
    ("duplicate scenario", ("[oversubscription, stopcont, dynamic]", "[stopcont, stop&continue]"), 7,
     "a scenario is listed twice"),
    ("dyn analysis zero", ("[1, 2]", "[1, 0]"), 6, "general.num_of_dyn_analysis[1]: must be >= 1"),
    ("dyn analysis empty", ("[1, 2]", "[]"), 6, "general.num_of_dyn_analysis"),
    ("bad memory unit", ("total_memory: 4GiB", "total_memory: 4 parsecs"), 13, "simulation.total_memory"),
    ("zero exec time", ("exec_time: 300", "exec_time: 0"), 14, "simulation.exec_time: must be a time > 0 s, got 0"),
    ("missing tasks", ("  total_tasks: 1\n  cpus_per_task: 2\n", "  cpus_per_task: 2\n"), 10,
     "simulation: missing key 'total_tasks'"),
    ("same_nodes on the simulation", ("  exec_time: 300\n", "  exec_time: 300\n  same_nodes_as_sim: true\n"), 15,
     "simulation.same_nodes_as_sim: unknown key"),
    ("same_nodes not a bool", ("same_nodes_as_sim: true", "same_nodes_as_sim: maybe"), 20,
     "analytics.same_nodes_as_sim: expected true or false"),
    ("analytics larger than simulation", ("  cpus_per_task: 1\n", "  cpus_per_task: 3\n"), 15,
     "analytics: the analytics needs 3 CPUs but shares the simulation's 2"),
    ("dynamic cannot lend", ("  cpus_per_task: 1\n  total_memory: 50MiB", "  cpus_per_task: 2\n  total_memory: 50MiB"),
     15, "must lend 2 of its 2 CPUs"),
    ("misspelt section", ("analytics:\n", "analytix:\n"), 15, "analytix: unknown key"),
    ("unknown module", ("{name: local}", "{name: pbs}"), 9, "job_module.name: unknown job module 'pbs'"),
    ("bad local module option", ("{name: local}", "{name: local, options: {cpu: 1}}"), 9,
     "job_module.options.cpu: unknown key: did you mean 'cpus'?"),
    ("bad slurm option value", ("job_module: {name: local}", "job_module:\n  name: slurm\n  options:\n"
                                "    partition: shared\n    time_factor: three"), 13,
     "job_module.options.time_factor: expected a number, got str 'three'"),
    ("slurm cross-option check", ("job_module: {name: local}", "job_module:\n  name: slurm\n  options:\n"
                                  "    memory: per_node"), 12,
     "job_module.options.memory: per_node needs tasks_per_node"),
    ("sge option not a name", ("job_module: {name: local}", "job_module:\n  name: sge\n  options: {queue: all q}"),
     11, "job_module.options.queue: 'all q' is not a Grid Engine object name (contains ' '"),
    ("missing module file", ("{name: local}", "{name: ./nope/mine.py}"), 9, "job_module.name: no module file at"),
    ("duplicate key", ("  seed: 3\n", "  seed: 3\n  seed: 4\n"), 9, "general.seed: duplicate key"),
    ("invalid yaml", ("  seed: 3\n", "  seed: [3\n"), None, "invalid YAML"),
    ("node list wrong type", ("  exec_time: 300\n", "  exec_time: 300\n  node_host_names: {a: 1}\n"), 15,
     "simulation.node_host_names: expected host names, got a mapping"),
    ("local module over ssh", ("{name: local}", "{name: local, ssh: {host: login1}}"), 9,
     "job_module.ssh: the local module runs jobs in this process and cannot run over SSH"),
    ("ssh without host", ("{name: local}", "{name: slurm, ssh: {port: 22}}"), 9, "job_module.ssh: missing key 'host'"),
    ("ssh port out of range", ("{name: local}", "{name: slurm, ssh: {host: a, port: 70000}}"), 9,
     "job_module.ssh.port: a port is at most 65535"),
    ("module name not a string", ("job_module: {name: local}", "job_module: {name: 3}"), 9,
     "job_module.name: expected a non-empty string"),
]


@pytest.mark.parametrize(("what", "change", "line", "needle"), BAD, ids=[b[0] for b in BAD])
def test_bad_config_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str,
                                    change: tuple[str, str], line: int | None, needle: str) -> None:
    old, new = change
    assert old in GOOD, what
    path = tmp_path / "bad.yaml"
    path.write_text(GOOD.replace(old, new, 1))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    assert needle in err
    assert str(path) in err
    if line is not None:
        assert f"{path}:{line}:" in err


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "nope.yaml")]) == 2
    assert "cannot read the file" in capsys.readouterr().err


def test_cli_subprocess_exit_status_and_no_traceback(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(GOOD.replace("num_of_samples: 2", "num_of_samples: -4"))
    done = subprocess.run([sys.executable, "-m", "djsb.cli", "validate", str(path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == f"djsb: error: {path}:2: general.num_of_samples: must be >= 1, got -4"


def test_resolved_config_loads_back_identical(tmp_path: Path) -> None:
    import yaml

    path = tmp_path / "good.yaml"
    path.write_text(GOOD)
    config = load_config(path)
    again = tmp_path / "resolved.yaml"
    again.write_text(yaml.safe_dump(config.to_dict()))
    reloaded = load_config(again)
    assert reloaded.to_dict() == config.to_dict()
    assert reloaded.simulation == config.simulation and reloaded.general == config.general


def test_an_empty_value_is_null_at_its_keys_line(tmp_path: Path) -> None:
    """``nodes:`` with nothing after it is YAML's null, reported where the key is, never a traceback."""
    path = tmp_path / "empty.yaml"
    path.write_text("cluster:\n  nodes:\n  name: x\n")
    nodes = load_yaml(path).value["cluster"].value["nodes"]
    assert (nodes.value, nodes.line, nodes.key) == (None, 2, "cluster.nodes")
