"""A workflow inside a model run (djsb/workflows/run.py): wrapper dependencies and the fair-share target."""

from __future__ import annotations

import pytest

from djsb.model import TEXTBOOK, ClusterSpec
from djsb.model.priority.multifactor import MultifactorPriority, MultifactorWeights
from djsb.workflows.dag import vertical
from djsb.workflows.plan import WorkflowPlan
from djsb.workflows.run import run_workflow
from djsb.workflows.wrappers import WrapperLimits
from djsb.workloads.job import TraceJob


def test_split_vertical_wrappers_follow_each_other_exactly() -> None:
    # 5 jobs x 4 CPUs x 100 s, at most 2 per wrapper: wrappers of 200, 200 and 100 s. Each is
    # submitted when the previous one ends (on parent end), on an empty 8-core node under textbook
    # EASY (passes at every event): starts 0, 200, 400; makespan 500, no queue.
    plan = WorkflowPlan(vertical(5, 4, 100), ("vertical",), WrapperLimits(max_jobs=2))
    result, outcome = run_workflow([], ClusterSpec.homogeneous(1, 8), TEXTBOOK, MultifactorPriority(
        MultifactorWeights(fairshare=1000)), 0, plan, "vertical")
    assert list(result.jobs["submit"]) == list(result.jobs["start"]) == [0.0, 200.0, 400.0]
    assert (outcome.submissions, outcome.makespan_s, outcome.queue_time_s, outcome.completed) == \
        (3, 500.0, 0.0, True)


def test_afterok_submission_holds_wrappers_without_counting_it_as_queue_time() -> None:
    # Same workflow, all 3 wrappers submitted at 0 with afterok: same starts, each eligible when the
    # previous ends; waits (start - submit) are 0, 200, 400 but queue time (start - eligible) is 0.
    plan = WorkflowPlan(vertical(5, 4, 100), ("vertical",), WrapperLimits(max_jobs=2), submission="afterok")
    result, outcome = run_workflow([], ClusterSpec.homogeneous(1, 8), TEXTBOOK, MultifactorPriority(
        MultifactorWeights(fairshare=1000)), 0, plan, "vertical")
    assert list(result.jobs["wait"]) == [0.0, 200.0, 400.0]
    assert (outcome.queue_time_s, outcome.makespan_s) == (0.0, 500.0)


def test_fairshare_target_is_set_before_the_submission() -> None:
    # Ten other users, each alone in an account, ran 1 CPU for k x 100 s (k = 1..10) from time 0; the
    # workflow user has no usage. At 2000 s the target 0.6 is set: N = 11 users, 0.6 x 11 = 6.6, the
    # nearest rank is 7 (7/11 = 0.636; rank 6 is 0.545): 4 users ahead. Decay scales every usage
    # alike, so the order does not change.
    background = [TraceJob(k, 0.0, 100.0 * k, 1, requested_time=100.0 * k, user=f"u{k}", account=f"a{k}")
                  for k in range(1, 11)]
    plan = WorkflowPlan(vertical(2, 4, 100), ("none",), WrapperLimits(), submit=2000.0, fairshare_target=0.6)
    _, outcome = run_workflow(background, ClusterSpec.homogeneous(1, 16), TEXTBOOK, MultifactorPriority(
        MultifactorWeights(fairshare=1000)), 0, plan, "none")
    assert outcome.fairshare == pytest.approx(7 / 11)
    assert (outcome.completed, outcome.makespan_s) == (True, 200.0)
