"""PreemptMode=SUSPEND,GANG in the model (djsb/model/suspension.py), worked by hand: partitions ``low``
(PriorityTier 1) and ``high`` (PriorityTier 10) over the same nodes, textbook passes (at every event,
first fit in node order, jobs killed at their limit) with the invariant checker on.

The rules each test follows, in Slurm 22.05: a job that finds no idle cores is placed on the cores of
lower-tier jobs (cons_common job_test.c ``_job_test`` steps 2-3 under ``gang_mode``) and the gang
scheduler suspends those it overlaps (gang.c ``gs_job_start`` -> ``_cast_shadow`` ->
``_update_active_row``), the candidates taken in preempt_partition_prio.c's order (PriorityTier, node
count, then the job list's); the suspended job keeps its memory (``_verify_node_state`` counts its
``alloc_memory``) and its GPUs (slurm.conf(5): "Suspended jobs will not release GRES"); it resumes when
its preemptor ends (``gs_job_fini`` -> ``_update_all_active_rows``), and its end moves by the time it
was suspended (job_mgr.c ``_job_suspend_op``: ``end_time = now + time_limit - pre_sus_time``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest
from test_cli_errors import one_line_failure
from test_model_golden_starts import SYNTHETIC, assert_recorded_starts

from djsb.model import TEXTBOOK, ClusterSpec, SchedulerConfig, Simulation
from djsb.model.cluster_spec import NodeSpec, PartitionSpec, QosSpec
from djsb.model.invariants import InvariantChecker
from djsb.model.operations import ModelError
from djsb.slurm_text import partition_preempt_mode, preempt_mode
from djsb.slurmsite.slurm_config import SlurmConfigError, scheduler_config
from djsb.workloads.gpus import GpuRequest
from djsb.workloads.job import TraceJob

SUSPEND = dataclasses.replace(TEXTBOOK, extend_limit=False, preempt_type="partition_prio", preempt_mode="suspend")
CANCEL = dataclasses.replace(SUSPEND, preempt_mode="cancel")
TIERS = (PartitionSpec("low"), PartitionSpec("high", priority_tier=10))
DUMP = Path(__file__).parent / "fixtures" / "sacct" / "minicluster-22.05-allocations.txt"


def job(job_id: int, submit: float, run: float, cpus: int, partition: str, limit: float | None = None,
        memory: float | None = None, gpus: int | None = None, qos: str | None = None,
        nodes: int | None = None) -> TraceJob:
    """A trace job asking ``limit`` (its run time when None) and ``memory`` MB over its CPUs."""
    return TraceJob(job_id, submit, run, cpus, requested_time=run if limit is None else limit, memory_mb=memory,
                    partition=partition, qos=qos, gpus=GpuRequest(gpus) if gpus else None, nodes=nodes)


def replay(jobs: list[TraceJob], scheduler: SchedulerConfig = SUSPEND, cluster: ClusterSpec | None = None,
           cores: int = 2, memory: float | None = None) -> pd.DataFrame:
    """The jobs table by job id, on ``cluster`` (by default two nodes of ``cores`` cores and ``memory``
    MB under :data:`TIERS`)."""
    cluster = cluster or ClusterSpec(ClusterSpec.homogeneous(2, cores, memory_mb=memory).nodes, TIERS)
    return Simulation(jobs, cluster, scheduler, checker=InvariantChecker(cluster)).run().jobs.set_index("job_id")


def test_the_preemptor_suspends_the_first_candidate_which_resumes_when_it_ends() -> None:
    # Two nodes of 2 cores. Jobs 1 and 2 (low, 2 CPUs, 100 s) fill n0 and n1 at 0; job 3 (high, 2 CPUs,
    # 50 s) comes at 10 and finds no idle core. Candidates: jobs 1 and 2, equal in tier and node count,
    # so job 1 first (_sort_by_prio, then list order); its CPUs alone make room on n0: job 3 starts at
    # 10 on n0 (node_scheduler.c _preempt_jobs leaves a SUSPEND job to the gang scheduler: no wait, no
    # GraceTime) and job 1 is suspended at 10. Job 3 ends at 60 (gs_job_fini): job 1 resumes at 60 with
    # 90 s of work left, so it ends at 150 = its own end 100 + the 50 s it was suspended. Job 2 runs on.
    frame = replay([job(1, 0, 100, 2, "low"), job(2, 0, 100, 2, "low"), job(3, 10, 50, 2, "high")])
    assert frame.loc[3, ["start", "end", "nodes", "state"]].tolist() == [10.0, 60.0, "n0", "COMPLETED"]
    assert frame.loc[1, ["start", "end", "state", "killed", "preempted_by", "suspended_at", "suspended_s"]
                     ].tolist() == [0.0, 150.0, "COMPLETED", False, 3, 10.0, 50.0]
    assert frame.loc[2, ["end", "state", "suspended_s"]].tolist() == [100.0, "COMPLETED", 0.0]
    assert frame.loc[[2], ["suspended_at", "preempted_by"]].isna().to_numpy().all()


def test_suspended_time_does_not_count_against_the_time_limit() -> None:
    # As above, but job 1 asks 100 s and would run 300: it runs 0..10 and 60..150, 100 s in all, and is
    # killed at its limit at 150 = 0 + 100 + 50 suspended (_job_suspend_op: end_time = resume time 60 +
    # time_limit 100 - pre_sus_time 10), not at 100 as if the suspended time were used.
    frame = replay([job(1, 0, 300, 2, "low", limit=100), job(2, 0, 100, 2, "low"), job(3, 10, 50, 2, "high")])
    assert frame.loc[1, ["end", "state", "killed", "suspended_s"]].tolist() == [150.0, "TIMEOUT", True, 50.0]
    assert (frame["run_time"] - frame["suspended_s"])[1] == 100.0


def test_a_suspended_job_keeps_its_memory_on_its_node() -> None:
    # Two nodes of 4 cores and 1000 MB. At 0: job 1 (low, 2 CPUs, 600 MB, 100 s) and job 2 (low, 2 CPUs,
    # 100 MB, 30 s) fill n0, job 3 (low, 4 CPUs, 100 MB, 200 s) fills n1. Job 4 (high, 2 CPUs, 200 MB,
    # 50 s) at 10: job 1 goes first; without its CPUs n0 has 2 free, and 1000 - 600 - 100 = 300 MB >= 200
    # beside its memory (_verify_node_state): job 4 starts on n0 at 10, job 1 is suspended. Job 5 (low,
    # 2 CPUs, 300 MB, 10 s) comes at 20. At 30 job 2 ends: n0 has 2 idle CPUs but 1000 - 600 (job 1's,
    # suspended) - 200 = 200 MB < 300, so job 5 waits. At 60 job 4 ends, job 1 resumes (end 100 + 50 =
    # 150) and n0 has 400 MB: job 5 runs 60..70 beside it. Under CANCEL job 1 would have freed its memory
    # at 10 and job 5 started at 30.
    jobs = [job(1, 0, 100, 2, "low", memory=600), job(2, 0, 30, 2, "low", memory=100),
            job(3, 0, 200, 4, "low", memory=100), job(4, 10, 50, 2, "high", memory=200),
            job(5, 20, 10, 2, "low", memory=300)]
    frame = replay(jobs, cores=4, memory=1000)
    assert frame.loc[4, ["start", "end", "nodes"]].tolist() == [10.0, 60.0, "n0"]
    assert frame.loc[1, ["end", "suspended_at", "suspended_s", "preempted_by"]].tolist() == [150.0, 10.0, 50.0, 4]
    assert frame.loc[5, ["start", "end", "nodes"]].tolist() == [60.0, 70.0, "n0"]
    assert replay(jobs, CANCEL, cores=4, memory=1000).loc[5, "start"] == 30.0


def test_no_suspension_when_the_preemptor_does_not_fit_beside_the_memory() -> None:
    # Two nodes of 4 cores and 1000 MB; jobs 1 and 2 (low, 4 CPUs, 600 MB, 100 s) fill them; job 3
    # (high, 4 CPUs on one node, 500 MB, 50 s) at 10: either candidate's CPUs would do, but 1000 - 600 =
    # 400 MB < 500 stay free beside the memory a suspended job keeps. Nobody is suspended; job 3 starts
    # when job 1 ends at 100. (CANCEL frees the memory: job 3 starts at 10. On two nodes, 250 MB on each,
    # it would fit beside them and suspend both.)
    jobs = [job(1, 0, 100, 4, "low", memory=600), job(2, 0, 100, 4, "low", memory=600),
            job(3, 10, 50, 4, "high", memory=500, nodes=1)]
    frame = replay(jobs, cores=4, memory=1000)
    assert frame.loc[3, ["start", "end"]].tolist() == [100.0, 150.0]
    assert frame["suspended_s"].tolist() == [0.0, 0.0, 0.0]
    assert replay(jobs, CANCEL, cores=4, memory=1000).loc[3, "start"] == 10.0


def test_a_suspended_job_keeps_its_gpus() -> None:
    # Two nodes of 2 cores and 1 GPU. Job 1 (low, 2 CPUs, 1 GPU) on n0, job 2 (low, 2 CPUs) on n1, from
    # 0 for 100 s; job 3 (high, 2 CPUs, 1 GPU, 50 s) at 10. Job 1 goes first, but its GPU stays held
    # ("Suspended jobs will not release GRES"): no room on n0. With job 2's CPUs too, n1 fits (its GPU
    # is free), and job 3 overlaps job 2 alone: job 2 is suspended 10..60 and ends at 150, job 1 runs on.
    nodes = tuple(NodeSpec(f"n{i}", 2, gpus=(("gpu", 1),)) for i in range(2))
    cluster = ClusterSpec(nodes, TIERS)
    frame = replay([job(1, 0, 100, 2, "low", gpus=1), job(2, 0, 100, 2, "low"), job(3, 10, 50, 2, "high", gpus=1)],
                   cluster=cluster)
    assert frame.loc[3, ["start", "nodes"]].tolist() == [10.0, "n1"]
    assert frame.loc[2, ["end", "suspended_at", "suspended_s"]].tolist() == [150.0, 10.0, 50.0]
    assert frame.loc[1, ["end", "suspended_s"]].tolist() == [100.0, 0.0]


def test_the_cores_of_a_suspended_job_stay_its_own() -> None:
    # One node of 4 cores (a second one kept busy). Job 1 (low, 4 CPUs, 100 s) from 0; job 2 (high, 2
    # CPUs, 50 s) at 10 takes 2 of its cores and suspends it. The 2 it leaves stay allocated to job 1 in
    # the select plugin (select_p_job_suspend does nothing for a gang suspension): job 3 (low, 2 CPUs,
    # 10 s) at 20 cannot take them and starts when job 1, resumed at 60, ends at 150.
    jobs = [job(1, 0, 100, 4, "low"), job(9, 0, 500, 4, "low"), job(2, 10, 50, 2, "high"),
            job(3, 20, 10, 2, "low")]
    frame = replay(jobs, cores=4)
    assert frame.loc[2, ["start", "nodes"]].tolist() == [10.0, "n0"]
    assert frame.loc[1, ["end", "suspended_s"]].tolist() == [150.0, 50.0]
    assert frame.loc[3, ["start", "nodes"]].tolist() == [150.0, "n0"]


def test_own_modes_under_suspend_and_suspend_under_a_mode_without_gang() -> None:
    # Scenario of the first test. A partition's own CANCEL under the cluster's SUSPEND,GANG: job 1 is
    # preempted as under CANCEL (preempt_partition_prio.c _job_preempt_mode), job 3 starts at 10. A
    # partition's own SUSPEND under the cluster's CANCEL (no GANG): cons_tres _run_now cannot remove a
    # SUSPEND candidate and no gang scheduler would resume it, so nobody is preempted and job 3 waits to 100.
    jobs = [job(1, 0, 100, 2, "low"), job(2, 0, 100, 2, "low"), job(3, 10, 50, 2, "high")]
    nodes = ClusterSpec.homogeneous(2, 2).nodes
    own_cancel = ClusterSpec(nodes, (PartitionSpec("low", preempt_mode="cancel"), TIERS[1]))
    frame = replay(jobs, cluster=own_cancel)
    assert frame.loc[1, ["end", "state"]].tolist() == [10.0, "PREEMPTED"]
    assert frame.loc[3, "start"] == 10.0
    own_suspend = ClusterSpec(nodes, (PartitionSpec("low", preempt_mode="suspend"), TIERS[1]))
    frame = replay(jobs, CANCEL, cluster=own_suspend)
    assert frame.loc[3, "start"] == 100.0 and frame.loc[1, "state"] == "COMPLETED"
    assert partition_preempt_mode("SUSPEND") == partition_preempt_mode("suspend,gang") == "suspend"


def test_under_preempt_qos_tiers_suspend_and_a_qos_alone_does_not() -> None:
    # preempt/qos with SUSPEND,GANG. QoS urgent lists standby in its Preempt. One partition: jobs 1 and
    # 2 (standby) fill the nodes and job 3 (urgent) comes at 10: Slurm would time-slice them in the
    # partition's extra row (_run_now, preempt_by_qos), which the model has not: job 3 waits to 100.
    # Partitions low and high instead: the gang scheduler suspends by tier whatever the QoS (job 1, as
    # in the first test), its QoS's own SUSPEND applying (preempt_qos.c _job_preempt_mode).
    qos = (QosSpec("normal"), QosSpec("standby", preempt_mode="suspend"), QosSpec("urgent", preempt=("standby",)))
    by_qos = dataclasses.replace(SUSPEND, preempt_type="qos")
    one = ClusterSpec(ClusterSpec.homogeneous(2, 2).nodes, (PartitionSpec("batch"),), qos)
    jobs = [job(1, 0, 100, 2, "batch", qos="standby"), job(2, 0, 100, 2, "batch", qos="standby"),
            job(3, 10, 50, 2, "batch", qos="urgent")]
    assert replay(jobs, by_qos, cluster=one).loc[3, "start"] == 100.0
    two = ClusterSpec(ClusterSpec.homogeneous(2, 2).nodes, TIERS, qos)
    tiered = [dataclasses.replace(j, partition=p) for j, p in zip(jobs, ("low", "low", "high"), strict=True)]
    frame = replay(tiered, by_qos, cluster=two)
    assert frame.loc[3, "start"] == 10.0
    assert frame.loc[1, ["end", "suspended_s", "preempted_by"]].tolist() == [150.0, 50.0, 3]


def test_suspend_without_gang_is_refused_as_slurmctld_does(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # read_config.c: "PreemptMode=SUSPEND requires GANG too" (slurmctld does not start). SUSPEND,GANG reads.
    assert preempt_mode("SUSPEND,GANG") == preempt_mode("gang,suspend") == "suspend"
    assert scheduler_config({"PreemptType": "preempt/partition_prio", "PreemptMode": "SUSPEND,GANG"}
                            ).preempt_mode == "suspend"
    with pytest.raises(SlurmConfigError, match="PreemptMode = 'SUSPEND': SUSPEND requires GANG too"):
        scheduler_config({"PreemptType": "preempt/partition_prio", "PreemptMode": "SUSPEND"})
    conf = tmp_path / "slurm.conf"
    conf.write_text("PreemptType=preempt/partition_prio\nPreemptMode=SUSPEND\n")
    out = tmp_path / "history"
    one_line_failure(capsys, ["history", str(DUMP), "--slurm-conf", str(conf), "-o", str(out)], 2,
                     "PreemptMode = 'SUSPEND': SUSPEND requires GANG too (PreemptMode=SUSPEND,GANG), as slurmctld "
                     "says", out)


@pytest.mark.parametrize("mode", ["off", "cancel", "requeue"])
def test_without_suspend_nothing_is_suspended_and_the_table_is_as_before(mode: str) -> None:
    frame = replay([job(1, 0, 100, 2, "low"), job(2, 0, 100, 2, "low"), job(3, 10, 50, 2, "high")],
                   dataclasses.replace(SUSPEND, preempt_mode=mode))
    assert "suspended_s" not in frame and "suspended_at" not in frame
    cluster = ClusterSpec(ClusterSpec.homogeneous(2, 2).nodes, TIERS)
    assert Simulation([], cluster, dataclasses.replace(SUSPEND, preempt_mode=mode)).gang is None


@pytest.mark.parametrize("name", ["easy", "will_run"])
def test_golden_starts_without_suspend_do_not_move(name: str, tmp_path: Path) -> None:
    # tests/test_model_golden_starts.py's committed trace under two of its configs (both kill at the
    # limit; the others run in its slow tests): every start, end and node as recorded before SUSPEND
    assert_recorded_starts("synthetic", name, tmp_path, SYNTHETIC)


def test_at_an_instant_of_the_suspension_the_node_holds_both_and_scontrol_resume_is_refused() -> None:
    # The memory test's first three jobs and its preemptor, stopped at 20: n0 holds job 4's 2 CPUs and
    # job 2's 2, and the memory of jobs 1 (suspended, 600 MB), 2 (100) and 4 (200): 100 MB free. Job 1
    # is SUSPENDED; an scontrol resume of it is refused (the gang scheduler resumes it: its CPUs are job
    # 4's). At 60 (job 2 ended at 30, job 4 now) job 1 runs again, 50 s suspended, 400 MB free beside it.
    cluster = ClusterSpec(ClusterSpec.homogeneous(2, 4, memory_mb=1000).nodes, TIERS)
    jobs = [job(1, 0, 100, 2, "low", memory=600), job(2, 0, 30, 2, "low", memory=100),
            job(3, 0, 200, 4, "low", memory=100), job(4, 10, 50, 2, "high", memory=200)]
    sim = Simulation(jobs, cluster, SUSPEND, checker=InvariantChecker(cluster))
    sim.advance(20.0)
    assert (sim.job(1).state, sim.job(1).suspended_since, sim.job(4).state) == ("SUSPENDED", 10.0, "RUNNING")
    assert (sim.state.node_free[0], sim.state.node_mem_free[0]) == (0, 100.0)
    with pytest.raises(ModelError, match="resumes when its preemptors end"):
        sim.resume(1)
    sim.advance(60.0)
    assert (sim.job(1).state, sim.job(1).suspended_total, sim.state.node_mem_free[0]) == ("RUNNING", 50.0, 400.0)
