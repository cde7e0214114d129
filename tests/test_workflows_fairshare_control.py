"""Fair-share control of the workflow user (004 sec. 3.3.1, fig. 3.6), on a worked account tree.

The tree is the thesis' fig. 3.2: under root, 50 accounts with one user each, user k having used
k x 1000 CPU-seconds (no decay), and the workflow user ``wf`` alone in account ``wfa`` with no usage.
N = 51 users, so Fair Tree factors are rank / 51 (004 sec. 2.4): the users with less usage rank first.
"""

from __future__ import annotations

import pytest

from djsb.errors import ConfigError
from djsb.model.priority.accounts import AccountTree
from djsb.model.priority.fair_tree import fair_tree_factors
from djsb.workflows.fairshare_control import control_fair_share

N_OTHERS = 50


def worked_tree() -> AccountTree:
    users = [(f"u{k}", f"a{k}") for k in range(1, N_OTHERS + 1)]
    tree = AccountTree([*users, ("wf", "wfa")], half_life=None)
    for k in range(1, N_OTHERS + 1):
        tree.add_usage(f"u{k}", f"a{k}", k * 1000.0, 0.0)
    return tree


def others_order(tree: AccountTree) -> list[str]:
    factors = fair_tree_factors(tree)
    return sorted((u for u, _ in factors if u != "wf"), key=lambda u: -factors[(u, f"a{u[1:]}")])


def test_target_0_6_is_reached_within_0_02_without_reordering_others() -> None:
    # 0.6 x 51 = 30.6: the nearest ranks are 31 (31/51 = 0.6078, off by 0.0078) and 30 (0.5882,
    # off by 0.0118). Rank 31 means 51 - 31 = 20 users ahead: those with 1000 ... 20000 CPU-s, so wf's
    # usage must lie strictly between 20000 and 21000; the control takes the midpoint, 20500.
    tree = worked_tree()
    before = others_order(tree)
    setting = control_fair_share(tree, "wf", "wfa", 0.6, now=0.0)
    assert setting.reached == pytest.approx(31 / 51)
    assert abs(setting.reached - 0.6) <= 0.02
    assert setting.usage_added == pytest.approx(20500.0)
    assert fair_tree_factors(tree)[("wf", "wfa")] == setting.reached
    assert others_order(tree) == before


@pytest.mark.parametrize(("target", "rank", "usage"), [
    (1.0, 51, 0.0),         # already first with no usage: nothing to add
    (0.01, 1, 100000.0),    # last: beyond the largest usage 50000 (twice it); 1/51 = 0.0196
    (0.25, 13, 38500.0),    # 0.25 x 51 = 12.75 -> rank 13 (0.2549): 38 users ahead, between 38000 and 39000
])
def test_targets_across_the_range(target: float, rank: int, usage: float) -> None:
    tree = worked_tree()
    setting = control_fair_share(tree, "wf", "wfa", target, now=0.0)
    assert (setting.reached, setting.usage_added) == (pytest.approx(rank / 51), pytest.approx(usage))
    assert abs(setting.reached - target) <= 0.02


def test_decayed_usage_is_charged_in_decayed_cpu_seconds() -> None:
    # Half-life 1000 s: at t = 1000 every usage charged at 0 has halved (u_k = k x 500), so the
    # midpoint between the 20th and 21st users is 10250 decayed CPU-s.
    users = [(f"u{k}", f"a{k}") for k in range(1, N_OTHERS + 1)]
    tree = AccountTree([*users, ("wf", "wfa")], half_life=1000.0)
    for k in range(1, N_OTHERS + 1):
        tree.add_usage(f"u{k}", f"a{k}", k * 1000.0, 0.0)
    setting = control_fair_share(tree, "wf", "wfa", 0.6, now=1000.0)
    assert setting.usage_added == pytest.approx(10250.0)
    assert setting.reached == pytest.approx(31 / 51)


def test_usage_cannot_be_taken_away() -> None:
    # wf already used 60000 CPU-s (more than anyone): last, 1/51, and no target can lift it.
    tree = worked_tree()
    tree.add_usage("wf", "wfa", 60000.0, 0.0)
    setting = control_fair_share(tree, "wf", "wfa", 0.9, now=0.0)
    assert (setting.reached, setting.usage_added) == (pytest.approx(1 / 51), 0.0)


def test_a_shared_account_or_a_bad_target_is_refused() -> None:
    tree = AccountTree([("u1", "a"), ("wf", "a")], half_life=None)
    with pytest.raises(ConfigError, match="shares account 'a' with others"):
        control_fair_share(tree, "wf", "a", 0.5, now=0.0)
    with pytest.raises(ConfigError, match=r"must be in 0.01 ... 1, got 0.001"):
        control_fair_share(worked_tree(), "wf", "wfa", 0.001, now=0.0)
