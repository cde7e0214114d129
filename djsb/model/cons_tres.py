"""Slurm's ``select/cons_tres`` node choice for a job of N CPUs with no node count (``sbatch -n N``).

The model's default is first fit in node order, which is what Slurm does on an idle cluster. On
a partly busy one Slurm's generic ``_eval_nodes`` (src/plugins/select/cons_tres/job_test.c,
22.05) chooses differently, and which nodes a job takes decides which nodes a later reservation
leaves free to backfill. Its rule, with all node weights equal:

1. Nodes offering at least one CPU form *sets* of consecutive node indices (a node offering none,
   or a gap in the partition's nodes, ends a set).
2. The best set is a *sufficient* one (enough CPUs for what is left) with the fewest CPUs, ties to
   the lowest index; if none is sufficient, the largest (ties to the lowest index).
3. In a sufficient set the job goes on the single node with the fewest CPUs that hold it all
   (ties to the lowest index); if no single node does, it takes the set's nodes in index order.
   From an insufficient set it takes every node, and step 2 picks the next set for the rest.
"""

from __future__ import annotations

from collections.abc import Sequence


def consecutive_sets(rooms: Sequence[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """``rooms`` (node index, CPUs offered), in node order, cut into runs of consecutive indices
    that each offer at least one CPU."""
    sets: list[list[tuple[int, int]]] = []
    previous = None
    for node, room in rooms:
        if room <= 0:
            previous = None
            continue
        if previous is None or node != previous + 1:
            sets.append([])
        sets[-1].append((node, room))
        previous = node
    return sets


def best_fit(rooms: Sequence[tuple[int, int]], cpus: int) -> list[tuple[int, int]] | None:
    """``(node, CPUs)`` taken by a job of ``cpus`` CPUs under the rule of the module docstring, or
    None if the rooms hold fewer CPUs."""
    sets = consecutive_sets(rooms)
    left = cpus
    taken: list[tuple[int, int]] = []
    while left > 0 and sets:
        best = _best_set(sets, left)
        chosen = sets.pop(best)
        if sum(room for _, room in chosen) >= left:
            fits = [(room, node) for node, room in chosen if room >= left]
            if fits:
                _, node = min(fits)
                taken.append((node, left))
                return sorted(taken)
        for node, room in chosen:
            take = min(room, left)
            taken.append((node, take))
            left -= take
            if not left:
                break
    return sorted(taken) if left == 0 else None


def _best_set(sets: Sequence[Sequence[tuple[int, int]]], needed: int) -> int:
    """Index of the best set for ``needed`` CPUs (rule 2 of the module docstring)."""
    best, best_cpus, best_sufficient = 0, -1, False
    for i, members in enumerate(sets):
        cpus = sum(room for _, room in members)
        sufficient = cpus >= needed
        if best_cpus < 0 or (sufficient and (not best_sufficient or cpus < best_cpus)) \
                or (not sufficient and not best_sufficient and cpus > best_cpus):
            best, best_cpus, best_sufficient = i, cpus, sufficient
    return best
