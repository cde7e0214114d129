"""The mini-cluster's GPUs as Slurm serves them (DJSB_SLURM_GPUS; .ci/slurm-second.env gives the
calibrations' cluster two a100 per node): every GPU request form runs and is counted on its nodes,
and a job waits for GPUs, not CPUs, when the GPUs are all taken. Skips on a cluster without GPUs."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from slurm_plugin import SlurmCluster
from support import wait_until

from djsb.jobs.scontrol import parse_show_records
from djsb.slurm_text import gres_gpus, tres

pytestmark = [pytest.mark.slurm, pytest.mark.alone]


def run(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout


def nodes() -> list[dict[str, str]]:
    return parse_show_records(run("scontrol", "show", "node"))


@pytest.fixture
def gpus(slurm_cluster: SlurmCluster) -> Iterator[dict[str, int]]:
    """Each idle node's GPUs; the jobs the test submitted (named djsb-gpu) cancelled afterwards, and
    gone (the calibrations that follow on this cluster want its nodes idle)."""
    found = {n["NodeName"]: sum(count for _, count in gres_gpus(n.get("Gres", ""))) for n in nodes()
             if n["NodeName"] in slurm_cluster.nodes}
    if not all(found.values()):
        pytest.skip("the mini-cluster's nodes have no GPUs: start it with DJSB_SLURM_GPUS=a100:2")
    yield found
    run("scancel", "--name=djsb-gpu")
    wait_until(lambda: not run("squeue", "--noheader", "--name=djsb-gpu").strip(), 60,
               "the cancelled GPU jobs to leave the nodes")


def submit(*options: str) -> str:
    """A 5-minute sleep in the oversub partition, whose jobs share no CPU unless they ask."""
    return run("sbatch", "--parsable", "--job-name=djsb-gpu", "--partition=oversub", "--time=5",
               "--output=/dev/null", *options, "--wrap=sleep 300").strip()


def state(job_id: str) -> tuple[str, str, str]:
    """squeue's state, reason and allocated TRES of a job."""
    line = run("squeue", "--noheader", f"--jobs={job_id}", "--Format=State:|,Reason:|,tres-alloc:")
    state, reason, alloc = (line.strip().split("|") + ["", "", ""])[:3]
    return state, reason, alloc


def test_a_gpu_job_waits_for_gpus_when_they_are_all_taken(gpus: dict[str, int]) -> None:
    # One job takes every GPU of every node (--gpus-per-node, one CPU on each), leaving each node a
    # CPU or more free; a job of one CPU asking one GPU (--gres form) then waits for Resources, and
    # one asking none runs beside it.
    per_node = min(gpus.values())
    everything = submit(f"--nodes={len(gpus)}", f"--gpus-per-node={per_node}", "--ntasks-per-node=1")
    wait_until(lambda: state(everything)[0] == "RUNNING", 60, "the job of all the GPUs to start")
    assert tres(state(everything)[2])["gres/gpu"] == per_node * len(gpus)
    for node in nodes():
        if node["NodeName"] in gpus:
            assert tres(node["AllocTRES"]).get("gres/gpu") == per_node, node["AllocTRES"]
    one = submit("--gres=gpu:1")
    plain = submit()
    wait_until(lambda: state(plain)[0] == "RUNNING", 60, "the job without GPUs to start")
    wait_until(lambda: state(one)[:2] == ("PENDING", "Resources"), 30, "the GPU job to wait for Resources")
    run("scancel", everything)
    wait_until(lambda: state(one)[0] == "RUNNING", 60, "the GPU job to start once the GPUs are free")
    assert tres(state(one)[2])["gres/gpu"] == 1


@pytest.mark.parametrize(("options", "allocated"), [
    (("--gpus=3",), 3),                                   # per job: over two nodes of two GPUs
    (("--ntasks=2", "--gpus-per-task=1"), 2),             # per task
    (("--nodes=2", "--gpus-per-node=2"), 4),              # per node
])
def test_each_request_form_is_allocated_its_gpus(gpus: dict[str, int], options: tuple[str, ...],
                                                  allocated: int) -> None:
    if min(gpus.values()) < 2 or len(gpus) < 2:
        pytest.skip("needs two nodes of two GPUs at least")
    job = submit(*options)
    wait_until(lambda: state(job)[0] == "RUNNING", 60, f"the job asking {' '.join(options)} to start")
    assert tres(state(job)[2])["gres/gpu"] == allocated
    run("scancel", job)
