"""A pool and a task workload drawn from paper 002's published statistics (the Newcastle logs are
not public).

From sec. II-B and V of 002: 1359 computers in 35 clusters, rooms open 9am-5pm (teaching) or 24
hours, an average idle interval between two users of 371 minutes, the three computer types of
Table I, nightly reboots at 5am, idle gaps with fig. 4's percentiles (:func:`djsb.pool.interactive.
idle_gap`). What 002 does not publish is assumed and named here: how busy
each room is (per-cluster mean idle lognormal around 371 min, spread ``idle_spread``), session
lengths (exponential, mean 60 min), the mix of types, the good/bad split and the run times.
Task defaults are chosen so that X0 reproduces the observed mean deallocations, 1.38 per good
task and 44.89 per bad one (sec. II-B): the note and the report give what a run measures.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from djsb.pool.computers import ClusterSpec
from djsb.pool.power import COMPUTER_TYPES
from djsb.pool.tasks import Task
from djsb.pool.units import DAY, HOUR


@dataclass(frozen=True)
class PoolShape:
    """How to draw the clusters of a pool."""

    clusters: int = 35
    computers: int = 1359
    open_24h: float = 0.25                 # share of the rooms open day and night
    mean_idle_minutes: float = 371.0
    idle_spread: float = 0.8               # sigma of the per-cluster lognormal factor
    mean_session_minutes: float = 60.0
    short_gap_share: float = 0.5
    types: dict[str, float] = field(default_factory=lambda: {"normal": 0.5, "high_end": 0.25, "legacy": 0.25})


def draw_clusters(shape: PoolShape, rng: random.Random) -> tuple[ClusterSpec, ...]:
    """``shape.clusters`` rooms sharing ``shape.computers`` computers as evenly as possible."""
    names, weights = list(shape.types), list(shape.types.values())
    rooms_24h = round(shape.open_24h * shape.clusters)
    sigma = shape.idle_spread
    clusters = []
    for i in range(shape.clusters):
        size = shape.computers // shape.clusters + (1 if i < shape.computers % shape.clusters else 0)
        factor = math.exp(rng.gauss(0.0, sigma) - sigma * sigma / 2)  # mean 1: the pool keeps 371 min
        factor = min(max(factor, 1 / 8), 8.0)  # no room busier than 46 min or idler than 49 h
        hours = (0.0, 24.0) if i < rooms_24h else (9.0, 17.0)
        clusters.append(ClusterSpec(
            name=f"room{i + 1:02d}", computers=size, kind=COMPUTER_TYPES[rng.choices(names, weights)[0]],
            open_hour=hours[0], close_hour=hours[1], mean_idle_minutes=shape.mean_idle_minutes * factor,
            mean_session_minutes=shape.mean_session_minutes, short_gap_share=shape.short_gap_share))
    return tuple(clusters)


@dataclass(frozen=True)
class TaskShape:
    """How to draw the tasks: Poisson submissions over ``days``, good run times lognormal (capped
    below a day: a longer task cannot finish between two nightly reboots), bad tasks removed by
    their submitter after an exponential time of mean ``bad_removal_days``."""

    tasks: int = 2000
    days: float = 14.0
    bad_fraction: float = 0.03
    good_median_minutes: float = 150.0
    good_sigma: float = 1.0
    good_max_hours: float = 20.0
    bad_removal_days: float = 14.0


def draw_tasks(shape: TaskShape, rng: random.Random) -> list[Task]:
    """The tasks of a synthetic workload, numbered in submission order."""
    tasks = []
    rate = shape.tasks / (shape.days * DAY)
    t = 0.0
    for task_id in range(shape.tasks):
        t += rng.expovariate(rate)
        if rng.random() < shape.bad_fraction:
            tasks.append(Task(task_id, t, None, rng.expovariate(1.0 / (shape.bad_removal_days * DAY))))
        else:
            runtime = shape.good_median_minutes * 60.0 * math.exp(rng.gauss(0.0, shape.good_sigma))
            tasks.append(Task(task_id, t, min(runtime, shape.good_max_hours * HOUR)))
    return tasks
