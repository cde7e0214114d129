"""Gang scheduling's time-slicing and its shadows in the model (djsb/model/gang.py), worked by hand from
Slurm 22.05's src/slurmctld/gang.c: unless a test says otherwise, one node n0 of 2 cores, partition
``p`` with ``OverSubscribe=FORCE:2`` (two rows: two jobs may hold the same cores), ``PreemptMode=GANG``
(preempt/none), ``SchedulerTimeSlice=30``, textbook passes (at every event, jobs killed at their
limit), the invariant checker on.

Every 2-CPU job on n0 holds both its cores, so any two of them overlap and the active row holds one.
The timeslicer wakes at 30, 60, 90, ... (``_slice_sleep``'s period on the model's clock); at an
instant where a job ends and the timeslicer wakes, the end comes first (``gs_job_fini``), then the wake.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from bench.readme_numbers import against_slurm
from djsb.calibrate.compare import within_spread
from djsb.errors import ConfigError
from djsb.history.notes import unmodelled
from djsb.model import TEXTBOOK, ClusterSpec, SchedulerConfig, Simulation
from djsb.model.cluster_spec import PartitionSpec
from djsb.model.invariants import InvariantChecker
from djsb.model.operations import ModelError
from djsb.model.scheduler import SCHEDULER_READERS
from djsb.slurmsite.slurm_conf import parse_slurm_conf
from djsb.slurmsite.slurm_config import scheduler_config
from djsb.workloads.job import TraceJob
from djsb.yamlnodes import Located

GANG = dataclasses.replace(TEXTBOOK, extend_limit=False, gang=True, time_slice=30.0)
SHARING = PartitionSpec("p", oversubscribe="FORCE:2")


def job(job_id: int, submit: float, run: float, partition: str = "p", limit: float = 1000.0,
        cpus: int = 2) -> TraceJob:
    return TraceJob(job_id, submit, run, cpus, requested_time=limit, partition=partition)


def cluster(*partitions: PartitionSpec) -> ClusterSpec:
    return ClusterSpec(ClusterSpec.homogeneous(1, 2).nodes, partitions or (SHARING,))


def replay(jobs: list[TraceJob], scheduler: SchedulerConfig = GANG,
           spec: ClusterSpec | None = None) -> pd.DataFrame:
    spec = spec or cluster()
    return Simulation(jobs, spec, scheduler, checker=InvariantChecker(spec)).run().jobs.set_index("job_id")


def times(frame: pd.DataFrame, job_id: int) -> list[float]:
    return frame.loc[job_id, ["start", "end", "suspended_s"]].tolist()


def test_a_job_that_started_as_a_filler_runs_two_slices_before_it_is_moved_back() -> None:
    # Jobs 1 and 2 (2 CPUs, 60 s) at 0; both start at 0 (FORCE:2: 4 slots on n0).
    # gs_job_start -> _add_job_to_part: job 1 fits the empty active row, a filler, runs; job 2's cores
    # are job 1's: suspended at 0 (its start is still 0). List [1, 2].
    # Wake at 30, _cycle_job_list: only jobs that were ACTIVE move to the back; job 1 is a FILLER, so it
    # becomes inactive in place; _build_active_row takes it again (first in the list): it runs on.
    # 60: job 1 ends (60 s of work); gs_job_fini -> _update_active_row: job 2 fits, resumes at 60 and
    # runs its 60 s: ends at 120, suspended 60 s. (A plain round robin would have swapped them at 30:
    # job 1 would run 0-30 and 60-90 and end at 90.)
    frame = replay([job(1, 0, 60), job(2, 0, 60)])
    assert times(frame, 1) == [0.0, 60.0, 0.0]
    assert times(frame, 2) == [0.0, 120.0, 60.0]


def test_the_active_jobs_move_to_the_back_of_the_list_at_the_next_wake() -> None:
    # As above with 70 s jobs. Wake 30: job 1 (filler) stays first and becomes ACTIVE. Wake 60: job 1
    # was ACTIVE: moved to the back, [2, 1]; _build_active_row makes job 2 ACTIVE; job 1 (60 s done,
    # 10 left) is suspended at 60 and job 2 resumed. Wake 90: job 2 to the back, [1, 2]: job 1 resumes,
    # job 2 (30 s done, 40 left) is suspended. Job 1 ends at 100 (suspended 60-90: 30 s); gs_job_fini
    # resumes job 2 at 100, which ends at 140 (suspended 0-60 and 90-100: 70 s). The wake at 120 finds
    # no job outside the row (_timeslicer_thread: jobs_active == num_jobs) and does nothing.
    frame = replay([job(1, 0, 70), job(2, 0, 70)])
    assert times(frame, 1) == [0.0, 100.0, 30.0]
    assert times(frame, 2) == [0.0, 140.0, 70.0]


def test_with_three_rows_the_job_suspended_longest_goes_first() -> None:
    # FORCE:3, jobs 1, 2, 3 (2 CPUs, 60 s) at 0: all start at 0 (6 slots); job 1 a filler, jobs 2 and 3
    # suspended at once (_add_job_to_part). List [1, 2, 3].
    # Wake 30: job 1 stays (filler, in place) and becomes ACTIVE. 60: job 1 ends; _update_active_row:
    # job 2 (first suspended job in the list that fits) resumes as a filler, job 3 does not fit.
    # Wake 60 (after the end): job 3 is outside the row, so _cycle_job_list: job 2 is a filler (stays),
    # [2, 3]; job 2 ACTIVE. Wake 90: job 2 was ACTIVE: to the back, [3, 2]: job 3 (suspended since 0)
    # resumes, job 2 (30 s done) is suspended. Wake 120: job 3 to the back, [2, 3]: job 2 resumes,
    # job 3 (30 s done) suspended. Job 2 ends at 150 (30 s left) and job 3 resumes, ending at 180.
    # Job 2: suspended 0-60 and 90-120 = 90 s; job 3: 0-90 and 120-150 = 120 s.
    spec = cluster(PartitionSpec("p", oversubscribe="FORCE:3"))
    frame = replay([job(1, 0, 60), job(2, 0, 60), job(3, 0, 60)], spec=spec)
    assert times(frame, 1) == [0.0, 60.0, 0.0]
    assert times(frame, 2) == [0.0, 150.0, 90.0]
    assert times(frame, 3) == [0.0, 180.0, 120.0]


def test_a_third_job_waits_for_slots_then_takes_its_turn() -> None:
    # FORCE:2 and three jobs (2 CPUs, 60 s) at 0: jobs 1 and 2 take the 4 slots (job 2 suspended at
    # once), job 3 waits (Resources). 60: job 1 ends: gs_job_fini resumes job 2 (filler); the pass after
    # the end starts job 3 on job 1's slots, on cores job 2 holds: _add_job_to_part suspends it at 60.
    # List [2, 3]. Wake 90: job 2 is a filler: stays, ACTIVE; job 3 stays suspended. 120: job 2 ends
    # (60 s since 60), job 3 resumes (gs_job_fini) and ends at 180, suspended 60-120 = 60 s.
    frame = replay([job(1, 0, 60), job(2, 0, 60), job(3, 0, 60)])
    assert times(frame, 2) == [0.0, 120.0, 60.0]
    assert times(frame, 3) == [60.0, 180.0, 60.0]


def test_jobs_on_different_cores_share_the_active_row_and_a_whole_node_job_takes_turns() -> None:
    # One node of 4 cores, FORCE:2. At 0: job 1 (2 CPUs, 60 s) takes idle cores 0-1, job 2 (2 CPUs,
    # 120 s) idle cores 2-3 (cons_tres _job_test step 1: idle cores first), job 3 (4 CPUs, 60 s) shares
    # all four. _job_fits_in_active_row (job_fits_into_cores, GS_CORE) compares cores: jobs 1 and 2 are
    # both fillers; job 3 overlaps them and is suspended at 0. Wake 30: both stay (fillers), ACTIVE.
    # 60: job 1 ends; _update_active_row: job 3 still overlaps job 2. Wake 60: job 2 (ACTIVE) to the back,
    # [3, 2]: job 3 resumes, job 2 (60 s done) suspended. Wake 90: [2, 3]: job 2 resumes, job 3 (30 s
    # done) suspended. Wake 120: [3, 2]: job 3 resumes, job 2 (90 s done) suspended. Job 3 ends at 150
    # (suspended 0-60 and 90-120: 90 s); gs_job_fini resumes job 2, which ends at 180 (suspended 60-90
    # and 120-150: 60 s). Were nodes compared instead of cores, job 2 would be suspended at 0.
    spec = ClusterSpec(ClusterSpec.homogeneous(1, 4).nodes, (SHARING,))
    frame = replay([job(1, 0, 60), job(2, 0, 120), job(3, 0, 60, cpus=4)], spec=spec)
    assert times(frame, 1) == [0.0, 60.0, 0.0]
    assert times(frame, 3) == [0.0, 150.0, 90.0]
    assert times(frame, 2) == [0.0, 180.0, 60.0]


def test_a_cancelled_job_leaves_the_row_and_the_next_resumes_at_once() -> None:
    # As the first test; scancel of the running job 1 at 10: gs_job_fini -> _update_active_row resumes
    # job 2 at 10 (not at the next wake): it ends at 70, suspended 10 s.
    spec = cluster()
    sim = Simulation([job(1, 0, 60), job(2, 0, 60)], spec, GANG, checker=InvariantChecker(spec))
    sim.advance(10)
    sim.cancel(1)
    frame = sim.run().jobs.set_index("job_id")
    assert times(frame, 2) == [0.0, 70.0, 10.0]


def test_jobs_of_another_partition_are_not_sliced_against_these() -> None:
    # Partitions p and q, both FORCE:2 over n0, same PriorityTier. Job 1 (p) and job 2 (q), 2 CPUs,
    # 60 s, at 0: both start at 0 on the same two cores. gang.c keeps one job list and active row per
    # partition (_build_parts): each is alone in its row, so neither is suspended and both end at 60.
    spec = cluster(SHARING, PartitionSpec("q", oversubscribe="FORCE:2"))
    frame = replay([job(1, 0, 60), job(2, 0, 60, partition="q")], spec=spec)
    assert times(frame, 1) == [0.0, 60.0, 0.0]
    assert times(frame, 2) == [0.0, 60.0, 0.0]


@pytest.mark.parametrize("scheduler", [GANG, dataclasses.replace(GANG, preempt_type="partition_prio",
                                                                   preempt_mode="suspend")],
                         ids=["GANG", "SUSPEND,GANG"])
def test_a_higher_tier_job_sharing_the_cores_casts_its_shadow(scheduler: SchedulerConfig) -> None:
    # Partitions lo (PriorityTier 1) and hi (10), both FORCE:2 over n0. Job 1 (lo, 2 CPUs, 100 s) at 0;
    # job 2 (hi, 2 CPUs, 50 s) at 10 finds no idle core and shares job 1's (cons_tres _job_test: under
    # gang_mode step 3 removes only the cores of partitions of its own tier). gs_job_start: job 2 fits
    # hi's empty row and casts its shadow on lo (_cast_shadow); _update_all_active_rows rebuilds lo's
    # row from the shadow first: job 1 no longer fits and is suspended at 10 (its PreemptMode is OFF
    # under preempt/none, SUSPEND under SUSPEND,GANG: suspended either way). Job 2 ends at 60
    # (gs_job_fini clears the shadow): job 1 resumes at 60 with 90 s left, ends at 150, suspended 50 s.
    spec = cluster(PartitionSpec("lo", oversubscribe="FORCE:2"),
                   PartitionSpec("hi", oversubscribe="FORCE:2", priority_tier=10))
    frame = replay([job(1, 0, 100, partition="lo"), job(2, 10, 50, partition="hi")], scheduler, spec)
    assert times(frame, 2) == [10.0, 60.0, 0.0]
    assert times(frame, 1) == [0.0, 150.0, 50.0]


def test_a_partition_cycles_only_when_its_row_holds_fewer_shadows_and_jobs_than_it_has() -> None:
    # One node n0 of 4 cores, partitions other and lo (tier 1) and hi (tier 10), all FORCE:3 (12 slots).
    # Cores go to the least held, lowest first. 0: job 1 (other, 3 CPUs, 50 s) takes cores 0-2 and job 2
    # (lo, 1 CPU, 100 s) core 3, both idle. 1: job 3 (hi, 2 CPUs, 200 s) shares cores 0-1; its shadow
    # suspends job 1, not job 2. 2: job 4 (hi, 2, 200 s) cores 2-3, a filler beside job 3; its shadow
    # suspends job 2. 3: job 5 (hi, 3 CPUs, 60 s) cores 0-2 overlaps both: suspended at once. lo's row,
    # built at 2: 2 shadows + 0 jobs (jobs_active 2). Wake 30: hi's fillers become ACTIVE; lo and other
    # cycle (2 < 1 job + 2 shadows) to no effect. Wake 60: hi's jobs 3 and 4 go to the back, job 5
    # resumes (cores 0-2) and jobs 3 and 4 are suspended (59 and 58 s done): one shadow left, which spares
    # job 2's core 3; but _timeslicer_thread tests lo's row as built at 30: jobs_active 2 is not below
    # 1 job + 1 shadow, so lo does not cycle and job 2 stays suspended. Wake 90: jobs 3 and 4 resume,
    # job 5 suspended (30 s left): 2 shadows again. Wake 120: job 5 resumes; lo, built at 90 with 2
    # shadows, again does not cycle. Job 5 ends at 150: gs_job_fini's _update_all_active_rows resumes
    # jobs 3 and 4 (89 and 88 s done), whose shadows keep jobs 1 and 2 suspended; job 3 ends at 261,
    # job 4 at 262, when jobs 1 (49 s left) and 2 (98 s left) resume: job 1 ends at 311, job 2 at 360.
    # (Cycled whenever it had a job outside its row, lo would have run job 2 from 60 to 90.)
    spec = cluster(PartitionSpec("other", oversubscribe="FORCE:3"), PartitionSpec("lo", oversubscribe="FORCE:3"),
                   PartitionSpec("hi", oversubscribe="FORCE:3", priority_tier=10))
    spec = ClusterSpec(ClusterSpec.homogeneous(1, 4).nodes, spec.partitions)
    frame = replay([job(1, 0, 50, partition="other", cpus=3), job(2, 0, 100, partition="lo", cpus=1),
                    job(3, 1, 200, partition="hi"), job(4, 2, 200, partition="hi"),
                    job(5, 3, 60, partition="hi", cpus=3)], spec=spec)
    assert times(frame, 5) == [3.0, 150.0, 87.0]
    assert times(frame, 3) == [1.0, 261.0, 60.0]
    assert times(frame, 4) == [2.0, 262.0, 60.0]
    assert times(frame, 1) == [0.0, 311.0, 261.0]
    assert times(frame, 2) == [0.0, 360.0, 260.0]


def test_under_requeue_gang_a_shadow_makes_the_rotation_requeue_instead_of_suspend() -> None:
    # PreemptType=preempt/partition_prio, PreemptMode=REQUEUE,GANG. Nodes n0 (partition lo, FORCE:2,
    # tier 1) and n1 (hi, OverSubscribe=NO, tier 10). At 0 the pass starts job 3 (hi, 100 s; the higher
    # tier is first in the queue) on n1, then jobs 1 and 2 (lo, 2 CPUs, 60 s) on n0. Job 3 runs: its
    # shadow is cast on lo (on every lower partition, whatever its nodes: num_shadows 1). Job 2 does
    # not fit lo's row (job 1's cores) and, its mode being REQUEUE with num_shadows > 0,
    # _add_job_to_part queues it for preemption instead of suspending it: requeued at 0, eligible
    # again 121 s later (requeue_delay, as any requeued job), it starts at 121 on the idle n0 (job 1
    # ended at 60) and ends at 181. Without the shadow it would have been suspended and resumed at 60.
    spec = ClusterSpec(ClusterSpec.homogeneous(2, 2).nodes,
                       (PartitionSpec("lo", oversubscribe="FORCE:2", nodes=("n0",)),
                        PartitionSpec("hi", priority_tier=10, nodes=("n1",))))
    requeue = dataclasses.replace(GANG, preempt_type="partition_prio", preempt_mode="requeue")
    frame = replay([job(1, 0, 60, partition="lo"), job(2, 0, 60, partition="lo"),
                    job(3, 0, 100, partition="hi")], requeue, spec)
    assert frame.loc[2, ["start", "end", "requeues"]].tolist() == [121.0, 181.0, 1]
    assert times(frame, 1) == [0.0, 60.0, 0.0]


def test_the_timeslicer_wakes_on_its_own_clock_not_the_jobs() -> None:
    # Job 1 (80 s) and job 2 (20 s) at 10: job 1 a filler, job 2 suspended at 10. The timeslicer wakes
    # at 30, 60, ... (_slice_sleep from slurmctld's start), not 30 s after the jobs: wake 30, job 1
    # stays; wake 60, job 1 (50 s done) to the back, job 2 resumes at 60 and ends at 80; gs_job_fini
    # resumes job 1, 30 s left: it ends at 110. (Woken at 40, 70, ...: job 2 would end at 90.)
    frame = replay([job(1, 10, 80), job(2, 10, 20)])
    assert times(frame, 2) == [10.0, 80.0, 50.0]
    assert times(frame, 1) == [10.0, 110.0, 20.0]


def test_time_suspended_by_the_rotation_does_not_count_against_the_limit() -> None:
    # As the first test, job 2 asking 60 s but needing 300: suspended 0-60, it runs 60-120 and is killed
    # at its limit at 120 = 0 + 60 + 60 suspended (job_mgr.c _job_suspend_op: end_time = resume time
    # 60 + time_limit 60 - pre_sus_time 0), not at 60 while suspended.
    frame = replay([job(1, 0, 60), job(2, 0, 300, limit=60)])
    assert frame.loc[2, ["end", "killed", "suspended_s"]].tolist() == [120.0, True, 60.0]


def test_without_gang_the_jobs_share_their_cores_and_nothing_is_suspended() -> None:
    # PreemptMode OFF: no gang scheduler (gs_init returns at once): both jobs run 0-60 on the same cores.
    frame = replay([job(1, 0, 60), job(2, 0, 60)], dataclasses.replace(GANG, gang=False))
    assert frame["end"].tolist() == [60.0, 60.0]
    assert "suspended_s" not in frame
    assert Simulation([], cluster(), dataclasses.replace(GANG, gang=False)).slicer is None
    assert Simulation([], cluster(PartitionSpec("p")), GANG).slicer is None  # no partition shares cores


def test_suspend_gang_time_slices_too() -> None:
    # PreemptMode=SUSPEND,GANG has GANG: the same rotation as the first test.
    suspend = dataclasses.replace(GANG, gang=False, preempt_type="partition_prio", preempt_mode="suspend")
    frame = replay([job(1, 0, 60), job(2, 0, 60)], suspend)
    assert times(frame, 2) == [0.0, 120.0, 60.0]


def test_a_job_suspended_by_hand_leaves_the_list_and_rejoins_it_at_the_back() -> None:
    # As the first test; scontrol suspend of the running job 1 at 10: job_mgr.c _job_suspend_op calls
    # gs_job_fini, so job 2 fits the active row and resumes at 10. scontrol resume of job 1 at 20:
    # gs_job_start appends it, [2, 1], on its cores, which job 2 (a filler) holds: the gang scheduler
    # suspends it at once. Wake 30: job 2 stays (filler), ACTIVE. Wake 60: job 2 to the back, [1, 2]:
    # job 1 resumes, job 2 (50 s done) suspended. Wake 90: [2, 1]: job 2 resumes, job 1 (10 + 30 s
    # done) suspended. Job 2 ends at 100 (suspended 0-10 and 60-90: 40 s); gs_job_fini resumes job 1,
    # which ends at 120 (suspended 10-60 and 90-100: 60 s).
    spec = cluster()
    sim = Simulation([job(1, 0, 60), job(2, 0, 60)], spec, GANG, checker=InvariantChecker(spec))
    sim.advance(10)
    sim.suspend(1)
    assert sim.job(2).state == "RUNNING"
    sim.advance(20)
    sim.resume(1)
    assert sim.job(1).state == "SUSPENDED"
    frame = sim.run().jobs.set_index("job_id")
    assert times(frame, 2) == [0.0, 100.0, 40.0]
    assert times(frame, 1) == [0.0, 120.0, 60.0]


def test_scontrol_operations_refuse_a_job_the_rotation_suspended() -> None:
    spec = cluster()
    sim = Simulation([job(1, 0, 60), job(2, 0, 60)], spec, GANG, checker=InvariantChecker(spec))
    sim.advance(10)
    assert sim.job(2).state == "SUSPENDED"
    for operation in (sim.resume, sim.suspend):
        with pytest.raises(ModelError, match="suspended by gang scheduling's time-slicing"):
            operation(2)
    with pytest.raises(ModelError, match="cannot be resized"):
        sim.resize(1, [1])


def test_gang_and_the_time_slice_are_read_from_a_site() -> None:
    # PreemptMode=GANG alone is gang scheduling without preemption (valid with preempt/none,
    # read_config.c); SchedulerTimeSlice below 5 s is refused by slurmctld, which takes 30.
    config = scheduler_config({"PreemptMode": "GANG", "SchedulerTimeSlice": "10"})
    assert (config.gang, config.preempt_mode, config.time_slice, config.gang_scheduling) == (True, "off", 10.0, True)
    assert scheduler_config({"PreemptMode": "OFF"}).gang_scheduling is False
    assert scheduler_config({"SchedulerTimeSlice": "30 sec"}).time_slice == 30.0
    assert scheduler_config({"SchedulerTimeSlice": "3"}).time_slice == 30.0
    with pytest.raises(ConfigError, match="must be at least 5 s"):
        SCHEDULER_READERS["time_slice"](Located(3, 4, "policy.scheduler.time_slice", "cfg.yaml"))


def test_a_site_s_slurm_conf_gives_gang_and_notes_what_the_placement_lacks() -> None:
    # djsb history reads the scheduler from slurm.conf (history/replay.py: scheduler_config(conf.config)).
    # Time-slicing and shadows are modelled: PreemptMode=GANG is no longer a note; where partitions of
    # two tiers are defined, what the model's placement does not do is (a job of the higher tier
    # placed on a lower tier's cores that do not share, which cons_tres allows under gang_mode).
    text = "PreemptMode=GANG\nSchedulerTimeSlice=45\nNodeName=n0 CPUs=2\n"
    one_tier = parse_slurm_conf(text + "PartitionName=p Nodes=n0 OverSubscribe=FORCE:2\n")
    assert (scheduler_config(one_tier.config).gang, scheduler_config(one_tier.config).time_slice) == (True, 45.0)
    assert not [note for note in unmodelled(one_tier) if "GANG" in note]
    two_tiers = parse_slurm_conf(text + "PartitionName=p Nodes=n0 OverSubscribe=FORCE:2\n"
                                 "PartitionName=hi Nodes=n0 PriorityTier=10\n")
    assert [note for note in unmodelled(two_tiers) if "GANG" in note] == [
        "PreemptMode=GANG: a job of a higher PriorityTier partition that finds no idle core takes the cores of "
        "lower-tier jobs (the gang scheduler's shadow suspending them) only where they share cores "
        "(OverSubscribe FORCE:N) or by SUSPEND's preemption here; cons_tres's _job_test lets any job do it "
        "under GANG (djsb/model/gang.py)"]


def test_a_job_takes_idle_cores_before_it_shares_busy_ones() -> None:
    # Two nodes of 2 cores, FORCE:2, nodes chosen as cons_tres chooses them. Jobs 1 and 2 (1 CPU,
    # 100 s) at 0 fill one node's two cores (best fit: the node with the fewest idle cores that hold
    # the job). Job 3 (1 CPU, 10 s) at 5 finds no idle core there and two on the other node:
    # cons_common job_test.c _job_test's step 1 seeks idle CPUs across all partitions and places it
    # there, so it runs 5-15, never suspended. Sharing a busy node's cores instead (its free slots
    # tie with the idle node's), gang.c's _add_job_to_part would suspend it at once.
    spec = ClusterSpec(ClusterSpec.homogeneous(2, 2).nodes, (SHARING,))
    scheduler = dataclasses.replace(GANG, node_select="cons_tres")
    frame = replay([job(1, 0, 100, cpus=1), job(2, 0, 100, cpus=1), job(3, 5, 10, cpus=1)], scheduler, spec)
    nodes = frame["nodes"].astype(str).to_dict()
    assert nodes[1] == nodes[2] != nodes[3]
    assert times(frame, 3) == [5.0, 15.0, 0.0]


GANG_RUN = Path(__file__).parent / "fixtures" / "calibrate" / "gang"


@pytest.mark.xfail(strict=True, reason="not reproduced: the live gang run (tests/test_calibrate_gang.py) "
                   "is replayed at +41.2 % of its mean wait where Slurm's own run 2 is -10.3 %: Slurm's "
                   "backfill starts 1-CPU jobs on a FORCE partition's second row beside the waiting "
                   "7-CPU job 18, the model's does not")
def test_the_live_gang_run_is_replayed_within_slurms_spread() -> None:
    # the calibration's rule (compare.within_spread: the mean wait within Slurm's two runs', 10 % of
    # run 1's either side; the 32-job KTH window on cal_gang, OverSubscribe=FORCE:2, PreemptMode=GANG)
    measured, own, _, _ = against_slurm(GANG_RUN)
    assert within_spread(measured.mean_wait_b, (own.mean_wait_a, own.mean_wait_b)), (measured, own)


GANG_ONE_CPU_RUN = Path(__file__).parent / "fixtures" / "calibrate" / "gang_one_cpu"


def test_the_live_gang_run_of_one_cpu_jobs_is_replayed_within_slurms_spread(tmp_path: Path) -> None:
    # the same window with every job asking one CPU, live (tests/test_calibrate_gang.py, case one-cpu):
    # no job then needs cores free within one row of the partition, and the model is within Slurm's
    # own run-to-run difference, so the window's error comes from its jobs of several CPUs
    measured, own, slurm, model = against_slurm(GANG_ONE_CPU_RUN)
    assert within_spread(measured.mean_wait_b, (own.mean_wait_a, own.mean_wait_b)), (measured, own)
    assert measured.tau >= 0.95, measured
    # both time-sliced nearly every job: 28 of Slurm's, 27 of the model's
    assert abs(int((model["suspended_s"] > 0).sum()) - int((slurm["ctld_suspended"] > 0).sum())) <= 1
    # the rotation is what agrees: the model built from the same answers without GANG runs every job
    # at once, its mean wait less than half Slurm's
    shutil.copytree(GANG_ONE_CPU_RUN, tmp_path / "run")
    for name in ("show_config.txt", "show_partition.txt"):
        shown = tmp_path / "run" / name
        shown.write_text(re.sub(r"PreemptMode(\s*=\s*|=)GANG", r"PreemptMode\1OFF", shown.read_text()))
    without, _, _, _ = against_slurm(tmp_path / "run")
    assert without.mean_wait_error < -0.5, without
