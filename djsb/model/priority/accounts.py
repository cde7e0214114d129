"""The association tree of fair share: accounts and users with RawShares and decayed RawUsage.

Slurm keeps associations in a tree whose root is the ``root`` account; users are leaves (paper 004
sec. 2.4, "Fair share: Fair Tree Algorithm"). Each has RawShares (its entitlement; paper 004 gives
every association 100, the model defaults to 1, which is the same up to scale) and RawUsage,
CPU-seconds of its jobs decayed with PriorityDecayHalfLife (usage halves every half-life).

Usage is charged continuously while jobs run (Slurm charges running jobs every decay period) and
decays continuously. Instead of decaying every association at every step, usage is stored scaled
by 2^((t - t0)/half_life): scaling every association by the same factor changes neither Classic's
ratios (usage / total usage) nor Fair Tree's (usage / parent usage), so only the charge of new
usage needs the factor. A job running ``cpus`` CPUs from t1 to t2 adds
cpus * integral 2^((t - t0)/h) dt = cpus * (G(t2) - G(t1)) with G(t) = h/ln 2 * 2^((t - t0)/h).
``usage()`` converts back to decayed CPU-seconds. ``total`` holds the subtree's scaled usage and
is kept up to date when usage is charged, so no tree walk is needed to read an account's usage.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from djsb.errors import ConfigError
from djsb.setting import setting
from djsb.yamlnodes import as_number, as_str

ROOT = "root"
ACCOUNTS = "policy.priority.accounts.NAME"
"""Where a config writes an account's keys."""
_RENORMALISE_AFTER = 200.0  # half-lives; 2**200 is far from float overflow
_RENORMALISE_BEFORE = 900.0
"""Half-lives since ``t0`` past which usage is renormalised before it is charged, not after: an
instant that far from ``t0`` (no event for days under a minutes-long PriorityDecayHalfLife) would
scale it by 2**1024 and overflow a float; below it the order of the arithmetic, and so every
number, is as it always was."""


@dataclass(eq=False)
class Association:
    """An account (``user`` None) or a user within an account."""

    account: str
    user: str | None
    shares: float
    parent: Association | None
    children: list[Association] = field(default_factory=list)
    total: float = 0.0
    rate: float = 0
    last: float = 0.0
    share_fraction: float = 0.0
    order_keys: list[tuple[float, bool, str]] = field(default_factory=list)
    order_nodes: list[Association] = field(default_factory=list)
    order_key: tuple[float, bool, str] | None = None
    number: int = -1
    """A user association's place among the tree's users (``AccountTree.users``, in the order they
    were added): its index in a ranking's arrays. -1 for an account."""

    @property
    def name(self) -> str:
        """User name for a user association, account name otherwise."""
        return self.user if self.user is not None else self.account


@dataclass(frozen=True, slots=True)
class AccountSpec:
    """An account of the tree: its parent account and RawShares."""

    parent: str = setting(ROOT, as_str, "", "Parent", "the account above it", where=ACCOUNTS)
    shares: float = setting(1.0, as_number, "shares", "Fairshare",
                            "its RawShares among its siblings", where=ACCOUNTS)


class AccountTree:
    """Associations, usage charging and decay. ``half_life`` 0 or None means no decay."""

    def __init__(self, associations: Iterable[tuple[str, str]],
                 accounts: Mapping[str, AccountSpec] | None = None,
                 user_shares: Mapping[str, float] | None = None,
                 half_life: float | None = 7 * 86400.0, start: float = 0.0) -> None:
        self.half_life = half_life or 0.0
        self.t0 = start
        self.root = Association(ROOT, None, 1.0, None)
        self.changed: dict[Association, dict[Association, None]] = {}
        self.cache: dict[str, object] = {}
        """What the fair share algorithms derive from the tree between two rankings, by name;
        emptied when an association is added."""
        self.accounts: dict[str, Association] = {ROOT: self.root}
        specs = dict(accounts or {})
        for name in specs:
            self._account(name, specs)
        self.users: dict[tuple[str, str], Association] = {}
        self.active: dict[Association, None] = {}
        """The associations with running jobs, in the order they started: an ordered dict, as is
        ``changed``, because associations hash by identity and the order usage is charged in
        decides how account totals round, which a set would change from one run to the next."""
        for user, account in associations:
            self.add_user(user, account, (user_shares or {}).get(user, 1.0), specs)

    def _account(self, name: str, specs: Mapping[str, AccountSpec],
                 seen: tuple[str, ...] = ()) -> Association:
        if name in self.accounts:
            return self.accounts[name]
        if name in seen:
            raise ConfigError(f"account cycle through {name!r}", key="policy.accounts")
        spec = specs.get(name, AccountSpec())
        parent = self._account(spec.parent, specs, (*seen, name))
        node = Association(name, None, spec.shares, parent)
        self._attach(node)
        self.accounts[name] = node
        return node

    def _attach(self, node: Association) -> None:
        """Hang ``node`` under its parent and refresh the siblings' share fractions."""
        parent = node.parent
        assert parent is not None
        siblings = parent.children
        siblings.append(node)
        self.cache.clear()
        total = sum(child.shares for child in siblings)
        for child in siblings:
            child.share_fraction = child.shares / total if total else 0.0
        self.changed.setdefault(parent, {}).update(dict.fromkeys(siblings))

    def add_user(self, user: str, account: str, shares: float = 1.0,
                 specs: Mapping[str, AccountSpec] | None = None) -> Association:
        """The association of ``user`` in ``account`` (created under root if the account is new)."""
        key = (user, account)
        if key not in self.users:
            parent = self._account(account, specs or {})
            node = Association(account, user, shares, parent, number=len(self.users))
            self._attach(node)
            self.users[key] = node
        return self.users[key]

    # ------------------------------------------------------------------ usage
    def _g(self, t: float) -> float:
        h = self.half_life
        return t if h <= 0 else h / math.log(2) * 2.0 ** ((t - self.t0) / h)

    def _charge(self, node: Association, amount: float) -> None:
        """Add scaled usage to a user and every account above it (``total`` is the subtree sum).

        The associations whose usage changed are remembered in ``changed`` (by parent) so that
        :meth:`refresh_orders` re-sorts only them.
        """
        node.total += amount
        parent = node.parent
        while parent is not None:
            self.changed.setdefault(parent, {})[node] = None
            parent.total += amount
            node, parent = parent, parent.parent

    def _within_range(self, now: float) -> None:
        """Renormalise first when ``now`` is so far past ``t0`` that scaling to it would overflow."""
        if self.half_life > 0 and (now - self.t0) / self.half_life > _RENORMALISE_BEFORE:
            self._renormalise(now)

    def _renormalise(self, now: float) -> None:
        """Decay every total to ``now`` and count from there (``t0 = now``): a factor below the
        smallest float is 0, usage fully decayed."""
        factor = 2.0 ** (-(now - self.t0) / self.half_life)
        for node in (*self.accounts.values(), *self.users.values()):
            node.total *= factor
            if node.parent is not None:
                self.changed.setdefault(node.parent, {})[node] = None
        self.t0 = now

    def _accrue(self, assoc: Association, now: float) -> None:
        self._within_range(now)
        if assoc.rate:
            self._charge(assoc, assoc.rate * (self._g(now) - self._g(assoc.last)))
        assoc.last = now

    def job_started(self, user: str, account: str, cpus: float, now: float) -> None:
        """Start charging ``cpus`` CPUs (or billing units) to the association."""
        assoc = self.add_user(user, account)
        self._accrue(assoc, now)
        assoc.rate += cpus
        self.active[assoc] = None

    def job_ended(self, user: str, account: str, cpus: float, now: float) -> None:
        """Stop charging a job's CPUs (or billing units: a sum of weights may leave a rounding residue,
        taken as none)."""
        assoc = self.add_user(user, account)
        self._accrue(assoc, now)
        assoc.rate -= cpus
        if abs(assoc.rate) < 1e-9:
            assoc.rate = 0
            self.active.pop(assoc, None)

    def add_usage(self, user: str, account: str, cpu_seconds: float, now: float) -> None:
        """Charge ``cpu_seconds`` of (already decayed, as of ``now``) usage at once."""
        self._within_range(now)
        scale = 2.0 ** ((now - self.t0) / self.half_life) if self.half_life > 0 else 1.0
        self._charge(self.add_user(user, account), cpu_seconds * scale)

    def charge_between(self, user: str, account: str, rate: float, begin: float, end: float) -> None:
        """Charge ``rate`` CPUs (or billing units) run from ``begin`` to ``end`` (the tree settled to
        ``end`` or later), decayed as the running jobs' usage is."""
        if end > begin and rate:
            self._within_range(end)
            self._charge(self.add_user(user, account), rate * (self._g(end) - self._g(begin)))

    def reset(self, now: float) -> None:
        """Every association's usage charged up to ``now``, then set to 0 (priority_multifactor.c
        ``_reset_usage``: ``usage_raw = 0`` on every association, root included)."""
        self.settle(now)
        for node in (*self.accounts.values(), *self.users.values()):
            node.total = 0.0
            if node.parent is not None:
                self.changed.setdefault(node.parent, {})[node] = None

    def settle(self, now: float) -> None:
        """Bring the usage of every running association up to ``now``."""
        for assoc in self.active:
            self._accrue(assoc, now)
        if self.half_life > 0 and (now - self.t0) / self.half_life > _RENORMALISE_AFTER:
            self._renormalise(now)

    # ------------------------------------------------------------------ sibling order
    @staticmethod
    def order_key(node: Association) -> tuple[float, bool, str]:
        """Sort key among siblings: usage / share ascending is Level FS (S / (u / P)) descending.

        Siblings share the parent usage P, so their order does not depend on it and only changes
        when one of them is charged. Zero usage sorts first (LF infinite), zero shares last (LF 0);
        users come before accounts on equal values, then names.
        """
        s = node.share_fraction
        return (node.total / s if s > 0 else math.inf, node.user is None, node.name)

    def refresh_orders(self) -> set[Association]:
        """Re-place the changed associations among their siblings (``order_keys``/``order_nodes``).

        Returns the parents among whose children some association moved or entered or left a tie:
        a ranking built on these orders may differ from the last one only below them (empty: it
        does not differ). Usage mostly grows a little between two calls, so a child whose new key
        still lies strictly between its neighbours' values is updated in place.
        """
        moved: set[Association] = set()
        for parent, children in self.changed.items():
            keys, nodes = parent.order_keys, parent.order_nodes
            count = len(keys)
            for child in children:
                new = self.order_key(child)
                old = child.order_key
                child.order_key = new
                i = -1
                if old is not None:
                    i = bisect_left(keys, old)
                    low, high = (old[0], new[0]) if old[0] <= new[0] else (new[0], old[0])
                    if (i == 0 or keys[i - 1][0] < low) and (i + 1 == count or keys[i + 1][0] > high):
                        keys[i] = new  # same place, tied with no neighbour before or after
                        continue
                    if _tied(keys, i):
                        moved.add(parent)
                    del keys[i], nodes[i]
                j = bisect_left(keys, new)
                keys.insert(j, new)
                nodes.insert(j, child)
                count = len(keys)
                if i != j or _tied(keys, j):
                    moved.add(parent)
        self.changed.clear()
        return moved

    def usage(self, node: Association, now: float) -> float:
        """Decayed RawUsage of ``node`` (CPU-seconds) as of the last :meth:`settle` at ``now``."""
        return node.total * 2.0 ** (-(now - self.t0) / self.half_life) if self.half_life > 0 else node.total


def _tied(keys: list[tuple[float, bool, str]], i: int) -> bool:
    """Does entry ``i`` share its value with a neighbour?"""
    value = keys[i][0]
    return (i > 0 and keys[i - 1][0] == value) or (i + 1 < len(keys) and keys[i + 1][0] == value)
