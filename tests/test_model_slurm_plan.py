"""The backfill plan as Slurm's sched/backfill makes it.

``bf_node_reservations`` keeps a reservation's nodes whole (backfill.c's _add_reservation clears
them from the node_space bitmap); ``bf_round_reservations`` rounds a reservation's start and end
down to bf_resolution (backfill.c, before _add_reservation); ``pass_jitter`` and
``start_latency`` draw from the run's seed. Every expected start is worked out by hand in the
comment next to the case (passes on every event unless said otherwise, FIFO, first fit).
"""

from __future__ import annotations

import dataclasses

from support import exact_job as job
from support import model_starts as starts

from djsb.model import ClusterSpec, InvariantChecker, SchedulerConfig, Simulation

EVERY_EVENT = SchedulerConfig(backfill="conservative", sched_interval=0, bf_interval=0, bf_resolution=0)


# 2 nodes x 4 cores, conservative backfilling.
# A (4 cores, runs 100) takes n0; B (3 cores, runs 10000) takes 3 cores of n1: 1 core free.
# J1 (t=1, 3 cores, runs 1000) waits: at 100 A ends and n0 has 4 cores, so J1 is reserved on n0
# over [100, 1100). J2 (t=1, 2 cores, runs 1000) waits too.
# Unit count: at 100, 1 + 4 = 5 units free, 5 - 3 (J1) = 2 >= 2, so J2 is reserved at 100 as
# well and the units over [100, 1100) are all reserved: 5 - 3 - 2 = 0. C (t=2, 1 core, runs
# 5000) would hold a unit over [2, 5002) and is not backfilled. At 100 J1 starts on n0 (3) and
# J2 on n0 (1) + n1 (1); C waits until they end at 1100.
# Whole nodes (Slurm): J1's reservation keeps all of n0 over [100, 1100); J2 fits n1 nowhere
# (1 core) and n0 only from 1100, so it is reserved on n0 at 1100. C's first fit now is n1's free
# core, a node no reservation holds: it starts at once (t=2). At 100 J1 starts on n0; J2 finds
# 1 core (n0) and waits for J1's end at 1100.
NODE_JOBS = [job(1, 0, 4, 100), job(2, 0, 3, 10000), job(3, 1, 3, 1000), job(4, 1, 2, 1000),
             job(5, 2, 1, 5000)]
TWO_NODES = ClusterSpec.homogeneous(2, 4)


def test_unit_count_plan_holds_back_a_job_outside_the_reserved_nodes() -> None:
    assert starts(NODE_JOBS, TWO_NODES, EVERY_EVENT) == {1: 0, 2: 0, 3: 100, 4: 100, 5: 1100}


def test_job_outside_a_node_reservation_starts_at_once() -> None:
    config = dataclasses.replace(EVERY_EVENT, bf_node_reservations=True)
    checker = InvariantChecker(TWO_NODES)
    assert starts(NODE_JOBS, TWO_NODES, config, checker) == {1: 0, 2: 0, 3: 100, 4: 1100, 5: 2}
    assert checker.promises_kept >= 2  # J1 started at 100 and J2 at 1100, as reserved


# 1 node x 4 cores, EASY, bf_resolution 60 (limits are whole minutes, so the planned durations
# are the limits themselves).
# A (t=30, 3 cores, limit = run = 120) starts at 30 and is planned to end at 150; 1 core free.
# H (t=70, 4 cores, runs 60) waits: reserved at 150 over [150, 210).
# S (t=70, 1 core, runs 60) would run over [70, 130): 130 <= 150, it ends before H's exact start
# and is backfilled at 70.
# Rounded as Slurm rounds: H holds [floor(150 / 60) * 60, floor(210 / 60) * 60) = [120, 180);
# [70, 130) overlaps it, so S waits: H starts at 150 when A ends, ends at 210, and S starts then.
ROUND_JOBS = [job(1, 30, 3, 120), job(2, 70, 4, 60), job(3, 70, 1, 60)]
ONE_NODE = ClusterSpec.homogeneous(1, 4)
EASY_60 = SchedulerConfig(backfill="easy", sched_interval=0, bf_interval=0, bf_resolution=60)


def test_exact_reservation_start_lets_a_short_job_through() -> None:
    assert starts(ROUND_JOBS, ONE_NODE, EASY_60) == {1: 30, 2: 150, 3: 70}


def test_rounded_reservation_start_forbids_the_short_job() -> None:
    config = dataclasses.replace(EASY_60, bf_round_reservations=True)
    assert starts(ROUND_JOBS, ONE_NODE, config) == {1: 30, 2: 150, 3: 210}
    # the same with node-level planning: the rounded window is what the node keeps
    both = dataclasses.replace(config, bf_node_reservations=True)
    assert starts(ROUND_JOBS, ONE_NODE, both) == {1: 30, 2: 150, 3: 210}


def test_pass_phase_is_seeded_and_ticks_follow_it() -> None:
    # 7 one-core jobs on 8 cores, 7 s apart, none ending before the last submission. Under defer each
    # submission queues a pass for slurmctld's background loop, which wakes once a second on the
    # grid of the periodic pass (phase + k * 10 for the run's phase, drawn in [0, 10)): each job
    # starts at the first wake-up after its submission (batch_sched_delay 0: with Slurm's 3 s a
    # periodic pass less than 3 s before a submission would hold its pass back).
    config = SchedulerConfig(backfill="none", sched_interval=10, defer=True, pass_jitter=True,
                             batch_sched_delay=0)
    jobs = [job(k, 7 * k, 1, 1000) for k in range(1, 8)]
    phases = []
    for seed in (1, 2):
        sim = Simulation(jobs, TWO_NODES, config, seed=seed)
        phase = sim.passes.phase[1]
        assert 0 <= phase < 10
        result = sim.run()
        for start, submit in zip(result.jobs["start"], result.jobs["submit"], strict=True):
            k = start - phase
            assert abs(k - round(k)) < 1e-9  # on the phase's one-second grid
            assert submit < start <= submit + 1  # the first wake-up after submission
        phases.append(phase)
    assert phases[0] != phases[1]
    again = Simulation(jobs, TWO_NODES, config, seed=1)
    assert again.passes.phase[1] == phases[0]


def test_start_latency_delays_the_start_and_keeps_the_run_time() -> None:
    # Empty 4-core node, one 1-core job every 100 s: each is decided at its submission and begins
    # within [submit, submit + 2.5]; it runs its 30 s from then on.
    config = SchedulerConfig(backfill="none", sched_interval=0, start_latency=2.5)
    jobs = [job(k, 100 * k, 1, 30) for k in range(1, 21)]
    frame = Simulation(jobs, ONE_NODE, config, seed=3).run().jobs
    delays = frame["start"] - frame["submit"]
    assert delays.between(0, 2.5).all()
    assert delays.nunique() == 20  # drawn, not constant
    assert ((frame["end"] - frame["start"]) - 30).abs().max() < 1e-9
    same = Simulation(jobs, ONE_NODE, config, seed=3).run().jobs
    assert same["start"].tolist() == frame["start"].tolist()
