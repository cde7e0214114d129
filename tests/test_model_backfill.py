"""Hand-worked cases of the main pass, EASY and conservative backfilling (paper 004 sec. 2.2.1).

Every expected start time below is worked out in the comment next to the case, from the rules:
main pass in priority order stopping at the first job that does not fit; backfill plans with
time limits; EASY reserves for the first blocked job only, conservative for every blocked job.
Unless said otherwise passes run on every event (intervals 0) and there is no time rounding.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest

from djsb.errors import ConfigError
from djsb.model import (
    ClusterSpec,
    InvariantChecker,
    PartitionSpec,
    QosSpec,
    SchedulerConfig,
    Simulation,
)
from djsb.model import backfill as package
from djsb.model.backfill import BACKFILL_PLANNERS, BACKFILL_POLICIES
from djsb.model.backfill.profile_planner import Headroom
from djsb.model.cluster_spec import NodeSpec
from djsb.model.cluster_state import ClusterState
from djsb.model.profile import Profile
from djsb.model.queue import Needs
from djsb.workloads.job import TraceJob


def job(job_id: int, submit: float, cpus: int, run: float, limit: float | None = None,
        user: str = "u0") -> TraceJob:
    return TraceJob(job_id, submit, run, cpus, requested_time=limit if limit is not None else run,
                    user=user)


def starts(jobs: list[TraceJob], cluster: ClusterSpec, **options: object) -> dict[int, float]:
    result = run(jobs, cluster, **options)
    return dict(zip(result.jobs["job_id"], result.jobs["start"], strict=True))


def run(jobs: list[TraceJob], cluster: ClusterSpec, **options: object):  # noqa: ANN201
    settings: dict[str, Any] = {"sched_interval": 0.0, "bf_interval": 0.0, "bf_resolution": 0.0}
    settings.update(options)
    return Simulation(jobs, cluster, SchedulerConfig(**settings),
                      checker=InvariantChecker(cluster)).run()


def one_node(cores: int) -> ClusterSpec:
    return ClusterSpec.homogeneous(1, cores)


@pytest.mark.parametrize("variant", ["easy", "conservative"])
def test_backfill_that_ends_before_the_reservation_starts_now(variant: str) -> None:
    # 4 cores. J1 holds 2 until 10. J2 (4 cores) is reserved at 10. J3 (2 cores, limit 8)
    # submitted at 2 ends by 10 <= 10: it runs in the hole at t=2; J2 still starts at 10.
    jobs = [job(1, 0, 2, 10), job(2, 1, 4, 5), job(3, 2, 2, 8)]
    result = run(jobs, one_node(4), backfill=variant)
    s = dict(zip(result.jobs["job_id"], result.jobs["start"], strict=True))
    assert s == {1: 0, 2: 10, 3: 2}
    assert result.jobs.set_index("job_id").loc[3, "backfilled"]


@pytest.mark.parametrize("variant", ["easy", "conservative"])
def test_backfill_that_would_delay_the_reservation_waits(variant: str) -> None:
    # Same, but J3's limit is 9: it would hold 2 cores until 11 while J2 needs all 4 at 10.
    # J3 waits; J2 runs [10, 15); J3 starts at 15.
    jobs = [job(1, 0, 2, 10), job(2, 1, 4, 5), job(3, 2, 2, 9)]
    assert starts(jobs, one_node(4), backfill=variant) == {1: 0, 2: 10, 3: 15}


@pytest.mark.parametrize("variant", ["easy", "conservative"])
def test_backfill_on_cores_the_reserved_job_does_not_need(variant: str) -> None:
    # 6 cores. J1 holds 4 until 10; J2 needs 4, reserved at 10 when 6 are free: 2 are spare.
    # J3 (2 cores, limit 100) fits now and on the spare cores after 10: it starts at 2 and J2
    # still starts at 10 (6 - 2 = 4 free).
    jobs = [job(1, 0, 4, 10), job(2, 1, 4, 5), job(3, 2, 2, 100)]
    assert starts(jobs, one_node(6), backfill=variant) == {1: 0, 2: 10, 3: 2}


def test_estimates_longer_than_runtimes() -> None:
    # J1 (2 cores) asks 20 s but runs 5. J2 (4 cores) is reserved at 20. J3 (2 cores, limit 15,
    # runs 3) ends by 17 <= 20, so it backfills at 2 and really ends at 5. J1 also ends at 5:
    # J2 starts at 5, long before its reservation.
    jobs = [job(1, 0, 2, 5, 20), job(2, 1, 4, 5), job(3, 2, 2, 3, 15)]
    assert starts(jobs, one_node(4), backfill="easy") == {1: 0, 2: 5, 3: 2}


def test_job_killed_at_its_time_limit() -> None:
    # J1 would run 10 s but asked 6: Slurm kills it at 6, so J2 (all 4 cores) starts at 6.
    jobs = [job(1, 0, 4, 10, 6), job(2, 1, 4, 5)]
    result = run(jobs, one_node(4), backfill="easy")
    table = result.jobs.set_index("job_id")
    assert table.loc[1, "end"] == 6 and table.loc[1, "killed"] and table.loc[1, "run_time"] == 6
    assert table.loc[2, "start"] == 6 and not table.loc[2, "killed"]
    assert result.killed == 1


def test_extend_limit_lets_the_job_run() -> None:
    # Same jobs with extend_limit: J1 runs its 10 s, J2 starts at 10, nobody is killed.
    jobs = [job(1, 0, 4, 10, 6), job(2, 1, 4, 5)]
    result = run(jobs, one_node(4), backfill="easy", extend_limit=True)
    table = result.jobs.set_index("job_id")
    assert table.loc[1, "end"] == 10 and table.loc[2, "start"] == 10
    assert result.killed == 0


def test_main_pass_stops_at_the_first_job_that_does_not_fit() -> None:
    # 4 cores. J1 holds 3 until 10. J2 (2 cores) does not fit; J3 (1 core) would, but the main
    # pass stops at J2. Without backfill J3 waits until 10 (J2 and J3 then start together).
    # With EASY, J3 (limit 5) ends by 7 <= 10 and backfills at 2.
    jobs = [job(1, 0, 3, 10), job(2, 1, 2, 5), job(3, 2, 1, 5)]
    assert starts(jobs, one_node(4), backfill="none") == {1: 0, 2: 10, 3: 10}
    assert starts(jobs, one_node(4), backfill="easy") == {1: 0, 2: 10, 3: 2}


def on_three_one_core_nodes(partitions: dict[str, tuple[str, ...]], j3: tuple[str, int], j4: str) -> Any:
    """The jobs table, by job id, of four jobs without backfill on one-core nodes n1, n2, n3 split
    into ``partitions``, submitted at 0, 1, 2, 3: J1 (1 core, 10 s) and J2 (2 cores, 5 s) in partition
    a, J3 (5 s) in the partition and with the cores of ``j3``, J4 (1 core, 5 s) in partition ``j4``."""
    nodes = tuple(NodeSpec(f"n{i}", 1) for i in (1, 2, 3))
    cluster = ClusterSpec(nodes, tuple(PartitionSpec(name, nodes=members) for name, members in partitions.items()))
    parts = {1: "a", 2: "a", 3: j3[0], 4: j4}
    jobs = [dataclasses.replace(j, partition=parts[j.job_id])
            for j in (job(1, 0, 1, 10), job(2, 1, 2, 5), job(3, 2, j3[1], 5), job(4, 3, 1, 5))]
    return run(jobs, cluster, backfill="none").jobs.set_index("job_id")


def test_a_failed_partition_takes_its_nodes_from_the_rest_of_the_main_pass() -> None:
    # 3 one-core nodes: partition "a" is n1 + n2, "b" n2, "c" n2 + n3. J1 (a) holds n1 until 10.
    # J2 (a, 2 cores) cannot start: a fails and its nodes leave the pass (job_scheduler.c
    # failed_parts). J3 (b) has none left: it waits until J2 has run (10 to 15), though n2 is
    # free. J4 (c) has n3 left: it starts at once there, not on the free n2 first fit would
    # take. (Blocking only partition a, J3 would start at 2 and J4 on n2.)
    result = on_three_one_core_nodes({"a": ("n1", "n2"), "b": ("n2",), "c": ("n2", "n3")}, j3=("b", 1), j4="c")
    assert result["start"].to_dict() == {1: 0, 2: 10, 3: 15, 4: 3}
    assert result.loc[4, "nodes"] == "n3"


def test_a_job_the_nodes_left_could_never_hold_does_not_fail_its_partition() -> None:
    # 3 one-core nodes: partition "a" is n1 + n2, "b" n2 + n3. J1 (a) holds n1 until 10; J2 (a, 2
    # cores) cannot start, so a fails and n1, n2 leave the pass. J3 (b, 2 cores) has only n3 left,
    # which could never hold it even idle: Slurm skips it with ESLURM_NODE_NOT_AVAIL, failing
    # neither b nor its nodes (node_scheduler.c _pick_best_nodes' runable_avail; job_scheduler.c
    # fails a partition only on busy nodes), so J4 (b, 1 core) starts at once on n3. Had J3
    # failed b, J4 would wait for J3 (10: J2 starts; 15: J3; 20: J4).
    result = on_three_one_core_nodes({"a": ("n1", "n2"), "b": ("n2", "n3")}, j3=("b", 2), j4="b")
    assert result["start"].to_dict() == {1: 0, 2: 10, 3: 15, 4: 3}
    assert result.loc[4, "nodes"] == "n3"


def test_ties_broken_by_job_id() -> None:
    # Both jobs are submitted at 0 and need the whole machine: the lower id goes first, whatever
    # the order of the input list.
    jobs = [job(2, 0, 4, 10), job(1, 0, 4, 10)]
    assert starts(jobs, one_node(4), backfill="easy") == {1: 0, 2: 10}


def test_end_is_handled_before_a_submission_at_the_same_instant() -> None:
    # J1 ends at 10, J2 (whole machine) arrives at 10: the end comes first, J2 starts at 10.
    jobs = [job(1, 0, 4, 10), job(2, 10, 4, 5)]
    assert starts(jobs, one_node(4), backfill="none") == {1: 0, 2: 10}


def test_conservative_reserves_the_second_job_too() -> None:
    # 6 cores. J1: 4 cores until 10. J2: 5 cores, reserved [10, 20) (1 core spare).
    # J3: 6 cores; EASY gives it no reservation, conservative reserves [20, 30).
    # J4 (1 core, limit 30) at t=3 fits [3, 33) under EASY (2, then 1, then 6 free) and starts;
    # J3 then waits for J4: J2 ends at 20 leaving 5 free, J3 starts at 33.
    # Conservative: [20, 30) has 0 free, so J4 waits; J3 runs [20, 30), J4 starts at 30.
    jobs = [job(1, 0, 4, 10), job(2, 1, 5, 10), job(3, 2, 6, 10), job(4, 3, 1, 30)]
    assert starts(jobs, one_node(6), backfill="easy") == {1: 0, 2: 10, 3: 33, 4: 3}
    assert starts(jobs, one_node(6), backfill="conservative") == {1: 0, 2: 10, 3: 20, 4: 30}


def test_bf_window_limits_reservations() -> None:
    # 4 cores. J1: 2 cores until 100. J2 (4 cores) could start at 100. J3: 2 cores, limit 200.
    # Window 50 s: J2's start (100) is beyond 1 + 50, so it gets no reservation and J3 runs at 2;
    # J2 then waits for J3 (ends 202). Window 1000: J2 is reserved at 100, J3 would overlap it,
    # so J3 runs after J2: [110, ...).
    jobs = [job(1, 0, 2, 100), job(2, 1, 4, 10), job(3, 2, 2, 200)]
    assert starts(jobs, one_node(4), backfill="easy", bf_window=50) == {1: 0, 2: 202, 3: 2}
    assert starts(jobs, one_node(4), backfill="easy", bf_window=1000) == {1: 0, 2: 100, 3: 110}


def test_bf_max_job_test_caps_the_pass() -> None:
    # The first case, but the backfill pass tests only the head job: J3 is never backfilled.
    # J2 runs [10, 15) on all 4 cores, J3 starts at 15.
    jobs = [job(1, 0, 2, 10), job(2, 1, 4, 5), job(3, 2, 2, 8)]
    assert starts(jobs, one_node(4), backfill="easy", bf_max_job_test=1) == {1: 0, 2: 10, 3: 15}


def test_bf_resolution_rounds_limits_up() -> None:
    # The first case with bf_resolution 5: J3's limit 8 is planned as 10, so it would end at 12
    # after J2's reserved start (10, J1's limit 10 stays 10): J3 waits for J2, starts at 15.
    jobs = [job(1, 0, 2, 10), job(2, 1, 4, 5), job(3, 2, 2, 8)]
    assert starts(jobs, one_node(4), backfill="easy", bf_resolution=5) == {1: 0, 2: 10, 3: 15}


def test_submissions_and_deferred_ends_queue_the_pass_for_the_background_loop() -> None:
    # Slurm 22.05 (proc_req.c, controller.c): a batch submission never starts its job itself; it
    # counts a request (queue_job_scheduler), and so does a job's end under defer; slurmctld's
    # background loop wakes once a second (here on whole seconds) and runs the main pass if
    # batch_sched_delay (3 s by default) whole seconds passed since its previous pass. Without
    # defer a job's end runs the pass at once.
    # J1 (1 core) at 5: first wake after 5 is 6, no pass before -> starts 6. J2 (1 core) at 6.5: the
    # wakes 7 and 8 are within 3 s of the pass at 6 -> 9. J3 (4 cores) at 7 waits for both: J1 ends
    # at 16 -> pass at 17 (>= 9 + 3), J3 does not fit (J2 holds a core to 19); J2's end at 19 ->
    # pass at 20 (>= 17 + 3). The periodic 60 s pass comes later than all of them.
    jobs = [job(1, 5, 1, 10), job(2, 6.5, 1, 10), job(3, 7, 4, 10)]
    assert starts(jobs, one_node(4), backfill="none", defer=True, sched_interval=60) == {1: 6, 2: 9, 3: 20}
    # without defer the submissions queue their passes the same way, but J2's end at 19 runs the
    # pass at once: J3 starts at 19
    assert starts(jobs, one_node(4), backfill="none", sched_interval=60) == {1: 6, 2: 9, 3: 19}
    # batch_sched_delay=0 (the mini-cluster's): every wake after a request runs the pass; J2's end
    # at 17 and the wake at 17 fall together (ends first): J3 starts at 17
    assert starts(jobs, one_node(4), backfill="none", defer=True, sched_interval=60,
                  batch_sched_delay=0) == {1: 6, 2: 7, 3: 17}
    # the model's event-driven mode (sched_interval 0, textbook EASY): every event's pass at once
    assert starts(jobs, one_node(4), backfill="none", sched_interval=0) == {1: 5, 2: 6.5, 3: 16.5}


def test_qos_max_jobs_per_user_skips_without_blocking() -> None:
    # MaxJobsPerUser 1: u1's second job waits for its first (starts at 10) while u2's job, behind
    # it in the queue, starts at once.
    cluster = ClusterSpec.homogeneous(1, 4, qos=(QosSpec("normal", max_jobs_per_user=1),))
    jobs = [job(1, 0, 1, 10, user="u1"), job(2, 0, 1, 10, user="u1"), job(3, 0, 1, 10, user="u2")]
    assert starts(jobs, cluster, backfill="easy") == {1: 0, 2: 10, 3: 0}


def test_multi_node_core_allocation_and_rejection() -> None:
    # 2 nodes x 2 cores: a 3-core job spans both nodes (first fit: 2 on n0, 1 on n1); a 5-core
    # job can never run and is rejected at submission.
    result = run([job(1, 0, 3, 10), job(2, 0, 5, 10)], ClusterSpec.homogeneous(2, 2))
    assert list(result.jobs["nodes"]) == ["n0,n1"]
    assert list(result.rejected["job_id"]) == [2]


def test_exclusive_partition_gives_whole_nodes() -> None:
    # 2 nodes x 4 cores, OverSubscribe=EXCLUSIVE: each 1-core job takes a whole node, so the
    # third waits for the first to end (10).
    cluster = ClusterSpec.homogeneous(2, 4, partition=PartitionSpec("excl", oversubscribe="EXCLUSIVE"))
    jobs = [job(1, 0, 1, 10), job(2, 0, 1, 20), job(3, 0, 1, 5)]
    assert starts(jobs, cluster, backfill="easy") == {1: 0, 2: 0, 3: 10}


def test_force_oversubscribe_shares_cores() -> None:
    # 1 node x 2 cores with OverSubscribe=FORCE:2: 4 slots, so four 1-core jobs run at once and a
    # fifth waits for the first end (job 1 runs 11 s).
    cluster = ClusterSpec.homogeneous(1, 2, partition=PartitionSpec("shared", oversubscribe="FORCE:2"))
    jobs = [job(i, 0, 1, 10 + i) for i in range(1, 6)]
    assert starts(jobs, cluster, backfill="none") == {1: 0, 2: 0, 3: 0, 4: 0, 5: 11}


def test_a_job_never_shares_a_core_with_itself() -> None:
    # FORCE:2 doubles the slots of a 2-core node, but a 3-CPU job still needs 3 cores: rejected.
    cluster = ClusterSpec.homogeneous(1, 2, partition=PartitionSpec("shared", oversubscribe="FORCE:2"))
    result = run([job(1, 0, 3, 10)], cluster)
    assert list(result.rejected["job_id"]) == [1]


def test_event_passes_honour_default_queue_depth() -> None:
    # default_queue_depth 1: the pass the submissions at 0 queued (run by the background loop at its
    # first wake-up, 1) tests only J1, so J2 (which fits) waits for the periodic pass over the
    # whole queue at 60 s (sched_config.html).
    jobs = [job(1, 0, 2, 100), job(2, 0, 2, 100)]
    assert starts(jobs, one_node(4), backfill="none", sched_interval=60,
                  default_queue_depth=1) == {1: 1, 2: 60}


def test_backfill_policies_register_by_file() -> None:
    # one file per policy and per planner under djsb/model/backfill/ (besides the package and the
    # two base classes), each selectable by name; EASY reserves for one job, conservative for every
    # job tested
    files = {p.stem for p in Path(package.__file__).parent.glob("*.py")} - {"__init__", "base", "planner"}
    planners = {f"{name}_planner" for name in BACKFILL_PLANNERS.names()}
    assert set(BACKFILL_POLICIES.names()) | planners == files
    assert set(BACKFILL_POLICIES.names()) == {"none", "easy", "conservative"}
    assert BACKFILL_POLICIES.get("easy").max_reservations == 1
    assert BACKFILL_POLICIES.get("conservative").max_reservations == math.inf
    assert not BACKFILL_POLICIES.get("none").enabled
    with pytest.raises(ConfigError, match="conservative"):
        SchedulerConfig(backfill="lookahead")


def test_headroom_says_whether_a_job_left_could_fit_its_plan() -> None:
    # A partition of 8 units, 4 free now; a running job gives 4 back at t = 100; a reservation takes
    # 6 over [100, 200). Free: 4 on [0, 100), 8 - 6 = 2 on [100, 200), 8 from 200.
    state = ClusterState(ClusterSpec.homogeneous(1, 8))
    part = state.partitions[0]
    part.free = 4
    profile = Profile(0.0, 4, [(100.0, 4)])
    profile.take(100.0, 100.0, 6)
    left: Needs[tuple[int, float]] = Needs()
    left.add((0, 150.0), 3)  # its run [0, 150) meets the 2 free units of [100, 200): 3 > 2
    headroom = Headroom(left, state.partitions, {0: profile}, 0.0)
    assert not headroom.any()
    left.add((0, 50.0), 3)  # [0, 50) keeps 4 free: 3 fits
    assert headroom.any()
    left.add((0, 150.0), 2)  # 2 fits [0, 150) too
    left.remove((0, 50.0), 3)
    assert headroom.any()
    left.remove((0, 150.0), 2)
    assert not headroom.any()
    left.add((0, 0.0), 4)  # planned for no time: only the 4 units free now count
    assert headroom.any()
    part.free = 3
    assert not headroom.any()
