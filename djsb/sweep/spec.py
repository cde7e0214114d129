"""A sweep config: any point-runner config plus a ``sweep:`` section, expanded into points.

::

    sweep:
      grid:                       # cartesian product: dotted key paths -> lists of values
        seed: [1, 2, 3]
        policy.priority.weights.fairshare: [1000, 2000]
      zip:                        # optional: lists of equal length varied together
        workload.params.n_jobs: [100, 200]
        cluster.nodes.0.count: [10, 20]
      runner: simulate            # optional: the registered point runner (djsb/sweep/runners/)
      slurm: {...}                # optional: --executor slurm's settings (djsb/sweep/slurm_array.py)

Points are numbered 0.. in the order of ``itertools.product`` over the grid's keys as written (the
last varies fastest), with the zip's rows as one more, fastest axis: 3 x 2 grid values and 2 zip
rows are 12 points. A key path names a value the base config already has (list indices allowed):
a typo is an error at the sweep key's line, not a silently ignored new key. Each point is the base
config (the file without ``sweep:``) with the point's values in place; a replaced value keeps the
line it was written on in the sweep section, so a bad value is reported there.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from djsb.machine import POINT_BYTES
from djsb.registry import UnknownName
from djsb.sweep.runners import POINT_RUNNERS
from djsb.yamlnodes import Located, as_str, check_count, describe, load_yaml

SECTION = "sweep"
SWEEP_KEYS = frozenset({"grid", "zip", "runner", "slurm"})
DEFAULT_RUNNER = "simulate"
Axis = tuple[Located, list[Located]]
"""A grid or zip entry: its node (key sweep.grid.PATH, line) and its list of values."""


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep: the base config, the swept key paths and each point's values for them."""

    base: Located
    keys: tuple[str, ...]
    points: tuple[tuple[Located, ...], ...]
    runner: str = DEFAULT_RUNNER
    slurm: Located | None = None

    @property
    def source(self) -> str:
        return self.base.source

    def point_tree(self, index: int) -> Located:
        """Point ``index``'s config: the base with the point's values in place."""
        tree = self.base
        for key, value in zip(self.keys, self.points[index], strict=True):
            tree = replaced(tree, key.split("."), value)
        return tree

    def point_values(self, index: int) -> dict[str, Any]:
        """The swept keys' plain values at point ``index``, by key path."""
        return {key: value.plain() for key, value in zip(self.keys, self.points[index], strict=True)}

    def first_points_of_each_value(self) -> list[int]:
        """The first point at which each swept key takes each of its values, in order: checking
        these checks every value the sweep sets (a value out of range fails one of them) without
        reading every point of a grid, whose size is the product of its lists' lengths."""
        seen: set[tuple[int, str]] = set()
        indices: list[int] = []
        for index, values in enumerate(self.points):
            new = {(k, json.dumps(value.plain(), sort_keys=True, default=str))
                   for k, value in enumerate(values)}
            if not new <= seen:
                seen |= new
                indices.append(index)
        return indices

    def manifest(self) -> dict[str, Any]:
        """What identifies the sweep in its output directory: a rerun must be the same sweep."""
        base = json.dumps(self.base.plain(), sort_keys=True, default=str)
        return {"runner": self.runner, "base_sha256": hashlib.sha256(base.encode()).hexdigest(),
                "keys": list(self.keys),
                "points": [list(self.point_values(k).values()) for k in range(len(self.points))]}


def read_sweep(path: Path) -> SweepSpec:
    """Read ``path`` and check its sweep section (keys exist in the base, zip lists of equal length)."""
    return sweep_from_tree(load_yaml(Path(path)))


def sweep_from_tree(root: Located) -> SweepSpec:
    """The sweep a located config tree describes (a ConfigError names the sweep key's file and line)."""
    section = root.get(SECTION)
    if section is None:
        raise root.error(f"missing section {SECTION!r} (grid and/or zip of key paths to vary)")
    section.check_keys(SWEEP_KEYS)
    base = Located({k: v for k, v in root.mapping().items() if k != SECTION}, root.line, "", root.source)
    grid = _axes(section.get("grid"), base)
    zipped = _axes(section.get("zip"), base)
    if not grid and not zipped:
        raise section.error("give at least one key path to vary under grid or zip")
    _check_disjoint(grid, zipped)
    _check_equal_lengths(zipped)
    points = math.prod(len(values) for _, values in grid) * (len(zipped[0][1]) if zipped else 1)
    check_count(section, points, POINT_BYTES, "sweep points")
    return SweepSpec(base, tuple(swept_key(node) for node, _ in grid + zipped),
                     expand([values for _, values in grid], [values for _, values in zipped]),
                     _runner(section.get("runner")), section.get("slurm"))


def expand(grid: list[list[Located]], zipped: list[list[Located]]) -> tuple[tuple[Located, ...], ...]:
    """Every point: the product of the grid's value lists, the zip's rows as its last, fastest axis."""
    axes: list[list[tuple[Located, ...]]] = [[(value,) for value in values] for values in grid]
    if zipped:
        axes.append(list(zip(*zipped, strict=True)))
    return tuple(tuple(itertools.chain.from_iterable(parts)) for parts in itertools.product(*axes))


def replaced(node: Located, parts: list[str], value: Located) -> Located:
    """``node`` with the value at key path ``parts`` (which exists: see :func:`find`) replaced."""
    if not parts:
        return value
    head, rest = parts[0], parts[1:]
    if isinstance(node.value, dict):
        return Located({**node.value, head: replaced(node.value[head], rest, value)}, node.line, node.key,
                       node.source)
    items = list(node.value)
    items[int(head)] = replaced(items[int(head)], rest, value)
    return Located(items, node.line, node.key, node.source)


def find(node: Located, parts: list[str]) -> str | None:
    """None if key path ``parts`` names a value in ``node``, else why not."""
    for depth, part in enumerate(parts):
        where = ".".join(parts[:depth]) or "the top level"
        if isinstance(node.value, dict):
            if part not in node.value:
                return f"no key {part!r} in {where} (the base config must have the value a sweep varies)"
            node = node.value[part]
        elif isinstance(node.value, list):
            if not part.isdigit() or int(part) >= len(node.value):
                return f"{where} is a list of {len(node.value)}: {part!r} is not an index of it"
            node = node.value[int(part)]
        else:
            return f"{where} is {describe(node.value)}, which has no key {part!r}"
    return None


def swept_key(node: Located) -> str:
    """The key path a grid or zip entry varies: its own key less ``sweep.grid.`` or ``sweep.zip.``."""
    return node.key.split(".", 2)[2]


def _axes(node: Located | None, base: Located) -> list[Axis]:
    """A grid or zip mapping: each key path (checked against ``base``) with its list of values."""
    if node is None:
        return []
    axes = []
    for key, values in node.items():
        problem = find(base, key.split("."))
        if problem is not None:
            raise values.error(f"unknown key path: {problem}")
        if not isinstance(values.value, list) or not values.value:
            raise values.error(f"expected a non-empty list of values, got {describe(values.value)}")
        axes.append((values, list(values.value)))
    return axes


def _check_disjoint(grid: list[Axis], zipped: list[Axis]) -> None:
    in_grid = {swept_key(node) for node, _ in grid}
    for node, _ in zipped:
        if swept_key(node) in in_grid:
            raise node.error("this key path is varied by the grid too: give it in one of them")


def _check_equal_lengths(zipped: list[Axis]) -> None:
    """Zip lists go together row by row, so they must be equally long."""
    if not zipped:
        return
    first, first_values = zipped[0]
    for node, values in zipped[1:]:
        if len(values) != len(first_values):
            raise node.error(f"zip lists must have equal lengths: {len(values)} values here, "
                             f"{len(first_values)} in {first.key}")


def _runner(node: Located | None) -> str:
    if node is None:
        return DEFAULT_RUNNER
    try:
        return POINT_RUNNERS.canonical(as_str(node))
    except UnknownName as exc:
        raise node.error(str(exc)) from None

