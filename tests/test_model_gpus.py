"""GPUs as a generic resource of the model, worked out by hand on small clusters.

Each rule names the Slurm 22.05 function it follows (src/plugins/select/cons_common/
gres_select_filter.c, src/plugins/select/cons_tres/job_test.c and gres_sched.c). Every replay runs
with the invariant checker, which also checks that no node's GPUs are oversubscribed.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from djsb.errors import ConfigError
from djsb.model import ClusterSpec, SchedulerConfig, Simulation, SimulationResult
from djsb.model.cluster_spec import NodeSpec, PartitionSpec
from djsb.model.cluster_state import ClusterState
from djsb.model.cons_tres import GpuSets, best_fit
from djsb.model.gpus import INVALID_GRES
from djsb.model.invariants import InvariantChecker, InvariantViolation
from djsb.model.job import SimJob
from djsb.model.placement import Placement
from djsb.model.schedule_metrics import summary
from djsb.model.sections import read_cluster, reference
from djsb.model.timeline import with_busy_gpus
from djsb.workloads.gpus import GpuRequest
from djsb.workloads.job import TraceJob
from djsb.yamlnodes import Located


def gpu_job(job_id: int, submit: float, cpus: int, run: float, gpus: GpuRequest | None = None,
            limit: float | None = None) -> TraceJob:
    """A job running ``run`` seconds (its limit unless ``limit``) asking ``gpus``."""
    return TraceJob(job_id, submit, run, cpus, requested_time=limit if limit is not None else run, gpus=gpus)


def per_node(count: int, kind: str | None = None) -> GpuRequest:
    return GpuRequest(count, "node", kind)


def replay(jobs: list[TraceJob], cluster: ClusterSpec, **options: Any) -> SimulationResult:
    settings: dict[str, Any] = {"sched_interval": 0.0, "bf_interval": 0.0, "bf_resolution": 0.0}
    settings.update(options)
    return Simulation(jobs, cluster, SchedulerConfig(**settings), checker=InvariantChecker(cluster)).run()


def table(result: SimulationResult) -> dict[int, tuple[float, str]]:
    """Each job's (start, nodes)."""
    jobs = result.jobs
    return {int(j): (float(s), str(n)) for j, s, n in zip(jobs["job_id"], jobs["start"], jobs["nodes"],
                                                           strict=True)}


def gpu_nodes(*counts: int, cores: int = 4) -> ClusterSpec:
    """Nodes n0, n1... of ``cores`` cores with ``counts`` untyped GPUs each, one partition."""
    nodes = tuple(NodeSpec(f"n{i}", cores, None, (("", c),) if c else ()) for i, c in enumerate(counts))
    return ClusterSpec(nodes, (PartitionSpec("batch"),))


# ---------------------------------------------------------------- the schema
def located(value: Any) -> Located:
    """A YAML tree as the readers get it (every node at line 1)."""
    if isinstance(value, dict):
        return Located({k: located(v) for k, v in value.items()}, 1, "cluster", "test.yaml")
    if isinstance(value, list):
        return Located([located(v) for v in value], 1, "cluster", "test.yaml")
    return Located(value, 1, "cluster", "test.yaml")


def test_nodes_carry_a_gpu_count_or_a_count_per_type() -> None:
    cluster = read_cluster(located({"nodes": [{"cores": 8, "count": 2, "gpus": 4},
                                              {"cores": 8, "prefix": "g", "gpus": {"a100": 2, "v100": 1}},
                                              {"cores": 8, "prefix": "c"}]}))
    assert [n.gpus for n in cluster.nodes] == [(("", 4),), (("", 4),), (("a100", 2), ("v100", 1)), ()]
    assert cluster.total_gpus == 11
    state = ClusterState(cluster)
    assert state.gpu_types == ("", "a100", "v100")
    assert state.node_gpus == [[4, 0, 0], [4, 0, 0], [0, 2, 1], [0, 0, 0]]
    with pytest.raises(ConfigError, match="GPU count"):
        read_cluster(located({"nodes": [{"cores": 8, "gpus": "four"}]}))
    assert "| `gpus` | none | GPUs | Gres (gpu[:type]:N) |" in reference()


def test_sbatch_options_are_read_into_one_request() -> None:
    assert GpuRequest.from_option("--gres", "gpu:a100:2") == GpuRequest(2, "node", "a100")
    assert GpuRequest.from_option("--gres", "gpu") == GpuRequest(1, "node")
    assert GpuRequest.from_option("--gpus-per-node", "3") == GpuRequest(3, "node")
    assert GpuRequest.from_option("--gpus", "v100:4") == GpuRequest(4, "job", "v100")
    assert GpuRequest.from_option("--gpus-per-task", "1") == GpuRequest(1, "task")
    assert GpuRequest.from_option("--gres", "gpu:tesla") == GpuRequest(1, "node", "tesla")  # count 1 left out
    assert GpuRequest.from_option("-G", "2") == GpuRequest(2, "job") == GpuRequest.from_text("--gpus=2")
    assert GpuRequest(2, "job").sbatch_options() == ("--gpus=2",)
    assert GpuRequest.from_option("--gres", "nic:1,gpu:v100:2") == GpuRequest(2, "node", "v100")
    assert GpuRequest.from_option("--gres", "mps:100") is None
    assert GpuRequest.from_option("--gres", "gpu:0") is None
    for option, value in (("--gres", "gpu:a100:2,gpu:v100:1"), ("--gres", "gpu:a:b"), ("--gpus", "a100"),
                          ("--gpus-per-node", "a:b:1")):
        with pytest.raises(ValueError, match=option):
            GpuRequest.from_option(option, value)


def test_a_trace_without_gpus_has_no_gpu_column_or_metric() -> None:
    result = replay([gpu_job(1, 0, 2, 10)], ClusterSpec.homogeneous(1, 4))
    assert "gpus" not in result.jobs.columns and result.total_gpus == 0
    assert "gpu_utilisation" not in summary(result.jobs, result.total_cores, result.total_gpus)


# ---------------------------------------------------------------- placement
def test_a_gpu_job_goes_only_where_its_gpus_are_free() -> None:
    # gres_select_filter_remove_unusable: a node offering fewer free GPUs than the count per node
    # (min_gres) cannot take the job, whatever cores it has free.
    # 2 nodes x 4 cores x 2 GPUs. J1 (1 CPU, 2 GPUs per node) takes n0 at 0 until 10.
    # J2 (1 CPU, 1 GPU): n0 has 3 free cores but no GPU: n1 at 0.
    # J3 (1 CPU, no GPU) needs no GPU: the first node with a free core, n0, at 0.
    # J4 (1 CPU, 2 GPUs): n0 has none free, n1 one: it waits for J1's end, n0 at 10.
    jobs = [gpu_job(1, 0, 1, 10, per_node(2)), gpu_job(2, 0, 1, 20, per_node(1)), gpu_job(3, 0, 1, 20),
            gpu_job(4, 0, 1, 5, per_node(2))]
    result = replay(jobs, gpu_nodes(2, 2))
    assert table(result) == {1: (0, "n0"), 2: (0, "n1"), 3: (0, "n0"), 4: (10, "n0")}
    held = dict(zip(result.jobs["job_id"], result.jobs["gpus"], strict=True))
    assert held == {1: 2, 2: 1, 3: 0, 4: 2}
    # GPU-seconds held: 2 x 10 + 1 x 20 + 2 x 5 = 50 of 4 GPUs over the makespan 0-20 (80).
    metrics = summary(result.jobs, result.total_cores, result.total_gpus)
    assert metrics["gpu_utilisation"] == pytest.approx(50 / 80)


def test_a_typed_request_takes_only_its_type_and_an_untyped_one_any() -> None:
    # n0 has 2 v100, n1 2 a100 (4 cores each). J1 asks a100: n1. J2 asks any 2 GPUs: n0 (first
    # node in order with 2 free). J3 asks v100 while n0's are held until 10: it waits, n0 at 10.
    cluster = ClusterSpec((NodeSpec("n0", 4, None, (("v100", 2),)), NodeSpec("n1", 4, None, (("a100", 2),))),
                          (PartitionSpec("batch"),))
    jobs = [gpu_job(1, 0, 1, 20, per_node(1, "a100")), gpu_job(2, 0, 1, 10, per_node(2)),
            gpu_job(3, 0, 1, 10, per_node(1, "v100"))]
    assert table(replay(jobs, cluster)) == {1: (0, "n1"), 2: (0, "n0"), 3: (10, "n0")}


def test_a_job_no_node_could_ever_hold_is_rejected_with_its_reason() -> None:
    # sbatch refuses a type no node has (ESLURM_INVALID_GRES) and more GPUs per node than any node has
    # ("Requested node configuration is not available"); a GPU job on a cluster without GPUs too.
    jobs = [gpu_job(1, 0, 1, 10, per_node(1, "h100")), gpu_job(2, 0, 1, 10, per_node(3)),
            gpu_job(3, 0, 1, 10, per_node(2))]
    rejected = dict(zip(*replay(jobs, gpu_nodes(2, 2)).rejected.to_dict("list").values(), strict=True))
    assert rejected == {1: INVALID_GRES,
                        2: "Requested node configuration is not available (3 GPUs per node, nodes have 2)"}
    assert replay([gpu_job(1, 0, 1, 10, per_node(1))], ClusterSpec.homogeneous(1, 4)).rejected.loc[0, "reason"] \
        == INVALID_GRES


def test_gpus_per_job_prefer_the_nodes_with_the_most_free_gpus() -> None:
    # can_job_run_on_node: a node's weight is 0xff - near_gpus (its free GPUs, capped at the count
    # per job), lower weight first; gres_sched_add / gres_sched_test: nodes are added until CPUs and
    # GPUs both suffice, and each node runs one of the job's tasks at least (dist_tasks).
    # 3 nodes x 4 cores x 2 GPUs; J1 holds 1 GPU of n0 until 100. J2 (2 CPUs, --gpus=3) at 1: n0
    # offers 1 GPU (weight 0xfe), n1 and n2 2 (0xfd): n1 first (2 GPUs), then n2 for the third; its
    # 2 CPUs are spread one on each. J3 (1 CPU, --gpus=1) at 2: only n0's last GPU is free: n0.
    jobs = [gpu_job(1, 0, 1, 100, per_node(1)), gpu_job(2, 1, 2, 50, GpuRequest(3, "job")),
            gpu_job(3, 2, 1, 50, GpuRequest(1, "job"))]
    result = replay(jobs, gpu_nodes(2, 2, 2))
    assert table(result) == {1: (0, "n0"), 2: (1, "n[1-2]"), 3: (2, "n0")}
    assert result.jobs.set_index("job_id").loc[2, "gpus"] == 3


def test_gpus_per_task_bound_the_tasks_a_node_holds() -> None:
    # gres_select_filter_sock_core: with GPUs per task a node holds at most free GPUs / count tasks.
    # 2 nodes x 8 cores x 2 GPUs. J1 (4 tasks of 1 CPU, 1 GPU each = 4 GPUs): n0 holds 2 tasks, n1 2.
    result = replay([gpu_job(1, 0, 4, 10, GpuRequest(1, "task"))], gpu_nodes(2, 2, cores=8))
    alloc = result.jobs.set_index("job_id").loc[1]
    assert alloc["nodes"] == "n[0-1]" and alloc["gpus"] == 4
    state = ClusterState(gpu_nodes(2, 2, cores=8))
    placed = state.allocate(state.partitions[0], 4, None, None, GpuRequest(1, "task"))
    assert placed is not None and list(placed) == [(0, 2), (1, 2)] and placed.gpus == ((2,), (2,))


def test_cons_tres_sets_split_at_gpu_weights_and_lower_weight_wins() -> None:
    # _eval_nodes: a change of weight ends a set; the set of lowest weight is taken first even if it
    # alone is insufficient. Rooms n0..n3 of 2 CPUs; free GPUs 1, 1, 2, 2 for --gpus=3 (weights
    # -near: -1, -1, -2, -2): sets {n0, n1} and {n2, n3}; {n2, n3} (4 GPUs) covers 3 but no single
    # node does (gres_sched_sufficient), so both of its nodes: n2, n3.
    gpus = GpuSets({0: -1, 1: -1, 2: -2, 3: -2}, {0: 1, 1: 1, 2: 2, 3: 2}, 3)
    assert best_fit([(0, 2), (1, 2), (2, 2), (3, 2)], 2, gpus) == [(2, 2), (3, 0)]
    # Without GPUs the same rooms make one set and one node holds 2 CPUs: n0 (fewest, lowest index).
    assert best_fit([(0, 2), (1, 2), (2, 2), (3, 2)], 2) == [(0, 2)]


def test_cons_tres_select_places_gpu_jobs_too() -> None:
    # Same cluster as above under node_select: cons_tres. n0 runs a 1-GPU job; J2 (2 CPUs,
    # --gpus=3) takes the set {n1, n2} of weight 0xfd, one CPU on each; J3 (1 CPU, 1 GPU per node)
    # has equal weights everywhere it fits ({n0} only: n1 and n2 have no GPU left).
    jobs = [gpu_job(1, 0, 1, 100, per_node(1)), gpu_job(2, 1, 2, 50, GpuRequest(3, "job")),
            gpu_job(3, 2, 1, 50, per_node(1))]
    result = replay(jobs, gpu_nodes(2, 2, 2), node_select="cons_tres")
    assert table(result) == {1: (0, "n0"), 2: (1, "n[1-2]"), 3: (2, "n0")}


def test_a_suspended_job_keeps_its_gpus() -> None:
    # job_resources.h: suspending gives back cores only (JOB_RES_ACTION_RESUME), memory and GRES stay.
    cluster = gpu_nodes(2)
    sim = Simulation([], cluster, SchedulerConfig(sched_interval=0, bf_interval=0),
                     checker=InvariantChecker(cluster))
    sim.submit(gpu_job(1, 0, 1, 100, per_node(2)))
    sim.suspend(1)
    second = sim.submit(gpu_job(2, 0, 1, 10, per_node(1)))
    assert second.start is None and sim.state.node_gpu_free == [[0]]
    sim.resume(1)
    sim.advance(200)
    assert sim.job(2).start == 100 and sim.state.node_gpu_free == [[2]]


# ---------------------------------------------------------------- backfill
@pytest.mark.parametrize(("planner", "limit"), [("profile", 500), ("will_run", 50)])
def test_a_gpu_job_is_reserved_when_gpus_free_and_a_cpu_job_backfills_beside_it(planner: str, limit: float) -> None:
    # 1 node x 8 cores x 2 GPUs, conservative backfill. J1 (1 CPU, 2 GPUs) runs 0-100. J2 (1 CPU,
    # 1 GPU) at 1 cannot start (no free GPU) though 7 cores are free: reserved at 100, when J1's
    # GPUs free. J3 (2 CPUs, no GPU) at 2 backfills at once on the node whose GPUs are all busy:
    # under the profile planner with a limit of 500, as J2 takes 1 core and 1 GPU at 100 and 5 cores
    # stay free; under will_run, whose reservations hold whole nodes (backfill.c node_space), only
    # with a limit ending before J2's reserved start (50).
    # J4 (1 CPU, 1 GPU, limit 500) at 3 waits for a GPU as J2 does; at 100 J1 ends and the main
    # pass starts J2 and then J4 on J1's two GPUs.
    jobs = [gpu_job(1, 0, 1, 100, per_node(2)), gpu_job(2, 1, 1, 50, per_node(1)),
            gpu_job(3, 2, 2, limit), gpu_job(4, 3, 1, 500, per_node(1))]
    result = replay(jobs, gpu_nodes(2, cores=8), backfill="conservative", bf_planner=planner)
    starts = {j: s for j, (s, _) in table(result).items()}
    assert starts == {1: 0, 2: 100, 3: 2, 4: 100}
    assert result.jobs.set_index("job_id").loc[3, "backfilled"]


def test_a_job_that_would_take_a_reserved_gpu_waits() -> None:
    # 2 nodes x 4 cores x 1 GPU, EASY. J1 (1 CPU, 1 GPU) on n0 0-100, J2 (1 CPU, 1 GPU) on n1 0-50.
    # J3 (1 CPU, 1 GPU per node on 2 nodes: 2 CPUs, nodes 2) at 1 is reserved at 100 on n0 and n1.
    # J4 (1 CPU, 1 GPU, limit 80) at 60: n1's GPU is free but reserved from 100; J4 would hold it
    # until 140, so it waits; J3 starts at 100 and J4 after it, at 150 (J3's end).
    jobs = [gpu_job(1, 0, 1, 100, per_node(1)), gpu_job(2, 0, 1, 50, per_node(1)),
            TraceJob(3, 1, 50, 2, requested_time=50, nodes=2, gpus=per_node(1)),
            gpu_job(4, 60, 1, 80, per_node(1))]
    starts = {j: s for j, (s, _) in table(replay(jobs, gpu_nodes(1, 1), backfill="easy")).items()}
    assert starts == {1: 0, 2: 0, 3: 100, 4: 150}


# ---------------------------------------------------------------- the checker
def test_the_checker_catches_oversubscribed_gpus() -> None:
    # 1 node x 4 cores x 1 GPU: a job holds the GPU; a second start claiming it too is caught.
    cluster = gpu_nodes(1)
    checker = InvariantChecker(cluster)
    sim = Simulation([], cluster, SchedulerConfig(sched_interval=0, bf_interval=0), checker=checker)
    first = sim.submit(gpu_job(1, 0, 1, 100, per_node(1)))
    assert first.alloc.gpus == ((1,),)
    twin = SimJob(gpu_job(2, 0, 1, 100, per_node(1)), first.part, first.qos, 100, 1, 0.0)
    twin.alloc = Placement.of([(0, 1)], ((1,),))
    with pytest.raises(InvariantViolation, match="GPUs oversubscribed"):
        checker.on_start(twin, 0.0, 100.0)
    short = SimJob(gpu_job(3, 0, 1, 100, per_node(2)), first.part, first.qos, 100, 1, 0.0)
    short.alloc = Placement.of([(0, 1)], ((1,),))
    with pytest.raises(InvariantViolation, match="short of"):
        InvariantChecker(gpu_nodes(2)).on_start(short, 0.0, 100.0)


def test_the_utilisation_timeline_counts_the_gpus_held() -> None:
    # One node of 4 cores and 2 GPUs. J1 (2 CPUs, 1 GPU) runs 0-100 and J2 (2 CPUs, 1 GPU) 0-50;
    # J3 (2 CPUs, no GPU) comes at 10 and waits for J2's cores: 50-90. GPUs held: 2 on [0, 50),
    # 1 on [50, 100), 0 after; 150 GPU-seconds of 2 x 100.
    result = replay([gpu_job(1, 0, 2, 100, per_node(1)), gpu_job(2, 0, 2, 50, per_node(1)),
                     gpu_job(3, 10, 2, 40)], gpu_nodes(2))
    assert table(result)[3][0] == 50
    util = result.utilisation
    expected = [2 if t < 50 else 1 if t < 100 else 0 for t in util["time"]]
    assert util["busy_gpus"].tolist() == expected
    assert {0.0, 50.0, 100.0} <= set(util["time"])
    assert summary(result.jobs, result.total_cores, result.total_gpus)["gpu_utilisation"] == pytest.approx(150 / 200)


def test_an_instant_where_only_the_gpus_change_gets_its_own_row() -> None:
    # The core timeline has no row at 30 (a GPU job of 2 CPUs ends as a CPU job of 2 starts: cores
    # and queue unchanged); the GPU column adds one, carrying the other columns from 10.
    util = pd.DataFrame({"time": [0.0, 10.0, 60.0], "busy_cores": [2, 4, 0], "queued_jobs": [1, 1, 0],
                         "queued_cores": [2, 2, 0]})
    jobs = pd.DataFrame({"start": [0.0, 10.0, 30.0], "end": [30.0, 60.0, 60.0], "gpus": [1, 2, 0]})
    merged = with_busy_gpus(util, jobs)
    assert merged["time"].tolist() == [0.0, 10.0, 30.0, 60.0]
    assert merged["busy_gpus"].tolist() == [1, 3, 2, 0]
    assert merged.loc[2, ["busy_cores", "queued_jobs", "queued_cores"]].tolist() == [4, 1, 2]
    assert merged["busy_cores"].dtype == "int64"
