"""The backfill plan and node choice as Slurm makes them, worked by hand.

``node_select: cons_tres`` is select/cons_tres's ``_eval_nodes`` (djsb/model/cons_tres.py);
``bf_will_run`` is sched/backfill's pass with the select plugin's will-run test
(djsb/model/will_run.py). Nodes are numbered from 0 here (n1 of the comments is node 0).
"""

from __future__ import annotations

import dataclasses

import pytest
from support import TraceFile
from support import exact_job as job
from support import model_starts as starts

from djsb.model import ClusterSpec, InvariantChecker, SchedulerConfig, Simulation, StartState
from djsb.model.cluster_state import ClusterState
from djsb.model.cons_tres import best_fit, consecutive_sets
from djsb.model.placement import Placement
from djsb.model.will_run import NodeSpace, WillRunTest
from djsb.workloads.job import TraceJob
from djsb.workloads.swf import read_swf

SLURM_LIKE = SchedulerConfig(backfill="conservative", sched_interval=0, bf_interval=0, bf_resolution=60,
                             bf_will_run=True, node_select="cons_tres")


# ---------------------------------------------------------------- cons_tres node choice
def test_sets_are_runs_of_consecutive_nodes_with_room() -> None:
    assert consecutive_sets([(0, 1), (1, 0), (2, 2), (3, 2), (5, 1)]) == [[(0, 1)], [(2, 2), (3, 2)], [(5, 1)]]


@pytest.mark.parametrize(("rooms", "cpus", "taken"), [
    # {n1} (1 CPU) and {n3, n4} (4) both hold 1 CPU: the smaller set, n1.
    ([(0, 1), (1, 0), (2, 2), (3, 2)], 1, [(0, 1)]),
    # {n1, n2} (4) and {n3} (1): n3, where first fit would take n1.
    ([(0, 2), (1, 2), (2, 1), (3, 0)], 1, [(2, 1)]),
    # One set of 7 and no node with 3 free: index order, n1 (1) then n2 (2).
    ([(0, 1), (1, 2), (2, 2), (3, 2)], 3, [(0, 1), (1, 2)]),
    # One set, and n2 is the node with the fewest CPUs that holds the job.
    ([(0, 2), (1, 1), (2, 2)], 1, [(1, 1)]),
    # Sets of 1, 1 and 2 CPUs, none holds 3: the largest (n5, n6), then the first of the
    # smallest sufficient ones for the last CPU (n1).
    ([(0, 1), (1, 0), (2, 1), (3, 0), (4, 1), (5, 1)], 3, [(0, 1), (4, 1), (5, 1)]),
    ([(0, 1), (1, 0), (2, 1)], 3, None),
])
def test_best_fit_follows_eval_nodes(rooms: list[tuple[int, int]], cpus: int,
                                     taken: list[tuple[int, int]] | None) -> None:
    assert best_fit(rooms, cpus) == taken


def test_cons_tres_puts_a_small_job_on_the_partly_used_node() -> None:
    # 2 nodes x 2 cores. Job 1 (2 cores, runs 5) takes n1 and job 2 (1 core) n2 at t=0 (both
    # rules). At 5 job 1 ends: n1 has 2 free, n2 1, one set of 3. Job 3 (1 core, t=6): first fit
    # takes n1; cons_tres the node with the fewest free that holds it, n2, and keeps n1 whole.
    jobs = [job(1, 0, 2, 5), job(2, 0, 1, 1000), job(3, 6, 1, 1000)]
    nodes = {}
    for select in ("first_fit", "cons_tres"):
        config = dataclasses.replace(SLURM_LIKE, bf_will_run=False, node_select=select)
        result = Simulation(jobs, ClusterSpec.homogeneous(2, 2), config).run().jobs.set_index("job_id")
        nodes[select] = result.loc[3, "nodes"]
    assert nodes == {"first_fit": "n0", "cons_tres": "n1"}


def test_cons_tres_counts_a_node_by_the_cpus_its_free_memory_holds() -> None:
    # 3 nodes x 2 cores x 2048 MB (CR_Core_Memory). n1 runs 1 CPU x 1536 MB (free: 1 CPU, 512 MB),
    # n3 1 CPU x 256 MB (free: 1 CPU, 1792 MB). A 1-CPU job of 1024 MB: n1's memory holds no CPU
    # of it (512 // 1024 = 0), so n1 is out and {n2 (2 CPUs), n3 (1)} is the one set; cons_tres
    # takes its node with the fewest CPUs that holds the job, n3. First fit takes n2.
    state = ClusterState(ClusterSpec.homogeneous(3, 2, memory_mb=2048))
    part = state.partitions[0]
    for node, memory in ((0, 1536.0), (2, 256.0)):
        state.commit(Placement.of([(node, 1)]), 1, [memory])
    chosen = {}
    for select in (False, True):
        state.cons_tres_select = select
        alloc = state.allocate(part, 1, None, 1024.0)
        assert alloc is not None
        chosen[select] = list(alloc)
    assert chosen == {False: [(1, 1)], True: [(2, 1)]}


# ---------------------------------------------------------------- the will-run test
def busy_cluster() -> tuple[ClusterState, list[tuple[float, Placement, None, int, int]]]:
    """4 nodes x 2 cores; running (planned end, node): 100 n1, 110 n2, 160 n1, 170 n2, 175 n3;
    free now: n3 1 core, n4 2."""
    state = ClusterState(ClusterSpec.homogeneous(4, 2))
    state.cons_tres_select = True
    holdings = [(float(end), Placement.of([(node, 1)]), None, job_id, 0)
                for job_id, (end, node) in enumerate(((100, 0), (110, 1), (160, 0), (170, 1), (175, 2)))]
    for _, alloc, _, _, _ in holdings:
        state.commit(alloc, 1, None)
    return state, holdings


def test_will_run_removes_running_jobs_in_aligned_batches() -> None:
    # A 6-core job. Now: 3 free. The first batch ends at 100 rounded up to a multiple of 30 (120)
    # plus 30 = 150: jobs ending at 100 and 110 go, 5 free, no fit. The window doubles to 60 (up
    # to 180): 160, 170 and 175 go, all 8 free. Start: the last removed job's end, 175; nodes as
    # cons_tres chooses from one set of 8 with no node of 6: n1, n2, n3 in index order. (Removing
    # jobs one by one would start it at 160 on n1 + n2 + n3 + n4, as the model's own planner does.)
    state, holdings = busy_cluster()
    found = WillRunTest(state, holdings, 1.0).test(frozenset(range(4)), lambda view: view.allocate(view.partitions[0], 6, None, None))
    assert found is not None
    assert (found[0], list(found[1])) == (175, [(0, 2), (1, 2), (2, 2)])


def test_will_run_counts_only_jobs_on_usable_nodes() -> None:
    # Only n1 and n2 usable (n3, n4 reserved), a 4-core job: the jobs on n3 never count. Batch 1
    # (up to 150): 100, 110 go, n1 1 + n2 1 free; batch 2 (up to 180): 160, 170 go: 4 free at 170.
    state, holdings = busy_cluster()
    found = WillRunTest(state, holdings, 1.0).test(frozenset({0, 1}), lambda view: view.allocate(view.partitions[0], 4, None, None))
    assert found is not None
    assert (found[0], list(found[1])) == (170, [(0, 2), (1, 2)])
    assert WillRunTest(state, holdings, 1.0).test(frozenset({0}), lambda view: view.allocate(view.partitions[0], 4, None, None)) is None


def test_will_run_checks_the_batch_bound_on_the_next_job_of_the_whole_list() -> None:
    # Only n1 usable, a 1-core job; n1 is full (jobs ending at 100 and 160). cons_common
    # job_test.c removes the 100 job, then peeks at the next running job of the whole list: the
    # 110 job on n2, within the bound (120 + 30 = 150), so the batch goes on. The 110 job runs
    # elsewhere and is skipped without a check, so the 160 job joins the first batch though it
    # ends past 150; the next peek (170) ends the batch. The job fits, and the start is the last
    # removed job's end: 160, not 100 (checking the bound on the next *usable* job would stop the
    # batch after 100). Slurm 22.05 did this in a record made with DebugFlags=Backfill: a job
    # ending 1 s past the bound removed in the first batch.
    state, holdings = busy_cluster()
    found = WillRunTest(state, holdings, 1.0).test(frozenset({0}), lambda view: view.allocate(view.partitions[0], 1, None, None))
    assert found is not None
    assert (found[0], list(found[1])) == (160, [(0, 1)])


@pytest.mark.parametrize(("elsewhere_first", "start"), [(False, 160.0), (True, 100.0)])
def test_jobs_ending_together_are_removed_in_job_id_order(elsewhere_first: bool, start: float) -> None:
    # n1 (usable) runs jobs ending at 100 and 160, n2 (not usable) one ending at 100 too and one
    # at 170; a 1-core job on n1. The two jobs ending at 100 are taken in job id order (job_list's
    # creation order, kept by a stable sort by end). The n1 job first: its removal peeks at the n2
    # job (100, within the bound 150), which is then skipped, so the 160 job joins the batch: start
    # 160. The n2 job first: it is skipped, the n1 job's removal peeks at the 160 job, past the
    # bound: the batch ends, the job fits, start 100.
    state = ClusterState(ClusterSpec.homogeneous(2, 2))
    state.cons_tres_select = True
    ids = (1, 0) if elsewhere_first else (0, 1)  # job ids of the n1 and the n2 job ending at 100
    holdings = [(100.0, Placement.of([(0, 1)]), None, ids[0], 0), (100.0, Placement.of([(1, 1)]), None, ids[1], 0),
                (160.0, Placement.of([(0, 1)]), None, 2, 0), (170.0, Placement.of([(1, 1)]), None, 3, 0)]
    for _, alloc, _, _, _ in holdings:
        state.commit(alloc, 1, None)
    found = WillRunTest(state, holdings, 1.0).test(frozenset({0}), lambda view: view.allocate(view.partitions[0], 1, None, None))
    assert found is not None and found[0] == start


def test_will_run_expects_a_job_past_its_limit_gone_kill_wait_after_it() -> None:
    # Now 120: the jobs expected to end at 100 (n1) and 110 (n2) are past their limits, not yet
    # killed. A 2-core job on n1 + n2 fits once the first batch (up to 120 + 30) is gone; the last
    # job removed ended at 110, so Slurm's _guess_job_end gives 110 + KillWait: 140 with KillWait
    # 30; with KillWait 5, 115 is already past, so a second from now, 121.
    state, holdings = busy_cluster()
    usable = frozenset({0, 1})
    for kill_wait, start in ((30.0, 140.0), (5.0, 121.0)):
        found = WillRunTest(state, holdings, 120.0, kill_wait).test(
            usable, lambda view: view.allocate(view.partitions[0], 2, None, None))
        assert found is not None and found[0] == start


def test_node_space_rounds_down_and_keeps_whole_nodes() -> None:
    space = NodeSpace(now=130, resolution=60)  # its first slot begins at 120
    hold = space.reserve([0, 1], 175, 295)
    assert (hold.begin, hold.end) == (120, 240)  # both ends rounded down
    assert space.reserve([3], 130, 150).end == 180  # at least one resolution long
    # slots: [120, 180) n1 n2 n4 reserved, [180, 240) n1 n2, [240, inf) none
    assert space.scan(range(4), 130, 200) == ({2}, 180)  # n4 frees at 180
    assert space.scan(range(3), 130, 200) == ({2}, 240)  # where n1 and n2 free again
    assert space.scan(range(4), 240, 300) == ({0, 1, 2, 3}, None)  # a slot ending at 240 does not reach it
    assert space.scan(range(3), 100, 120) == ({2}, 240)  # a slot beginning at the window's end does
    assert space.scan([2], 130, 200) == ({2}, None)  # never reserved
    # the slot just past the window is looked at for the next try: window [130, 170] ends in
    # [120, 180), whose successor frees n4
    assert space.scan([3], 130, 170) == (frozenset(), 180)
    assert space.overlaps([1], 200, 250) and not space.overlaps([1], 240, 400)
    assert not space.overlaps([2], 0, 1000)


# ---------------------------------------------------------------- a pass as Slurm makes it
# The case of the live calibration (tests/test_calibrate_slurm.py), in small. 4 nodes x 2 cores; at t=0 five 1-core jobs
# (limits = run times 100, 160, 110, 170, 175) go to n1, n1, n2, n2, n3. J (6 cores, limit 120)
# arrives at t=1 and waits (3 free). K (1 core, limit 300) arrives at t=2.
# Slurm: J's will-run start is 175 on n1-n3 (above), reserved over [120, 240) (rounded down); K's
# run [2, 302] overlaps it, so K may use n4 only, where it fits now: K starts at 2. J starts at
# 170 when the main pass finds 6 cores free (n1 2, n2 2, n3 1, n4 1).
# The model's own planner with whole-node reservations: J's earliest start is 160 on n1 2, n2 1,
# n3 1, n4 2 and all four nodes are reserved over [160, 280): K waits. J starts at 160, and K
# when a core frees after that: at 170 (job ending 170 on n2).
ISSUE_CASE = [job(1, 0, 1, 100), job(2, 0, 1, 160), job(3, 0, 1, 110), job(4, 0, 1, 170),
              job(5, 0, 1, 175), job(6, 1, 6, 120), job(7, 2, 1, 300)]


def test_job_outside_the_will_run_reservation_backfills_at_once() -> None:
    checker = InvariantChecker(ClusterSpec.homogeneous(4, 2))  # raises on an oversubscribed node
    got = starts(ISSUE_CASE, ClusterSpec.homogeneous(4, 2), SLURM_LIKE, checker)
    assert got == {1: 0, 2: 0, 3: 0, 4: 0, 5: 0, 6: 170, 7: 2}  # J by its planned start (175)


def test_models_own_node_plan_holds_the_same_job_back() -> None:
    exact = dataclasses.replace(SLURM_LIKE, bf_will_run=False, node_select="first_fit",
                                bf_node_reservations=True, bf_resolution=0)
    got = starts(ISSUE_CASE, ClusterSpec.homogeneous(4, 2), exact)
    assert (got[6], got[7]) == (160, 170)


@pytest.mark.parametrize(("phase", "backfilled_at"), [(3.0, 3), (None, 5)])
def test_backfill_passes_follow_the_given_phase(phase: float | None, backfilled_at: float) -> None:
    # 1 node x 2 cores, backfill every 5 s at phase 3 (passes at 3, 8, ...) or 0 (5, 10, ...),
    # the main pass at submissions and ends. Job 1 (1 core, limit 60) starts at 0; job 2 (2 cores,
    # t=1) waits, reserved from 60; job 3 (1 core, limit 10, t=2) is behind job 2 in FIFO order
    # and fits before the reservation: the first backfill pass after its submission starts it.
    jobs = [job(1, 0, 1, 60), job(2, 1, 2, 60), job(3, 2, 1, 10)]
    config = dataclasses.replace(SLURM_LIKE, sched_interval=100, bf_interval=5, bf_phase=phase)
    assert starts(jobs, ClusterSpec.homogeneous(1, 2), config)[3] == backfilled_at


# 1 node x 4 cores (the case of tests/test_model_slurm_plan.py). A (t=30, 3 cores, limit = run =
# 120) runs until 150; H (t=70, 4 cores, limit 60) waits: its will-run start is A's end, 150.
# S (t=70, 1 core, limit 60) would run over [70, 130], before H's exact start.
# bf_resolution 60: H's reservation is [floor(150/60)*60, floor(210/60)*60) = [120, 180), which
# S's run overlaps: no node is usable for [70, 130]. The next try is where the node frees, 180:
# S fits then and is reserved there; H starts at 150 when A ends, and S when H ends, at 210.
# bf_resolution 0: H holds [150, 210) exactly, S's run does not reach it: backfilled at 70.
@pytest.mark.parametrize(("resolution", "short_start"), [(60, 210), (0, 70)])
def test_rounded_reservation_forbids_the_short_job(resolution: float, short_start: float) -> None:
    jobs = [job(1, 30, 3, 120), job(2, 70, 4, 60), job(3, 70, 1, 60)]
    config = dataclasses.replace(SLURM_LIKE, bf_resolution=resolution)
    assert starts(jobs, ClusterSpec.homogeneous(1, 4), config) == {1: 30, 2: 150, 3: short_start}


def test_jobs_without_a_limit_keep_fifo_order() -> None:
    # 1 node x 2 cores, no time limits (run times 100, 50, 10). Job 1 (2 cores) runs and is
    # expected to end never, so the will-run test finds no start for job 2 (2 cores) within the
    # window and job 3 (1 core) none either: nothing backfills, FIFO order holds. Job 2 starts when
    # job 1 ends (100), job 3 when job 2 ends (150).
    jobs = [TraceJob(1, 0, 100, 2), TraceJob(2, 1, 50, 2), TraceJob(3, 2, 10, 1)]
    assert starts(jobs, ClusterSpec.homogeneous(1, 2), SLURM_LIKE) == {1: 0, 2: 100, 3: 150}


def test_backfill_passes_at_given_instants_only() -> None:
    # The phase case above with the passes Slurm was seen to run, at 1.5 (before job 3 exists) and
    # 7.25: job 3 is backfilled at 7.25, not at a periodic pass.
    jobs = [job(1, 0, 1, 60), job(2, 1, 2, 60), job(3, 2, 1, 10)]
    config = dataclasses.replace(SLURM_LIKE, sched_interval=100, bf_interval=5)
    result = Simulation(jobs, ClusterSpec.homogeneous(1, 2), config, start=StartState(pass_times={"backfill": [1.5, 7.25]})).run()
    assert dict(zip(result.jobs["job_id"], result.jobs["start"], strict=True))[3] == 7.25


def test_main_passes_at_given_instants_only() -> None:
    # 1 node x 1 core. Job 1 (runs 10) is submitted at 0 and job 2 at 1; Slurm's main scheduler
    # was seen to pass at 0.4, 10.7 and 12: job 1 starts at 0.4 (not at its submission), ends at
    # 10.4, and job 2 starts at the next pass, 10.7 (not at job 1's end).
    jobs = [job(1, 0, 1, 10), job(2, 1, 1, 10)]
    config = dataclasses.replace(SLURM_LIKE, sched_interval=2, bf_interval=5)
    result = Simulation(jobs, ClusterSpec.homogeneous(1, 1), config,
                        start=StartState(pass_times={"main": [0.4, 10.7, 12.0], "backfill": []})).run()
    assert dict(zip(result.jobs["job_id"], result.jobs["start"], strict=True)) == {1: 0.4, 2: 10.7}


def test_after_the_last_given_pass_the_passes_run_as_configured() -> None:
    # 1 node x 1 core, jobs 1 (0-10) and 2 (submitted at 1). Slurm's main scheduler was seen to
    # pass at 0.4 only, and its backfill scheduler not at all: the watch ended at 0.4. Job 1
    # starts at 0.4; after it both schedulers run as configured, the main one without defer at
    # every job end, so job 2 starts when job 1 ends at 10.4 (with no pass after 0.4 it never would).
    jobs = [job(1, 0, 1, 10), job(2, 1, 1, 10)]
    config = dataclasses.replace(SLURM_LIKE, sched_interval=60, bf_interval=5)
    result = Simulation(jobs, ClusterSpec.homogeneous(1, 1), config,
                        start=StartState(pass_times={"main": [0.4], "backfill": []})).run()
    assert dict(zip(result.jobs["job_id"], result.jobs["start"], strict=True)) == {1: 0.4, 2: 10.4}
    # with a backfill pass seen at 20, the watch ran until 20: no pass of either kind ran in
    # between but the given ones, so job 2 waits for the backfill pass at 20
    watched = Simulation(jobs, ClusterSpec.homogeneous(1, 1), config,
                         start=StartState(pass_times={"main": [0.4], "backfill": [20.0]})).run()
    assert dict(zip(watched.jobs["job_id"], watched.jobs["start"], strict=True)) == {1: 0.4, 2: 20.0}
    periodic = Simulation([job(1, 0, 1, 10), job(2, 1, 1, 10), job(3, 31, 1, 10)], ClusterSpec.homogeneous(1, 1),
                          dataclasses.replace(config, defer=True, sched_interval=7, batch_sched_delay=100),
                          start=StartState(pass_times={"main": [0.4], "backfill": []})).run()
    # with defer, ends and submissions only queue a pass, which batch_sched_delay holds back: the
    # periodic pass every 7 s starts job 2 at 14 (the first tick after 10.4) and job 3 at 35
    assert dict(zip(periodic.jobs["job_id"], periodic.jobs["start"], strict=True)) == {1: 0.4, 2: 14.0, 3: 35.0}


def test_slurm_like_passes_never_oversubscribe_a_node(trace: TraceFile) -> None:
    # 300 KTH-SP2 jobs (100 CPUs or fewer) on 25 nodes x 4 cores under bf_will_run and cons_tres:
    # the invariant checker sees every start and raises on a node holding more than its cores.
    trace = read_swf(trace("KTH-SP2-1996-2.1-cln.swf.gz")).jobs[:300]
    cluster = ClusterSpec.homogeneous(25, 4)
    checker = InvariantChecker(cluster)
    result = Simulation([j for j in trace if j.cpus <= 100], cluster, SLURM_LIKE, checker=checker).run()
    assert len(result.jobs) > 250 and result.jobs["backfilled"].sum() > 0


@pytest.mark.parametrize("resolution", [60, 1800])
def test_a_pass_stopped_where_nothing_could_start_starts_the_same_jobs(trace: TraceFile,
                                                                        resolution: float) -> None:
    # Without an invariant checker a will-run pass stops at the first job from which no job left
    # could start now (none fits its partition's free slots on the nodes the pass's reservations
    # leave over its run); with one it tests every job. Both must start every job at the same
    # instant, backfilled or not, on 400 KTH-SP2 jobs (coarse resolutions reserve the current slot).
    jobs = [j for j in read_swf(trace("KTH-SP2-1996-2.1-cln.swf.gz")).jobs[:400] if j.cpus <= 100]
    cluster = ClusterSpec.homogeneous(25, 4)
    config = dataclasses.replace(SLURM_LIKE, bf_resolution=resolution)
    walked = Simulation(jobs, cluster, config, checker=InvariantChecker(cluster)).run().jobs
    stopped = Simulation(jobs, cluster, config).run().jobs
    columns = ["job_id", "start", "backfilled"]
    assert walked["backfilled"].sum() > 0
    assert walked[columns].equals(stopped[columns])
