"""StartState.running: jobs already running when a replay starts, on the nodes given, holding them
until their start plus their run time; worked by hand, with the InvariantChecker's independent tallies."""

from __future__ import annotations

from djsb.model import (
    ClusterSpec,
    InvariantChecker,
    NodeSpec,
    PartitionSpec,
    RunningAtStart,
    SchedulerConfig,
    Simulation,
    StartState,
)
from djsb.workloads.job import TraceJob

FIFO = SchedulerConfig(backfill="none", sched_interval=0, bf_interval=0)
SPEC = ClusterSpec((NodeSpec("n0", 4), NodeSpec("n1", 4)), (PartitionSpec("p"),))


def test_a_placed_job_holds_its_recorded_nodes_until_its_recorded_end() -> None:
    # the replay starts at 100; job 1 began at 40 on n1 and runs 100 s (to 140); job 2 asks 8 CPUs at
    # 100 and starts when job 1 ends
    start = StartState(100.0, [RunningAtStart(TraceJob(1, 0.0, 100.0, 4, requested_time=300.0), 40.0, ("n1",))])
    result = Simulation([TraceJob(2, 100.0, 10.0, 8)], SPEC, FIFO, start=start,
                        checker=InvariantChecker(SPEC)).run()
    assert result.rejected.empty
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc[1, "nodes"] == "n1" and (jobs.loc[1, "start"], jobs.loc[1, "end"]) == (40.0, 140.0)
    assert jobs.loc[2, "start"] == 140.0


def test_a_placed_job_is_killed_at_its_limit_from_its_start() -> None:
    # begun at 40 with a 90 s limit: killed at 130, though it would run to 140
    start = StartState(100.0, [RunningAtStart(TraceJob(1, 0.0, 100.0, 2, requested_time=90.0), 40.0, ("n0",))])
    jobs = Simulation([], SPEC, FIFO, start=start).run().jobs.set_index("job_id")
    assert jobs.loc[1, "end"] == 130.0 and bool(jobs.loc[1, "killed"])


def test_a_job_that_cannot_be_placed_is_rejected_with_why() -> None:
    running = [RunningAtStart(TraceJob(1, 0.0, 100.0, 3), 40.0, ("n0",)),
               RunningAtStart(TraceJob(2, 0.0, 100.0, 2), 50.0, ("n0",)),
               RunningAtStart(TraceJob(3, 0.0, 100.0, 2), 50.0, ("g1",)),
               # without a node list, wherever it fits: the 1 CPU left on n0, then n1
               RunningAtStart(TraceJob(4, 0.0, 100.0, 5), 50.0),
               RunningAtStart(TraceJob(5, 0.0, 100.0, 1), 50.0)]
    result = Simulation([], SPEC, FIFO, start=StartState(100.0, running)).run()
    assert sorted(result.jobs["job_id"]) == [1, 4]
    assert list(result.rejected.itertuples(index=False, name=None)) == [
        (2, "running at the replay's start: no room on nodes n0 for it at the replay's start"),
        (3, "running at the replay's start: node list g1 not in partition p"),
        (5, "running at the replay's start: no room on partition p for it at the replay's start")]
