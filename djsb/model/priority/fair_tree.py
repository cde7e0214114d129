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
moved or changed ties. Ties are detected on usage/share (equal exactly when LF is). The visiting
order is kept per account as its users in order, each marked tied to the one before or not
(:func:`_users_in_order`); an account's list is made again only when an order or a tie changed
among its children or below it (:meth:`AccountTree.refresh_orders` says where), so a ranking after
a few users moved revisits their accounts alone. A list depends on its subtree's orders and ties
alone: the children of tied accounts, merged by their true LF, are re-sorted whenever one of those
accounts is charged, since a tied account's change always counts as a change of its parent.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping

import numpy as np

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


Visit = tuple[list[int], list[bool | None]]
"""Users in visiting order (their ``Association.number``) and, parallel, whether each ties with
the user before it (None: as the first element of the list ties, which the caller decides). Two
flat lists of numbers rather than pairs of keys: the lists of the accounts below are spliced into
their parent's at C speed at every ranking, and the ranks are written by number into an array."""


Idle = dict[tuple[Association, ...], Visit]
"""Visiting orders of groups of tied accounts without usage, by group."""


def _users_in_order(keys: list[Key], nodes: list[Association], visits: dict[Association, Visit],
                    idle: Idle) -> Visit:
    """The users below ``nodes`` (siblings sorted by ``keys``, or the merged children of tied
    accounts) in visiting order, with their ties (see the module docstring); an account visited
    alone takes its list from ``visits`` or adds it there, tied accounts from :func:`_tied_accounts`."""
    users: list[int] = []
    ties: list[bool | None] = []
    previous = None
    i = 0
    count = len(keys)
    while i < count:
        value, is_account, _ = keys[i]
        tied = None if i == 0 else value == previous
        if not is_account:
            node = nodes[i]
            users.append(node.number)
            ties.append(tied)
            i += 1
        else:
            last = i + 1
            while last < count and keys[last][1] and keys[last][0] == value:
                last += 1
            if last == i + 1:
                account = nodes[i]
                below = visits.get(account)
                if below is None:
                    below = visits[account] = _users_in_order(account.order_keys, account.order_nodes,
                                                              visits, idle)
            else:
                below = _tied_accounts(nodes[i:last], visits, idle)
            below_users, below_ties = below
            if below_users:
                first = len(ties)
                users += below_users
                ties += below_ties
                if below_ties[0] is None:
                    ties[first] = tied
            i = last
        previous = value
    return users, ties


def _tied_accounts(accounts: list[Association], visits: dict[Association, Visit], idle: Idle) -> Visit:
    """The users below tied sibling accounts, their children merged (:func:`_merged`).

    Usage charged below an account is charged to it too, so accounts without usage have none
    anywhere below them: every Level Fairshare there is infinite (or 0 for no shares), and the
    merged order follows from names and shares alone. Such a group's list is kept in ``idle``
    (the tree drops it when associations are added); the accounts nobody has run under yet form
    one, visited at every ranking."""
    if any(account.total for account in accounts):
        return _users_in_order(*_merged(accounts), visits, idle)
    group = tuple(accounts)
    below = idle.get(group)
    if below is None:
        below = idle[group] = _users_in_order(*_merged(accounts), visits, idle)
    return below


def fair_tree_factors(tree: AccountTree) -> Mapping[tuple[str, str], float]:
    """Fair share factor of every user association (call ``tree.settle`` first)."""
    visits: dict[Association, Visit] = tree.cache.setdefault("fair_tree_visits", {})  # type: ignore[assignment]
    idle: Idle = tree.cache.setdefault("fair_tree_idle", {})  # type: ignore[assignment]
    moved = tree.refresh_orders()
    for node in moved:  # an order or a tie changed among these accounts' children
        account: Association | None = node
        while account is not None:
            visits.pop(account, None)
            account = account.parent
    cached = tree.cache.get("fair_tree")
    if not moved and cached is not None:
        return cached  # type: ignore[return-value]
    n_users = len(tree.users)
    factors = np.full(n_users, np.nan)
    users: list[int] = []
    if n_users:
        users, ties = _users_in_order(tree.root.order_keys, tree.root.order_nodes, visits, idle)
        factors[users] = _rank_fractions(ties, n_users)
    ranking = Ranking(tree.users, factors.tolist(), users)
    tree.cache["fair_tree"] = ranking
    return ranking


def _rank_fractions(ties: list[bool | None], n_users: int) -> np.ndarray:
    """rank / N of each user in visiting order, ``ties`` saying which tie with the user before: the
    i-th user (from 0) has rank N - i, or the rank of the last user before it that does not tie.
    Computed over whole arrays (a ranking visits every user, and runs at every recomputation that
    moved one); the same integer ranks and the same correctly rounded divisions as one at a time."""
    position = np.arange(len(ties))
    untied_at = np.maximum.accumulate(np.where(np.array(ties, dtype=bool), 0, position))
    return (n_users - untied_at) / n_users


class Ranking(Mapping[tuple[str, str], float]):
    """The fair share factor of each user association a ranking visited, by (user, account), in
    visiting order. A ranking writes every user's factor by the user's number (``factors``, NaN for
    a user it did not visit); the scheduler then reads those of the few users with queued jobs, so
    no table keyed by name is built. ``users`` is the tree's live table of user associations: one
    added after the ranking (its number past ``factors``) is not in it."""

    def __init__(self, users: Mapping[tuple[str, str], Association], factors: list[float],
                 visited: list[int]) -> None:
        self.users = users
        self.factors = factors
        self.visited = visited

    def get(self, key: tuple[str, str], default: float | None = None) -> float | None:  # type: ignore[override]
        """The factor of ``key``, else ``default`` (read for every queued job at every
        recomputation: written out rather than Mapping's, through ``__getitem__`` and an exception)."""
        node = self.users.get(key)
        if node is None or node.number >= len(self.factors):
            return default
        factor = self.factors[node.number]
        return default if math.isnan(factor) else factor

    def __getitem__(self, key: tuple[str, str]) -> float:
        factor = self.get(key)
        if factor is None:
            raise KeyError(key)
        return factor

    def __iter__(self) -> Iterator[tuple[str, str]]:
        keys = list(self.users)
        return (keys[number] for number in self.visited)

    def __len__(self) -> int:
        return len(self.visited)
