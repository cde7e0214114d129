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

For a job asking GPUs (:class:`GpuSets`) the nodes carry cons_tres's GPU weights and counts too:
a change of weight also ends a set, a set of lower weight is always better (``consec_weight[i] <
best_weight``), and with a count per job a set or node is sufficient only if its free GPUs cover
what the job still lacks (gres_sched.c ``gres_sched_sufficient``); nodes are taken until both the
CPUs and the GPUs are covered (``gres_sched_test``). Among sets of equal weight an insufficient
set with more CPUs replaces the best so far, as the code reads (``!sufficient && consec_cpus[i] >
best_fit_cpus``), which without GPUs only ever replaces an insufficient one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GpuSets:
    """What a GPU job adds to the rule: each node's scheduling weight (lower first) and the free
    GPUs it adds toward the job's count per job, and that count (0: counted per node)."""

    weight: Mapping[int, int]
    offered: Mapping[int, int]
    total: int = 0


def consecutive_sets(rooms: Sequence[tuple[int, int]],
                     weight: Mapping[int, int] | None = None) -> list[list[tuple[int, int]]]:
    """``rooms`` (node index, CPUs offered), in node order, cut into runs of consecutive indices
    that each offer at least one CPU (and, given ``weight``, are of equal weight)."""
    sets: list[list[tuple[int, int]]] = []
    previous = None
    for node, room in rooms:
        if room <= 0:
            previous = None
            continue
        if previous is None or node != previous + 1 or (
                weight is not None and weight[node] != weight[previous]):
            sets.append([])
        sets[-1].append((node, room))
        previous = node
    return sets


def best_fit(rooms: Sequence[tuple[int, int]], cpus: int,
             gpus: GpuSets | None = None) -> list[tuple[int, int]] | None:
    """``(node, CPUs)`` taken by a job of ``cpus`` CPUs (and ``gpus``) under the rule of the module
    docstring, or None if the rooms hold fewer CPUs (or GPUs)."""
    sets = consecutive_sets(rooms, gpus.weight if gpus is not None else None)
    offered = gpus.offered if gpus is not None else {}
    left, lacking = cpus, gpus.total if gpus is not None else 0
    taken: list[tuple[int, int]] = []
    while (left > 0 or lacking > 0) and sets:
        best = _best_set(sets, left, gpus, lacking)
        chosen = sets.pop(best)
        if _sufficient(chosen, left, offered, lacking):
            fits = [(room, node) for node, room in chosen
                    if room >= left and (not lacking or offered[node] >= lacking)]
            if fits:
                _, node = min(fits)
                taken.append((node, left))
                return sorted(taken)
        for node, room in chosen:
            take = min(room, left)  # 0 for a node taken for its GPUs alone: the caller spreads the CPUs
            taken.append((node, take))
            left -= take
            if lacking:
                lacking -= offered[node]
            if not left and lacking <= 0:
                break
    return sorted(taken) if left == 0 and lacking <= 0 else None


def _sufficient(members: Sequence[tuple[int, int]], needed: int, offered: Mapping[int, int],
                lacking: int) -> bool:
    """Whether a set covers ``needed`` CPUs and ``lacking`` GPUs of a count per job."""
    if sum(room for _, room in members) < needed:
        return False
    return lacking <= 0 or sum(offered[node] for node, _ in members) >= lacking


def _best_set(sets: Sequence[Sequence[tuple[int, int]]], needed: int, gpus: GpuSets | None = None,
              lacking: int = 0) -> int:
    """Index of the best set for ``needed`` CPUs and ``lacking`` GPUs (rule 2 of the module docstring)."""
    best, best_cpus, best_sufficient, best_weight = 0, -1, False, 0
    offered = gpus.offered if gpus is not None else {}
    for i, members in enumerate(sets):
        cpus = sum(room for _, room in members)
        sufficient = cpus >= needed and (lacking <= 0 or _sufficient(members, needed, offered, lacking))
        weight = gpus.weight[members[0][0]] if gpus is not None else 0
        if best_cpus < 0 or weight < best_weight or (weight == best_weight and (
                (sufficient and (not best_sufficient or cpus < best_cpus))
                or (not sufficient and cpus > best_cpus))):
            best, best_cpus, best_sufficient, best_weight = i, cpus, sufficient, weight
    return best
