"""Nodes leaving service and coming back in the model (djsb/model/node_events.py, node_service.py).

Every case runs textbook EASY (``TEXTBOOK``: passes at every event, no rounding) with the invariant
checker on, on nodes of 2 cores, so every start time is worked by hand below from the rules of
slurm.conf(5)/scontrol(1): a DRAINed node takes no new job and lets its running ones end; a DOWN node
ends them, requeued (JobRequeue=1) to be eligible again cred_expire + 1 = 121 s later
(batch_requeue_fini, job_mgr.c), else NODE_FAIL; RESUME puts it back.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from support import cluster_list_error

from djsb.errors import ConfigError
from djsb.model import TEXTBOOK, ClusterSpec, SchedulerConfig, Simulation, node_events
from djsb.model.invariants import InvariantChecker
from djsb.model.node_events import NodeEvent
from djsb.model.result import SimulationResult
from djsb.workloads.job import TraceJob

KILL = dataclasses.replace(TEXTBOOK, extend_limit=False)


def job(job_id: int, submit: float, run_time: float, cpus: int, limit: float | None = None) -> TraceJob:
    return TraceJob(job_id, submit, run_time, cpus, requested_time=limit or run_time)


def replay(jobs: list[TraceJob], events: list[NodeEvent], scheduler: SchedulerConfig = KILL) -> SimulationResult:
    cluster = dataclasses.replace(ClusterSpec.homogeneous(2, 2), events=tuple(events))
    return Simulation(jobs, cluster, scheduler, checker=InvariantChecker(cluster)).run()


def rows(result: SimulationResult) -> dict[int, tuple[float, float, str, str, int]]:
    """(start, end, nodes, state, requeues) of each job."""
    frame = result.jobs
    return {int(i): (float(start), float(end), str(nodes), str(state), int(requeues))
            for i, start, end, nodes, state, requeues in zip(
                frame["job_id"], frame["start"], frame["end"], frame["nodes"], frame["state"],
                frame["requeues"], strict=True)}


def test_a_drained_node_takes_no_new_job_and_lets_its_running_one_end() -> None:
    # n1 drains at 10, n0 at 50 while job 1 runs there (0..100: it completes). Job 2, submitted at
    # 20, finds no node in service until both resume at 120: it starts then, on n0, ends 170.
    events = [NodeEvent(10, "n1", "DRAIN", "disk"), NodeEvent(50, "n0", "DRAIN", "bios"),
              NodeEvent(120, "n[0-1]", "RESUME")]
    result = replay([job(1, 0, 100, 2), job(2, 20, 50, 2)], events)
    assert rows(result) == {1: (0.0, 100.0, "n0", "COMPLETED", 0), 2: (120.0, 170.0, "n0", "COMPLETED", 0)}
    # without the events job 2 starts at 20 on n1
    free = replay([job(1, 0, 100, 2), job(2, 20, 50, 2)], []).jobs.set_index("job_id")
    assert (free.loc[2, "start"], free.loc[2, "end"], free.loc[2, "nodes"]) == (20.0, 70.0, "n1")
    outages = result.out_of_service
    assert outages is not None
    assert outages.values.tolist() == [["n1", "DRAIN", 10.0, 120.0, 2, "disk"],
                                       ["n0", "DRAIN", 50.0, 120.0, 2, "bios"]]
    # the capacity the service held is not use: the busiest instant is job 1 alone, 2 cores
    assert result.utilisation["busy_cores"].max() == 2


def test_a_node_gone_down_requeues_its_job_which_starts_again_from_scratch() -> None:
    # job 1 runs on n0 from 0; n0 goes DOWN at 30: job 1 is requeued, eligible at 30 + 121 = 151,
    # and runs its whole 100 s again on n1 (n0 is still down): 151..251. One row, its last run.
    result = replay([job(1, 0, 100, 2)], [NodeEvent(30, "n0", "DOWN", "dead")])
    assert rows(result) == {1: (151.0, 251.0, "n1", "COMPLETED", 1)}
    assert result.out_of_service is not None
    assert result.out_of_service.values.tolist() == [["n0", "DOWN", 30.0, None, 2, "dead"]]


def test_without_job_requeue_the_job_of_a_node_gone_down_ends_node_fail() -> None:
    # JobRequeue=0: job 1 ends at 30 with its node, NODE_FAIL after 30 s of its 100
    result = replay([job(1, 0, 100, 2)], [NodeEvent(30, "n0", "DOWN")],
                    dataclasses.replace(KILL, job_requeue=False))
    assert rows(result) == {1: (0.0, 30.0, "n0", "NODE_FAIL", 0)}


def test_a_job_submitted_no_requeue_ends_node_fail_and_one_asking_requeue_is_requeued() -> None:
    # the job's own flag wins over JobRequeue (job_mgr.c _job_requeue_op reads details->requeue,
    # which sbatch's --requeue / --no-requeue set): --no-requeue ends at 30 NODE_FAIL though
    # JobRequeue=1, --requeue runs again at 151 though JobRequeue=0
    down = [NodeEvent(30, "n0", "DOWN")]
    refused = replay([dataclasses.replace(job(1, 0, 100, 2), requeue=False)], down)
    assert rows(refused) == {1: (0.0, 30.0, "n0", "NODE_FAIL", 0)}
    asked = replay([dataclasses.replace(job(1, 0, 100, 2), requeue=True)], down,
                   dataclasses.replace(KILL, job_requeue=False))
    assert rows(asked) == {1: (151.0, 251.0, "n1", "COMPLETED", 1)}


def test_the_requeue_delay_follows_cred_expire() -> None:
    # AuthInfo=cred_expire=30: eligible again at 30 + 31 = 61
    result = replay([job(1, 0, 100, 2)], [NodeEvent(30, "n0", "DOWN")],
                    dataclasses.replace(KILL, requeue_delay=31.0))
    assert rows(result)[1][:2] == (61.0, 161.0)


def test_backfill_plans_no_capacity_on_a_drained_node() -> None:
    # Job 1 runs on n0 0..300, job 2 on n1 0..100; n0 drains at 10. Job 3 wants both nodes (4 CPUs):
    # with n0 out of service it can never be planned, so it gets no reservation, and job 4 (2 CPUs,
    # 250 s) backfills onto n1 when job 2 ends at 100 (ends 350). Were job 1's cores on n0 planned to
    # come back at 300, as a plan over every node would have them, job 3 would be reserved at 300 and
    # job 4, ending later, would wait until 300. n0 resumes at 400: job 3 starts then on both nodes.
    jobs = [job(1, 0, 300, 2), job(2, 0, 100, 2), job(3, 20, 50, 4), job(4, 30, 250, 2)]
    events = [NodeEvent(10, "n0", "DRAIN"), NodeEvent(400, "n0", "RESUME")]
    for planner in ("profile", "will_run"):
        result = rows(replay(jobs, events, dataclasses.replace(KILL, bf_planner=planner)))
        assert result[4][:3] == (100.0, 350.0, "n1"), planner
        assert result[3][:3] == (400.0, 450.0, "n[0-1]"), planner


def test_events_name_nodes_of_the_cluster() -> None:
    cluster = dataclasses.replace(ClusterSpec.homogeneous(2, 2), events=(NodeEvent(5, "n7", "DRAIN"),))
    with pytest.raises(ConfigError, match="unknown node 'n7'"):
        Simulation([job(1, 0, 10, 1)], cluster, KILL)


def test_a_job_the_nodes_in_service_could_never_hold_fails_nothing() -> None:
    # Three nodes of 2 cores, n1 drained from 0 to 200, no backfill (only the main pass starts jobs).
    # Job 1 (2 CPUs) runs on n0 from 0 to 100. Job 2 (6 CPUs) comes at 1: even with every node in
    # service idle it would have n0 and n2, 4 CPUs, so node_scheduler.c's _pick_best_nodes answers
    # ESLURM_NODE_NOT_AVAIL (its test on the available nodes fails) and the job waits ReqNodeNotAvail
    # without failing the partition: job 3 (2 CPUs, at 2) starts at once on n2; job 2 starts when n1
    # is back at 200. A job the nodes in service could hold if idle blocks the partition instead
    # (ESLURM_NODES_BUSY): with job 2 asking 4 CPUs, it waits Resources for job 1's end at 100 and
    # takes n0 and n2 until 150; job 3 behind it waits for that end (Resources once job 2 started).
    cluster = dataclasses.replace(ClusterSpec.homogeneous(3, 2), events=(
        NodeEvent(0, "n1", "DRAIN"), NodeEvent(200, "n1", "RESUME")))
    no_backfill = dataclasses.replace(KILL, backfill="none")
    for cpus, expected in ((6, {2: (200.0, "ReqNodeNotAvail"), 3: (2.0, "None")}),
                           (4, {2: (100.0, "Resources"), 3: (150.0, "Resources")})):
        jobs = [job(1, 0, 100, 2), job(2, 1, 50, cpus), job(3, 2, 10, 2)]
        frame = Simulation(jobs, cluster, no_backfill, checker=InvariantChecker(cluster)).run().jobs
        frame = frame.set_index("job_id")
        got = {i: (float(frame.loc[i, "start"]), frame.loc[i, "reason"]) for i in (2, 3)}
        assert got == expected, cpus


def test_the_number_of_node_events_is_bounded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # the bound (100,000) lowered to 3 so the file stays small: the fourth event is refused at its line
    monkeypatch.setattr(node_events, "MAX_EVENTS", 3)
    items = [f"{{at: {i}, nodes: n0, state: DRAIN}}" for i in range(4)]
    assert cluster_list_error(tmp_path, "node_events", items, "at most 3 node events, got 4").line == 7
