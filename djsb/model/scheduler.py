"""Scheduler options of the model, named after Slurm's ``SchedulerParameters`` (slurm.conf).

The defaults are Slurm's own (slurm.conf man page, sched_config): sched_interval 60 s,
bf_interval 30 s, bf_window 1 day, bf_resolution 60 s, bf_max_job_test 500,
default_queue_depth 100, batch_sched_delay 3 s. :data:`MARENOSTRUM4` holds Table 3.3 of paper 004;
:data:`TEXTBOOK` is Mu'alem & Feitelson's EASY (IEEE TPDS 12(6), 2001), which Slurm's defaults only
approximate.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from djsb.errors import ConfigError
from djsb.model.backfill import BACKFILL_PLANNERS, BACKFILL_POLICIES
from djsb.registry import UnknownName
from djsb.yamlnodes import Located, as_bool, as_duration, as_int, as_str

BACKFILL_VARIANTS = BACKFILL_POLICIES.names()
"""Names of the registered backfill policies (djsb/model/backfill/)."""
NODE_SELECTS = ("first_fit", "cons_tres")
"""How the model chooses a starting job's nodes: first fit in node order, or as select/cons_tres does."""


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """How and when the model schedules (paper 004 sec. 2.2.1 and figure 2.2).

    ``backfill``: the name of a policy of djsb/model/backfill/: ``none`` (the builtin scheduler:
    the main pass only), ``easy`` (EASY backfilling: one reservation per partition, for the first job that
    cannot start) or ``conservative`` (every job tested that cannot start gets a reservation;
    Slurm's sched/backfill plans this way for the jobs it tests). ``sched_interval`` /
    ``bf_interval`` 0 mean "run the pass at every instant where an event changed something"
    instead of periodically. A submission queues a main pass that slurmctld's background loop runs
    at its next wake-up (once a second), at least ``batch_sched_delay`` seconds after its previous
    pass (Slurm's default 3 s); ``defer`` (Slurm option) queues a job end's pass the same way
    instead of running it at once (:mod:`djsb.model.pass_timing`). ``extend_limit``: let jobs run
    past their time limit instead of killing them. ``bf_continue`` is accepted for fidelity to
    Table 3.3 but has no effect: passes take no simulated time, so the backfill pass never yields
    its locks mid-queue.
    ``bf_window``, ``bf_max_job_test`` and ``default_queue_depth`` may be ``math.inf``
    (unlimited), which Slurm cannot express but textbook backfilling assumes.

    Closer to a real Slurm (all off by default, so EASY and the presets are unchanged):
    ``bf_node_reservations`` plans every reservation node by node and keeps its nodes whole, as
    sched/backfill's ``_add_reservation`` clears them from the ``node_space`` bitmap (backfill.c);
    ``bf_round_reservations`` rounds a reservation's start and end down to ``bf_resolution``
    boundaries (backfill.c: ``start_time = (start_time / backfill_resolution) *
    backfill_resolution``, the same for ``end_reserve``); ``pass_jitter`` puts the periodic passes
    on a random clock phase drawn from the run's seed; ``start_latency`` delays each start by a
    seeded uniform draw in ``[0, start_latency]`` seconds after the decision (slurmctld to
    slurmd launch), while the job holds its nodes from the decision.

    ``bf_planner`` names the planner that makes each backfill pass (djsb/model/backfill/; see
    :attr:`planner`): ``profile``, the model's own, or ``will_run``, sched/backfill's pass with the
    select plugin's will-run test, whole-node rounded reservations and later tries
    (:mod:`djsb.model.will_run`; the two options above are then implied). ``bf_will_run: true`` is
    the same as ``bf_planner: will_run``; ``node_select: cons_tres`` chooses a job's nodes as
    cons_tres does (:mod:`djsb.model.cons_tres`) instead of first fit; ``bf_phase`` puts the
    backfill passes at ``bf_phase + k * bf_interval`` seconds (Slurm's clock: read from a live
    slurmctld by ``djsb calibrate``), overriding ``pass_jitter`` for them. ``kill_wait`` is Slurm's
    KillWait (plus OverTimeLimit): the will-run planner expects a running job already past its
    limit (one left to run by ``extend_limit``, or not yet killed) gone that long after its limit.
    """

    backfill: str = "easy"
    sched_interval: float = 60.0
    bf_interval: float = 30.0
    bf_window: float = 86400.0
    bf_resolution: float = 60.0
    bf_max_job_test: float = 500
    bf_continue: bool = False
    default_queue_depth: float = 100
    defer: bool = False
    batch_sched_delay: float = 3.0
    extend_limit: bool = False
    bf_node_reservations: bool = False
    bf_round_reservations: bool = False
    pass_jitter: bool = False
    start_latency: float = 0.0
    bf_will_run: bool = False
    node_select: str = "first_fit"
    bf_phase: float | None = None
    bf_planner: str = "profile"
    kill_wait: float = 30.0

    @property
    def planner(self) -> str:
        """The registered name of the backfill planner: ``bf_planner``, or ``will_run`` when
        ``bf_will_run`` (its alias) is set."""
        return "will_run" if self.bf_will_run else self.bf_planner

    def __post_init__(self) -> None:
        if self.backfill not in BACKFILL_VARIANTS:
            raise ConfigError(f"unknown backfill variant {self.backfill!r}; choose one of "
                              f"{', '.join(BACKFILL_VARIANTS)}", key="policy.scheduler")
        try:
            planner = BACKFILL_PLANNERS.canonical(self.bf_planner)
        except UnknownName as exc:
            raise ConfigError(str(exc), key="policy.scheduler.bf_planner") from None
        if self.bf_will_run and planner not in ("profile", "will_run"):
            raise ConfigError(f"bf_will_run is bf_planner: will_run; it cannot go with bf_planner: "
                              f"{self.bf_planner}", key="policy.scheduler.bf_will_run")
        for name in ("sched_interval", "bf_interval", "bf_window", "bf_resolution", "start_latency",
                     "batch_sched_delay"):
            if getattr(self, name) < 0:
                raise ConfigError("must be >= 0", key=f"policy.scheduler.{name}")
        if self.node_select not in NODE_SELECTS:
            raise ConfigError(f"unknown node selection {self.node_select!r}; choose one of "
                              f"{', '.join(NODE_SELECTS)}", key="policy.scheduler.node_select")
        for name in ("bf_max_job_test", "default_queue_depth"):
            if getattr(self, name) < 1:
                raise ConfigError("must be >= 1", key=f"policy.scheduler.{name}")


def _seconds(node: Located) -> float:
    return as_duration(node, unit="s")


def _depth(node: Located) -> float:
    """A number of jobs >= 1, or ``math.inf`` for the word ``unlimited``."""
    return math.inf if node.value == "unlimited" else as_int(node, 1)


SCHEDULER_READERS: dict[str, Callable[[Located], Any]] = {
    "backfill": as_str, "sched_interval": _seconds, "bf_interval": _seconds,
    "bf_window": lambda n: as_duration(n, unit="s", unlimited=True), "bf_resolution": _seconds,
    "bf_max_job_test": _depth, "bf_continue": as_bool, "default_queue_depth": _depth, "defer": as_bool,
    "batch_sched_delay": _seconds, "extend_limit": as_bool,
    "bf_node_reservations": as_bool, "bf_round_reservations": as_bool, "pass_jitter": as_bool,
    "start_latency": _seconds, "bf_will_run": as_bool, "node_select": as_str, "bf_phase": _seconds,
    "bf_planner": as_str, "kill_wait": _seconds,
}
"""The reader of each :class:`SchedulerConfig` field as a config writes it. Every time is a bare
number of seconds (bf_window too, which slurm.conf gives in minutes: 1440 there is 86400 or
``1-00:00:00`` here) or one of Slurm's time forms (djsb.yamlnodes.parse_duration); bf_window may be
``UNLIMITED``."""


MARENOSTRUM4 = SchedulerConfig(
    backfill="conservative",
    default_queue_depth=10000,
    defer=True,
    sched_interval=60.0,
    bf_interval=60.0,
    bf_resolution=1800.0,
    bf_window=10080 * 60.0,
    bf_continue=True,
)
"""Table 3.3 of paper 004 (MareNostrum 4, June 2023). bf_max_time (30 s of wall clock) has no
meaning in simulated time; bf_max_job_test and batch_sched_delay (not in the table) keep Slurm's
defaults."""


TEXTBOOK = SchedulerConfig(
    backfill="easy",
    sched_interval=0.0,
    bf_interval=0.0,
    bf_window=math.inf,
    bf_resolution=0.0,
    bf_max_job_test=math.inf,
    default_queue_depth=math.inf,
)
"""Mu'alem & Feitelson's EASY: every pass at every event over the whole queue, time limits
unrounded, and the head job's reservation kept however far it lies (Slurm's 1-day bf_window drops
it). ``backfill="conservative"`` on top gives their conservative backfilling."""
