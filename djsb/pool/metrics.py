"""The metrics of paper 002 sec. VI: energy, overhead per completed good task, good tasks killed,
and the time wasted on bad tasks, from a :class:`~djsb.pool.event_loop.PoolResult`.

Energy is what the pool's tasks cost: the energy of every computer with the task runs (Table I
wattages, :func:`djsb.pool.power.timeline_energy_kwh`) less the energy the same computers draw with
their interactive use, reboots and failures alone (a computer taken away counts as active). The
dedicated computers of D(m, d) would otherwise sleep. The overhead of a completed good task is
"the time in excess of the task's run-time incurred by the system" (sec. I): end - submit - runtime.
"""

from __future__ import annotations

from collections.abc import Iterable

from djsb.pool.event_loop import PoolResult, TaskRecord
from djsb.pool.power import timeline_energy_kwh
from djsb.pool.tasks import Run, deallocations, wasted_time
from djsb.pool.units import HOUR


def pool_energy_kwh(result: PoolResult) -> tuple[float, float]:
    """(energy the tasks added, total energy of the pool) in kWh over the horizon."""
    runs_on: list[list[tuple[float, float]]] = [[] for _ in result.computers]
    for record in result.records:
        for run in record.runs:
            if run.computer >= 0:
                runs_on[run.computer].append((run.start, run.end))
    added = total = 0.0
    for computer, spans, runs in zip(result.computers, result.interruptions, runs_on, strict=True):
        busy = spans.spans()
        with_pool = timeline_energy_kwh(computer.kind, busy + runs, result.horizon, result.sleep_after)
        without = timeline_energy_kwh(computer.kind, busy, result.horizon, result.sleep_after)
        added += with_pool - without
        total += with_pool
    for runs_done in result.dedicated_runs:
        kind = result.dedicated_kind
        with_pool = timeline_energy_kwh(kind, _spans(runs_done), result.horizon, result.sleep_after)
        added += with_pool - timeline_energy_kwh(kind, [], result.horizon, result.sleep_after)
        total += with_pool
    return added, total


def _spans(runs: Iterable[Run]) -> list[tuple[float, float]]:
    return [(run.start, run.end) for run in runs]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def wasted_hours(records: Iterable[TaskRecord]) -> float:
    """Hours of the runs that did not complete their task."""
    return sum(wasted_time(record.runs) for record in records) / HOUR


def task_metrics(records: list[TaskRecord]) -> dict[str, float]:
    """Counts and times over the tasks: what sec. VI of 002 plots, and the sec. II-B statistics."""
    good = [r for r in records if r.task.good]
    bad = [r for r in records if not r.task.good]
    completed = [r for r in good if r.outcome == "completed"]
    overheads = [r.end - r.task.submit - (r.task.runtime or 0.0) for r in completed]
    return {
        "tasks": len(records),
        "good_tasks": len(good),
        "bad_tasks": len(bad),
        "good_tasks_completed": len(completed),
        "good_tasks_killed": sum(1 for r in good if r.outcome == "abandoned"),
        "good_tasks_unfinished": sum(1 for r in good if r.outcome == "unfinished"),
        "bad_tasks_abandoned": sum(1 for r in bad if r.outcome == "abandoned"),
        "bad_tasks_removed": sum(1 for r in bad if r.outcome == "removed"),
        "mean_overhead_minutes": _mean(overheads) / 60.0,
        "bad_task_hours_wasted": wasted_hours(bad),
        "good_task_hours_wasted": wasted_hours(good),
        "mean_good_deallocations": _mean([float(deallocations(r.runs)) for r in good]),
        "mean_bad_deallocations": _mean([float(deallocations(r.runs)) for r in bad]),
        "dedicated_tasks": sum(1 for r in records if r.dedicated),
    }


UNITS = {"energy_kwh": "kWh", "total_energy_kwh": "kWh", "tasks": "tasks", "good_tasks": "tasks",
         "bad_tasks": "tasks", "good_tasks_completed": "tasks", "good_tasks_killed": "tasks",
         "good_tasks_unfinished": "tasks", "bad_tasks_abandoned": "tasks", "bad_tasks_removed": "tasks",
         "mean_overhead_minutes": "min", "bad_task_hours_wasted": "h", "good_task_hours_wasted": "h",
         "mean_good_deallocations": "1", "mean_bad_deallocations": "1", "dedicated_tasks": "tasks"}
"""The unit of each metric of :func:`pool_metrics` (``1``: a mean count per task)."""


def pool_metrics(result: PoolResult) -> dict[str, float]:
    """Every scalar metric of one run, as metrics.json holds them."""
    added, total = pool_energy_kwh(result)
    return {"energy_kwh": added, "total_energy_kwh": total, **task_metrics(result.records)}
