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

from djsb import slurm_text
from djsb.errors import ConfigError
from djsb.model.backfill import BACKFILL_PLANNERS, BACKFILL_POLICIES
from djsb.model.cluster_spec import MEMORY_DEFAULTS_EXCLUSIVE, megabytes
from djsb.registry import Registry, UnknownName
from djsb.setting import Setting, SlurmKey, SlurmName, declared, setting, slurm_key, table
from djsb.setting import scheduler_parameter as _parameter
from djsb.yamlnodes import Located, as_bool, as_duration, as_int, as_str

BACKFILL_VARIANTS = BACKFILL_POLICIES.names()
"""Names of the registered backfill policies (djsb/model/backfill/)."""
NODE_SELECTS = ("first_fit", "cons_tres")
MIN_REQUEUE_DELAY = 6.0
"""The shortest wait of a requeued job Slurm allows: AuthInfo's cred_expire is at least 5 s
(slurm_cred.c), plus the 1 s batch_requeue_fini adds (:func:`djsb.slurm_text.requeue_delay`)."""
"""How the model chooses a starting job's nodes: first fit in node order, or as select/cons_tres does."""


def _seconds(node: Located) -> float:
    return as_duration(node, unit="s")


def _time_slice(node: Located) -> float:
    """SchedulerTimeSlice: at least 5 s (read_config.c: "SchedulerTimeSlice must be at least 5 seconds")."""
    value = as_duration(node, unit="s")
    if value < slurm_text.MIN_TIME_SLICE:
        raise node.error(f"must be at least {slurm_text.MIN_TIME_SLICE:g} s, got {value:g}")
    return value


def _depth(node: Located) -> float:
    """A number of jobs >= 1, or ``math.inf`` for the word ``unlimited`` (any case)."""
    return math.inf if isinstance(node.value, str) and node.value.strip().lower() == "unlimited" \
        else as_int(node, 1)


def _array_reservations(node: Located) -> int:
    """A number of array tasks in 0 ... 1000, as sched/backfill accepts for bf_max_job_array_resv."""
    value = as_int(node, 0)
    if value > slurm_text.MAX_ARRAY_RESERVATIONS:
        raise node.error(f"must be <= {slurm_text.MAX_ARRAY_RESERVATIONS}, got {value}")
    return value


def _registered(node: Located, registry: Registry[Any]) -> str:
    """A plugin's registered name (any case, or an alias of it), at the key's line if unknown."""
    try:
        return registry.canonical(as_str(node))
    except UnknownName as exc:
        raise node.error(str(exc)) from None


def _choice(node: Located, choices: tuple[str, ...]) -> str:
    """One of ``choices``, in any case (as plugin names are)."""
    value = as_str(node).strip().lower()
    if value not in choices:
        raise node.error(f"expected one of {', '.join(choices)}, got {node.value!r}")
    return value


KILL_WAIT = SlurmName((SlurmKey("KillWait", slurm_text.kill_wait_seconds, "30 sec"),
                       SlurmKey("OverTimeLimit", slurm_text.over_time_seconds, "0 min")),
                      combine=lambda wait, over: wait + over, label="KillWait (+ OverTimeLimit)")
"""How long after its limit a job may hold its nodes: KillWait plus OverTimeLimit, as cons_common's
``_guess_job_end`` adds them."""


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

    backfill: str = setting(
        "easy", lambda node: _registered(node, BACKFILL_POLICIES), "name",
        slurm_key("SchedulerType", slurm_text.scheduler_type, "sched/backfill"),
        "the backfill policy: none (sched/builtin), easy (one reservation per partition) or conservative "
        "(every job tested reserves; sched/backfill plans this way)")
    sched_interval: float = setting(60.0, _seconds, "s", _parameter("sched_interval", slurm_text.seconds),
                                    "the periodic main pass (0: at every event instead)")
    bf_interval: float = setting(30.0, _seconds, "s", _parameter("bf_interval", slurm_text.seconds),
                                 "the periodic backfill pass (0: at every event)")
    bf_window: float = setting(
        86400.0, lambda node: as_duration(node, unit="s", unlimited=True), "s",
        _parameter("bf_window", slurm_text.slurm_time, label="bf_window (minutes there)"),
        "how far ahead a reservation may lie; UNLIMITED for none (textbook)")
    bf_resolution: float = setting(60.0, _seconds, "s", _parameter("bf_resolution", slurm_text.seconds),
                                   "the backfill plan's time slot")
    bf_max_job_test: float = setting(500, _depth, "jobs", _parameter("bf_max_job_test", slurm_text.count),
                                     "jobs a backfill pass tests at most (unlimited: every job)")
    bf_max_job_user: float = setting(math.inf, _depth, "jobs",
                                     _parameter("bf_max_job_user", slurm_text.count_or_unlimited),
                                     "jobs of one user a backfill pass tests at most (unlimited: no limit)")
    bf_max_job_part: float = setting(math.inf, _depth, "jobs",
                                     _parameter("bf_max_job_part", slurm_text.count_or_unlimited),
                                     "jobs of one partition a backfill pass tests at most "
                                     "(unlimited: no limit)")
    bf_max_job_array_resv: int = setting(
        20, lambda node: _array_reservations(node), "tasks",
        _parameter("bf_max_job_array_resv", slurm_text.array_reservations),
        "tasks of one job array a backfill pass reserves for at most; the pass walks past the rest "
        "(0: it walks past every task; djsb/model/array_resv.py)")
    bf_continue: bool = setting(False, as_bool, "",
                                _parameter("bf_continue", slurm_text.flag, flag=True),
                                "accepted for Table 3.3 of paper 004; no effect (a pass takes no time)")
    default_queue_depth: float = setting(100, _depth, "jobs",
                                         _parameter("default_queue_depth", slurm_text.count),
                                         "jobs an event-driven main pass tests at most (unlimited: all)")
    defer: bool = setting(False, as_bool, "", _parameter("defer", slurm_text.flag, flag=True),
                          "a job's end queues its main pass instead of running it")
    batch_sched_delay: float = setting(3.0, _seconds, "s",
                                       _parameter("batch_sched_delay", slurm_text.seconds),
                                       "the least time between two queued main passes")
    extend_limit: bool = setting(False, as_bool, "", "", "jobs run past their time limit, not killed at it",
                                 where="workload.at_time_limit: run")
    bf_node_reservations: bool = setting(False, as_bool, "", "",
                                         "plan every reservation node by node, its nodes whole (backfill.c)")
    bf_round_reservations: bool = setting(False, as_bool, "", "",
                                          "round a reservation's ends down to bf_resolution (backfill.c)")
    pass_jitter: bool = setting(False, as_bool, "", "", "periodic passes on a clock phase drawn from a seed")
    start_latency: float = setting(0.0, _seconds, "s", "",
                                   "each start delayed by a seeded draw in [0, this] (launch time)")
    bf_will_run: bool = setting(False, as_bool, "", "", "the same as bf_planner: will_run")
    node_select: str = setting("first_fit", lambda node: _choice(node, NODE_SELECTS), "name",
                               slurm_key("SelectType", slurm_text.select_type),
                               "how a job's nodes are chosen: first_fit, or as select/cons_tres does")
    bf_phase: float | None = setting(None, _seconds, "s", "",
                                     "backfill passes at bf_phase + k bf_interval (Slurm's clock)")
    bf_planner: str = setting("profile", lambda node: _registered(node, BACKFILL_PLANNERS), "name", "",
                              "the backfill planner: profile (the model's own) or will_run (Slurm's)")
    kill_wait: float = setting(30.0, _seconds, "s", KILL_WAIT,
                               "how long after its limit the will-run planner expects a job gone")
    resv_over_run: float = setting(0.0, lambda node: as_duration(node, unit="s", unlimited=True), "s",
                                   slurm_key("ResvOverRun", slurm_text.resv_over_run_seconds, "0 min"),
                                   "how long a job asking for a reservation runs on after its window "
                                   "closes before it is ended (UNLIMITED: to its own limit; "
                                   "djsb/model/reserved_jobs.py)")
    preempt_type: str = setting("none", lambda node: _choice(node, ("none", "partition_prio", "qos")), "name",
                                slurm_key("PreemptType", slurm_text.preempt_type, "preempt/none"),
                                "none; partition_prio: jobs of a higher PriorityTier partition preempt lower "
                                "ones; qos: a QoS preempts those of its Preempt list "
                                "(djsb/model/preemption.py)")
    preempt_mode: str = setting("off", lambda node: _choice(node, ("off", "cancel", "requeue", "suspend")),
                                "name", slurm_key("PreemptMode", slurm_text.preempt_mode, "OFF"),
                                "what a preempted job does: off (no preemption), cancel, requeue or suspend "
                                "(Slurm's SUSPEND,GANG: suspended, resumed when its preemptors end; "
                                "djsb/model/suspension.py)")
    preempt_within: bool = setting(
        False, as_bool, "",
        slurm_key("PreemptMode", slurm_text.preempt_within, "OFF", label="PreemptMode WITHIN"),
        "under preempt_type qos, a job may also preempt a job of its own QoS whose priority is lower "
        "(a QoS's preempt_within says it for that QoS alone)")
    gang: bool = setting(False, as_bool, "",
                         slurm_key("PreemptMode", slurm_text.preempt_gang, "OFF", label="PreemptMode GANG"),
                         "gang scheduling: the jobs of a partition that share cores (OverSubscribe FORCE:N, "
                         "or YES:N for jobs asking it) take turns every time_slice (preempt_mode suspend "
                         "has it always, as Slurm's SUSPEND needs GANG; djsb/model/gang.py)")
    time_slice: float = setting(30.0, _time_slice, "s",
                                slurm_key("SchedulerTimeSlice", slurm_text.time_slice_seconds, "30"),
                                "how long gang scheduling runs a job before it may suspend it for "
                                "another (at least 5)")
    preempt_exempt_time: float = setting(0.0, _seconds, "s",
                                         slurm_key("PreemptExemptTime", slurm_text.exempt_seconds, "-1"),
                                         "how long a job runs before it may be preempted")
    job_requeue: bool = setting(True, as_bool, "", slurm_key("JobRequeue", slurm_text.job_requeue, "1"),
                                "a job whose node goes DOWN is requeued (off: it ends NODE_FAIL)")
    requeue_delay: float = setting(121.0, _seconds, "s",
                                   slurm_key("AuthInfo", slurm_text.requeue_delay, "",
                                             label="AuthInfo cred_expire (+ 1 s)"),
                                   "a requeued job is eligible again this long after its node failed")
    def_mem_per_cpu: float | None = setting(None, megabytes, "MB",
                                            slurm_key("DefMemPerCPU", slurm_text.memory_default, "0"),
                                            "the memory per CPU of a job asking none, where its partition "
                                            "gives no DefMemPerCPU or DefMemPerNode (none: def_mem_per_node, "
                                            "else the job holds no memory)")
    def_mem_per_gpu: float | None = setting(None, megabytes, "MB",
                                            slurm_key("DefMemPerGPU", slurm_text.memory_default, "0"),
                                            "the memory per GPU of a job asking GPUs and no memory, where "
                                            "its partition gives no DefMemPerGPU (none: def_mem_per_cpu or "
                                            "def_mem_per_node)")
    def_mem_per_node: float | None = setting(
        None, megabytes, "MB", slurm_key("DefMemPerNode", slurm_text.memory_default, "UNLIMITED"),
        "the memory per node of a job asking none, where its partition gives no DefMemPerNode or "
        "DefMemPerCPU; not with def_mem_per_cpu (none: def_mem_per_cpu)")
    def_cpu_per_gpu: int | None = setting(None, lambda node: as_int(node, 1), "CPUs",
                                          slurm_key("DefCpuPerGPU", slurm_text.cpus_default, "0"),
                                          "the CPUs per GPU of a job asking GPUs without --cpus-per-gpu or "
                                          "--cpus-per-task, where its partition gives no DefCpuPerGPU "
                                          "(none: no CPUs per GPU)")
    enforce_safe: bool = setting(False, as_bool, "",
                                 slurm_key("AccountingStorageEnforce", slurm_text.accounting_safe, "none",
                                           label="AccountingStorageEnforce safe"),
                                 "a job starts only if GrpTRESMins leaves room for its whole time limit "
                                 "with the running jobs' (djsb/model/tres_minutes.py)")
    max_mem_per_cpu: float | None = setting(None, megabytes, "MB",
                                            slurm_key("MaxMemPerCPU", slurm_text.memory_default, "0"),
                                            "the most memory per CPU of a job, where its partition gives no "
                                            "MaxMemPerCPU: one asking more gets more CPUs (none: no limit)")

    @property
    def gang_scheduling(self) -> bool:
        """Whether the gang scheduler runs: PreemptMode has GANG (``gang``), which SUSPEND implies."""
        return self.gang or self.preempt_mode == "suspend"

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
        if self.requeue_delay < MIN_REQUEUE_DELAY:
            raise ConfigError(f"must be >= {MIN_REQUEUE_DELAY:g} (AuthInfo cred_expire, at least 5 s as "
                              "slurm_cred.c requires, + 1 s)", key="policy.scheduler.requeue_delay")
        if self.node_select not in NODE_SELECTS:
            raise ConfigError(f"unknown node selection {self.node_select!r}; choose one of "
                              f"{', '.join(NODE_SELECTS)}", key="policy.scheduler.node_select")
        for name in ("bf_max_job_test", "default_queue_depth"):
            if getattr(self, name) < 1:
                raise ConfigError("must be >= 1", key=f"policy.scheduler.{name}")
        if self.def_mem_per_node is not None and self.def_mem_per_cpu is not None:
            raise ConfigError(MEMORY_DEFAULTS_EXCLUSIVE, key="policy.scheduler.def_mem_per_node")


SETTINGS: dict[str, Setting] = declared(SchedulerConfig)
"""Each :class:`SchedulerConfig` field's declaration, by key."""
SCHEDULER_READERS: dict[str, Callable[[Located], Any]] = {name: s.read for name, s in SETTINGS.items()}
POLICY_SCHEDULER_KEYS: dict[str, Callable[[Located], Any]] = {
    name: s.read for name, s in SETTINGS.items() if s.where == "policy.scheduler"}
"""The readers of the keys of a simulate config's ``policy.scheduler`` section."""
"""The reader of each :class:`SchedulerConfig` field as a config writes it (the key's own line in an
error). Every time is a bare number of seconds (bf_window too, which slurm.conf gives in minutes:
1440 there is 86400 or ``1-00:00:00`` here) or one of Slurm's time forms
(djsb.yamlnodes.parse_duration); bf_window may be ``UNLIMITED``."""


def reference() -> str:
    """The Markdown reference of ``policy.scheduler`` (docs/reference/scheduler.md is this text)."""
    rows = ["# `policy.scheduler`: the model's scheduler options", "",
            "Generated from djsb/model/scheduler.py (`make reference`); a test fails when this file and "
            "the declarations differ. A time is a number of seconds or a Slurm time (`1-00:00:00`).", "",
            *table(SchedulerConfig)]
    written_elsewhere = [f"`{name}` is set by `{item.where}` in a simulate config."
                         for name, item in SETTINGS.items() if item.where != "policy.scheduler"]
    return "\n".join([*rows, "", *written_elsewhere]) + "\n"


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
