"""Nodes leaving service and coming back during a replay, as an administrator's ``scontrol update
NodeName=... State=...`` or a failing node makes them (slurm.conf(5) and scontrol(1), node states):

* ``DRAIN`` and ``FAIL``: no job starts on the node any more; the jobs running there go on to
  their end (a node DRAINING, then DRAINED). FAIL is DRAIN for a node expected to fail.
* ``DOWN``: the node is gone. The jobs running there end at once: requeued unless the cluster's
  ``job_requeue`` is off (slurm.conf JobRequeue), else NODE_FAIL (slurmctld's
  ``kill_running_job_by_node_name``, node_mgr.c / job_mgr.c).
* ``RESUME``: back in service, idle.

An event names its nodes as a hostlist (``n[0-3],n7``) at an instant in seconds from the
workload's origin. Events come from a config's ``cluster.node_events`` or from a site's
``sacctmgr show events`` (:mod:`djsb.slurmsite.site_events`); the core applies them
(:mod:`djsb.model.node_service`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import MISSING, dataclass

from djsb.jobs.hostlist import expand_hostlist
from djsb.setting import read_record, setting
from djsb.yamlnodes import Located, as_duration, as_str

EVENTS = "cluster.node_events[]"
"""Where a config writes a node event's keys."""
OUT_OF_SERVICE = ("DRAIN", "FAIL", "DOWN")
"""The states that take a node out of service (DOWN ends the jobs on it, the others let them end)."""
STATES = (*OUT_OF_SERVICE, "RESUME")


def _state(node: Located) -> str:
    value = as_str(node).strip().upper()
    if value not in STATES:
        raise node.error(f"expected one of {', '.join(STATES)}, got {node.value!r}")
    return value


def as_hostlist(node: Located) -> str:
    """A hostlist expression (``n[0-3],n7``), as written; an error at the key's line if malformed."""
    text = as_str(node)
    try:
        expand_hostlist(text)
    except ValueError as exc:
        raise node.error(str(exc)) from None
    return text


@dataclass(frozen=True, slots=True)
class NodeEvent:
    """``nodes`` enter ``state`` at ``at`` (seconds from the workload's origin), for ``reason``."""

    at: float = setting(MISSING, lambda n: as_duration(n, unit="s"), "s", "",
                        "when, from the workload's origin", where=EVENTS)
    nodes: str = setting(MISSING, as_hostlist, "", "NodeName", "the nodes, a hostlist (n[0-3],n7)",
                         where=EVENTS)
    state: str = setting(MISSING, _state, "", "State",
                         "DRAIN or FAIL (no new job, running ones go on), DOWN (running jobs end, "
                         "requeued or NODE_FAIL), RESUME (back in service)", where=EVENTS)
    reason: str = setting("", as_str, "", "Reason", "why, kept in out_of_service.csv", where=EVENTS)

    @property
    def names(self) -> list[str]:
        """The names of the event's nodes."""
        return expand_hostlist(self.nodes)


MAX_EVENTS = 100_000
"""Most node events a config (or a calibration's ``machine`` section, each an scontrol command) may
give: a month of a large site's events is thousands."""


def read_node_events(items: Sequence[Located], node_names: Sequence[str] | None) -> tuple[NodeEvent, ...]:
    """The events of a config's ``cluster.node_events`` list, in time order (a stable sort: events
    at one instant apply in the order written), each naming nodes of ``node_names`` (None: not
    checked here, the nodes not known yet)."""
    if len(items) > MAX_EVENTS:
        raise items[MAX_EVENTS].error(f"at most {MAX_EVENTS} node events, got {len(items)}")
    events = []
    for item in items:
        event = read_record(item, NodeEvent)
        unknown = [name for name in event.names if node_names is not None and name not in node_names]
        if unknown:
            raise (item.get("nodes") or item).error(f"unknown node {unknown[0]!r}")
        events.append(event)
    return tuple(sorted(events, key=lambda event: event.at))
