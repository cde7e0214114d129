"""The fair-share factor of the workflow executing user decides its wait on a contended machine
(004 sec. 3.3.2: a lower fair share, a longer queue time), worked by hand on the model's multifactor
priority with Fair Tree."""

from __future__ import annotations

import pytest

from djsb.model import TEXTBOOK, ClusterSpec
from djsb.model.priority.multifactor import MultifactorPriority, MultifactorWeights
from djsb.workflows.dag import vertical
from djsb.workflows.plan import WorkflowPlan
from djsb.workflows.run import run_workflow
from djsb.workflows.wrappers import WrapperLimits
from djsb.workloads.job import TraceJob

SUBMIT = 4600.0


def contended() -> list[TraceJob]:
    """One node of 4 cores. Users u1..u4 (an account each) first ran 1 CPU for k x 1000 s from 0
    (usage 1000 k CPU-s, all done by 4000 s); at 4500 s each submits a whole-node job of 1000 s."""
    history = [TraceJob(k, 0.0, 1000.0 * k, 1, 1000.0 * k, user=f"u{k}", account=f"a{k}") for k in range(1, 5)]
    rush = [TraceJob(10 + k, 4500.0, 1000.0, 4, 1000.0, user=f"u{k}", account=f"a{k}") for k in range(1, 5)]
    return history + rush


@pytest.mark.parametrize(("target", "factor", "wait"), [(1.0, 1.0, 900.0), (0.6, 0.6, 1900.0), (0.01, 0.2, 3900.0)])
def test_a_lower_fair_share_waits_longer(target: float, factor: float, wait: float) -> None:
    # Priority = 1000 x the Fair Tree factor only. At 4500 s u1 (least usage) takes the node until
    # 5500 s; u2, u3, u4 wait, and the workflow user's one whole-node job of 1000 s joins them at
    # 4600 s. Fair Tree ranks the N = 5 users by usage, factor rank / 5; the target sets the workflow
    # user's usage among the others' (1400 for u1, 2000, 3000, 4000 CPU-s at 4600 s). Target 1.0:
    # no usage, first (1.0), starts at 5500 s, waits 900 s. Target 0.6 = 3/5: after u1 and u2 (usage
    # between 2000 and 3000), so u2 runs 5500-6500 and the workflow 6500-7500: waits 1900 s. Target
    # 0.01: the nearest rank is 1/5, last: u2, u3, u4 run first, it starts at 8500 s and waits 3900 s.
    # Decay (7-day half-life) scales every usage alike, and u1, running, only moves below them all.
    plan = WorkflowPlan(vertical(1, 4, 1000), ("none",), fairshare_target=target, submit=SUBMIT,
                        limits=WrapperLimits())
    result, outcome = run_workflow(contended(), ClusterSpec.homogeneous(1, 4), TEXTBOOK,
                                   MultifactorPriority(MultifactorWeights(fairshare=1000)), 0, plan, "none")
    assert outcome.fairshare == pytest.approx(factor)
    assert outcome.queue_time_s == wait
    rush = result.jobs.set_index("job_id").loc[[11, 12, 13, 14], "start"].tolist()
    assert rush[0] == 4500.0 and sorted(rush[1:] + [SUBMIT + wait]) == [5500.0, 6500.0, 7500.0, 8500.0]
