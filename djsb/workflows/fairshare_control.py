"""Set the workflow user's Fair Tree factor to a target before its workflow is submitted (004 sec. 3.3.1).

The thesis (fig. 3.6) gives every user a dummy job whose run time preserves the users' usage order,
except the *workflow executing user*, whose dummy job is as long as needed for that user's fair share
to reach a target (0.01 ... 1.0). Here the same is done directly on the association tree: usage is
charged to the user so that its branch lands among its siblings where Fair Tree (eq. 2.6 of 004)
ranks it closest to the target. The user must be alone in its branch under ``root`` (fig. 3.2: the
tracked user has an account of its own); then only that branch moves, so no other user is reordered
(their ratios usage / parent usage keep their order, as every sibling shares the parent's usage).

Fair Tree factors are ranks over N users (rank / N), so a target is met to within 1 / (2N) at best;
usage can only be added, so a target above the user's current factor may be out of reach. The factor
actually reached is reported either way.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

from djsb.errors import ConfigError
from djsb.model.priority.accounts import AccountTree, Association
from djsb.model.priority.fair_tree import fair_tree_factors

MIN_TARGET, MAX_TARGET = 0.01, 1.0
"""The targets the thesis' fair-share control accepts (004 sec. 3.3.1)."""


@dataclass(frozen=True, slots=True)
class FairShareSetting:
    """What the control did: the ``target``, the factor ``reached`` and the decayed CPU-seconds
    of usage charged to the user (``usage_added``)."""

    target: float
    reached: float
    usage_added: float


def control_fair_share(tree: AccountTree, user: str, account: str, target: float,
                       now: float) -> FairShareSetting:
    """Charge ``user`` (of ``account``) the usage that brings its Fair Tree factor nearest ``target``
    at ``now``; the tree is left with that usage charged."""
    if not MIN_TARGET <= target <= MAX_TARGET:
        raise ConfigError(f"must be in {MIN_TARGET:g} ... {MAX_TARGET:g}, got {target:g}",
                          key="workflow.fairshare_target")
    user_node = tree.add_user(user, account)
    branch = _own_branch(user_node)
    if branch.share_fraction <= 0:
        raise ConfigError(f"{branch.name!r} has no shares: its fair share is 0 whatever its usage",
                          key="workflow.account")
    tree.settle(now)
    current = branch.total / branch.share_fraction
    candidates = [key for key in _placements(branch) if key >= current]

    def trial(key: float) -> float:
        trial_tree = copy.deepcopy(tree)
        trial_tree.add_usage(user, account, _cpu_seconds(trial_tree, branch, key, now), now)
        return fair_tree_factors(trial_tree)[(user, account)]

    # The factor falls as the key (usage / share) grows: search for the first candidate at or below
    # the target, then keep the nearer of it and the one before.
    low, high = 0, len(candidates)
    while low < high:
        middle = (low + high) // 2
        if trial(candidates[middle]) <= target:
            high = middle
        else:
            low = middle + 1
    near = [k for k in (low - 1, low) if 0 <= k < len(candidates)]
    key = min((abs(trial(candidates[k]) - target), candidates[k]) for k in near)[1]
    usage = _cpu_seconds(tree, branch, key, now)
    tree.add_usage(user, account, usage, now)
    return FairShareSetting(target, fair_tree_factors(tree)[(user, account)], usage)


def _own_branch(user_node: Association) -> Association:
    """The child of ``root`` whose subtree holds the user and nobody else (else a ConfigError)."""
    node = user_node
    while node.parent is not None and node.parent.parent is not None:
        if len(node.parent.children) != 1:
            raise ConfigError(f"user {user_node.user!r} shares account {node.parent.name!r} with others: "
                              "fair-share control needs the workflow user alone in an account under root "
                              "(004 fig. 3.2)", key="workflow.account")
        node = node.parent
    return node


def _placements(branch: Association) -> list[float]:
    """Keys (usage / share) that put ``branch`` strictly between two of its siblings' distinct keys,
    before the first and after the last, in ascending order (its current key is kept as a
    candidate too: adding nothing)."""
    assert branch.parent is not None
    keys = sorted({key for s in branch.parent.children if s is not branch
                   for key in (AccountTree.order_key(s)[0],) if math.isfinite(key)})
    current = branch.total / branch.share_fraction
    between = [(a + b) / 2 for a, b in zip(keys, keys[1:], strict=False)]
    first = [keys[0] / 2] if keys and keys[0] > 0 else []
    last = [2 * keys[-1] if keys and keys[-1] > 0 else 1.0]
    return sorted({current, *first, *between, *last})


def _cpu_seconds(tree: AccountTree, branch: Association, key: float, now: float) -> float:
    """Decayed CPU-seconds to charge so that ``branch``'s usage / share becomes ``key``."""
    scaled = max(0.0, key * branch.share_fraction - branch.total)
    return scaled * 2.0 ** (-(now - tree.t0) / tree.half_life) if tree.half_life > 0 else scaled
