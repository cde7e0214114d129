"""Where a running job sits: its nodes and the slots it holds on each, kept as runs.

A job on 512 one-core nodes holds one slot on each of 512 consecutive nodes; storing that as one
``(first node, node count, slots on each)`` run instead of 512 ``(node, slots)`` pairs keeps a
replay's memory and the cost of taking and giving back resources independent of the node count
(LANL-CM5 replays on its real 1,024 one-core nodes). Consumers that want the nodes one by
one iterate a :class:`Placement` as the sequence of ``(node, slots)`` pairs it stands for.
A job asking GPUs also holds some on each node: :attr:`Placement.gpus`, parallel to those pairs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import overload

Run = tuple[int, int, int]
"""``(first node index, node count, slots on each node)``: consecutive nodes holding equal slots."""
Gpus = tuple[tuple[int, ...], ...]
"""GPUs held on each node of a placement, in its order: a count per GPU type of the cluster."""


class Placement(Sequence[tuple[int, int]]):
    """An allocation: a sequence of ``(node, slots)`` pairs in allocation order, stored as runs, and
    the GPUs held on each of its nodes (``gpus``; None: the job holds no GPU)."""

    __slots__ = ("runs", "gpus")

    def __init__(self, runs: Iterable[Run] = (), gpus: Gpus | None = None) -> None:
        self.runs: tuple[Run, ...] = tuple(runs)
        self.gpus = gpus

    @classmethod
    def of(cls, pairs: Iterable[tuple[int, int]], gpus: Gpus | None = None) -> Placement:
        """The placement of ``(node, slots)`` pairs (holding ``gpus`` on them), merging each node into
        the run before it when it is the next node index with the same slots."""
        runs: list[Run] = []
        for node, slots in pairs:
            if runs:
                first, count, held = runs[-1]
                if node == first + count and slots == held:
                    runs[-1] = (first, count + 1, held)
                    continue
            runs.append((node, 1, slots))
        return cls(runs, gpus)

    def resized(self, slots: Sequence[int]) -> Placement:
        """The same nodes, holding the same GPUs, with ``slots`` on each (parallel to the nodes)."""
        return Placement.of(((node, held) for (node, _), held in zip(self, slots, strict=True)), self.gpus)

    @property
    def slots(self) -> int:
        """Slots held over all nodes."""
        return sum(count * slots for _, count, slots in self.runs)

    def __len__(self) -> int:
        return sum(count for _, count, _ in self.runs)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        for first, count, slots in self.runs:
            for node in range(first, first + count):
                yield node, slots

    @overload
    def __getitem__(self, index: int) -> tuple[int, int]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[int, int]]: ...

    def __getitem__(self, index: int | slice) -> tuple[int, int] | Sequence[tuple[int, int]]:
        pairs = list(self)
        return pairs[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Placement):
            return self.runs == other.runs
        if isinstance(other, Sequence):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which are unhashable

    def __repr__(self) -> str:
        gpus = "" if self.gpus is None else f", gpus={list(self.gpus)!r}"
        return f"Placement({list(self.runs)!r}{gpus})"
