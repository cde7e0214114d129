"""Where a replay starts when it does not start from an empty machine at time 0.

A model run of a workload needs only the jobs, the cluster, the scheduler's options and the
priority. Replaying a recorded history from an instant within it needs more, all of it about that
instant and the record behind it: the jobs already running then (on the nodes the record put them),
when each job pending then became eligible, and, when slurmctld's log is at hand, the instants its
passes ran at. A :class:`StartState` carries those, so that :class:`~djsb.model.Simulation` takes
the model's inputs and one object for the rest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from djsb.workloads.job import TraceJob


@dataclass(frozen=True)
class RunningAtStart:
    """A job already running when the replay starts: begun at ``began`` (at or before the start), on
    ``node_list`` when the record names its nodes (its CPUs spread evenly over them), else where the
    model's node choice puts it. It is never queued; it holds its nodes until ``began`` plus its
    run time (or its time limit, from ``began``) and is charged to fair share from the start."""

    trace: TraceJob
    began: float
    node_list: tuple[str, ...] = ()


@dataclass(frozen=True)
class StartState:
    """``time``: the model's clock before any event. ``running``: the jobs placed at that time (one
    that cannot be, its partition or QoS unknown or its nodes without room, is rejected with why).
    ``eligible_since``: job id -> the instant a job pending at ``time`` became eligible, before it
    was submitted to the model at ``time``; its age counts from there, as Slurm's does.
    ``pass_times``: for ``main`` and/or ``backfill``, the instants that scheduler's passes run at,
    instead of every ``sched_interval`` / ``bf_interval`` and (main) at submissions and job ends:
    the passes a live slurmctld ran. ``epoch``: the wall-clock time of the clock's 0, in Unix seconds of
    the site's local time read as UTC (a history's ``Workload.time_origin``; 0: the clock is the Unix
    clock, as a calibration's), where calendar periods such as PriorityUsageResetPeriod's fall."""

    time: float = 0.0
    running: Sequence[RunningAtStart] = ()
    eligible_since: Mapping[int, float] = field(default_factory=dict)
    pass_times: Mapping[str, Sequence[float]] = field(default_factory=dict)
    epoch: float = 0.0


EMPTY = StartState()
"""An empty machine at time 0, with passes at their configured intervals."""
