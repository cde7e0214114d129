"""Fair Tree fair share (paper 004 sec. 2.4 and eq. 2.6; SchedMD fair_tree.html and
src/plugins/priority/multifactor/fair_tree.c).

At each account, every child (user or sub-account) gets a Level Fairshare LF = S / U with
S = its RawShares / the RawShares of itself and its siblings, and U = its usage / its parent's
usage. S = 0 gives LF = 0; otherwise U = 0 gives LF = infinity. Children are visited depth-first in
descending LF (users before accounts on equal LF, as fair_tree.c's comparator does). Users are
ranked in visiting order: the rank starts at N (the number of user associations) and each user
takes the current "rank without ties" then decrements it; a user whose LF equals the previous
sibling's keeps the previous rank (tie), and sibling accounts with equal LF have their children
merged into one list before sorting. A user's factor is rank / N, so the first gets 1.0 and the
next 1 - 1/N (004 sec. 2.4). Name order breaks remaining ties so runs are reproducible.

Speed: an account's sorted children only change when one of them was charged usage (its LFs all
share the parent's usage, which changes only then), so each account caches its order and the
factors are recomputed only when some account's order or tie pattern really changed.
"""

from __future__ import annotations

import math
from operator import itemgetter

from djsb.model.priority.accounts import AccountTree, Association

_ORDER = itemgetter(0, 1, 2)


def level_fs(node: Association) -> float:
    """LF = S / U of one association among its siblings (eq. 2.6 of 004)."""
    s = node.share_fraction
    if s == 0:
        return 0.0
    parent_usage = node.parent.total if node.parent is not None else 0.0
    u = node.total / parent_usage if parent_usage > 0 else 0.0
    return math.inf if u == 0 else s / u


def _sort(children: list[Association]) -> list[tuple[float, bool, str, Association]]:
    return sorted(((-level_fs(c), c.user is None, c.name, c) for c in children), key=_ORDER)


def _signature(order: list[tuple[float, bool, str, Association]]) -> tuple[tuple[int, bool], ...]:
    return tuple((id(entry[3]), k > 0 and entry[0] == order[k - 1][0]) for k, entry in enumerate(order))


def _refresh(tree: AccountTree) -> bool:
    """Re-sort the changed accounts; True if any order or tie pattern changed."""
    changed = False
    for account in tree.changed:
        account.child_order = _sort(account.children)
        signature = _signature(account.child_order)
        if signature != account.child_signature:
            account.child_signature = signature
            changed = True
    tree.changed.clear()
    return changed


def fair_tree_factors(tree: AccountTree) -> dict[tuple[str, str], float]:
    """Fair share factor of every user association (call ``tree.settle`` first)."""
    cached = tree.cache.get("fair_tree")
    if not _refresh(tree) and cached is not None:
        return cached  # type: ignore[return-value]
    n_users = len(tree.users)
    factors: dict[int, float] = {}
    state = {"rank": n_users, "rnt": n_users}

    def visit(ordered: list[tuple[float, bool, str, Association]], account_tied: bool) -> None:
        previous = None
        i = 0
        while i < len(ordered):
            value, is_account, _, node = ordered[i]
            tied = account_tied if i == 0 else value == previous
            if not is_account:
                if not tied:
                    state["rank"] = state["rnt"]
                factors[id(node)] = state["rank"] / n_users
                state["rnt"] -= 1
                i += 1
            else:
                merged = [node]
                while i + len(merged) < len(ordered) and ordered[i + len(merged)][1] \
                        and ordered[i + len(merged)][0] == value:
                    merged.append(ordered[i + len(merged)][3])
                children = node.child_order if len(merged) == 1 else sorted(
                    (entry for account in merged for entry in account.child_order), key=_ORDER)
                visit(children, tied)
                i += len(merged)
            previous = value

    if n_users:
        visit(tree.root.child_order, False)
    result = {key: factors[id(assoc)] for key, assoc in tree.users.items()}
    tree.cache["fair_tree"] = result
    return result
