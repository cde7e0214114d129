"""`djsb run` on a scheduler asks it, before anything is created, how many CPUs the jobs' nodes have,
and refuses a config asking for more with one line and exit 2. No live daemon: the answers are
`scontrol show partition` / `scontrol show node` captured from the Slurm mini-cluster
(tests/fixtures/slurm_show: 4 nodes n1..n4 of CPUTot=2, partitions shared/oversub/exclusive of
TotalCPUs=8); Grid Engine's qhost is also asked of the live one-host cell."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from support import ScriptedTransport, fail, ok

import djsb.commands.run
from djsb.cli import main
from djsb.transport import LocalTransport
from job_modules.lsf import LsfJobModule
from job_modules.lsf.parsers import parse_lshosts
from job_modules.sge import SgeJobModule
from job_modules.sge.parsers import parse_qhost
from job_modules.slurm import SlurmJobModule

REPO = Path(__file__).resolve().parent.parent
SHOW = REPO / "tests" / "fixtures" / "slurm_show"
PARTITIONS = (SHOW / "show_partition.txt").read_text()
NODES = (SHOW / "show_node.txt").read_text()


def slurm() -> ScriptedTransport:
    return ScriptedTransport([("scontrol show partition", ok(PARTITIONS)),
                              ("scontrol show node 'n[1-4]'", ok(NODES))])


def test_the_partitions_nodes_from_scontrol() -> None:
    # the largest of n1..n4 has CPUTot=2; partition shared has TotalCPUs=8 (4 x 2)
    for options in ({"partition": "shared"}, {}):  # without the option: Slurm's Default=YES partition, shared
        transport = slurm()
        capacity = SlurmJobModule(options, transport).node_capacity()
        assert capacity is not None and (capacity.per_task, capacity.per_job) == (2, 4 * 2)
        assert capacity.where.startswith("partition shared's largest node has 2 CPUs")
        assert transport.commands == ["scontrol show partition", "scontrol show node 'n[1-4]'"]


def test_no_answer_is_no_check() -> None:
    assert SlurmJobModule({"partition": "gpu"}, slurm()).node_capacity() is None  # not in scontrol's list
    # a login node without scontrol on its PATH: the scheduler says nothing, the run is not refused
    missing = ScriptedTransport([("scontrol show partition", fail("sh: 1: scontrol: not found", 127))])
    assert SlurmJobModule({"partition": "shared"}, missing).node_capacity() is None


def config_file(tmp_path: Path, **simulation: int) -> Path:
    config = yaml.safe_load((REPO / "configs" / "slurm-mini.yaml").read_text())
    config["simulation"].update(simulation)
    config.pop("output")
    path = tmp_path / "mini.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def line_of(path: Path, key: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if line.strip().startswith(key + ":"))


@pytest.mark.parametrize(("simulation", "key", "says"), [
    ({"cpus_per_task": 4}, "cpus_per_task", "4 CPUs per task, but partition shared's largest node has 2 CPUs"),
    # 5 tasks x 2 CPUs = 10 > the partition's 8
    ({"total_tasks": 5}, "total_tasks", "5 tasks x 2 CPUs = 10 CPUs, but partition shared's largest node"),
])
def test_run_refuses_more_cpus_than_the_nodes_before_creating_anything(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        simulation: dict[str, int], key: str, says: str) -> None:
    transport = slurm()
    monkeypatch.setattr(djsb.commands.run, "open_transport", lambda config: transport)
    path = config_file(tmp_path, **simulation)
    run_dir = tmp_path / "runs" / "mini"
    assert main(["run", str(path), "-o", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"djsb: error: {path}:{line_of(path, key)}: simulation.{key}: {says}")
    assert not (tmp_path / "runs").exists()  # no run directory left behind
    assert not any(c.startswith("sbatch") for c in transport.commands)  # nothing submitted


def test_a_config_that_fits_passes_the_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    transport = slurm()
    monkeypatch.setattr(djsb.commands.run, "open_transport", lambda config: transport)
    config = djsb.commands.run.load_config(config_file(tmp_path))  # 2 tasks x 2 CPUs: fits a node, 4 <= 8
    session = djsb.commands.run.open_session(config, tmp_path / "run")
    session.close()
    assert transport.commands == ["scontrol show partition", "scontrol show node 'n[1-4]'"]


QHOST = (REPO / "tests" / "fixtures" / "sge" / "qhost.txt").read_text()


def test_grid_engine_hosts_from_qhost() -> None:
    # n1, n2 of 2 CPUs and n3 of 4 answer; 'global' and the unreachable 'down' (all '-') do not count
    assert parse_qhost(QHOST) == {"n1": 2, "n2": 2, "n3": 4}
    transport = ScriptedTransport([("qhost", ok(QHOST))])
    capacity = SgeJobModule({}, transport).node_capacity()
    # a job's slots stay on one host (allocation_rule $pe_slots): the whole job fits in n3's 4 CPUs
    assert capacity is not None and (capacity.per_task, capacity.per_job) == (4, 4)
    assert capacity.where == "the largest of the 3 execution hosts has 4 CPUs and a job's slots stay on one host (qhost)"
    assert transport.commands == ["qhost"]
    missing = ScriptedTransport([("qhost", fail("sh: 1: qhost: not found", 127))])
    assert SgeJobModule({}, missing).node_capacity() is None


def test_grid_engine_capacity_from_the_live_cells_qhost(sge_cell: None) -> None:
    # the one-host cell of .ci/sge.sh runs on this machine: qhost's NCPU is this host's CPU count
    capacity = SgeJobModule({}, LocalTransport()).node_capacity()
    assert capacity is not None
    assert (capacity.per_task, capacity.per_job) == (os.cpu_count(), os.cpu_count())


LSHOSTS = (REPO / "tests" / "fixtures" / "lsf" / "lshosts.txt").read_text()


def test_lsf_server_hosts_from_lshosts() -> None:
    # server hosts of 8, 8 and 16 CPUs; the client host (server No, ncpus -) runs no job
    assert parse_lshosts(LSHOSTS) == {"node211": 8, "node212": 8, "node213": 16}
    transport = ScriptedTransport([("lshosts", ok(LSHOSTS))])
    capacity = LsfJobModule({}, transport).node_capacity()
    # a task's cores on one host (the largest, 16); a job's tasks over all of them: 8 + 8 + 16
    assert capacity is not None and (capacity.per_task, capacity.per_job) == (16, 8 + 8 + 16)
    assert capacity.where == "the largest of the 3 server hosts has 16 CPUs and all of them 32 (lshosts)"
    assert transport.commands == ["lshosts"]
