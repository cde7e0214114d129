"""Which nodes a job may not start on because of the jobs of *other* partitions running there: the
node-sharing rule of Slurm 22.05's select plugins between partitions of different OverSubscribe.

cons_common's ``_get_job_node_req`` (job_test.c) classes a job by what it asks of its nodes:
NODE_CR_RESERVED for a job of an ``OverSubscribe=EXCLUSIVE`` partition or one asking ``--exclusive``,
NODE_CR_AVAILABLE for a job of a ``FORCE`` partition or one asking ``--oversubscribe`` on a ``YES``
partition (``share_res`` 1), NODE_CR_ONE_ROW for any other. A node's ``node_state`` is the sum of its
running jobs' classes (job_resources.c ``job_res_add_job``). ``_verify_node_state`` (job_test.c) then
keeps a job off a node:

* whose ``node_state`` is NODE_CR_RESERVED (an exclusive job holds it): the model's exclusive jobs
  take whole idle nodes, so no other job is ever beside them;
* whose ``node_state`` is at least NODE_CR_ONE_ROW (a ONE_ROW job runs there) when the job is
  AVAILABLE or RESERVED ("non-sharing");
* when the job is ONE_ROW and ``_is_node_busy(sharing_only=1)``: another partition with at least two
  rows (OverSubscribe ``YES:N`` or ``FORCE:N``, N >= 2: ``_create_part_data`` gives a partition
  ``max_share`` rows, part_data.c) has cores allocated on the node ("sharing?", "vbusy");
* when the job is RESERVED and ``_is_node_busy(sharing_only=0)``: any job runs there (the model's
  exclusive jobs already need idle nodes).

So a job of a partition that does not share (or one that does not ask to share) cannot start on a
node running jobs of another partition that may share cores, and a job that shares cores cannot
start beside one that does not. It matters only where a node is in two partitions one of which has
two rows or more (:func:`applies`); other clusters keep no state for it.

The model counts, per node, the slots the running jobs of each partition of two rows or more hold,
and the slots held by jobs that do not share cores (ONE_ROW; an exclusive job too, which holds its
nodes whole anyway). Not modelled: ``preempt/qos``'s extra row (``_create_part_data`` adds one, which
``_is_node_busy`` does not count for a job that is no QoS preemptor).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from djsb.errors import ConfigError
from djsb.model.profile import Profile


class SharingPartition(Protocol):
    """What the rule reads of a partition (:class:`~djsb.model.cluster_spec.PartitionSpec` has it)."""

    @property
    def name(self) -> str: ...

    @property
    def share(self) -> int: ...

    @property
    def exclusive(self) -> bool: ...

NODE_CR_AVAILABLE = 0
"""A job that may share its cores (job_resources.h)."""
NODE_CR_ONE_ROW = 1
"""A job that needs cores of its own but may share its nodes (job_resources.h)."""
NODE_CR_RESERVED = 2
"""A job that needs whole nodes (job_resources.h has 64000: any sum of ONE_ROW jobs stays below)."""


def node_req(exclusive_part: bool, forced: bool, share: int, *, exclusive: bool = False,
             oversubscribe: bool = False) -> int:
    """A job's class (``_get_job_node_req``): RESERVED for an exclusive partition or ``--exclusive``,
    AVAILABLE for a FORCE partition or ``--oversubscribe`` on a partition that shares (YES:N, N > 1),
    else ONE_ROW."""
    if exclusive_part or exclusive:
        return NODE_CR_RESERVED
    if forced or (oversubscribe and share > 1):
        return NODE_CR_AVAILABLE
    return NODE_CR_ONE_ROW


def applies(part_nodes: Sequence[Iterable[int]], part_rows: Sequence[int], n_nodes: int) -> bool:
    """Whether some node is in two partitions one of which has two rows or more: only then can the
    rule keep a job off a node."""
    count = [0] * n_nodes
    multi = [False] * n_nodes
    for nodes, r in zip(part_nodes, part_rows, strict=True):
        for i in nodes:
            count[i] += 1
            multi[i] = multi[i] or r >= 2
    return any(c >= 2 and m for c, m in zip(count, multi, strict=True))


def node_shares(partitions: Sequence[SharingPartition], members: Sequence[Sequence[int]],
                 names: Sequence[str]) -> list[int]:
    """Each node's share count: that of the partitions holding it that share cores (YES:N, FORCE:N),
    which must agree, or 1. A node of such a partition may also be in partitions that do not share
    (NO), whose jobs then need idle cores there; not in an exclusive one."""
    share = [1] * len(names)
    exclusive = [False] * len(names)
    for part, ids in zip(partitions, members, strict=True):
        n = part.share
        for i in ids:
            if part.exclusive:
                exclusive[i] = True
            if n > 1:
                if share[i] not in (1, n):
                    raise ConfigError(f"node {names[i]} is in partitions with different OverSubscribe share "
                                      "counts", key=f"partitions.{part.name}")
                share[i] = n
    for part, ids in zip(partitions, members, strict=True):
        for i in ids:
            if exclusive[i] and share[i] > 1:
                raise ConfigError(f"node {names[i]} is in an exclusive partition and in one whose jobs share "
                                  "cores", key=f"partitions.{part.name}")
    return share


class PartitionRows:
    """Per node, the slots running jobs hold by partition of two rows or more and by ONE_ROW job,
    kept by :meth:`commit` (the cluster state's commit, given the job's partition)."""

    __slots__ = ("multi", "one_row", "kept")

    def __init__(self, part_rows: Sequence[int], n_nodes: int) -> None:
        self.multi: dict[int, list[int]] = {p: [0] * n_nodes for p, r in enumerate(part_rows) if r >= 2}
        """Per partition of two rows or more, the slots its running jobs hold on each node."""
        self.one_row = [0] * n_nodes
        """The slots the running ONE_ROW jobs hold on each node."""
        self.kept: frozenset[int] = frozenset()
        """Nodes kept from the job whatever it is (a planning view's: see :meth:`RowsPlan.view`)."""

    def copy(self) -> PartitionRows:
        """An independent copy (for a planning view that takes or gives back slots)."""
        other = PartitionRows.__new__(PartitionRows)
        other.multi = {p: list(used) for p, used in self.multi.items()}
        other.one_row = list(self.one_row)
        other.kept = self.kept
        return other

    def commit(self, part: int, alloc: Iterable[tuple[int, int]], sign: int, shares: bool) -> None:
        """A job of partition ``part`` that ``shares`` cores (AVAILABLE) or not takes (``sign=1``) or
        gives back (``sign=-1``) the slots of ``alloc`` (node, slots)."""
        used = self.multi.get(part)
        one_row = None if shares else self.one_row
        if used is None and one_row is None:
            return
        for i, slots in alloc:
            if used is not None:
                used[i] += sign * slots
            if one_row is not None:
                one_row[i] += sign * slots

    def blocked(self, part: int, req: int, nodes: Iterable[int]) -> frozenset[int]:
        """Those of ``nodes`` a job of partition ``part`` and class ``req`` may not start on
        (``_verify_node_state``; a RESERVED job needs idle nodes, which the placement already asks),
        and those :attr:`kept` from it."""
        if req == NODE_CR_AVAILABLE:
            one_row = self.one_row
            return self.kept.union(i for i in nodes if one_row[i] > 0)
        if req != NODE_CR_ONE_ROW:
            return self.kept
        others = [used for q, used in self.multi.items() if q != part]
        if not others:
            return self.kept
        return self.kept.union(i for i in nodes if any(used[i] > 0 for used in others))


ONE_ROW_KEY = -1
"""The key of the ONE_ROW jobs' counts in :class:`RowsPlan` (the others are partition indices)."""


class RowsPlan:
    """The rule's per-node counts as step functions of time, for the backfill planners: the running
    jobs give theirs back at their planned end (as the will-run test's ``job_res_rm_job`` removes an
    ending job from ``node_usage`` and the partitions' rows, cons_common job_test.c
    ``_will_run_test``), and a start or reservation takes its own over its window. A view holds,
    per node, the most each count reaches over a window.

    A job placed over a window must also not keep a reservation from its nodes at the reservation's
    start (the rule is tested at each start only): a job of a partition of two rows or more keeps
    off the nodes reserved over its window for ONE_ROW jobs of other partitions, and a ONE_ROW job
    off those reserved for AVAILABLE jobs."""

    def __init__(self, rows: PartitionRows, now: float,
                 holdings: Iterable[tuple[float, Iterable[tuple[int, int]], int, bool]]) -> None:
        """``holdings``: (planned end, (node, slots) pairs, partition, whether the job shares cores)
        of each running job."""
        self.now = now
        self.n_nodes = len(rows.one_row)
        self.profiles: dict[int, dict[int, Profile]] = {q: {} for q in rows.multi}
        self.profiles[ONE_ROW_KEY] = {}
        releases: dict[tuple[int, int], list[tuple[float, float]]] = {}
        for end, alloc, part, shares in holdings:
            for key in self._keys(part, shares):
                for node, slots in alloc:
                    releases.setdefault((key, node), []).append((end, slots))
        self.reserved: dict[tuple[int, bool], dict[int, Profile]] = {}
        """Per (partition, whether its jobs share cores), the reservations on each node over time."""
        counts = [*rows.multi.items(), (ONE_ROW_KEY, rows.one_row)]
        for key, used in counts:
            by_node = self.profiles[key]
            for node, held in enumerate(used):
                if held:
                    by_node[node] = Profile(now, -held, releases.get((key, node), ()))

    def _keys(self, part: int, shares: bool) -> list[int]:
        keys = [part] if part in self.profiles else []
        if not shares:
            keys.append(ONE_ROW_KEY)
        return keys

    def take(self, part: int, alloc: Iterable[tuple[int, int]], start: float, duration: float,
             shares: bool) -> None:
        """A job of ``part`` (that ``shares`` cores or not) holds ``alloc`` over the window."""
        for key in self._keys(part, shares):
            by_node = self.profiles[key]
            for node, slots in alloc:
                profile = by_node.get(node)
                if profile is None:
                    profile = by_node[node] = Profile(self.now, 0)
                profile.take(start, duration, slots)

    def reserve(self, part: int, alloc: Iterable[tuple[int, int]], start: float, duration: float,
                shares: bool) -> None:
        """A reservation of a job of ``part`` (that ``shares`` cores or not) on ``alloc`` over the
        window, which :meth:`take` has counted: other jobs keep from its nodes as the class says."""
        by_node = self.reserved.setdefault((part, shares), {})
        for node, slots in alloc:
            profile = by_node.get(node)
            if profile is None:
                profile = by_node[node] = Profile(self.now, 0)
            profile.take(start, duration, slots)

    def view(self, nodes: Iterable[int], start: float, duration: float, part: int,
             shares: bool) -> PartitionRows:
        """The counts on ``nodes`` at their highest over ``[start, start + duration)``, with the
        nodes a job of ``part`` (that ``shares`` cores or not) would keep a reservation from."""
        wanted = list(nodes)
        rows = PartitionRows.__new__(PartitionRows)
        multi = part in self.profiles
        kept: set[int] = set()
        for (q, q_shares), by_node in self.reserved.items():
            if (multi and q != part and not q_shares) or (not shares and q_shares):
                kept.update(node for node, profile in by_node.items() if profile.lowest(start, duration) < 0)
        rows.kept = frozenset(kept)
        rows.multi = {q: [0] * self.n_nodes for q in self.profiles if q != ONE_ROW_KEY}
        rows.one_row = [0] * self.n_nodes
        targets = [*rows.multi.items(), (ONE_ROW_KEY, rows.one_row)]
        for key, used in targets:
            by_node = self.profiles[key]
            if not by_node:
                continue
            for node in wanted:
                profile = by_node.get(node)
                if profile is not None:
                    used[node] = int(-profile.lowest(start, duration))
        return rows
