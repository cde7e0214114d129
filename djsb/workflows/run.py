"""One workflow, packed under one strategy, submitted into a model run beside a workload.

The wrappers become model jobs after the workload's (new ids, in an order where parents come first),
each waiting for the wrappers holding its inner jobs' parents (:mod:`djsb.model.dependency`): either
submitted when they end (Autosubmit) or all at ``submit`` with afterok. A fair-share target is set
just before the first submission (:mod:`djsb.workflows.fairshare_control`). The outcome carries the
numbers ``djsb wrappers`` ranks strategies by:

* ``submissions``: wrappers submitted; ``cpus_max``: the largest of them;
* ``runtime_s``: the sum of their run times (end - start);
* ``queue_time_s``: the sum of their times in queue, start - eligible (for afterok, the time held
  for parents is not queue time; on parent end, eligible = submit, so this is start - submit);
* ``makespan_s``: the last end minus the first submission;
* ``priority_at_start``: the mean priority of the wrappers when they started (004 Tables A.1-A.4' P).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import pandas as pd

from djsb.errors import ConfigError
from djsb.model import ClusterSpec, SchedulerConfig, Simulation, SimulationResult
from djsb.model.dependency import Dependency
from djsb.model.priority.base import PriorityPlugin
from djsb.model.priority.multifactor import MultifactorPriority
from djsb.workflows.fairshare_control import control_fair_share
from djsb.workflows.plan import WorkflowPlan
from djsb.workflows.wrappers import Wrapper, pack, run_time, wrapper_parents
from djsb.workloads.job import TraceJob

OUTCOME_UNITS = {"submissions": "jobs", "cpus_max": "cpus", "runtime_s": "s", "queue_time_s": "s",
                 "makespan_s": "s", "priority_at_start": "1", "fairshare": "1"}
"""The unit of each number of a :class:`WorkflowOutcome`."""


@dataclass(frozen=True, slots=True)
class WorkflowOutcome:
    """How the workflow fared under one strategy (see the module docstring); ``fairshare`` is the
    user's Fair Tree factor at submission (None without a target), ``completed`` whether every
    wrapper completed."""

    strategy: str
    submissions: int
    cpus_max: int
    runtime_s: float
    queue_time_s: float
    makespan_s: float
    priority_at_start: float
    fairshare: float | None
    completed: bool

    def as_dict(self) -> dict[str, object]:
        """The outcome as JSON-ready data."""
        return asdict(self)


def workflow_jobs(plan: WorkflowPlan, wrappers: Sequence[Wrapper], first_id: int) -> list[TraceJob]:
    """The wrappers as model jobs numbered from ``first_id``, all with ``plan.submit`` as submit time
    (a job submitted on its parents' end gets its real submit time from the model)."""
    return [TraceJob(first_id + i, plan.submit, run_time(w, plan.workflow), w.cpus,
                     requested_time=w.time_limit, user=plan.user, account=plan.account,
                     partition=plan.partition)
            for i, w in enumerate(wrappers)]


def run_workflow(jobs: Sequence[TraceJob], cluster: ClusterSpec, scheduler: SchedulerConfig,
                 priority: PriorityPlugin, seed: int, plan: WorkflowPlan,
                 strategy: str) -> tuple[SimulationResult, WorkflowOutcome]:
    """Run the workload ``jobs`` with the workflow packed under ``strategy`` submitted into it."""
    wrappers = pack(plan.workflow, strategy, plan.limits)
    first_id = max((j.job_id for j in jobs), default=0) + 1
    extra = workflow_jobs(plan, wrappers, first_id)
    on_end = plan.submission == "on_parent_end"
    dependencies = {first_id + i: Dependency(tuple(first_id + p for p in parents), on_end)
                    for i, parents in enumerate(wrapper_parents(wrappers, plan.workflow)) if parents}
    sim = Simulation([*jobs, *extra], cluster, scheduler, priority, seed=seed,
                     associations=[(plan.user, plan.account)], dependencies=dependencies)
    fair_tree = fair_tree_priority(plan, priority)
    fairshare = _set_fair_share(sim, fair_tree, plan, jobs) if fair_tree is not None else None
    result = sim.run()
    ids = {j.job_id for j in extra}
    return result, _outcome(result.jobs, strategy, wrappers, ids, plan.submit, fairshare)


def fair_tree_priority(plan: WorkflowPlan, priority: PriorityPlugin) -> MultifactorPriority | None:
    """The Fair Tree plugin a fair-share target or prior usage acts on (None without either; a
    ConfigError if the policy has no Fair Tree)."""
    if plan.fairshare_target is None and plan.prior_usage == "none":
        return None
    if not isinstance(priority, MultifactorPriority) or priority.fairshare != "fair_tree":
        raise ConfigError("fairshare_target and prior_usage need the multifactor priority with "
                          "fairshare: fair_tree", key="workflow")
    return priority


def _set_fair_share(sim: Simulation, priority: MultifactorPriority, plan: WorkflowPlan,
                    workload: Sequence[TraceJob]) -> float:
    """Run the model up to just before the submission, charge the prior usage, set the user's
    factor, and report the factor the user has then."""
    sim.advance(math.nextafter(plan.submit, -math.inf))
    if plan.prior_usage == "workload":
        usage: dict[tuple[str, str], float] = {}
        for job in workload:
            usage[(job.user, job.account)] = usage.get((job.user, job.account), 0.0) + job.cpus * job.run_time
        for (user, account), cpu_seconds in usage.items():
            priority.tree.add_usage(user, account, cpu_seconds, plan.submit)
    if plan.fairshare_target is not None:
        control_fair_share(priority.tree, plan.user, plan.account, plan.fairshare_target, plan.submit)
    priority.refresh_fairshare(plan.submit)
    return priority.fs_table[(plan.user, plan.account)]


def _outcome(jobs: pd.DataFrame, strategy: str, wrappers: Sequence[Wrapper], ids: set[int], submit: float,
             fairshare: float | None) -> WorkflowOutcome:
    mine = jobs[jobs["job_id"].isin(ids)]
    done = len(mine) == len(wrappers) and not mine["killed"].any()
    return WorkflowOutcome(
        strategy, len(wrappers), max(w.cpus for w in wrappers),
        runtime_s=float(mine["run_time"].sum()),
        queue_time_s=float((mine["start"] - mine["eligible"]).sum()),
        makespan_s=float(mine["end"].max() - submit) if len(mine) else math.nan,
        priority_at_start=float(mine["priority_at_start"].mean()) if len(mine) else math.nan,
        fairshare=fairshare, completed=bool(done))
