"""Read a ``djsb pool`` config (YAML file or plain mapping) into what one run needs.

::

    seed: 1
    pool:
      days: 21                      # the simulated horizon
      reboot_hour: 5                # optional, with reboot_minutes, sleep_after_minutes,
                                    # failure_mtbf_days, failure_repair_hours (see PoolSpec)
      generate: {clusters: 8, computers: 160}     # draw the rooms (PoolShape's keys) ...
      # clusters: [{name: lib, computers: 40, type: normal, open_hour: 0, close_hour: 24,
      #             mean_idle_minutes: 120, mean_session_minutes: 60}]   # ... or list them
    workload:
      generate: {tasks: 2000, days: 14}          # TaskShape's keys ...
      # history: my-pool.csv                      # ... or a site's own history (history_csv)
    policy:
      abandon: {rule: N1, n: 5}     # X0, N1-N3 (n), A1-A3 and I1 (t_hours), R1 (p), E1/E2 (k),
                                    # P1/P2 (p, min_history), D (n, m, d_hours)
      placement: C1                 # C1 | C2 | C3
      dedicated_type: high_end      # the computers of D(m, d) (sec. VI of 002: top-end ones)
    sweep:                          # optional, the format of ``djsb sweep``
      grid: {policy.abandon.n: [1, 2, 3, 5, 10], policy.placement: [C1, C2, C3]}

A time is in the unit its key's name says (``_minutes``, ``_hours``, ``_days``; ``days``), as a number
quoted or not or as a Slurm time (``failure_repair_hours: "1:30:00"`` is 1.5; djsb.pool.readers.time_in).
Every error names the file, line and dotted key (:class:`~djsb.errors.ConfigError`).
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from djsb.machine import COMPUTER_DAY_BYTES, JOB_BYTES
from djsb.pool.abandon import AbandonPolicy, build_abandon
from djsb.pool.computers import ClusterSpec, PoolSpec
from djsb.pool.generator import PoolShape, TaskShape, draw_clusters, draw_tasks
from djsb.pool.history_csv import read_history
from djsb.pool.interactive import SHORT_GAP_MEAN_MINUTES, long_gap_mean_minutes
from djsb.pool.placement import PLACEMENTS
from djsb.pool.power import COMPUTER_TYPES, ComputerType
from djsb.pool.readers import at_least_one, days, hour_of_day, hours, minutes, positive, share, short_share
from djsb.pool.tasks import Task
from djsb.pool.units import DAY
from djsb.yamlnodes import Located, as_count, as_int, as_number, as_str, check_count, read_fields

TOP_KEYS = frozenset({"seed", "pool", "workload", "policy", "sweep"})


@dataclass(frozen=True)
class PoolExperiment:
    """One point: the pool, its tasks and the two policies."""

    seed: int
    pool: PoolSpec
    tasks: list[Task]
    abandon: AbandonPolicy
    placement: str
    dedicated_type: ComputerType


def located(value: Any, key: str = "", source: str = "<config>") -> Located:
    """A plain value (from a mapping built in code, e.g. by ``djsb sweep``) as a Located tree."""
    if isinstance(value, Mapping):
        return Located({k: located(v, f"{key}.{k}" if key else str(k), source) for k, v in value.items()},
                       0, key, source)
    if isinstance(value, list):
        return Located([located(v, f"{key}[{i}]", source) for i, v in enumerate(value)], 0, key, source)
    return Located(value, 0, key, source)


def _computer_type(node: Located) -> ComputerType:
    name = as_str(node)
    if name not in COMPUTER_TYPES:
        raise node.error(f"unknown computer type {name!r} (choose from {', '.join(COMPUTER_TYPES)})")
    return COMPUTER_TYPES[name]


def _type_mix(node: Located) -> dict[str, float]:
    mix = {name: share(child) for name, child in node.items()}
    for name, child in node.items():
        _computer_type(Located(name, child.line, child.key, child.source))
    if not mix or sum(mix.values()) <= 0:
        raise node.error("expected a mapping of computer type -> share, some share > 0")
    return mix


Reader = Callable[[Located], Any]


def _shape_fields(cls: type, readers: dict[str, Reader]) -> dict[str, Reader]:
    """A reader per field of a shape dataclass: ``readers`` for the special ones, > 0 numbers else."""
    return {f.name: readers.get(f.name, positive) for f in dataclasses.fields(cls)}


POOL_SHAPE = _shape_fields(PoolShape, {"clusters": at_least_one, "computers": at_least_one,
                                       "open_24h": share, "short_gap_share": short_share,
                                       "idle_spread": as_number, "types": _type_mix,
                                       "mean_idle_minutes": minutes, "mean_session_minutes": minutes})
TASK_SHAPE = _shape_fields(TaskShape, {"tasks": lambda n: as_count(n, 1, each_bytes=JOB_BYTES, what="tasks"),
                                       "bad_fraction": share, "good_sigma": as_number, "days": days,
                                       "good_median_minutes": minutes, "good_max_hours": hours,
                                       "bad_removal_days": days})
CLUSTER: dict[str, Reader] = {
    "name": as_str, "computers": at_least_one, "type": _computer_type, "open_hour": hour_of_day,
    "close_hour": hour_of_day, "mean_idle_minutes": minutes, "mean_session_minutes": minutes,
    "short_gap_share": short_share}
POOL: dict[str, Reader] = {
    "days": days, "reboot_hour": hour_of_day, "reboot_minutes": minutes, "sleep_after_minutes": minutes,
    "failure_mtbf_days": days, "failure_repair_hours": hours,
    "generate": lambda n: n, "clusters": lambda n: n}


def _child(node: Located, name: str) -> Located:
    child = node.get(name)
    if child is None:
        raise node.error(f"missing key {name!r}")
    return child


def _one_of(node: Located, first: str, second: str) -> str:
    given = [name for name in (first, second) if node.get(name) is not None]
    if len(given) != 1:
        raise node.error(f"give exactly one of {first!r} and {second!r}")
    return given[0]


def _cluster(node: Located) -> ClusterSpec:
    fields = read_fields(node, CLUSTER, ("name", "computers"))
    kind = fields.pop("type", COMPUTER_TYPES["normal"])
    cluster = ClusterSpec(kind=kind, **fields)
    if cluster.close_hour <= cluster.open_hour:
        raise node.error("close_hour must be after open_hour")
    return _with_long_gaps(cluster, node)


def _with_long_gaps(cluster: ClusterSpec, node: Located) -> ClusterSpec:
    """The cluster, if its mean idle gap leaves room for long gaps besides the short ones."""
    if long_gap_mean_minutes(cluster) <= 0:
        raise node.error(f"mean_idle_minutes ({cluster.mean_idle_minutes:g}) must exceed short_gap_share "
                         f"x {SHORT_GAP_MEAN_MINUTES:.1f} min, the short gaps' mean")
    return cluster


def _pool(node: Located, rng: random.Random) -> PoolSpec:
    fields = read_fields(node, POOL, ("days",))
    if _one_of(node, "generate", "clusters") == "generate":
        generate = fields.pop("generate")
        shape = PoolShape(**read_fields(generate, POOL_SHAPE))
        if shape.clusters > shape.computers:
            raise (generate.get("clusters") or generate).error(
                f"{shape.clusters} rooms cannot share {shape.computers} computers: give at most one room "
                "per computer")
        _check_size(generate.get("computers") or generate, shape.computers, fields["days"])
        clusters = tuple(_with_long_gaps(cluster, generate) for cluster in draw_clusters(shape, rng))
    else:
        items = fields.pop("clusters")
        if not isinstance(items.value, list) or not items.value:
            raise items.error("expected a non-empty list of clusters")
        clusters = tuple(_cluster(item) for item in items.value)
    days = fields.pop("days")
    _check_size(node.get("days") or node, sum(cluster.computers for cluster in clusters), days)
    return PoolSpec(clusters=clusters, horizon=days * DAY, **fields)


def _check_size(node: Located, computers: int, days: float) -> None:
    """Refuse a pool whose computers' days of sessions this machine cannot hold (djsb.machine)."""
    check_count(node, math.ceil(computers * days), COMPUTER_DAY_BYTES,
                f"computer-days ({computers} computers x {days:g} days)")


def _workload(node: Located, base: Path, rng: random.Random) -> list[Task]:
    if _one_of(node, "generate", "history") == "generate":
        node.check_keys({"generate"})
        return draw_tasks(TaskShape(**read_fields(_child(node, "generate"), TASK_SHAPE)), rng)
    node.check_keys({"history"})
    given = _child(node, "history")
    path = base / as_str(given)  # an absolute path stays as it is
    if not path.is_file():
        raise given.error(f"no such file {str(path)!r}")
    return read_history(path)


def _placement(node: Located) -> str:
    name = as_str(node).upper()
    if name not in PLACEMENTS:
        raise node.error(f"unknown placement {name!r} (choose from {', '.join(PLACEMENTS)})")
    return name


def read_experiment(root: Located, base: Path) -> PoolExperiment:
    """The experiment a config tree describes; relative paths are resolved against ``base``."""
    root.check_keys(TOP_KEYS)
    seed = as_int(root.get("seed") or located(1, "seed"))
    policy = _child(root, "policy")
    policy_fields = read_fields(policy, {"abandon": build_abandon, "placement": _placement,
                                         "dedicated_type": _computer_type}, ("abandon",))
    pool_node = _child(root, "pool")
    pool = _pool(pool_node, random.Random(f"{seed}-pool"))
    tasks = _workload(_child(root, "workload"), base, random.Random(f"{seed}-tasks"))
    late = sum(1 for task in tasks if task.submit >= pool.horizon)
    if late:
        raise _child(pool_node, "days").error(
            f"{late} of the {len(tasks)} tasks are submitted after the simulated horizon: raise pool.days")
    return PoolExperiment(
        seed=seed,
        pool=pool,
        tasks=tasks,
        abandon=policy_fields["abandon"],
        placement=policy_fields.get("placement", "C1"),
        dedicated_type=policy_fields.get("dedicated_type", COMPUTER_TYPES["high_end"]))
