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

Speed: siblings share their parent's usage, so their LF order is their usage/share order, which
``AccountTree`` keeps sorted incrementally; the ranking is rebuilt only when some association
moved or changed ties. Ties are detected on usage/share (equal exactly when LF is).
"""

from __future__ import annotations

import math

from djsb.model.priority.accounts import AccountTree, Association

Key = tuple[float, bool, str]


def level_fs(node: Association) -> float:
    """LF = S / U of one association among its siblings (eq. 2.6 of 004)."""
    s = node.share_fraction
    if s == 0:
        return 0.0
    parent_usage = node.parent.total if node.parent is not None else 0.0
    u = node.total / parent_usage if parent_usage > 0 else 0.0
    return math.inf if u == 0 else s / u


def _merged(accounts: list[Association]) -> tuple[list[Key], list[Association]]:
    """Children of tied accounts, merged and sorted by their true LF (their parents differ)."""
    children = [node for account in accounts for node in account.order_nodes]
    keyed = sorted((((-level_fs(n), n.user is None, n.name), n) for n in children), key=lambda kn: kn[0])
    return [key for key, _ in keyed], [node for _, node in keyed]


def fair_tree_factors(tree: AccountTree) -> dict[tuple[str, str], float]:
    """Fair share factor of every user association (call ``tree.settle`` first)."""
    cached = tree.cache.get("fair_tree")
    if not tree.refresh_orders() and cached is not None:
        return cached  # type: ignore[return-value]
    n_users = len(tree.users)
    factors: dict[int, float] = {}
    rank = rnt = n_users

    def visit(keys: list[Key], nodes: list[Association], account_tied: bool) -> None:
        nonlocal rank, rnt
        previous = None
        i = 0
        count = len(keys)
        while i < count:
            value, is_account, _ = keys[i]
            tied = account_tied if i == 0 else value == previous
            if not is_account:
                if not tied:
                    rank = rnt
                factors[id(nodes[i])] = rank / n_users
                rnt -= 1
                i += 1
            else:
                last = i + 1
                while last < count and keys[last][1] and keys[last][0] == value:
                    last += 1
                if last == i + 1:
                    visit(nodes[i].order_keys, nodes[i].order_nodes, tied)
                else:
                    visit(*_merged(nodes[i:last]), tied)
                i = last
            previous = value

    if n_users:
        visit(tree.root.order_keys, tree.root.order_nodes, False)
    result = {key: factors[id(assoc)] for key, assoc in tree.users.items()}
    tree.cache["fair_tree"] = result
    return result
