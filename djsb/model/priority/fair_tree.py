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
"""

from __future__ import annotations

import math

from djsb.model.priority.accounts import AccountTree, Association


def level_fs(node: Association, tree: AccountTree) -> float:
    """LF = S / U of one association among its siblings (eq. 2.6 of 004)."""
    parent = node.parent
    if parent is None:  # root has no siblings
        return math.inf
    shares = sum(child.shares for child in parent.children)
    s = node.shares / shares if shares else 0.0
    if s == 0:
        return 0.0
    parent_usage = tree.scaled(parent)
    u = tree.scaled(node) / parent_usage if parent_usage > 0 else 0.0
    return math.inf if u == 0 else s / u


def fair_tree_factors(tree: AccountTree) -> dict[tuple[str, str], float]:
    """Fair share factor of every user association (call ``tree.settle`` first)."""
    n_users = len(tree.users)
    factors: dict[int, float] = {}
    state = {"rank": n_users, "rnt": n_users}

    def visit(siblings: list[Association], account_tied: bool) -> None:
        lf = {id(node): level_fs(node, tree) for node in siblings}
        ordered = sorted(siblings, key=lambda n: (-lf[id(n)], n.user is None, n.name))
        previous = None
        i = 0
        while i < len(ordered):
            node = ordered[i]
            value = lf[id(node)]
            tied = account_tied if i == 0 else value == previous
            if node.user is not None:
                if not tied:
                    state["rank"] = state["rnt"]
                factors[id(node)] = state["rank"] / n_users
                state["rnt"] -= 1
                i += 1
            else:
                merged = [node]
                while (i + len(merged) < len(ordered) and ordered[i + len(merged)].user is None
                       and lf[id(ordered[i + len(merged)])] == value):
                    merged.append(ordered[i + len(merged)])
                visit([child for account in merged for child in account.children], tied)
                i += len(merged)
            previous = value

    if n_users:
        visit(list(tree.root.children), False)
    return {key: factors[id(assoc)] for key, assoc in tree.users.items()}
