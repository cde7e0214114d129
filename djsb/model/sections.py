"""The model's ``cluster`` and ``policy`` sections, read from a config's YAML tree.

``djsb simulate`` (and its sweeps, reproductions and ``djsb validate``), ``djsb calibrate``'s
``model`` section and the simulated job module read the model's settings here, each value by its
one reader, so a bad value is one :class:`~djsb.errors.ConfigError` at the line of its own key
whichever command reads it. Each key, its unit, default, range and the Slurm name it mirrors is in
docs/reference/cluster.md, priority.md and scheduler.md (generated from the declarations by
``make reference``); djsb/simulate/experiment.py shows a whole config.

Reading a tree is no I/O: the model stays pure, the commands load the files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass
from typing import Any

from djsb.errors import ConfigError
from djsb.machine import NODE_BYTES
from djsb.model.assoc_spec import AssocSpec, AssocTree
from djsb.model.cluster_spec import ClusterSpec, NodeSpec, PartitionSpec, QosSpec, by_weight, unknown_qos
from djsb.model.gpus import GpuCounts, gpu_counts
from djsb.model.layouts import LAYOUTS
from djsb.model.node_events import NodeEvent, read_node_events
from djsb.model.priority import FifoPriority
from djsb.model.priority.base import PriorityPlugin
from djsb.model.priority.plugins import PRESETS, PRIORITY_PLUGINS
from djsb.model.reservations import AdvanceReservation, read_reservations
from djsb.model.scheduler import POLICY_SCHEDULER_KEYS, SchedulerConfig
from djsb.registry import UnknownName
from djsb.setting import read_record, setting, table
from djsb.yamlnodes import (
    Located,
    as_int,
    as_number,
    as_str,
    check_count,
    describe,
    read_fields,
)


def nonempty_list(node: Located) -> list[Located]:
    """A list of one item at least."""
    if not isinstance(node.value, list) or not node.value:
        raise node.error(f"expected a non-empty list, got {describe(node.value)}")
    return node.value


NODES = "cluster.nodes[]"
"""Where a config writes a node group's keys."""


def required(node: Located, key: str, what: str = "key") -> Located:
    """A required child of a mapping."""
    child = node.get(key)
    if child is None:
        raise node.error(f"missing {what} {key!r}")
    return child


@dataclass(frozen=True)
class NodeGroup:
    """One ``cluster.nodes`` entry: ``count`` nodes alike, named ``prefix`` and a number."""

    cores: int = setting(MISSING, lambda n: as_int(n, 1), "cores", "CPUs", "each node's CPUs", where=NODES)
    count: int = setting(1, lambda n: as_int(n, 1), "nodes", "", "how many nodes of this kind", where=NODES)
    memory_mb: float | None = setting(None, lambda n: as_number(n, 0), "MB", "RealMemory",
                                      "each node's memory (none: memory is not modelled)", where=NODES)
    prefix: str = setting("n", as_str, "", "NodeName",
                          "names are the prefix and a number, counted on from earlier groups", where=NODES)
    gpus: GpuCounts = setting((), gpu_counts, "GPUs", "Gres (gpu[:type]:N)",
                              "each node's GPUs: a count (`4`) or a count per type (`{a100: 4, v100: 2}`); "
                              "none by default", where=NODES)
    weight: int = setting(1, lambda n: as_int(n, 0), "", "Weight",
                          "the nodes' scheduling weight: jobs get the lowest-weight nodes that suit them "
                          "first",
                          where=NODES)


def read_cluster(node: Located) -> ClusterSpec:
    """The ``cluster`` section: node groups, then partitions (or a named layout), QoS, node events and
    reservations."""
    node.check_keys(frozenset({"nodes", "partitions", "layout", "qos", "node_events", "reservations",
                               "associations"}))
    nodes: list[NodeSpec] = []
    for item in nonempty_list(required(node, "nodes")):
        group = read_record(item, NodeGroup)
        check_count(item.get("count") or item, len(nodes) + group.count, NODE_BYTES, "nodes")
        first = sum(1 for n in nodes if n.name.startswith(group.prefix))
        nodes += [NodeSpec(f"{group.prefix}{first + i}", group.cores, group.memory_mb, group.gpus,
                           group.weight) for i in range(group.count)]
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
        partitions = [read_partition(item) for item in nonempty_list(partitions_node)]
    qos = [QosSpec("normal")]
    qos_node = node.get("qos")
    if qos_node is not None:
        qos = [read_record(item, QosSpec) for item in nonempty_list(qos_node)]
    unknown = unknown_qos(partitions, qos)
    if unknown is not None and partitions_node is not None:
        raise nonempty_list(partitions_node)[unknown[0]].mapping()["qos"].error(unknown[1])
    events_node = node.get("node_events")
    names = [n.name for n in nodes]
    events = read_node_events(nonempty_list(events_node), names) if events_node is not None else ()
    held_node = node.get("reservations")
    held = read_reservations(nonempty_list(held_node), names) if held_node is not None else ()
    assoc_node = node.get("associations")
    associations = read_associations(nonempty_list(assoc_node)) if assoc_node is not None else ()
    return ClusterSpec(by_weight(nodes), tuple(partitions), tuple(qos), events, held, associations)


def read_partition(item: Located) -> PartitionSpec:
    """One ``cluster.partitions`` entry; a rule between its keys that :class:`PartitionSpec` checks
    (one default memory, per CPU or per node) is an error at the line of the key it names."""
    try:
        return read_record(item, PartitionSpec)
    except ConfigError as exc:
        if exc.line is not None:
            raise
        name = (exc.key or "").rpartition(".")[2]
        raise item.mapping().get(name, item).error(exc.message) from None


def read_associations(items: list[Located]) -> tuple[AssocSpec, ...]:
    """``cluster.associations``: each an :class:`AssocSpec`, the tree checked (an association given
    twice, an account cycle: the error at the entry's line)."""
    specs: list[AssocSpec] = []
    for item in items:
        specs.append(read_record(item, AssocSpec))
        try:
            AssocTree(specs)
        except ConfigError as exc:
            raise item.error(exc.message) from None
    return tuple(specs)


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


def reference() -> str:
    """The Markdown reference of the ``cluster`` section (docs/reference/cluster.md is this text)."""
    return "\n".join([
        "# `cluster`: the model's nodes, partitions, QoS, node events and reservations", "",
        "Generated from djsb/model/sections.py and djsb/model/cluster_spec.py (`make reference`); a test "
        "fails when this file and the declarations differ. A time is a number of seconds or a Slurm time "
        "(`1-00:00:00`). `cluster.layout: NAME` (djsb/model/layouts.py) stands for a named set of "
        "partitions.", "",
        "## `cluster.nodes[]`: groups of nodes alike (required)", "", *table(NodeGroup), "",
        "## `cluster.partitions[]` (default: one partition `batch` over every node)", "",
        *table(PartitionSpec), "",
        "## `cluster.qos[]` (default: one QoS `normal`)", "", *table(QosSpec), "",
        "## `cluster.node_events[]`: nodes leaving service and coming back (default: none)", "",
        "DRAIN and FAIL let the jobs running there end; DOWN ends them (requeued after "
        "`policy.scheduler.requeue_delay` unless `job_requeue: false`, then NODE_FAIL). With events, "
        "jobs.csv has `state` and `requeues`, out_of_service.csv has each outage and metrics.json "
        "`capacity_lost`.", "", *table(NodeEvent), "",
        "## `cluster.associations[]`: association limits (default: none)", "",
        "As sacctmgr sets them on an account (no `user`) or a user in an account; Grp limits hold the jobs "
        "below an association at each level of the tree, the others a user association's jobs, inherited "
        "from the nearest account that sets them. A limit the job's QoS sets is the QoS's alone. The "
        "TRES-minutes limits (grp_tres_mins, grp_tres_run_mins, max_tres_mins_per_job, also a QoS's) count a "
        "job's TRES times its time limit in minutes against the usage slurmctld keeps: decayed by "
        "PriorityDecayHalfLife and charged at each PriorityCalcPeriod under `plugin: multifactor` (never "
        "under FIFO, priority/basic), and the minutes the running jobs have left "
        "(djsb/model/tres_minutes.py; `policy.scheduler.enforce_safe` is AccountingStorageEnforce=safe). "
        "grp_wall counts the jobs' wall time in that decayed usage too (Slurm's grp_used_wall).", "",
        *table(AssocSpec), "",
        "## `cluster.reservations[]`: advance reservations (default: none)", "",
        "A job asking no reservation may not use a reserved node if its run, from its start to its start "
        "plus its time limit, overlaps the reservation's window (Slurm's job_test_resv); one that could not "
        "run on the other nodes even were they idle waits with the reason ReqNodeNotAvail. A job asking "
        "for one (a workload's `reservation`, sbatch's `--reservation`) is refused unless its `users` or "
        "`accounts` allow it, runs only on its nodes while a window is open (else waits with the reason "
        "Reservation) and is ended when the window closes (plus `policy.scheduler.resv_over_run`; "
        "djsb/model/reserved_jobs.py).", "", *table(AdvanceReservation)]) + "\n"
