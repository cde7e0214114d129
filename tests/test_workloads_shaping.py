"""Job shaping (paper 003 sec. 3): geometry kept, target partition picked as configured, misfits
rejected with their reason; and its config keys in ``djsb simulate``."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd
import pytest
from support import TraceFile, assert_experiment_error

from djsb.errors import ConfigError
from djsb.model import ClusterSpec, NodeSpec
from djsb.model.layouts import LAYOUTS, METACENTRUM_QUEUES, partition_limits
from djsb.simulate import load_experiment, run_simulate
from djsb.workloads.job import TraceJob
from djsb.workloads.shaping import ShapingPolicy, shape_workload
from djsb.workloads.shaping.geometry import geometry
from djsb.workloads.swf import read_swf

HOUR = 3600.0
# Santos Dumont's thin nodes, 504 x 24 cores (003 sec. 4.1), under the after-change layout (Fig. 1(b)).
AFTER = partition_limits(ClusterSpec(tuple(NodeSpec(f"n{i}", 24) for i in range(504)), LAYOUTS.get("sdumont_2018")()))
BEFORE = partition_limits(ClusterSpec(tuple(NodeSpec(f"n{i}", 24) for i in range(504)), LAYOUTS.get("sdumont_2017")()))
# Figure 2 of 003: 360 cores x 48 h in cpu, fine before the change, below cpu's new 480-core minimum.
FIG2 = TraceJob(1, 0.0, 100000.0, 360, 48 * HOUR, partition="cpu")


def shaped(job: TraceJob, policy: ShapingPolicy, layout: tuple = AFTER) -> tuple[TraceJob | None, str, str]:
    jobs, records = shape_workload([job], layout, policy)
    assert len(records) == 1
    return (jobs[0] if jobs else None), records[0].action, records[0].reason


def test_the_figure_2_job_fits_before_the_change() -> None:
    assert shape_workload([FIG2], BEFORE, ShapingPolicy("reject")) == ([FIG2], [])


@pytest.mark.parametrize(("policy", "partition", "cpus", "limit"), [
    # toward cpu_long (1-240 cores, 744 h): the most cores it admits, 240; 360 x 48 h / 240 = 72 h.
    (ShapingPolicy("target", "cpu_long"), "cpu_long", 240, 72 * HOUR),
    # 003 sec. 5.4 scenario 1: doubling the cores, halving the time, into cpu: 720 x 24 h.
    (ShapingPolicy("factor", "cpu", 2.0), "cpu", 720, 24 * HOUR),
    # 003 sec. 5.4 scenario 2: halving the cores, doubling the time, into cpu_long: 180 x 96 h.
    (ShapingPolicy("factor", "cpu_long", 0.5), "cpu_long", 180, 96 * HOUR),
    # toward cpu (480-1200 cores, 48 h): the fewest cores it admits, 480; 360 x 48 / 480 = 36 h.
    (ShapingPolicy("target", "cpu"), "cpu", 480, 36 * HOUR),
])
def test_shaping_keeps_cores_times_time_exactly(policy: ShapingPolicy, partition: str, cpus: int,
                                                limit: float) -> None:
    job, action, reason = shaped(FIG2, policy)
    assert job is not None and action == "shaped"
    assert (job.partition, job.cpus, job.requested_time) == (partition, cpus, limit)
    assert geometry(job) == 360 * 48 * HOUR == 62_208_000  # cores x time limit in core-s, unchanged
    assert job.run_time * job.cpus == 100000.0 * 360  # linear speed-up: the run time scales too
    assert reason == "fits no partition: 360 CPUs below cpu's minimum 480"


def test_target_raises_the_cores_until_the_time_fits() -> None:
    # 10 cores x 10 h toward cpu_small (1-480 cores, 2 h): 10 x 36000 / 7200 = 50 cores x 2 h.
    job, _, _ = shaped(TraceJob(2, 0.0, 30000.0, 10, 10 * HOUR, partition="cpu"), ShapingPolicy("target", "cpu_small"))
    assert job is not None and (job.partition, job.cpus, job.requested_time) == ("cpu_small", 50, 7200.0)


def test_a_job_fitting_nowhere_even_shaped_is_rejected_with_its_reason() -> None:
    # 1300 cores x 744 h = 967,200 core-hours; cpu_long holds at most 240 x 744 = 178,560.
    huge = TraceJob(3, 0.0, 1000.0, 1300, 744 * HOUR, partition="cpu")
    job, action, reason = shaped(huge, ShapingPolicy("target", "cpu_long"))
    assert (job, action) == (None, "rejected")
    assert reason == ("fits no partition: 1300 CPUs above cpu's maximum 1200; geometry 3.48192e+09 core-s does "
                      "not fit cpu_long (1-240 CPUs, at most 240 x 2.6784e+06 core-s)")
    # x 2 -> 2600 cores, above every partition's maximum.
    job, action, reason = shaped(huge, ShapingPolicy("factor", None, 2.0))
    assert (job, action) == (None, "rejected")
    assert "x 2: 2600 CPUs above cpu's maximum 1200; x 2: 2600 CPUs above cpu_long's maximum 240" in reason
    # The reject policy never reshapes.
    assert shaped(FIG2, ShapingPolicy("reject"))[:2] == (None, "rejected")


def test_jobs_outside_the_layout_go_to_the_first_partition_that_fits() -> None:
    # 100 cores x 10 h from a queue the layout lacks: cpu starts at 480 cores, cpu_long takes it unchanged.
    job, action, _ = shaped(TraceJob(4, 0.0, 10.0, 100, 10 * HOUR, partition="q_1d"), ShapingPolicy("reject"))
    assert job is not None and (action, job.partition, job.cpus, job.requested_time) == (
        "moved", "cpu_long", 100, 10 * HOUR)
    # Its own queue cpu lacks it (below 480 cores); toward cpu_long it needs no new geometry: moved.
    job, action, _ = shaped(TraceJob(6, 0.0, 10.0, 100, 10 * HOUR, partition="cpu"),
                            ShapingPolicy("target", "cpu_long"))
    assert job is not None and (action, job.partition, job.cpus, job.requested_time) == (
        "moved", "cpu_long", 100, 10 * HOUR)
    # Without a partition: placed the same way, and not listed (Slurm's default partition).
    jobs, records = shape_workload([TraceJob(5, 0.0, 10.0, 100, HOUR)], AFTER, ShapingPolicy("reject"))
    assert (jobs[0].partition, records) == ("cpu_long", [])


def test_random_jobs_keep_their_geometry_and_fit_their_target() -> None:
    # Independent oracle: cores x time before == after (float, to 1e-12) and the target admits it.
    rng = random.Random(3)
    layout = {p.name: p for p in AFTER}
    checked = 0
    for k in range(500):
        job = TraceJob(k, 0.0, rng.uniform(1, 1e5), rng.randint(1, 1200), rng.uniform(60, 200 * HOUR),
                       partition="cpu")
        target = rng.choice(["cpu", "cpu_long", "cpu_small"])
        jobs, records = shape_workload([job], AFTER, ShapingPolicy("target", target))
        if not records or records[0].action == "rejected":
            continue
        after = jobs[0]
        assert geometry(after) == pytest.approx(geometry(job), rel=1e-12)
        assert layout[target].fits(after.cpus, after.requested_time) and after.partition == target
        checked += records[0].action == "shaped"
    assert checked > 100  # most draws miss cpu's 480-core minimum and are shaped


def test_metacentrum_jobs_all_fit_their_own_queue(trace: TraceFile) -> None:
    # The layout takes each queue's largest request, so the whole trace stays as recorded.
    meta = read_swf(trace("MetaCentrum-wagap-2013.swf.gz"))
    cluster = ClusterSpec(tuple(NodeSpec(f"z{i}", 80) for i in range(20)), LAYOUTS.get("metacentrum_2013")())
    jobs, records = shape_workload(meta.jobs, partition_limits(cluster), ShapingPolicy("reject"))
    assert records == [] and len(jobs) == len(meta.jobs)
    assert {j.partition for j in meta.jobs} == set(METACENTRUM_QUEUES)


SWF = "\n".join([
    # job submit wait run procs cpu mem req_procs req_time req_mem status uid gid exe queue partition prec think
    "1 0 -1 50 2 -1 -1 2 50 -1 1 1 1 -1 -1 1 -1 -1",       # 2 CPUs x 50 s in p1: fits p1 (4 CPUs, 100 s)
    "2 10 -1 1500 2 -1 -1 2 2000 -1 1 1 1 -1 -1 1 -1 -1",  # 2 x 2000 s: above p1's 100 s; shaped toward p2
    "3 20 -1 900 16 -1 -1 16 1000 -1 1 1 1 -1 -1 1 -1 -1",  # 16 x 1000 s: p2 holds 8 x 1000 at most
]) + "\n"


def config(tmp_path: Path, shaping: str) -> Path:
    (tmp_path / "t.swf").write_text(SWF)
    path = tmp_path / "shape.yaml"
    path.write_text(f"""workload:
  swf: t.swf
  keep_partitions: true
  at_time_limit: kill
{shaping}cluster:
  nodes: [{{count: 2, cores: 4}}]
  partitions:
    - {{name: p1, max_cpus: 4, max_time: 100}}
    - {{name: p2, max_cpus: 8, max_time: 1000}}
""")
    return path


def test_simulate_lists_shaped_and_rejected_jobs(tmp_path: Path) -> None:
    out = run_simulate(config(tmp_path, "  shaping: {policy: target, partition: p2}\n"), tmp_path / "out")
    shaped_csv = pd.read_csv(out / "shaped.csv")
    # Job 2 toward p2 (1-8 CPUs, 1000 s): 2 x 2000 = 4000 core-s needs 4000 / 1000 = 4 CPUs -> 4 x 1000 s,
    # its 1500 s run becomes 1500 x 2 / 4 = 750 s.
    assert shaped_csv[["job_id", "action", "cpus_before", "time_limit_before"]].values.tolist() == [
        [2, "shaped", 2, 2000], [3, "rejected", 16, 1000]]
    assert shaped_csv.loc[0, ["partition_after", "cpus_after", "time_limit_after", "run_time_after"]].tolist() == [
        "p2", 4, 1000, 750]
    ran = pd.read_csv(out / "jobs.csv").set_index("job_id")
    assert ran.loc[2, ["partition", "cpus", "run_time", "requested_time"]].tolist() == ["p2", 4, 750, 1000]
    assert shaped_csv.loc[1, ["partition_after", "cpus_after"]].isna().all()
    rejected = pd.read_csv(out / "rejected.csv")
    assert rejected["job_id"].tolist() == [3]
    assert "geometry 16000 core-s does not fit p2" in rejected["reason"][0]
    metrics = json.loads((out / "metrics.json").read_text())
    assert (metrics["jobs"], metrics["rejected"], metrics["shaped_jobs"], metrics["moved_jobs"]) == (2, 1, 1, 0)


@pytest.mark.parametrize(("shaping", "line", "key", "needle"), [
    ("  shaping: {policy: squeeze}\n", 5, "workload.shaping.policy", "unknown shaping policy 'squeeze'"),
    ("  shaping: {policy: target}\n", 5, "workload.shaping", "policy target needs 'partition'"),
    ("  shaping: {policy: target, partition: p9}\n", 5, "workload.shaping.partition", "no partition 'p9'"),
    ("  shaping: {policy: reject, factor: 2}\n", 5, "workload.shaping.factor", "'factor' goes with policy factor"),
    ("  shaping: {policy: factor, factor: 0}\n", 5, "workload.shaping.factor", "must be"),
    ("  shaping: {policy: factor}\n", 5, "workload.shaping", "'factor' goes with policy factor"),
])
def test_bad_shaping_keys_name_file_line_and_key(tmp_path: Path, shaping: str, line: int, key: str,
                                                 needle: str) -> None:
    assert_experiment_error(config(tmp_path, shaping), line, key, needle)


def test_layout_preset_and_its_errors(tmp_path: Path) -> None:
    path = tmp_path / "layout.yaml"
    path.write_text("workload: {generator: poisson_exponential, params: {n_jobs: 3, arrival_rate: 1, service_rate: 1, cpus: 480}}\n"
                    "cluster:\n  nodes: [{count: 504, cores: 24}]\n  layout: sdumont_2018\n")
    names = [(p.name, p.min_cpus, p.max_cpus, p.max_time) for p in load_experiment(path).cluster.partitions]
    assert names == [("cpu", 480, 1200, 172800.0), ("cpu_long", 1, 240, 2678400.0), ("cpu_small", 1, 480, 7200.0)]
    path.write_text(path.read_text().replace("sdumont_2018", "sdumont_2030"))
    with pytest.raises(ConfigError) as info:
        load_experiment(path)
    assert (info.value.line, info.value.key) == (4, "cluster.layout")
    assert "unknown partition layout 'sdumont_2030'" in info.value.message
    path.write_text(path.read_text().replace("sdumont_2030", "sdumont_2017\n  partitions: [{name: b}]"))
    assert_experiment_error(path, 4, "cluster.layout", "give 'layout' (a named set of partitions) or 'partitions'")
