"""The model's ``cluster`` and ``policy`` sections, read from a config's YAML tree.

``djsb simulate`` (and its sweeps, reproductions and ``djsb validate``), ``djsb calibrate``'s
``model`` section and the simulated job module read the model's settings here, each value by its
one reader, so a bad value is one :class:`~djsb.errors.ConfigError` at the line of its own key
whichever command reads it. The sections (every time a number of seconds, quoted or not, or a Slurm
time such as ``1:30:00``)::

    cluster:
      nodes: [{count: 100, cores: 1, memory_mb: 1024, prefix: n}]
      partitions: [{name: batch, min_cpus: 1, max_cpus: 64, max_time: 86400, oversubscribe: "NO", ...}]
      # or layout: sdumont_2018, a named set of partitions (djsb/model/layouts.py)
      qos: [{name: normal, priority: 0, max_jobs_per_user: 10}]
    policy:
      preset: marenostrum4         # optional; the sections below override it
      priority: {plugin: multifactor, weights: {age: 1000, fairshare: 10000}, fairshare: fair_tree}
      scheduler: {backfill: easy, bf_interval: 30}   # djsb/model/scheduler.py's settings

Reading a tree is no I/O: the model stays pure, the commands load the files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from djsb.errors import ConfigError
from djsb.machine import NODE_BYTES
from djsb.model.cluster import ClusterSpec, NodeSpec, PartitionSpec, QosSpec
from djsb.model.layouts import LAYOUTS
from djsb.model.priority import FifoPriority
from djsb.model.priority.base import PriorityPlugin
from djsb.model.priority.registry import PRESETS, PRIORITY_PLUGINS
from djsb.model.scheduler import POLICY_SCHEDULER_KEYS, SchedulerConfig
from djsb.registry import UnknownName
from djsb.yamlnodes import (
    Located,
    as_int,
    as_number,
    as_str,
    as_time_limit,
    check_count,
    describe,
    read_fields,
)


def nonempty_list(node: Located) -> list[Located]:
    """A list of one item at least."""
    if not isinstance(node.value, list) or not node.value:
        raise node.error(f"expected a non-empty list, got {describe(node.value)}")
    return node.value


def required(node: Located, key: str, what: str = "key") -> Located:
    """A required child of a mapping."""
    child = node.get(key)
    if child is None:
        raise node.error(f"missing {what} {key!r}")
    return child


def time_limit(node: Located) -> float | None:
    """A partition's MaxTime or a QOS's MaxWall: at least a second (a bare number in seconds), or
    None for ``UNLIMITED``."""
    return as_time_limit(node, unit="s", minimum=1)


def oversubscribe(node: Located) -> str:
    """A partition's OverSubscribe (``NO``, ``YES[:N]``, ``FORCE[:N]``, ``EXCLUSIVE``), checked by
    :class:`PartitionSpec`, upper-cased as slurm.conf takes it in any case."""
    value = str(node.value).upper()
    try:
        PartitionSpec("batch", oversubscribe=value).share  # noqa: B018 - validates
    except ConfigError as exc:
        raise node.error(exc.message) from None
    return value


def read_cluster(node: Located) -> ClusterSpec:
    """The ``cluster`` section: node groups, then partitions (or a named layout) and QoS."""
    node.check_keys(frozenset({"nodes", "partitions", "layout", "qos"}))
    nodes: list[NodeSpec] = []
    for group in nonempty_list(required(node, "nodes")):
        f = read_fields(group, {"count": lambda n: as_int(n, 1), "cores": lambda n: as_int(n, 1),
                                "memory_mb": lambda n: as_number(n, 0), "prefix": as_str}, ("cores",))
        check_count(group.get("count") or group, len(nodes) + f.get("count", 1), NODE_BYTES, "nodes")
        prefix = f.get("prefix", "n")
        first = sum(1 for n in nodes if n.name.startswith(prefix))
        nodes += [NodeSpec(f"{prefix}{first + i}", f["cores"], f.get("memory_mb"))
                  for i in range(f.get("count", 1))]
    partitions = [PartitionSpec("batch")]
    partitions_node = node.get("partitions")
    layout_node = node.get("layout")
    if layout_node is not None and partitions_node is not None:
        raise layout_node.error("give 'layout' (a named set of partitions) or 'partitions', not both")
    if layout_node is not None:
        try:
            partitions = list(LAYOUTS.get(as_str(layout_node))())
        except UnknownName as exc:
            raise layout_node.error(str(exc)) from None
    if partitions_node is not None:
        partitions = [PartitionSpec(**read_fields(item, {
            "name": as_str, "nodes": lambda n: tuple(as_str(x) for x in nonempty_list(n)),
            "min_cpus": lambda n: as_int(n, 1), "max_cpus": lambda n: as_int(n, 1),
            "max_time": time_limit, "priority_tier": as_int,
            "priority_job_factor": as_int, "oversubscribe": oversubscribe,
        }, ("name",))) for item in nonempty_list(partitions_node)]
    qos = [QosSpec("normal")]
    qos_node = node.get("qos")
    if qos_node is not None:
        qos = [QosSpec(**read_fields(item, {"name": as_str, "priority": as_int,
                                            "max_jobs_per_user": lambda n: as_int(n, 1),
                                            "max_wall": time_limit}, ("name",)))
               for item in nonempty_list(qos_node)]
    return ClusterSpec(tuple(nodes), tuple(partitions), tuple(qos))


def read_priority(node: Located | None, base: PriorityPlugin | None) -> PriorityPlugin:
    """The ``policy.priority`` section read by its plugin's registered reader.

    Without a ``plugin`` key the plugin is the preset's, else multifactor when options are given,
    else FIFO; a preset's plugin is refined by the section only when the section names the same plugin.
    """
    if node is None:
        return base or FifoPriority()
    plugin_node = node.get("plugin")
    if plugin_node is not None:
        name = as_str(plugin_node)
    else:
        name = base.name if base is not None else "multifactor" if node.mapping() else "fifo"
    try:
        reader = PRIORITY_PLUGINS.get(name)
    except UnknownName as exc:
        raise (plugin_node or node).error(str(exc)) from None
    return reader(node, base if base is not None and base.name == name else None)


def read_policy(node: Located | None) -> tuple[PriorityPlugin, SchedulerConfig]:
    """The ``policy`` section: a preset's priority plugin and scheduler options, refined by its
    ``priority`` and ``scheduler`` sections (none: FIFO and the default options)."""
    if node is None:
        return FifoPriority(), SchedulerConfig()
    node.check_keys(frozenset({"preset", "priority", "scheduler"}))
    base_priority: PriorityPlugin | None = None
    scheduler = SchedulerConfig()
    preset_node = node.get("preset")
    if preset_node is not None:
        try:
            base_priority, scheduler = PRESETS.get(as_str(preset_node))()
        except UnknownName as exc:
            raise preset_node.error(str(exc)) from None
    priority = read_priority(node.get("priority"), base_priority)
    sched_node = node.get("scheduler")
    if sched_node is not None:
        scheduler = dataclasses.replace(scheduler, **scheduler_overrides(sched_node))
    return priority, scheduler


Readers = Mapping[str, Callable[[Located], Any]]
"""The reader of each key of a section."""


def scheduler_overrides(node: Located, readers: Readers = POLICY_SCHEDULER_KEYS) -> dict[str, Any]:
    """The options a ``policy.scheduler`` section (a calibration's ``model``; the simulated job
    module's ``scheduler``, which reads every field: ``readers``) sets, each checked by
    :class:`SchedulerConfig` now: a bad value is an error at its key's line."""
    overrides = read_fields(node, dict(readers))
    try:
        dataclasses.replace(SchedulerConfig(), **overrides)
    except ConfigError as exc:
        name = (exc.key or "").rpartition(".")[2]
        raise node.mapping().get(name, node).error(exc.message) from None
    return overrides
