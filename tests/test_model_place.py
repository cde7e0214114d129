"""Simulation.place: a job already running when a replay starts, on the nodes given, holding them
until its start plus its run time; worked by hand, with the InvariantChecker's independent tallies."""

from __future__ import annotations

from djsb.model import ClusterSpec, InvariantChecker, NodeSpec, PartitionSpec, SchedulerConfig, Simulation
from djsb.workloads.job import TraceJob

FIFO = SchedulerConfig(backfill="none", sched_interval=0, bf_interval=0)
SPEC = ClusterSpec((NodeSpec("n0", 4), NodeSpec("n1", 4)), (PartitionSpec("p"),))


def test_a_placed_job_holds_its_recorded_nodes_until_its_recorded_end() -> None:
    # the replay starts at 100; job 1 began at 40 on n1 and runs 100 s (to 140); job 2 asks 8 CPUs at
    # 100 and starts when job 1 ends
    sim = Simulation([TraceJob(2, 100.0, 10.0, 8)], SPEC, FIFO, start=100.0, checker=InvariantChecker(SPEC))
    assert sim.place(TraceJob(1, 0.0, 100.0, 4, requested_time=300.0), 40.0, ["n1"]) == ""
    jobs = sim.run().jobs.set_index("job_id")
    assert jobs.loc[1, "nodes"] == "n1" and (jobs.loc[1, "start"], jobs.loc[1, "end"]) == (40.0, 140.0)
    assert jobs.loc[2, "start"] == 140.0


def test_a_placed_job_is_killed_at_its_limit_from_its_start() -> None:
    # begun at 40 with a 90 s limit: killed at 130, though it would run to 140
    sim = Simulation([], SPEC, FIFO, start=100.0)
    assert sim.place(TraceJob(1, 0.0, 100.0, 2, requested_time=90.0), 40.0, ["n0"]) == ""
    jobs = sim.run().jobs.set_index("job_id")
    assert jobs.loc[1, "end"] == 130.0 and bool(jobs.loc[1, "killed"])


def test_a_job_that_cannot_be_placed_says_why() -> None:
    sim = Simulation([], SPEC, FIFO, start=100.0)
    assert sim.place(TraceJob(1, 0.0, 100.0, 3), 40.0, ["n0"]) == ""
    assert sim.place(TraceJob(2, 0.0, 100.0, 2), 50.0, ["n0"]) == "no room on nodes n0 for it at the replay's start"
    assert sim.place(TraceJob(3, 0.0, 100.0, 2), 50.0, ["g1"]) == "node list g1 not in partition p"
    # without a node list, wherever it fits: the 1 CPU left on n0, then n1
    assert sim.place(TraceJob(4, 0.0, 100.0, 5), 50.0) == ""
    assert sim.place(TraceJob(5, 0.0, 100.0, 1), 50.0) == "no room on partition p for it at the replay's start"
