"""GPU requests in a calibration: ``workload.gpus`` of a calibration file (drawn with its seed,
checked key by key), the sbatch option each request is submitted with, and the Slurm job module's
submit command carrying it as one quoted argument. Live: a calibration of GPU jobs on the
mini-cluster with GPUs (DJSB_SLURM_GPUS) and on the model built from its ``scontrol show`` answers,
held to the calibration's targets, and Slurm's allocations checked against the requests and the
nodes' GPUs (sacct's AllocTRES)."""

from __future__ import annotations

import dataclasses
import json
import shlex
import subprocess
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from slurm_plugin import SlurmCluster
from support import assert_calibration_error

from djsb.calibrate.compare import Comparison, compare, within_spread
from djsb.calibrate.model_replay import SlurmModel, in_partitions, model_config, model_replay, within_nodes
from djsb.calibrate.run import run_calibration
from djsb.calibrate.slurm_replay import sleep_request, slurm_ready
from djsb.calibrate.slurm_side import job_modules, slurm_module
from djsb.calibrate.spec import load_calibration
from djsb.jobs.hostlist import expand_hostlist, split_host_list
from djsb.jobs.scontrol import parse_show_records
from djsb.slurm_text import gres_gpus, tres
from djsb.slurmsite.slurm_config import cluster_spec, parse_show_config, priority_plugin
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
    assert_calibration_error(calibration_file(tmp_path, gpus), message)


def test_each_request_is_its_sbatch_option_and_reads_back() -> None:
    for request, option in [(GpuRequest(2, "node", "a100"), "--gpus-per-node=a100:2"),
                            (GpuRequest(3, "job"), "--gpus=3"), (GpuRequest(1, "task", "v100"), "--gpus-per-task=v100:1")]:
        assert request.sbatch_options() == (option,)
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
            assert isinstance(made, SlurmJobModule) and made.sbatch_options == job.gpus.sbatch_options()
            assert module_of(job) is made  # made once per request


# -- live: the GPU jobs on the mini-cluster with GPUs and on the model built from it ---------------

GPU_CALIBRATION = """\
# 32 KTH-SP2 jobs (times x 0.6) on the 8-CPU oversub partition, 19 of them asking 1 or 2 GPUs per node or job
seed: 1
workload:
  swf: {swf}
  time_scale: 0.6
  gpus: {{share: 0.6, counts: [1, 2], per: [node, job]}}
slurm:
  partition: oversub
  runs: 2
  work_dir: /tmp/djsb-calibrate-gpus
  poll_interval: 2
"""


def cluster_gpus() -> dict[str, int]:
    """Each node's GPUs as the running cluster shows them (scontrol show node's Gres)."""
    shown = subprocess.run(["scontrol", "show", "node"], capture_output=True, text=True, timeout=60, check=True)
    return {record["NodeName"]: sum(n for _, n in gres_gpus(record.get("Gres", "")))
            for record in parse_show_records(shown.stdout)}


def sacct_gpus(slurm_ids: list[str]) -> dict[str, tuple[list[str], int]]:
    """Each job's nodes and allocated GPUs (sacct's NodeList and AllocTRES gres/gpu)."""
    done = subprocess.run(["sacct", "-X", "-n", "-P", "-j", ",".join(slurm_ids), "-o", "JobID,NodeList,AllocTRES"],
                          capture_output=True, text=True, timeout=60, check=True)
    found = {}
    for line in done.stdout.splitlines():
        job_id, node_list, alloc = line.split("|")
        nodes = [host for item in split_host_list(node_list) for host in expand_hostlist(item)]
        found[job_id] = (nodes, int(tres(alloc).get("gres/gpu", 0)))
    return found


def model_figures(out: Path, jobs: list[TraceJob]) -> tuple[tuple[Comparison, pd.DataFrame], tuple[Comparison, pd.DataFrame]]:
    """The model's replay of the calibration in ``out`` against Slurm's, as the calibration made it
    (from Slurm's saved answers and watched passes), and the same without any GPU: each compared
    with Slurm's run 1, and the replay itself."""
    reference = pd.read_csv(out / "slurm_1.csv", index_col="job_id")
    passes = pd.read_csv(out / "passes.csv")
    first = passes[passes["run"] == 1]
    watched = {name: first.loc[first["scheduler"] == name, "time"].tolist() for name in ("main", "backfill")}
    def show(what: str) -> list[dict[str, str]]:
        return parse_show_records((out / "slurm" / f"show_{what}.txt").read_text())
    cluster = cluster_spec(show("partition"), show("node"), "oversub")
    config = parse_show_config((out / "slurm" / "show_config.txt").read_text())
    priority, _ = priority_plugin(config, None, None, [])
    bare = dataclasses.replace(cluster, nodes=tuple(dataclasses.replace(n, gpus=()) for n in cluster.nodes))
    figures: list[tuple[Comparison, pd.DataFrame]] = []
    for model_cluster, model_jobs in ((cluster, jobs), (bare, [dataclasses.replace(j, gpus=None) for j in jobs])):
        fitted, _ = within_nodes(in_partitions(model_jobs, model_cluster), model_cluster)
        model = SlurmModel(model_cluster, model_config(config, {}), priority)
        replay = model_replay(fitted, reference, model, 1, passes=watched)
        figures.append((compare(reference, replay), replay))
    return figures[0], figures[1]


@pytest.mark.slurm
@pytest.mark.slow
@pytest.mark.alone
def test_gpu_jobs_on_the_model_match_the_mini_cluster(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    gpus = cluster_gpus()
    if not any(gpus.values()):
        pytest.skip("the mini-cluster has no GPUs: start it with DJSB_SLURM_GPUS=a100:2 "
                    "(.ci/slurm-second.env, the calibrations' cluster, does)")
    config = tmp_path / "gpus.yaml"
    config.write_text(GPU_CALIBRATION.format(swf=WINDOW))
    calibration = load_calibration(config)
    asked = {job.job_id: job.gpus for job in calibration.jobs if job.gpus is not None}
    assert len(asked) == 19  # round(0.6 x 32)
    print(run_calibration(config, tmp_path / "out"))
    comparison = json.loads((tmp_path / "out" / "comparison.json").read_text())
    figures = comparison["model vs slurm_1"]
    assert figures["jobs"] == 32
    assert figures["tau"] >= 0.8, figures
    # the mean wait within Slurm's spread (compare.within_spread: within its two runs' mean waits, 10 %
    # of run 1's either side; the model replays run 1's passes): one decision taken a pass apart moves the
    # later jobs of a 32-job queue (fresh-clone CIs: one job 83 s apart, +18.8 % against a single run;
    # Slurm's two runs 11.5 % apart). Run 2 is not the model's reference: the model, at +0.4 % of run 1
    # in that CI, was 13.5 % from run 2.
    own = comparison["slurm_2 vs slurm_1"]
    assert within_spread(figures["mean_wait_b"], (own["mean_wait_a"], own["mean_wait_b"])), (figures, own)

    # The GPUs bind: the same model without them (the nodes' and the jobs' dropped) starts a job
    # earlier, one the GPUs held (where the two replays first part, only a constraint removed can
    # start a job sooner). Whether that brings the rest nearer Slurm or not depends on the run: mean
    # start errors of 4.7 s without the GPUs against 0.9 s with them in one run, 6.6 s against 8.3 s
    # in a later fresh-clone CI.
    (with_gpus, gpu_replay), (_, bare_replay) = model_figures(tmp_path / "out", calibration.jobs)
    assert with_gpus.tau == figures["tau"] and with_gpus.start_error_max == figures["start_error_max"]
    assert (bare_replay["start"] < gpu_replay["start"] - 1).any(), (gpu_replay, bare_replay)

    # Slurm's side: every job got the GPUs it asked (per node: the count on each of its nodes; per
    # job: the count), and at no instant did a node hold more than it has, counting what is known
    # of each node's share (all of a one-node job's, the count of a per-node request).
    slurm = pd.read_csv(tmp_path / "out" / "slurm_1.csv", index_col="job_id")
    allocated = sacct_gpus([str(s) for s in slurm["slurm_id"]])
    known: list[tuple[float, float, dict[str, int]]] = []
    for job_id, row in slurm.iterrows():
        nodes, total = allocated[str(row["slurm_id"])]
        request = asked.get(int(str(job_id)))
        if request is None:
            assert total == 0, (job_id, total)
            continue
        assert total == (request.count * len(nodes) if request.per == "node" else request.count), (job_id, request)
        if request.per == "node" or len(nodes) == 1:
            known.append((row["start"], row["end"], {node: total // len(nodes) for node in nodes}))
    assert len(known) >= 10
    for instant in {start for start, _, _ in known}:
        running = [share for start, end, share in known if start <= instant < end]
        for node, has in gpus.items():
            assert sum(share.get(node, 0) for share in running) <= has, (instant, node)
        running_all = [allocated[str(s)][1] for s, a, b in zip(slurm["slurm_id"], slurm["start"], slurm["end"],
                                                               strict=True) if a <= instant < b]
        assert sum(running_all) <= sum(gpus.values()), instant
