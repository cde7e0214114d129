"""``djsb pool CONFIG [-o OUT]``: one run, or a parameter sweep from one config.

A config with a ``sweep:`` section (``grid:`` crossed, ``zip:`` varied together, both mapping a
dotted key path to a list of values, the format of ``djsb sweep``) runs every point into
``OUT/points/<k>/`` and writes ``OUT/sweep.csv`` (``point``, one column per swept key, every
scalar metric) and ``OUT/policy_sweep.png`` (figs. 5-11 of paper 002). Without it the single run
goes straight into ``OUT``. Points are run here one after the other; ``djsb sweep`` with
``sweep.runner: pool`` runs the same points through :func:`djsb.pool.runner.run_point`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from djsb.pool.config import read_experiment
from djsb.pool.plots import plot_sweep
from djsb.pool.runner import run_experiment
from djsb.yamlnodes import Located, load_yaml

SWEEP_KEYS = frozenset({"grid", "zip", "runner", "slurm"})


@dataclass(frozen=True)
class Point:
    """One point of a sweep: the value given to each swept key (by dotted path)."""

    values: dict[str, Located]

    def row(self) -> dict[str, Any]:
        return {path: _cell(node.plain()) for path, node in self.values.items()}


def _cell(value: Any) -> Any:
    """A swept value as a sweep.csv cell: scalars as they are, a mapping or list as flow YAML."""
    if isinstance(value, (dict, list)):
        return yaml.safe_dump(value, default_flow_style=True, sort_keys=False).strip()
    return value


def _lists(node: Located | None) -> dict[str, list[Located]]:
    if node is None:
        return {}
    out = {}
    for path, values in node.items():
        if not isinstance(values.value, list) or not values.value:
            raise values.error("expected a non-empty list of values")
        out[path] = values.value
    return out


def sweep_points(sweep: Located) -> list[Point]:
    """The grid's cartesian product, each combined with every zipped tuple (or just the grid)."""
    sweep.check_keys(SWEEP_KEYS)
    grid, zipped = _lists(sweep.get("grid")), _lists(sweep.get("zip"))
    lengths = {len(values) for values in zipped.values()}
    if len(lengths) > 1:
        raise (sweep.get("zip") or sweep).error("the lists under zip must have equal lengths")
    zip_rows = [dict(zip(zipped, row, strict=True)) for row in zip(*zipped.values(), strict=True)] or [{}]
    grid_rows = [dict(zip(grid, row, strict=True)) for row in itertools.product(*grid.values())]
    return [Point({**g, **z}) for g in grid_rows for z in zip_rows]


def with_value(root: Located, path: str, value: Located) -> Located:
    """``root`` with the node at dotted ``path`` (list indices allowed) replaced by ``value``."""
    return _replaced(root, path.split("."), value, path)


def _replaced(node: Located, parts: list[str], value: Located, path: str) -> Located:
    head, rest = parts[0], parts[1:]
    key = f"{node.key}.{head}" if node.key else head
    if isinstance(node.value, list):
        if not head.isdigit() or int(head) >= len(node.value):
            raise value.error(f"{path}: no item {head} in the list {node.key} "
                              f"({len(node.value)} items, numbered from 0)")
        items = list(node.value)
        items[int(head)] = _replaced(items[int(head)], rest, value, path) if rest else _moved(value, key)
        return Located(items, node.line, node.key, node.source)
    children = dict(node.mapping()) if node.is_mapping() else {}
    child = children.get(head, Located({}, value.line, key, value.source))
    children[head] = _replaced(child, rest, value, path) if rest else _moved(value, key)
    return Located(children, node.line, node.key, node.source)


def _moved(value: Located, key: str) -> Located:
    """A swept value placed at ``key``: errors name the config key, the line stays the sweep's."""
    return Located(value.value, value.line, key, value.source)


def point_tree(root: Located, point: Point) -> Located:
    """The config of one point: ``root`` with the point's values in place."""
    tree = root
    for path, value in point.values.items():
        tree = with_value(tree, path, value)
    return tree


def _check_local(sweep: Located) -> None:
    """``djsb pool`` runs its points here, with the pool runner: other runners or Slurm are
    ``djsb sweep``'s."""
    runner, slurm = sweep.get("runner"), sweep.get("slurm")
    if runner is not None and str(runner.value).strip().lower() != "pool":
        raise runner.error(f"djsb pool runs the pool runner; run {runner.value!r} with djsb sweep")
    if slurm is not None:
        raise slurm.error("points run on Slurm through `djsb sweep --executor slurm`, not `djsb pool`")


def run_pool(config_path: Path, out_dir: Path) -> str:
    """Run the config (one point or its sweep) into ``out_dir``; return a one-line summary."""
    root = load_yaml(config_path)
    base = config_path.parent
    sweep = root.get("sweep")
    if sweep is None:
        metrics = run_experiment(read_experiment(root, base), out_dir)
        return (f"pool: energy {metrics['energy_kwh']:.1f} kWh, "
                f"{metrics['good_tasks_killed']:.0f} good tasks killed -> {out_dir}")
    _check_local(sweep)
    points = sweep_points(sweep)
    experiments = [read_experiment(point_tree(root, point), base) for point in points]  # all checked first
    rows = []
    for k, (point, experiment) in enumerate(zip(points, experiments, strict=True)):
        metrics = run_experiment(experiment, out_dir / "points" / str(k))
        rows.append({"point": k, **point.row(), **metrics})
    table = pd.DataFrame(rows)
    table.to_csv(out_dir / "sweep.csv", index=False)
    plot_sweep(table, list(points[0].values), out_dir / "policy_sweep.png")
    return f"pool: {len(points)} points -> {out_dir / 'sweep.csv'}"
