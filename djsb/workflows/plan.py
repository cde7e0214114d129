"""The ``workflow`` section of a ``djsb simulate`` config: which workflow, how and when it is submitted.

::

    workflow:
      shape: vertical              # the DAG: see djsb/workflows/dag.py (shape ... or jobs: [...])
      count: 7
      cpus: 96
      run_time: 1800
      strategy: vertical           # one of none, vertical, horizontal, vertical-horizontal (parallel
                                   # chains), horizontal-vertical (sequential stages), 004 sec. 2.8;
                                   # ``djsb wrappers`` takes a list (default: all)
      submit: 0                    # seconds on the workload's clock (default 0)
      submission: on_parent_end    # unwrapped dependents: on_parent_end (Autosubmit, default) or
                                   # afterok (all submitted at once, Slurm holds them)
      user: wf                     # default wf / wf: an account of its own under root (004 fig. 3.2)
      account: wf
      partition: batch             # default: the first partition
      fairshare_target: 0.6        # optional: the user's Fair Tree factor before submission (0.01 ... 1)
      prior_usage: workload        # optional: before that, charge every workload user the CPU-seconds
                                   # of its own jobs (the thesis' dummy batch, 004 sec. 3.3.1, fig. 3.6)
      limits: {max_jobs: 20, max_wallclock: 172800, max_cpus: 4096}
                                   # Autosubmit's wrapper limits; wallclock and CPUs are capped by
                                   # the partition's max_time and max_cpus (and its size)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from djsb.errors import ConfigError
from djsb.model import ClusterSpec
from djsb.model.cluster_state import ClusterState
from djsb.workflows.dag import DAG_KEYS, Workflow, read_workflow
from djsb.workflows.wrappers import STRATEGIES, WrapperLimits, pack
from djsb.yamlnodes import Located, as_duration, as_int, as_number, as_str, one_of, read_fields

SUBMISSIONS = ("on_parent_end", "afterok")
PRIOR_USAGES = ("none", "workload")


@dataclass(frozen=True)
class WorkflowPlan:
    """A validated ``workflow`` section; ``strategy_line`` is where the strategies were given."""

    workflow: Workflow
    strategies: tuple[str, ...]
    limits: WrapperLimits
    submit: float = 0.0
    submission: str = "on_parent_end"
    user: str = "wf"
    account: str = "wf"
    partition: str | None = None
    fairshare_target: float | None = None
    prior_usage: str = "none"
    strategy_line: int | None = None


def _strategies(node: Located) -> tuple[str, ...]:
    items = node.value if isinstance(node.value, list) else [node]
    if not items:
        raise node.error("expected a strategy or a non-empty list of strategies")
    return tuple(one_of(*STRATEGIES)(item) for item in items)


_PLAN_FIELDS: dict[str, Callable[[Located], Any]] = {
    "strategy": _strategies, "submit": lambda n: as_duration(n, unit="s"),
    "submission": one_of(*SUBMISSIONS), "user": as_str,
    "account": as_str, "partition": as_str, "fairshare_target": lambda n: _target(n),
    "limits": lambda n: n, "prior_usage": one_of(*PRIOR_USAGES),
}


def _target(node: Located) -> float:
    value = as_number(node, 0.01)
    if value > 1.0:
        raise node.error(f"must be in 0.01 ... 1, got {value:g}")
    return value


def read_plan(node: Located, cluster: ClusterSpec) -> WorkflowPlan:
    """The section, checked against the cluster (its partition must exist)."""
    node.check_keys(DAG_KEYS | frozenset(_PLAN_FIELDS))
    workflow = read_workflow(node)
    fields = {name: _PLAN_FIELDS[name](child) for name, child in node.items() if name in _PLAN_FIELDS}
    partitions = {p.name: p for p in cluster.partitions}
    partition = fields.get("partition")
    if partition is not None and partition not in partitions:
        raise node.value["partition"].error(f"unknown partition (the cluster has {', '.join(partitions)})")
    strategy_node = node.get("strategy")
    limits = _limits(fields.get("limits"), cluster, partition)
    for strategy in fields.get("strategy", STRATEGIES):
        try:
            pack(workflow, strategy, limits)
        except ConfigError as exc:
            raise node.error(exc.message) from None
    plan_fields = {k: v for k, v in fields.items() if k not in ("strategy", "limits")}
    return WorkflowPlan(workflow, fields.get("strategy", STRATEGIES), limits, **plan_fields,
                        strategy_line=strategy_node.line if strategy_node is not None else node.line)


def _limits(node: Located | None, cluster: ClusterSpec, partition: str | None) -> WrapperLimits:
    state = ClusterState(cluster)
    part = state.by_name[partition] if partition is not None else state.partitions[0]
    spec = part.spec
    given = read_fields(node, {"max_jobs": lambda n: as_int(n, 1),
                               "max_wallclock": lambda n: as_duration(n, unit="s", minimum=1),
                               "max_cpus": lambda n: as_int(n, 1)}) if node is not None else {}
    max_cpus = min(given.get("max_cpus", part.cores), spec.max_cpus or part.cores, part.cores)
    times = [t for t in (given.get("max_wallclock"), spec.max_time) if t is not None]
    max_wallclock = min(times, default=None)
    return WrapperLimits(given.get("max_jobs"), max_wallclock, max_cpus)
