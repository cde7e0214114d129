"""Property tests: on random small workloads the model never breaks its invariants, whatever
the priority plugin (FIFO, multifactor with Fair Tree or Classic, PSP+AGING).

The InvariantChecker (independent brute-force tallies) raises inside the run if a node is
oversubscribed beyond its partition's OverSubscribe setting, if a backfill start makes a
reservation of a higher-priority job infeasible, or if a reserved job starts after its reserved
start without an event that may move it (node memory, memory requests and node counts are drawn
too).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import registered, start_what_fits

from djsb.model import ClusterSpec, NodeSpec, PartitionSpec, SchedulerConfig, Simulation
from djsb.model.backfill import BACKFILL_PLANNERS, BackfillView
from djsb.model.backfill.profile_planner import ProfilePlanner
from djsb.model.cluster_state import ClusterState, PartitionState
from djsb.model.invariants import InvariantChecker, InvariantViolation, Reservation
from djsb.model.job import SimJob
from djsb.model.placement import Placement
from djsb.model.priority import FifoPriority, MultifactorPriority, MultifactorWeights, PspAgingPriority
from djsb.model.scheduler import BACKFILL_VARIANTS
from djsb.workloads.job import TraceJob

PLUGINS = {
    "fifo": FifoPriority,
    "fair_tree": lambda: MultifactorPriority(MultifactorWeights(age=10, fairshare=100, job_size=5),
                                             max_age=50, decay_half_life=30, calc_period=5),
    "classic": lambda: MultifactorPriority(MultifactorWeights(fairshare=100), fairshare="classic",
                                           calc_period=3),
    "psp": lambda: PspAgingPriority(time_step=4),
}


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[TraceJob], ClusterSpec, SchedulerConfig, str]:
    n_nodes = draw(st.integers(1, 3))
    cores = draw(st.integers(1, 4))
    oversubscribe = draw(st.sampled_from(["NO", "YES:2", "FORCE:2", "EXCLUSIVE"]))
    memory = draw(st.sampled_from([None, 1000]))
    nodes = tuple(NodeSpec(f"n{i}", cores, memory) for i in range(n_nodes))
    partitions = [PartitionSpec("all", oversubscribe=oversubscribe)]
    if n_nodes > 1 and draw(st.booleans()):
        partitions.append(PartitionSpec("small", nodes=("n0",), oversubscribe=oversubscribe))
    cluster = ClusterSpec(nodes, tuple(partitions))
    jobs = []
    for job_id in range(1, draw(st.integers(1, 14)) + 1):
        run = draw(st.integers(0, 30))
        cpus = draw(st.integers(1, n_nodes * cores))
        # at most 250 MB per CPU and enough nodes for the CPUs: every job fits an empty partition
        # (jobs that never fit are admission's case, tests/test_model_admission.py)
        per_cpu = draw(st.sampled_from([None, 100, 250]))
        partition = draw(st.sampled_from(partitions))
        part_nodes = 1 if partition.nodes else n_nodes
        jobs.append(TraceJob(
            job_id, draw(st.integers(0, 40)), run, cpus, requested_time=draw(st.integers(1, 40)),
            memory_mb=None if per_cpu is None else per_cpu * cpus,
            nodes=draw(st.sampled_from([None, *range(-(-cpus // cores), part_nodes + 1)])),
            partition=partition.name, user=draw(st.sampled_from(["a", "b"]))))
    config = SchedulerConfig(
        backfill=draw(st.sampled_from(BACKFILL_VARIANTS)),
        sched_interval=draw(st.sampled_from([0, 7])),
        bf_interval=draw(st.sampled_from([0, 5])),
        bf_resolution=draw(st.sampled_from([0, 4])),
        bf_window=draw(st.sampled_from([20, 1000])),
        bf_max_job_test=draw(st.integers(1, 20)),
        defer=draw(st.booleans()),
        extend_limit=draw(st.booleans()))
    return jobs, cluster, config, draw(st.sampled_from(sorted(PLUGINS)))


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_invariants_hold_on_random_workloads(
        case: tuple[list[TraceJob], ClusterSpec, SchedulerConfig, str]) -> None:
    jobs, cluster, config, plugin = case
    checker = InvariantChecker(cluster)
    result = Simulation(jobs, cluster, config, PLUGINS[plugin](), checker=checker).run()
    table = result.jobs
    assert len(table) + len(result.rejected) == len(jobs)
    assert (table["start"] >= table["submit"]).all()
    assert checker.starts_checked == len(table)
    if not config.extend_limit:
        assert (table["run_time"] <= table["requested_time"]).all()


def test_checker_catches_an_oversubscribed_node() -> None:
    # The checker must not trust the model: hand it two 2-core jobs on one 2-core node.
    cluster = ClusterSpec.homogeneous(1, 2)
    state = ClusterState(cluster)
    part = state.partitions[0]
    checker = InvariantChecker(cluster)
    for job_id in (1, 2):
        job = SimJob(TraceJob(job_id, 0, 10, 2, 10), part, cluster.qos[0], 10, 2, 0.0)
        job.alloc, job.start = Placement.of([(0, 2)]), 0.0
        if job_id == 1:
            checker.on_start(job, 0.0, 10.0)
        else:
            with pytest.raises(InvariantViolation):
                checker.on_start(job, 0.0, 10.0)


@settings(max_examples=200, deadline=None)
@given(scenarios())
def test_walks_stopped_early_start_the_same_jobs(
        case: tuple[list[TraceJob], ClusterSpec, SchedulerConfig, str]) -> None:
    # Without a checker a backfill pass stops walking the queue where no job left could start
    # (and the core skips passes where none fits); with one it walks every job it may test. The
    # full walk is the oracle: stopping early must not move any start, end or node.
    jobs, cluster, config, plugin = case
    columns = ["job_id", "start", "end", "nodes", "backfilled"]
    full = Simulation(jobs, cluster, config, PLUGINS[plugin](), checker=InvariantChecker(cluster)).run()
    stopped = Simulation(jobs, cluster, config, PLUGINS[plugin]()).run()
    assert stopped.jobs[columns].equals(full.jobs[columns])
    assert stopped.rejected.equals(full.rejected)


# Three one-core nodes; partition "small" is n0 alone and shares it with "all". FIFO, passes at
# every event, unrounded limits, conservative. (job, submit, run = limit, cpus, partition)
# X1-X3 (1-3) start at 0 on n0, n1, n2, ending at 20, 5, 5. At 1: K (4, small), H (5, all, 3 CPUs),
# J (6, all, runs 30); at 6 L (7, small). Pass of t=1: K cannot start (n0 busy), "small" fails and
# its node n0 is taken from the jobs after it; H cannot run on n1 + n2 even were they idle, so the
# main pass skips it without failing "all" (Slurm's ESLURM_NODE_NOT_AVAIL); J finds n1, n2 busy
# and fails "all". Backfill reserves K at 20 (n0), H at 21 (all nodes, after K), J at 22.
# t=5: X2, X3 end. The main pass fails "small" at K again, skips H again and starts J on n1
# (first fit) until 35: the main pass does not know backfill reservations, so H is moved from 21
# to 35 legitimately. t=20: X1 ends, K starts (n0, to 21). t=21: K ends; H waits for n1, and L
# (1 s on n0) is backfilled: it ends at 22, before H's 35. t=35: J ends, H starts.
OVERLAP_CLUSTER = ClusterSpec(tuple(NodeSpec(f"n{i}", 1) for i in range(3)),
                              (PartitionSpec("all"), PartitionSpec("small", nodes=("n0",))))
OVERLAP_JOBS = [TraceJob(job_id, submit, run, cpus, run, partition=part) for job_id, submit, run, cpus, part in (
    (1, 0, 20, 1, "all"), (2, 0, 5, 1, "all"), (3, 0, 5, 1, "all"), (4, 1, 1, 1, "small"),
    (5, 1, 1, 3, "all"), (6, 1, 30, 1, "all"), (7, 6, 1, 1, "small"))]
OVERLAP_CONFIG = SchedulerConfig(backfill="conservative", sched_interval=0, bf_interval=0, bf_resolution=0)


def overlap_run(config: SchedulerConfig) -> tuple[dict[int, float], dict[int, bool]]:
    """Each job's start and whether it was backfilled, replayed under the checker."""
    table = Simulation(OVERLAP_JOBS, OVERLAP_CLUSTER, config, checker=InvariantChecker(OVERLAP_CLUSTER)).run().jobs
    return (dict(zip(table["job_id"], table["start"], strict=True)),
            dict(zip(table["job_id"], table["backfilled"], strict=True)))


def test_a_main_pass_start_behind_a_skipped_reserved_job_may_move_its_reservation() -> None:
    starts, backfilled = overlap_run(OVERLAP_CONFIG)
    assert starts == {1: 0, 2: 0, 3: 0, 4: 20, 5: 35, 6: 5, 7: 21}
    assert not backfilled[6] and backfilled[7]


def test_the_case_hypothesis_found_replays_under_the_checker() -> None:
    # The cluster above. (job, submit, run, cpus, limit, partition)
    spec = [(1, 28, 0, 1, 1, "all"), (2, 0, 0, 1, 1, "all"), (3, 13, 0, 3, 8, "all"), (4, 12, 26, 3, 26, "all"),
            (5, 0, 0, 1, 1, "all"), (6, 28, 0, 1, 1, "small"), (7, 0, 0, 1, 1, "all"), (8, 12, 6, 1, 9, "all"),
            (9, 0, 0, 2, 1, "small"), (10, 12, 8, 1, 8, "all"), (11, 0, 0, 2, 1, "small")]
    jobs = [TraceJob(job_id, submit, run, cpus, limit, user="a", partition=part)
            for job_id, submit, run, cpus, limit, part in spec]
    config = SchedulerConfig(backfill="conservative", sched_interval=0, bf_interval=5, bf_window=20,
                             bf_resolution=0, bf_max_job_test=3)
    result = Simulation(jobs, OVERLAP_CLUSTER, config, PLUGINS["psp"](),
                        checker=InvariantChecker(OVERLAP_CLUSTER)).run()
    # 9 and 11 never fit (2 CPUs, "small" has 1). 2, 5, 7 run 0 s at 0: user a's accuracy is 0,
    # group 1, so every later job starts at p = 1 and ages by p' = 1 + p (step - submit) / limit
    # every 4 s. t=12: 4 starts on all nodes (to 38); t=28 order 10 (10.5), 3 (8.55), 8 (8.19),
    # 1, 6 (1). Pass t=30 (window to 50): 10 at 38, 3 at 46, 8 (9 s; 8 s free) none within 50.
    # t=38: 4 ends, 10 starts (n0, to 46). t=40 order 1, 6 (493), 3 (211), 8 (163); the pass
    # tests 3 jobs: 1 backfilled on n1 (0 s), 6 reserved at 46 (n0), 3 at 47; 8 untested. 1's end
    # runs the main pass: 6 fails "small" (n0), 3 cannot run on n1 + n2 and is skipped without
    # failing "all", 8 starts on n1 (planned to 49): 3's promise of 47 is void, and the pass of
    # t=45 reserves 3 at 49. t=46: 10 and 8 end, 6 starts (0 s), then 3 on all nodes.
    # The window and the test limit only decide which jobs get a reservation: with neither, 8 is
    # reserved after 3 at t=40 and the main pass still starts it at 40, as the case above shows.
    table = result.jobs
    assert dict(zip(table["job_id"], table["start"], strict=True)) == {
        1: 40, 2: 0, 3: 46, 4: 12, 5: 0, 6: 46, 7: 0, 8: 40, 10: 38}
    assert sorted(result.rejected["job_id"]) == [9, 11]


class ReservationBlind(ProfilePlanner):
    """A deliberately wrong planner: after the profile planner's pass it starts every queued job
    that fits now, whatever was reserved."""

    def run(self, view: BackfillView) -> None:
        super().run(view)
        start_what_fits(view, list(view.queue.jobs))


@pytest.fixture
def reservation_blind() -> Iterator[str]:
    """``ReservationBlind`` registered for one test."""
    with registered(BACKFILL_PLANNERS, "reservation_blind", ReservationBlind) as name:
        yield name


def test_checker_still_catches_a_backfilled_start_that_moves_a_reservation(reservation_blind: str) -> None:
    # The case above with event passes testing 2 jobs: the main pass stops after K and H, so only
    # backfill can start J. t=0: X1, X2 by the main pass, X3 backfilled on n2. The right planner
    # reserves K at 20, H at 21, J at 22 (on n0, after H) from t=1 on and starts nothing at 5 (J's 30 s
    # do not fit before 21); t=20 K starts, t=21 H starts (all nodes free), t=22 J on n0 (to 52),
    # and L, held behind it on n0, at 52.
    shallow = dataclasses.replace(OVERLAP_CONFIG, default_queue_depth=2)
    starts, backfilled = overlap_run(shallow)
    assert starts == {1: 0, 2: 0, 3: 0, 4: 20, 5: 21, 6: 22, 7: 52}
    assert backfilled[3]
    # The blind planner backfills J on n1 at 5 (K still waits in "small", as when the main pass
    # started it above) and the pass of t=6 (L's submission) finds H moved from 21 to 35.
    with pytest.raises(InvariantViolation, match="job 5 reserved to start at t=21.0 was moved to t=35.0 at t=6"):
        overlap_run(dataclasses.replace(shallow, bf_planner=reservation_blind))


@pytest.mark.parametrize(("k_waits", "backfilled", "moved"), [(True, False, False), (True, True, True),
                                                               (False, False, True)])
def test_checker_excuses_a_main_pass_start_behind_a_reserved_job_only_behind_a_failed_partition(
        k_waits: bool, backfilled: bool, moved: bool) -> None:
    # The checker alone, told the events of the first case until the pass of t=5: H (5) reserved at
    # 21, J (6) started on n1 at 5 and H reserved at 35. A main-pass start of J is Slurm's only while
    # a job ahead of H (K) waits in a partition sharing H's nodes, whose failure took n0 from H; with
    # no such job the main pass fails "all" at H and never reaches J; a backfilled J must respect H.
    state = ClusterState(OVERLAP_CLUSTER)
    every, small = state.partitions
    checker = InvariantChecker(OVERLAP_CLUSTER)

    def sim(job_id: int, submit: float, run: float, cpus: int, part: PartitionState) -> SimJob:
        job = SimJob(TraceJob(job_id, submit, run, cpus, run), part, OVERLAP_CLUSTER.qos[0], run, cpus, submit,
                     plan=run)
        job.update_sort_key()
        checker.on_submit(job, submit)
        return job

    def start(job: SimJob, now: float, node: int, by_backfill: bool) -> None:
        job.start, job.alloc, job.backfilled = now, Placement.of([(node, 1)]), by_backfill
        checker.on_start(job, now, now + job.plan)

    running = [sim(job_id, 0, run, 1, every) for job_id, run in ((1, 20), (2, 5), (3, 5))]
    for node, job in enumerate(running):
        start(job, 0.0, node, False)
    k = [Reservation(4, small.index, 20.0, 1.0, 1, (0,))] if k_waits else []
    if k_waits:
        sim(4, 1, 1, 1, small)
    sim(5, 1, 1, 3, every)
    j = sim(6, 1, 30, 1, every)
    checker.check_reservations(1.0, [*k, Reservation(5, every.index, 21.0, 1.0, 3, (0, 1, 2))])
    for job in running[1:]:
        checker.on_end(job, 5.0)
    start(j, 5.0, 1, backfilled)
    later = [*k, Reservation(5, every.index, 35.0, 1.0, 3, (0, 1, 2))]
    if moved:
        with pytest.raises(InvariantViolation, match="job 5 reserved to start at t=21.0 was moved to t=35.0"):
            checker.check_reservations(5.0, later)
    else:
        checker.check_reservations(5.0, later)
        # J's start voided H's promise, and K's (a main-pass start in another partition on its node)
        assert checker.promises_voided == 2
