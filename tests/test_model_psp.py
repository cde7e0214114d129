"""PSP and PSP+AGING (paper 000 sec. 3) worked by hand: the accuracy groups of Table 1 at every
interval boundary, the paper's example (accuracy 0.17 -> initial priority 25) and eq. (1) over
several 150 s steps."""

from __future__ import annotations

from fractions import Fraction

import pytest

from djsb.model import ClusterSpec, SchedulerConfig, Simulation
from djsb.model.cluster_spec import PartitionSpec
from djsb.model.cluster_state import ClusterState
from djsb.model.job import SimJob
from djsb.model.priority import FifoPriority, PspAgingPriority
from djsb.model.priority.presets import preset
from djsb.model.priority.psp import group_priority
from djsb.workloads.estimate import with_estimates
from djsb.workloads.job import TraceJob

# Table 1 of 000: (lower bound of the interval, priority of the group), g1 .. g10, as exact decimals.
TABLE_1 = [(Fraction(lower), priority) for lower, priority in (
    ("0.00", 1), ("0.05", 10), ("0.10", 20), ("0.15", 25), ("0.20", 30), ("0.30", 35), ("0.40", 40),
    ("0.52", 43), ("0.64", 46), ("0.78", 49))]
BOUNDARIES = [(lower, below, priority) for (_, below), (lower, priority) in zip(TABLE_1[:-1], TABLE_1[1:], strict=True)]
"""(boundary, priority of the group below it, priority of the group it opens) of Table 1 of 000."""


@pytest.mark.parametrize(("bound", "below", "priority"), BOUNDARIES)
def test_each_interval_is_closed_below_and_open_above(bound: Fraction, below: int, priority: int) -> None:
    # [lower, upper): the bound itself is in the group, a billionth below it in the previous one.
    hair = Fraction(1, 10**9)
    assert [group_priority(bound - hair), group_priority(bound), group_priority(bound + hair)] == \
        [below, priority, priority]


def test_the_ends_of_table_1() -> None:
    # g1 = (0.00, 0.05) -> 1 (accuracy 0 is the worst possible, kept in g1); g10 = [0.78, 1.00] -> 49.
    assert [group_priority(Fraction(a)) for a in ("0", "0.001", "0.0499", "0.99", "1")] == [1, 1, 1, 49, 49]


def sim_job(trace: TraceJob, limit: float) -> SimJob:
    cluster = ClusterSpec.homogeneous(1, 1)
    return SimJob(trace, ClusterState(cluster).partitions[0], cluster.qos[0], limit, 1, trace.submit)


def ran(plugin: PspAgingPriority, user: str, run: float, request: float, job_id: int) -> None:
    """Tell the plugin that ``user`` completed a job that ran ``run`` s of ``request`` s asked."""
    job = sim_job(TraceJob(job_id, 0.0, run, 1, request, user=user), request)
    job.start = 0.0
    plugin.on_end(job, run)


def test_worked_example_accuracy_017_starts_at_25() -> None:
    # Sec. 3 of 000: "a job whose owner has an accuracy of 0.17 will have an initial priority of 25".
    # Ten completed jobs ran 17 s of 100 s asked: mean A = 0.17 -> g4 = [0.15, 0.20) -> 25.
    plugin = PspAgingPriority()
    for k in range(10):
        ran(plugin, "ana", 17.0, 100.0, k)
    assert plugin.accuracy("ana") == Fraction(17, 100)
    job = sim_job(TraceJob(99, 0.0, 50.0, 1, 100.0, user="ana"), 100.0)
    plugin.on_submit(job, 0.0)
    assert job.priority == 25


def test_only_the_last_ten_jobs_count() -> None:
    # 000 sec. 3: the mean over the last ten completed jobs. Five at A = 1.0 then ten at A = 0.02:
    # the window holds the ten 0.02 jobs only -> 0.02 -> g1 = 1 (all fifteen would give 0.35 -> 35).
    plugin = PspAgingPriority()
    for k in range(5):
        ran(plugin, "bo", 100.0, 100.0, k)
    for k in range(5, 15):
        ran(plugin, "bo", 2.0, 100.0, k)
    assert plugin.accuracy("bo") == Fraction(2, 100)


@pytest.mark.parametrize(("bound", "below", "priority"), BOUNDARIES)
def test_a_mean_accuracy_on_each_boundary(bound: Fraction, below: int, priority: int) -> None:
    # Ten jobs asking 100 s each and running 100 x bound s: the mean is exactly the bound, in its group
    # (in floating point ten 0.52's average 0.51999..., which put the user in g7 = 40, not g8 = 43).
    # One second less on one job: mean bound - 0.001, the group below; one second more: bound + 0.001.
    run = float(100 * bound)
    for delta, expected in ((-1.0, below), (0.0, priority), (1.0, priority)):
        plugin = PspAgingPriority()
        for k in range(10):
            ran(plugin, "ana", run + (delta if k == 0 else 0.0), 100.0, k)
        assert plugin.accuracy("ana") == bound + Fraction(int(delta), 1000)
        job = sim_job(TraceJob(99, 0.0, 50.0, 1, 100.0, user="ana"), 100.0)
        plugin.on_submit(job, 0.0)
        assert job.priority == expected


def test_eq_1_over_five_steps_by_hand() -> None:
    # g = 25 (accuracy 0.17), t_estimated = 500 s, submitted at 100 s, 150 s steps at 150, 300, ...
    # p1 = 25; waits at the steps 50, 200, 350, 500, 650 s -> t_wait / t_est = 0.1, 0.4, 0.7, 1.0, 1.3:
    # p(150) = 25 + 25 * 0.1 = 27.5;   p(300) = 25 + 27.5 * 0.4 = 36;   p(450) = 25 + 36 * 0.7 = 50.2;
    # p(600) = 25 + 50.2 * 1.0 = 75.2; p(750) = 25 + 75.2 * 1.3 = 122.76.
    expected = {150.0: 27.5, 300.0: 36.0, 450.0: 50.2, 600.0: 75.2, 750.0: 122.76}
    stepwise, skipped = PspAgingPriority(time_step=150), PspAgingPriority(time_step=150)
    for plugin in (stepwise, skipped):
        for k in range(10):
            ran(plugin, "ana", 17.0, 100.0, k)
    job = sim_job(TraceJob(99, 100.0, 400.0, 1, 500.0, user="ana"), 500.0)
    late = sim_job(TraceJob(99, 100.0, 400.0, 1, 500.0, user="ana"), 500.0)
    stepwise.on_submit(job, 100.0)
    skipped.on_submit(late, 100.0)
    assert job.priority == 25
    for now, p in expected.items():
        stepwise.recompute([job], now + 20.0)  # a pass 20 s after the step applies that step only
        assert job.priority == pytest.approx(p, rel=1e-12)
    # One recomputation at 770 s applies the five steps passed since 100 s: the same 122.76.
    skipped.recompute([late], 770.0)
    assert late.priority == pytest.approx(122.76, rel=1e-12)


def test_psp_without_aging_keeps_g() -> None:
    # Scenarios 2 and 5 of Table 4 of 000: the group priority g stays; the model never recomputes.
    plugin = PspAgingPriority(aging=False)
    for k in range(10):
        ran(plugin, "ana", 17.0, 100.0, k)
    job = sim_job(TraceJob(99, 0.0, 50.0, 1, 100.0, user="ana"), 100.0)
    plugin.on_submit(job, 0.0)
    plugin.recompute([job], 3000.0)
    assert (plugin.name, plugin.calc_period, job.priority) == ("psp", 0.0, 25)


def test_presets_of_table_4() -> None:
    policies = {name: preset(name) for name in ("fcfs", "psp", "psp_aging")}
    assert isinstance(policies["fcfs"][0], FifoPriority)
    assert [policies[n][0].name for n in ("psp", "psp_aging")] == ["psp", "psp_aging"]
    assert policies["psp_aging"][0].calc_period == 150.0  # the time step of 000 sec. 3
    assert {p[1] for p in policies.values()} == {SchedulerConfig()}  # one scheduler, priority differs


def test_perfect_estimates_keep_the_users_recorded_accuracy() -> None:
    # One core, perfect estimates (limit = run time). "sloppy" asked 1000 s for 10 s runs (A = 0.01
    # -> g1 = 1), "careful" asked what it used (A = 1 -> 49). J3 holds the core 20..100; J4 (sloppy)
    # and J5 (careful) wait from 30. PSP runs J5 first at 100, J4 at 110 (FCFS would run J4 first):
    # the groups come from the recorded requests, as 000 Table 3 did, not from the perfect limits.
    trace = [TraceJob(1, 0, 10, 1, 1000, user="sloppy"), TraceJob(2, 10, 10, 1, 10, user="careful"),
             TraceJob(3, 20, 80, 1, 80), TraceJob(4, 30, 10, 1, 1000, user="sloppy"),
             TraceJob(5, 30, 10, 1, 10, user="careful")]
    jobs = with_estimates(trace, "runtime", 1.0, lambda j: None)
    assert [j.requested_time for j in jobs] == [10, 10, 80, 10, 10]
    assert [j.user_estimate for j in jobs] == [1000, 10, 80, 1000, 10]
    config = SchedulerConfig(backfill="none", sched_interval=0)
    starts = {}
    for plugin in (PspAgingPriority(aging=False), FifoPriority()):
        result = Simulation(jobs, ClusterSpec.homogeneous(1, 1), config, plugin).run()
        starts[plugin.name] = dict(zip(result.jobs["job_id"], result.jobs["start"], strict=True))
    assert (starts["psp"][5], starts["psp"][4]) == (100, 110)
    assert (starts["fifo"][4], starts["fifo"][5]) == (100, 110)


@pytest.mark.parametrize("estimate", ["requested", "runtime"])
def test_a_job_without_a_request_says_nothing_of_its_users_accuracy(estimate: str) -> None:
    # A = t_run / t_req (sec. 3 of 000) needs the user's t_req. One core, MaxTime 1000 s (the limit
    # of a job that asks for none). "silent" never gives a request: its 10 s run counts toward no
    # accuracy, so silent stays in g10 = 49 (run / MaxTime = 0.01 would put it in g1 = 1).
    # "careful" asked 40 s for 10 s: A = 0.25 -> g5 = 30. J3 holds the core 20..100; J4 (careful)
    # and J5 (silent) both wait from 30: PSP starts J5 at 100 and J4 at 110, as FCFS would not.
    trace = [TraceJob(1, 0, 10, 1, None, user="silent"), TraceJob(2, 10, 10, 1, 40, user="careful"),
             TraceJob(3, 20, 80, 1, 80, user="other"), TraceJob(4, 30, 10, 1, 40, user="careful"),
             TraceJob(5, 30, 10, 1, None, user="silent")]
    jobs = with_estimates(trace, estimate, 1.0, lambda j: 1000.0)
    assert [j.user_request for j in jobs] == [None, 40, 80, 40, None]
    cluster = ClusterSpec.homogeneous(1, 1, partition=PartitionSpec("batch", max_time=1000))
    plugin = PspAgingPriority(aging=False)
    result = Simulation(jobs, cluster, SchedulerConfig(backfill="none", sched_interval=0), plugin).run()
    starts = dict(zip(result.jobs["job_id"], result.jobs["start"], strict=True))
    assert (starts[5], starts[4]) == (100, 110)
    assert (plugin.accuracy("silent"), plugin.accuracy("careful")) == (None, Fraction(1, 4))
