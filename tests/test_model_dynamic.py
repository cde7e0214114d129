"""The model's incremental interface: suspend/resume, resize, job shapes, oversubscription, rates.

Every expected value is worked by hand in the test from Slurm's documented semantics (scontrol
suspend keeps memory and frees CPUs; OverSubscribe=YES shares only with jobs that ask, FORCE
always) or from djsb/appmodel.py's formulas (roofline node bandwidth min(threads x core, node),
an equal share per thread, a job at its slowest task, rate = throughput now / throughput alone).
The InvariantChecker (independent tallies) runs in every case.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from djsb.model import ClusterSpec, NodeSpec, PartitionSpec, SchedulerConfig, Simulation
from djsb.model.invariants import InvariantChecker, InvariantViolation
from djsb.model.job import SimJob
from djsb.model.placement import Placement
from djsb.model.shape import JobShape
from djsb.model.simulation import ModelError
from djsb.model.stream_rates import StreamRates
from djsb.workloads.job import TraceJob

FIFO = SchedulerConfig(backfill="none", sched_interval=0, bf_interval=0)
EASY = SchedulerConfig(backfill="easy", sched_interval=0, bf_interval=0, bf_resolution=0)


def model(nodes: int = 1, cores: int = 4, *, memory: float | None = None, oversubscribe: str = "NO",
          config: SchedulerConfig = FIFO, rates: StreamRates | None = None) -> Simulation:
    spec = ClusterSpec(tuple(NodeSpec(f"n{i}", cores, memory) for i in range(nodes)),
                       (PartitionSpec("p", oversubscribe=oversubscribe),))
    return Simulation([], spec, config, checker=InvariantChecker(spec), rates=rates)


def job(job_id: int, cpus: int, run: float, *, limit: float | None = None, memory: float | None = None) -> TraceJob:
    return TraceJob(job_id, 0.0, run, cpus, requested_time=limit, memory_mb=memory)


def shaped(sim: Simulation, job_id: int, tasks: int, cpus_per_task: int, work: float, **shape: object) -> None:
    sim.submit(job(job_id, tasks * cpus_per_task, work), JobShape(tasks, cpus_per_task, **shape))  # type: ignore[arg-type]


# -- suspend / resume ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("memory", "state"), [(40.0, "PENDING"), (20.0, "RUNNING")])
def test_a_suspended_job_frees_its_cpus_but_keeps_its_memory(memory: float, state: str) -> None:
    # 4 cores, 100 MB. Job 1 (4 CPUs, 80 MB) is suspended at t=10: its 4 CPUs are free, its 80 MB
    # are not. Job 2 asks all 4 CPUs: with 40 MB it needs more than the 100 - 80 = 20 MB left and
    # waits; with 20 MB it fits and starts at once on the suspended job's CPUs.
    sim = model(memory=100.0)
    sim.submit(job(1, 4, 100, memory=80))
    sim.advance(10)
    sim.suspend(1)
    assert sim.job(1).state == "SUSPENDED"
    sim.submit(job(2, 4, 5, memory=memory))
    assert sim.job(2).state == state
    assert sim.state.node_mem_free[0] == 100 - 80 - (memory if state == "RUNNING" else 0)


def test_suspended_time_extends_the_end_by_exactly_the_suspension() -> None:
    # run 100 s, suspended from 30 to 45: ends at 100 + 15 = 115. A job of 200 s with a limit of
    # 100 s, suspended the same 15 s, is killed at 100 + 15 = 115 (suspended time is not run time).
    sim = model(cores=2)
    sim.submit(job(1, 1, 100))
    sim.submit(job(2, 1, 200, limit=100))
    sim.advance(30)
    sim.suspend(1)
    sim.suspend(2)
    sim.advance(45)
    sim.resume(1)
    sim.resume(2)
    sim.advance(1000)
    assert (sim.job(1).end, sim.job(1).state) == (115.0, "COMPLETED")
    assert (sim.job(2).end, sim.job(2).state) == (115.0, "TIMEOUT")


def test_a_resume_stall_delays_the_end_by_the_stall() -> None:
    # as above (run 100, suspended 30 -> 45) with a 2.5 s stall after the resume: 115 + 2.5
    sim = model()
    sim.submit(job(1, 1, 100))
    sim.advance(30)
    sim.suspend(1)
    sim.advance(45)
    sim.resume(1, stall=2.5)
    sim.advance(1000)
    assert sim.job(1).end == 117.5


def test_a_backfilled_job_may_use_a_suspended_jobs_cpus() -> None:
    # 2 nodes x 4 cores, EASY. Jobs 1 and 2 (4 CPUs, 100 s each) fill n0 and n1. Job 3 (8 CPUs) is
    # the queue head: reserved at t=100 when both end. At t=10 job 1 is suspended: n0's 4 CPUs are
    # free but job 3 still needs 8. Job 4 (4 CPUs, limit 20 s) ends by 30 <= 100: it backfills on n0.
    sim = model(nodes=2, config=EASY)
    sim.submit(job(1, 4, 100, limit=100))
    sim.submit(job(2, 4, 100, limit=100))
    sim.advance(1)
    sim.submit(job(3, 8, 10, limit=10))
    sim.advance(10)
    sim.suspend(1)
    assert sim.job(3).state == "PENDING"
    sim.submit(job(4, 4, 20, limit=20))
    backfilled = sim.job(4)
    assert (backfilled.start, backfilled.backfilled, sim.node_names(backfilled)) == (10.0, True, ["n0"])


def over_allocated() -> tuple[Simulation, InvariantChecker]:
    """1 node x 4 cores. Job 1 (4 CPUs, 100 s) is suspended at 5 and job 2 (4 CPUs, 20 s) starts
    on its CPUs; job 1 resumes at 10 and takes them back unchecked: 8 slots on 4 cores."""
    sim = model()
    checker = sim.checker
    assert checker is not None
    sim.submit(job(1, 4, 100))
    sim.advance(5)
    sim.suspend(1)
    sim.submit(job(2, 4, 20))
    sim.advance(10)
    sim.resume(1)
    return sim, checker


def test_resume_over_allocates_legitimately_and_blocks_new_starts() -> None:
    # The checker counts the 8 slots on 4 cores as an over-allocation, not a violation. Job 3
    # (1 CPU) cannot start while the node is over-allocated, nor after job 2 ends at 5 + 20 = 25
    # (job 1 still holds all 4 cores); it starts when job 1 ends at 100 + 5 = 105 (100 s of work,
    # suspended 5 s).
    sim, checker = over_allocated()
    assert sim.state.node_free[0] == 4 - 8 and checker.overallocations == 1
    sim.submit(job(3, 1, 1))
    sim.advance(1000)
    assert sim.job(2).end == 25.0
    assert sim.job(1).end == 105.0
    assert sim.job(3).start == 105.0


def test_the_checker_catches_a_start_on_an_over_allocated_node() -> None:
    # the same over-allocation: a scheduler that started a 1-CPU job there now would bring the
    # node to 9 slots by a scheduling decision, a violation
    sim, checker = over_allocated()
    rogue = SimJob(job(3, 1, 1), sim.state.partitions[0], sim.spec.qos[0], 10.0, 1, 10.0, alloc=Placement.of([(0, 1)]),
                   start=10.0)
    with pytest.raises(InvariantViolation, match="oversubscribed"):
        checker.on_start(rogue, 10.0, 20.0)


# -- malleability, shapes, oversubscription -----------------------------------------------------------

def test_a_shrunk_jobs_cpus_host_another_job_without_oversubscription() -> None:
    # 1 node x 8 cores, OverSubscribe=NO. Job 1: 2 tasks x 4 CPUs fill the node; at t=10 it shrinks
    # to 2 threads per task (2 x 2 = 4 CPUs): job 2 (4 CPUs) starts at once, and the node holds
    # 4 + 4 = 8 slots on 8 cores: no oversubscription.
    sim = model(cores=8)
    shaped(sim, 1, 2, 4, 100, tasks_per_node=2)
    sim.advance(10)
    sim.submit(job(2, 4, 5))
    assert sim.job(2).state == "PENDING"
    sim.resize(1, [4])
    assert sim.job(2).start == 10.0
    assert sim.state.node_free[0] == 0
    assert sim.checker is not None and sim.checker.overallocations == 0


@pytest.mark.parametrize(("oversubscribe", "third_starts"), [("YES:2", False), ("FORCE:2", True)])
def test_oversubscribe_yes_shares_only_with_jobs_that_ask(oversubscribe: str, third_starts: bool) -> None:
    # 1 node x 4 cores, 2 jobs per core at most (8 slots). Job 1 (4 CPUs) takes every core. Job 2
    # (2 CPUs) asks --oversubscribe: it shares under YES and FORCE (4 + 2 = 6 <= 8 slots). Job 3
    # (2 CPUs) does not ask: under YES it needs idle cores (8 - 6 free slots - 4 x (2 - 1) = -2,
    # none) and waits; under FORCE every job shares, 6 + 2 = 8 slots fit. Job 4 (1 CPU) then finds
    # no slot under FORCE (8 of 8 used).
    sim = model(oversubscribe=oversubscribe)
    shaped(sim, 1, 1, 4, 100)
    shaped(sim, 2, 1, 2, 100, oversubscribe=True)
    shaped(sim, 3, 1, 2, 100)
    assert sim.job(2).state == "RUNNING"
    assert sim.job(3).state == ("RUNNING" if third_starts else "PENDING")
    if third_starts:
        shaped(sim, 4, 1, 1, 100, oversubscribe=True)
        assert sim.job(4).state == "PENDING"


def test_a_job_that_shares_does_not_take_the_core_a_reservation_keeps_idle() -> None:
    # 1 node x 1 core, YES:2 (2 slots, 1 spare), EASY. Job 1 (t=1, no --oversubscribe, runs 3 s,
    # limit 20) takes the core. Job 2 (t=2, does not ask either) needs an idle core: none until
    # job 1's limit, so it is reserved at 1 + 20 = 21. Job 3 (t=3) asks --oversubscribe: sharing
    # the core now, it would hold it until its limit 3 + 20 = 23 and job 2 would find no idle core
    # at 21 (EASY: no backfilled job delays the reservation), so it waits. Job 1 ends at 4: job 2
    # starts at 4 on the idle core and job 3, still asking, shares it at 4 (the model lets a job
    # that asks share with one that did not, see djsb/model/cluster_state.py). Both end at 4 + 3 = 7.
    spec = ClusterSpec((NodeSpec("n0", 1, 64.0),), (PartitionSpec("p", oversubscribe="YES:2"),))
    sim = Simulation([], spec, EASY, checker=InvariantChecker(spec))
    for job_id in (1, 2, 3):
        sim.advance(float(job_id))
        sim.submit(TraceJob(job_id, float(job_id), 3.0, 1, requested_time=20.0),
                   JobShape(1, 1, memory_per_task=4.0, oversubscribe=job_id == 3))
    sim.advance(100)
    assert [(sim.job(j).start, sim.job(j).end) for j in (1, 2, 3)] == [(1.0, 4.0), (4.0, 7.0), (4.0, 7.0)]


@pytest.mark.parametrize(("cpus", "start"), [(1, 0.0), (2, 3.0)])
def test_a_job_that_shares_backfills_on_spare_slots_only(cpus: int, start: float) -> None:
    # 1 node x 2 cores, YES:2 (4 slots, 2 spare), EASY. Job 1 (2 CPUs, no --oversubscribe, runs
    # 3 s, limit 20) takes both cores; job 2 (1 CPU, does not ask) waits for an idle core, reserved
    # at 20. Job 3 asks --oversubscribe (runs 3 s, limit 40, so it would still run at 20). With
    # 1 CPU it starts at 0: at 20 it holds 1 of the 4 slots, 4 - 1 - 2 spare = 1 core stays idle
    # for job 2. With 2 CPUs it would leave 4 - 2 - 2 = 0 idle cores at 20 and waits; job 1 ends
    # at 3, job 2 starts at 3 and job 3 then shares: 4 - 1 = 3 free slots, 2 of them on its cores.
    sim = model(cores=2, oversubscribe="YES:2", config=EASY)
    sim.submit(job(1, 2, 3, limit=20), JobShape(1, 2))
    sim.submit(job(2, 1, 3, limit=20), JobShape(1, 1))
    sim.submit(job(3, cpus, 3, limit=40), JobShape(1, cpus, oversubscribe=True))
    sim.advance(100)
    assert [sim.job(j).start for j in (1, 2, 3)] == [0.0, 3.0, start]


def test_trace_jobs_on_a_yes_partition_never_share() -> None:
    # trace jobs never ask: on YES:4 two 4-CPU jobs on a 4-core node run one after the other
    sim = model(oversubscribe="YES:4")
    sim.submit(job(1, 4, 10))
    sim.submit(job(2, 4, 10))
    sim.advance(100)
    assert sim.job(2).start == 10.0


def test_a_node_list_pins_the_job() -> None:
    # 3 nodes x 4 cores: job 1 asks for n2 only and gets it although n0 is first; job 2 asks for n2
    # too and waits although n0 and n1 are idle; a node list naming no node of the partition is refused
    sim = model(nodes=3)
    shaped(sim, 1, 1, 4, 10, node_list=("n2",))
    shaped(sim, 2, 2, 1, 10, node_list=("n2",))
    assert sim.node_names(sim.job(1)) == ["n2"]
    assert sim.job(2).state == "PENDING"
    sim.advance(10)
    # job 2's 2 tasks spread over its 1-node list: 2 tasks on n2
    assert (sim.job(2).start, sim.node_names(sim.job(2)), sim.job(2).tasks) == (10.0, ["n2"], [2])
    with pytest.raises(ModelError, match="node list"):
        shaped(sim, 3, 1, 1, 10, node_list=("n9",))


def test_tasks_per_node_spreads_the_job() -> None:
    # 4 tasks x 2 CPUs, 2 tasks per node, on 4-core nodes: 2 nodes of 4 CPUs each
    sim = model(nodes=3)
    shaped(sim, 1, 4, 2, 10, tasks_per_node=2)
    assert sim.job(1).alloc == [(0, 4), (1, 4)]


# -- variable rates (djsb/appmodel.py) -----------------------------------------------------------------

def test_two_jobs_share_a_nodes_bandwidth() -> None:
    # 4 cores, 10 GB/s per thread, 30 GB/s per node; each job 1 task x 2 threads, 6 s of work.
    # Alone: min(2 x 10, 30) = 20 GB/s. Together (4 threads): 30 / 4 = 7.5 per thread, 15 per job:
    # rate 15 / 20 = 0.75. Job 1 starts at 0, job 2 at 2: job 1 has 4 s left at 0.75 -> ends at
    # 2 + 16/3; by then job 2 did 16/3 x 0.75 = 4 s and does its last 2 s alone -> 2 + 16/3 + 2.
    sim = model(rates=StreamRates(10.0, 30.0))
    shaped(sim, 1, 1, 2, 6)
    sim.advance(2)
    shaped(sim, 2, 1, 2, 6)
    sim.advance(100)
    assert sim.job(1).end == pytest.approx(2 + 16 / 3)
    assert sim.job(2).end == pytest.approx(2 + 16 / 3 + 2)


def test_a_shrunk_job_goes_at_its_new_rate() -> None:
    # 4 threads alone: min(4 x 10, 25) = 25 GB/s. Shrunk to 2 threads at t=2: min(2 x 10, 25) = 20,
    # rate 0.8: the 8 s of work left take 10 s, the job ends at 12.
    sim = model(rates=StreamRates(10.0, 25.0))
    shaped(sim, 1, 1, 4, 10)
    sim.advance(2)
    sim.resize(1, [2])
    sim.advance(100)
    assert sim.job(1).end == pytest.approx(12.0)


def test_time_slicing_efficiency_when_oversubscribed() -> None:
    # 1 core (FORCE:4), 1 GB/s per thread, 100 per node, efficiency 0.5. Two 1-thread jobs of 6 s:
    # each gets half the core, min(1, 100) / 2 = 0.5 GB/s against 1 alone, times 0.5 for sharing
    # a core: rate 0.25, both end at 6 / 0.25 = 24.
    sim = model(cores=1, oversubscribe="FORCE:4", rates=StreamRates(1.0, 100.0, 0.5))
    shaped(sim, 1, 1, 1, 6)
    shaped(sim, 2, 1, 1, 6)
    sim.advance(100)
    assert (sim.job(1).end, sim.job(2).end) == pytest.approx((24.0, 24.0))


def test_a_suspended_job_frees_bandwidth_and_trace_jobs_keep_rate_one() -> None:
    # The bandwidth case (30 GB/s node, 2-thread jobs of 6 s) with both jobs from 0 at rate 0.75,
    # on 8 cores so that a trace job of 2 CPUs and 5 s fits beside them: it draws no modelled
    # bandwidth and runs at rate 1 (ends at 5). Job 1 is suspended from 2 to 4, when job 2 runs
    # alone at rate 1. Job 2: 1.5 s done by 2, 3.5 by 4, then 2.5 s at 0.75 -> ends at 4 + 10/3.
    sim = model(cores=8, rates=StreamRates(10.0, 30.0))
    shaped(sim, 1, 1, 2, 6)
    shaped(sim, 2, 1, 2, 6)
    sim.submit(job(3, 2, 5))
    sim.advance(2)
    sim.suspend(1)
    sim.advance(4)
    sim.resume(1)
    sim.advance(100)
    assert sim.job(2).end == pytest.approx(4 + 10 / 3)
    assert sim.job(3).end == 5.0


def test_errors_name_the_problem() -> None:
    sim = model()
    sim.submit(job(1, 4, 10))
    sim.submit(job(2, 4, 10))
    with pytest.raises(ModelError, match="PENDING"):
        sim.suspend(2)
    with pytest.raises(ModelError, match="unknown job"):
        sim.job(99)
    with pytest.raises(ModelError, match="shape"):
        sim.submit(job(3, 3, 10), JobShape(1, 2))
    sim.cancel(2)
    sim.advance(100)
    assert sim.job(2).state == "CANCELLED" and sim.job(1).state == "COMPLETED"


# -- invariants under random operation sequences ------------------------------------------------------

OPS = st.lists(st.tuples(st.sampled_from(["submit", "suspend", "resume", "resize", "cancel"]),
                         st.integers(1, 8), st.integers(1, 4), st.integers(0, 1), st.integers(1, 5)),
               min_size=1, max_size=30)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.sampled_from(["NO", "YES:2", "FORCE:2"]),
       st.sampled_from([FIFO, EASY]), st.booleans(), OPS)
def test_invariants_hold_under_random_suspend_resume_resize(
        n_nodes: int, cores: int, oversubscribe: str, config: SchedulerConfig, with_rates: bool,
        ops: list[tuple[str, int, int, int, int]]) -> None:
    """Any sequence of operations keeps the checker quiet, and once every job is over the cluster
    is exactly as empty as at the start (slots and memory conserved)."""
    sim = model(n_nodes, cores, memory=64.0, oversubscribe=oversubscribe, config=config,
                rates=StreamRates(10.0, 25.0) if with_rates else None)
    submitted: list[int] = []
    t = 0.0
    for op, key, size, ask, step in ops:
        t += step
        sim.advance(t)
        if op == "submit":
            job_id = len(submitted) + 1
            trace = TraceJob(job_id, t, 3.0 * size, min(size, cores), requested_time=20.0 * size, memory_mb=4.0)
            shape = JobShape(1, trace.cpus, memory_per_task=4.0, oversubscribe=bool(ask)) if key % 2 else None
            try:
                sim.submit(trace if shape is None else TraceJob(job_id, t, 3.0 * size, trace.cpus,
                                                               requested_time=20.0 * size), shape)
            except ModelError:
                continue
            submitted.append(job_id)
        elif submitted:
            job_id = submitted[key % len(submitted)]
            try:
                if op == "suspend":
                    sim.suspend(job_id)
                elif op == "resume":
                    sim.resume(job_id, stall=float(ask))
                elif op == "cancel":
                    sim.cancel(job_id)
                elif sim.job(job_id).shape is not None:
                    sim.resize(job_id, [max(1, min(size, slots)) for _, slots in sim.job(job_id).alloc])
            except ModelError:
                pass
    for job_id in submitted:
        if sim.job(job_id).state == "SUSPENDED":
            sim.resume(job_id)
    sim.advance(10**6)
    assert {sim.job(j).state for j in submitted} <= {"COMPLETED", "TIMEOUT", "CANCELLED"}
    assert sim.state.node_free == sim.state.node_capacity
    assert sim.state.node_mem_free == [64.0] * n_nodes
    assert sim.state.busy_cores == 0


def test_a_job_whose_memory_never_fits_is_rejected() -> None:
    # 2 nodes x 4 cores x 100 MB: 8 CPUs of 30 MB need 3 CPUs' worth per node at most
    # (floor(100 / 30) = 3), so 6 CPUs fit the empty cluster and 8 never do: rejected at
    # submission, as Slurm rejects a request no node configuration can satisfy
    sim = model(nodes=2, memory=100.0)
    with pytest.raises(ModelError, match="Requested node configuration is not available"):
        sim.submit(job(1, 8, 10, memory=240))
    sim.submit(job(2, 6, 10, memory=180))
    assert sim.job(2).state == "RUNNING"
