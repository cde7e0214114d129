"""GPU requests in a calibration: ``workload.gpus`` of a calibration file (drawn with its seed,
checked key by key), the sbatch option each request is submitted with, and the Slurm job module's
submit command carrying it as one quoted argument."""

from __future__ import annotations

import shlex
from collections import Counter
from pathlib import Path

import pytest

from djsb.calibrate.slurm_replay import sleep_request, slurm_ready
from djsb.calibrate.slurm_side import job_modules, slurm_module
from djsb.calibrate.spec import load_calibration
from djsb.errors import ConfigError
from djsb.transport import LocalTransport
from djsb.workloads.gpus import GpuRequest
from djsb.workloads.job import TraceJob
from job_modules.slurm.module import SlurmJobModule

WINDOW = Path(__file__).parent / "fixtures" / "calibrate" / "kth_sp2_window.swf"


def calibration_file(tmp_path: Path, gpus: str, seed: int = 1) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(f"seed: {seed}\nworkload:\n  swf: {WINDOW}\n  gpus: {gpus}\nslurm: {{partition: oversub}}\n")
    return path


def test_a_share_of_the_jobs_ask_gpus_drawn_with_the_seed(tmp_path: Path) -> None:
    # the window holds 32 jobs: a share of 0.5 is 16 of them, each asking 1 or 2 GPUs per node or per job
    jobs = load_calibration(calibration_file(tmp_path, "{share: 0.5, counts: [1, 2], per: [node, job]}")).jobs
    asking = [job.gpus for job in jobs if job.gpus is not None]
    assert len(jobs) == 32 and len(asking) == 16
    assert {(gpus.count, gpus.per, gpus.type) for gpus in asking} <= \
        {(1, "node", None), (2, "node", None), (1, "job", None), (2, "job", None)}
    assert set(Counter(gpus.per for gpus in asking)) == {"node", "job"}
    # the same file gives the same draws; another seed other ones
    assert load_calibration(calibration_file(tmp_path, "{share: 0.5, counts: [1, 2], per: [node, job]}")).jobs \
        == jobs
    other = load_calibration(calibration_file(tmp_path, "{share: 0.5, counts: [1, 2], per: [node, job]}", 2)).jobs
    assert [j.gpus for j in other] != [j.gpus for j in jobs]
    # one per and a type: every request says so; share 1: every job
    typed = load_calibration(calibration_file(tmp_path, "{share: 1, counts: [3], per: task, type: a100}")).jobs
    assert {j.gpus for j in typed} == {GpuRequest(3, "task", "a100")}


@pytest.mark.parametrize(("gpus", "message"), [
    ("{share: 1.5, counts: [1]}", "c.yaml:4: workload.gpus.share: must be at most 1"),
    ("{share: 0, counts: [1]}", "workload.gpus.share: must be a finite number > 0"),
    ("{counts: [1]}", "workload.gpus: missing key 'share'"),
    ("{share: 0.5, counts: []}", "workload.gpus.counts: expected a non-empty list"),
    ("{share: 0.5, counts: [0]}", "workload.gpus.counts[0]: must be >= 1"),
    ("{share: 0.5, counts: [65]}", "workload.gpus.counts: a count above 64 GPUs: 65"),
    ("{share: 0.5, counts: [1], per: gpu}", "workload.gpus.per: expected one of node, job, task"),
    ("{share: 0.5, counts: [1], per: []}", "workload.gpus.per: expected node, job, task or a non-empty list"),
    ("{share: 0.5, counts: [1], type: 'a;b'}", "workload.gpus.type: 'a;b' is not a Slurm name"),
    ("{share: 0.5, counts: [1], typo: 1}", "workload.gpus.typo: unknown key"),
    ("2", "workload.gpus: expected a mapping"),
])
def test_a_bad_gpus_key_is_one_line_naming_it(tmp_path: Path, gpus: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_calibration(calibration_file(tmp_path, gpus))
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_each_request_is_its_sbatch_option_and_reads_back() -> None:
    for request, option in [(GpuRequest(2, "node", "a100"), "--gpus-per-node=a100:2"),
                            (GpuRequest(3, "job"), "--gpus=3"), (GpuRequest(1, "task", "v100"), "--gpus-per-task=v100:1")]:
        assert request.sbatch_option() == option
        assert GpuRequest.from_option(*option.split("=")) == request


def test_the_submit_command_carries_the_gpu_option_quoted() -> None:
    (ready,) = slurm_ready([TraceJob(7, 0, 10, 3, requested_time=60, gpus=GpuRequest(2, "job", "a100"))])
    assert ready.gpus == GpuRequest(2, "job", "a100")  # kept for Slurm and the model alike
    module = slurm_module("oversub", LocalTransport(), gpus=ready.gpus)
    assert isinstance(module, SlurmJobModule)
    words = shlex.split(module.get_submit_command(sleep_request(ready, "/tmp/w")))
    assert words.count("--gpus=a100:2") == 1 and "--ntasks=3" in words
    # a type a shell would read is one quoted word (the model's requests come from workloads)
    odd = slurm_module("oversub", LocalTransport(), gpus=GpuRequest(1, "node", "x;touch /tmp/p"))
    line = odd.get_submit_command(sleep_request(ready, "/tmp/w"))
    assert "'--gpus-per-node=x;touch /tmp/p:1'" in line and shlex.split(line).count("--gpus-per-node=x;touch /tmp/p:1") == 1
    # without a request no GPU option
    plain = slurm_module("oversub", LocalTransport()).get_submit_command(sleep_request(ready, "/tmp/w"))
    assert "--gpu" not in plain


def test_each_gpu_request_gets_its_module_and_the_others_the_run_s(tmp_path: Path) -> None:
    calibration = load_calibration(calibration_file(tmp_path, "{share: 0.5, counts: [1, 2], per: [node, job]}"))
    module = slurm_module("oversub", LocalTransport())
    module_of = job_modules(calibration, module)
    for job in calibration.jobs:
        made = module_of(job)
        if job.gpus is None:
            assert made is module
        else:
            assert isinstance(made, SlurmJobModule) and made.sbatch_options == (job.gpus.sbatch_option(),)
            assert module_of(job) is made  # made once per request
