"""The cluster a model replays on, as a config declares it: nodes, partitions, QoS.

:class:`NodeSpec`, :class:`PartitionSpec` (slurm.conf's partition keys, each by its reader),
:class:`QosSpec` (sacctmgr's QoS keys) and :class:`ClusterSpec`, which holds them with the node
events, advance reservations and association limits of a replay. They never change over a replay:
the free slots, memory and GPUs a replay takes and gives back are
:class:`~djsb.model.cluster_state.ClusterState`'s.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import MISSING, dataclass

from djsb import slurm_text
from djsb.errors import ConfigError
from djsb.model.assoc_spec import AssocSpec
from djsb.model.gpus import GpuCounts
from djsb.model.node_events import NodeEvent
from djsb.model.reservations import AdvanceReservation
from djsb.model.tres import TresLimits, TresWeights, read_billing_weights, read_tres_limits
from djsb.setting import setting, slurm_key
from djsb.yamlnodes import (
    Located,
    as_bool,
    as_duration,
    as_int,
    as_number,
    as_str,
    as_time_limit,
    describe,
    one_of,
)

_OVERSUBSCRIBE = re.compile(r"^(NO|YES|FORCE|EXCLUSIVE)(?::(\d+))?$")


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One compute node: ``cores`` CPUs, optionally ``memory_mb`` of memory and ``gpus`` (a count
    per type, :data:`~djsb.model.gpus.GpuCounts`; none by default), and its scheduling ``weight``
    (slurm.conf Weight: jobs get the nodes of the lowest weight that suit them first)."""

    name: str
    cores: int
    memory_mb: float | None = None
    gpus: GpuCounts = ()
    weight: int = 1


def by_weight(nodes: Sequence[NodeSpec]) -> tuple[NodeSpec, ...]:
    """``nodes`` in the order the model places jobs on them: by Weight, the lowest first, then as
    given (cons_tres orders its node sets by weight, then by index: slurm.conf(5), Weight)."""
    return tuple(sorted(nodes, key=lambda node: node.weight))


PARTITION = "cluster.partitions[]"
"""Where a config writes a partition's keys."""
QOS = "cluster.qos[]"
"""Where a config writes a QoS's keys."""
OWN_PREEMPT_MODES = ("cluster", "off", "cancel", "requeue", "suspend")
"""A partition's or a QoS's own PreemptMode as the model has it (``cluster``, sacctmgr's word for
none: the scheduler's applies)."""


def node_names(node: Located) -> tuple[str, ...]:
    """A non-empty list of node names."""
    if not isinstance(node.value, list) or not node.value:
        raise node.error(f"expected a non-empty list of node names, got {describe(node.value)}")
    return tuple(as_str(item) for item in node.value)


def time_limit(node: Located) -> float | None:
    """A partition's MaxTime or a QOS's MaxWall: at least a second (a bare number in seconds), or
    None for ``UNLIMITED``."""
    return as_time_limit(node, unit="s", minimum=1)


def qos_names(node: Located) -> tuple[str, ...]:
    """A list of QoS names, or Slurm's comma-separated text (``ALL``: every QoS, ())."""
    if isinstance(node.value, list):
        return tuple(as_str(item).lower() for item in node.value)
    return slurm_text.allow_qos(as_str(node))


MEMORY_DEFAULTS_EXCLUSIVE = ("give def_mem_per_node or def_mem_per_cpu, not both: Slurm holds one default "
                             "memory, per node or per CPU (read_config.c: DefMemPerCPU is ignored beside "
                             "DefMemPerNode)")
"""The error of a section giving both default memories (the cluster's, or one partition's)."""


def megabytes(node: Located) -> float:
    """A memory size in MB, above 0."""
    return as_number(node, 0, strict=True)


def oversubscribe(node: Located) -> str:
    """A partition's OverSubscribe (``NO``, ``YES[:N]``, ``FORCE[:N]``, ``EXCLUSIVE``), checked by
    :class:`PartitionSpec`, upper-cased as slurm.conf takes it in any case."""
    value = str(node.value).upper()
    try:
        PartitionSpec("batch", oversubscribe=value).share  # noqa: B018 - validates
    except ConfigError as exc:
        raise node.error(exc.message) from None
    return value


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    """A Slurm partition: a node set with job limits and a scheduling tier.

    ``nodes`` None means every node of the cluster. ``max_time`` (seconds) is Slurm's MaxTime and
    also the limit of jobs that give none (Slurm's DefaultTime falls back to MaxTime).
    ``priority_tier`` orders partitions before job priority; ``priority_job_factor`` feeds the
    multifactor partition factor (Slurm ``PriorityJobFactor``).
    """

    name: str = setting(MISSING, as_str, "", "PartitionName", "the partition's name, which jobs ask for",
                        where=PARTITION)
    nodes: tuple[str, ...] | None = setting(None, node_names, "", "Nodes",
                                            "its nodes by name (none: every node)", where=PARTITION)
    min_cpus: int = setting(1, lambda n: as_int(n, 1), "CPUs", "",
                            "the fewest CPUs a job may ask (fewer: rejected at submission)", where=PARTITION)
    max_cpus: int | None = setting(None, lambda n: as_int(n, 1), "CPUs", "",
                                   "the most CPUs a job may ask (more: rejected; none: no limit)",
                                   where=PARTITION)
    max_time: float | None = setting(None, time_limit, "s",
                                     slurm_key("MaxTime", slurm_text.time_limit, "UNLIMITED"),
                                     "a job's longest limit, and the limit of a job giving none "
                                     "(none or UNLIMITED: no limit)", where=PARTITION)
    priority_tier: int = setting(1, as_int, "", slurm_key("PriorityTier", slurm_text.integer, "1"),
                                 "orders partitions before job priority", where=PARTITION)
    priority_job_factor: int = setting(1, as_int, "", slurm_key("PriorityJobFactor", slurm_text.integer, "1"),
                                       "the multifactor partition factor", where=PARTITION)
    grace_time: float = setting(0.0, lambda n: as_duration(n, unit="s"), "s",
                                slurm_key("GraceTime", slurm_text.seconds, "0"),
                                "how long a job of it runs on once preempted", where=PARTITION)
    preempt_mode: str = setting("cluster", one_of(*OWN_PREEMPT_MODES), "name",
                                slurm_key("PreemptMode", slurm_text.partition_preempt_mode, ""),
                                "what its jobs do once preempted under preempt_type: partition_prio: "
                                "cluster (the scheduler's preempt_mode), off (never preempted), cancel, "
                                "requeue or suspend (with the scheduler's preempt_mode suspend, which has "
                                "GANG; else off)", where=PARTITION)
    oversubscribe: str = setting("NO", oversubscribe, "",
                                 slurm_key("OverSubscribe", slurm_text.oversubscribe, "NO"),
                                 "NO, YES[:N], FORCE[:N] or EXCLUSIVE (any case); with the scheduler's gang, "
                                 "its jobs sharing cores take turns (djsb/model/gang.py)", where=PARTITION)
    qos: str | None = setting(None, as_str, "", slurm_key("QOS", slurm_text.partition_qos),
                              "a QoS of `cluster.qos` whose limits hold every job of the partition on top "
                              "of the job's own, and first unless the job's QoS has `over_part_qos` "
                              "(none: none)", where=PARTITION)
    allow_qos: tuple[str, ...] = setting(
        (), qos_names, "", slurm_key("AllowQos", slurm_text.allow_qos, "ALL"),
        "the QoS whose jobs it takes, a list or `a,b` (any other is refused at submission, Invalid qos "
        "specification; none or ALL: every QoS)", where=PARTITION)
    billing_weights: TresWeights = setting(
        (), read_billing_weights, "", slurm_key("TRESBillingWeights", slurm_text.tres_weights, ""),
        "what a job's fair share usage charges per second: its TRES weighted, `{cpu: 1.0, gres/gpu: 2.0}` "
        "(mem per MB) or `CPU=1.0,Mem=0.25G,GRES/gpu=2.0` (none: its CPUs)", where=PARTITION)
    def_mem_per_cpu: float | None = setting(
        None, megabytes, "MB", slurm_key("DefMemPerCPU", slurm_text.memory_default, "0"),
        "the memory per CPU of a job of it asking none (none, and no def_mem_per_node: policy.scheduler's "
        "def_mem_per_cpu or def_mem_per_node)", where=PARTITION)
    def_mem_per_node: float | None = setting(
        None, megabytes, "MB", slurm_key("DefMemPerNode", slurm_text.memory_default, "UNLIMITED"),
        "the memory per node of a job of it asking none; not with def_mem_per_cpu (none, and no "
        "def_mem_per_cpu: policy.scheduler's def_mem_per_cpu or def_mem_per_node)", where=PARTITION)
    def_mem_per_gpu: float | None = setting(
        None, megabytes, "MB", slurm_key("DefMemPerGPU", slurm_text.memory_default, "0"),
        "the memory per GPU of a job of it asking GPUs and no memory (none: policy.scheduler's "
        "def_mem_per_gpu)", where=PARTITION)
    def_cpu_per_gpu: int | None = setting(
        None, lambda n: as_int(n, 1), "CPUs", slurm_key("DefCpuPerGPU", slurm_text.cpus_default, "0"),
        "the CPUs per GPU of a job of it asking GPUs without --cpus-per-gpu or --cpus-per-task (none: "
        "policy.scheduler's def_cpu_per_gpu)", where=PARTITION)
    max_mem_per_cpu: float | None = setting(
        None, megabytes, "MB", slurm_key("MaxMemPerCPU", slurm_text.memory_default, "0"),
        "the most memory per CPU of a job of it: one asking more gets more CPUs (none: policy.scheduler's "
        "max_mem_per_cpu)", where=PARTITION)
    max_cpus_per_node: int | None = setting(
        None, lambda n: as_int(n, 1), "CPUs", slurm_key("MaxCPUsPerNode", slurm_text.cpus_limit, "UNLIMITED"),
        "the most CPUs its running jobs hold together on one node (none, slurm.conf's UNLIMITED: no limit)",
        where=PARTITION)

    def __post_init__(self) -> None:
        if self.def_mem_per_node is not None and self.def_mem_per_cpu is not None:
            raise ConfigError(MEMORY_DEFAULTS_EXCLUSIVE, key=f"partitions.{self.name}.def_mem_per_node")

    @property
    def exclusive(self) -> bool:
        """Whole-node allocation (``OverSubscribe=EXCLUSIVE``)."""
        return self.oversubscribe.upper().startswith("EXCLUSIVE")

    @property
    def share(self) -> int:
        """How many jobs may share one core (1 unless ``YES[:N]`` or ``FORCE[:N]``)."""
        kind, count = self._oversubscribe()
        if kind in ("FORCE", "YES"):
            return int(count) if count else 4
        return 1

    @property
    def forced(self) -> bool:
        """Every job may share cores (``FORCE[:N]``), whether it asks or not."""
        return self._oversubscribe()[0] == "FORCE"

    def _oversubscribe(self) -> tuple[str, str | None]:
        match = _OVERSUBSCRIBE.match(self.oversubscribe.upper())
        if not match:
            raise ConfigError(f"invalid OverSubscribe value {self.oversubscribe!r}: use NO, YES[:N], "
                              "FORCE[:N] or EXCLUSIVE", key=f"partitions.{self.name}.oversubscribe")
        kind, count = match.groups()
        return kind, count


@dataclass(frozen=True, slots=True)
class QosSpec:
    """A Slurm QoS: a priority (multifactor QoS factor, eq. 2.3 of 004) and its limits, enforced as
    Slurm 22.05 does with ``AccountingStorageEnforce=limits`` (:mod:`djsb.model.limits`)."""

    name: str = setting(MISSING, as_str, "", "Name", "the QoS's name", where=QOS)
    priority: int = setting(0, as_int, "", "Priority", "the multifactor QoS factor", where=QOS)
    max_jobs_per_user: int | None = setting(None, lambda n: as_int(n, 1), "jobs", "MaxJobsPerUser",
                                            "running jobs of one user (none: no limit)", where=QOS)
    max_wall: float | None = setting(None, time_limit, "s", "MaxWall",
                                     "a job's longest limit: a job asking more pends forever "
                                     "(QOSMaxWallDurationPerJobLimit), or is refused with deny_on_limit; "
                                     "a job asking none gets it (none or UNLIMITED: no limit)", where=QOS)
    deny_on_limit: bool = setting(False, as_bool, "", "Flags=DenyOnLimit",
                                  "refuse at submission a job over a per-job limit instead of leaving it "
                                  "pending forever", where=QOS)
    max_jobs_per_account: int | None = setting(None, lambda n: as_int(n, 1), "jobs", "MaxJobsPerAccount",
                                               "running jobs of one account (none: no limit)", where=QOS)
    grp_jobs: int | None = setting(None, lambda n: as_int(n, 1), "jobs", "GrpJobs",
                                   "running jobs of the QoS (none: no limit)", where=QOS)
    max_submit_jobs_per_user: int | None = setting(None, lambda n: as_int(n, 1), "jobs",
                                                   "MaxSubmitJobsPerUser", "pending and running jobs of one "
                                                   "user: one more is refused at submission (none: no limit)",
                                                   where=QOS)
    max_tres_per_job: TresLimits = setting((), read_tres_limits, "TRES", "MaxTRESPerJob",
                                           "TRES of one job, e.g. `{cpu: 64, gres/gpu: 4}` or "
                                           "`cpu=64,gres/gpu=4` (cpu, mem, node, gres/gpu; none: no limit)",
                                           where=QOS)
    max_tres_per_node: TresLimits = setting((), lambda n: read_tres_limits(n, per_node=True), "TRES",
                                            "MaxTRESPerNode", "TRES of one job per node it runs on "
                                            "(cpu, mem, gres/gpu; none: no limit)", where=QOS)
    max_tres_per_user: TresLimits = setting((), read_tres_limits, "TRES", "MaxTRESPerUser",
                                            "TRES the running jobs of one user hold (none: no limit)",
                                            where=QOS)
    max_tres_per_account: TresLimits = setting((), read_tres_limits, "TRES", "MaxTRESPerAccount",
                                               "TRES the running jobs of one account hold (none: no limit)",
                                               where=QOS)
    grp_tres: TresLimits = setting((), read_tres_limits, "TRES", "GrpTRES",
                                   "TRES the running jobs of the QoS hold (none: no limit)", where=QOS)
    grp_tres_mins: TresLimits = setting((), read_tres_limits, "TRES-min", "GrpTRESMins",
                                        "TRES-minutes of its jobs' decayed usage: none of its jobs starts "
                                        "once it reaches it (QOSGrpCPUMinutesLimit...; with enforce_safe its "
                                        "running jobs' and the job's own minutes count too; "
                                        "djsb/model/tres_minutes.py)", where=QOS)
    grp_tres_run_mins: TresLimits = setting((), read_tres_limits, "TRES-min", "GrpTRESRunMins",
                                            "TRES-minutes its running jobs have left of their time limits, "
                                            "with the job's own (QOSGrpCPURunMinutesLimit...)", where=QOS)
    max_tres_mins_per_job: TresLimits = setting((), read_tres_limits, "TRES-min", "MaxTRESMinsPerJob",
                                                "TRES times time limit of one job: more pends forever "
                                                "(QOSMaxCpuMinutesPerJobLimit...), or is refused with "
                                                "deny_on_limit", where=QOS)
    preempt: tuple[str, ...] = setting((), lambda n: tuple(name.strip() for name in as_str(n).split(",")
                                                           if name.strip()), "", "Preempt",
                                       "the QoS its jobs may preempt under preempt_type: qos "
                                       "(comma-separated)",
                                       where=QOS)
    grace_time: float = setting(0.0, lambda n: as_duration(n, unit="s"), "s", "GraceTime",
                                "how long a job of it runs on once preempted under preempt_type: qos",
                                where=QOS)
    preempt_mode: str = setting("cluster", one_of(*OWN_PREEMPT_MODES), "name", "PreemptMode",
                                "what its jobs do once preempted under preempt_type: qos: cluster (the "
                                "scheduler's preempt_mode), off (never preempted), cancel, requeue or "
                                "suspend (with the scheduler's preempt_mode suspend; else off)",
                                where=QOS)
    preempt_within: bool = setting(False, as_bool, "", "PreemptMode=WITHIN",
                                   "under preempt_type: qos its jobs may preempt jobs of their own QoS of "
                                   "lower priority", where=QOS)
    over_part_qos: bool = setting(False, as_bool, "", "Flags=OverPartQOS",
                                  "its limits come before those of the partition's QoS (`partitions[].qos`), "
                                  "which otherwise come first", where=QOS)
    usage_factor: float = setting(1.0, as_number, "", "UsageFactor",
                                  "what its jobs' usage is multiplied by, in fair share and in the usages of "
                                  "GrpTRESMins and GrpTRESRunMins (priority_multifactor.c _apply_new_usage; "
                                  "0: its jobs charge none and no usage holds them)", where=QOS)
    no_decay: bool = setting(False, as_bool, "", "Flags=NoDecay",
                             "its own GrpTRESMins usage never decays (the associations' and fair share's "
                             "still do: _apply_decay, _apply_new_usage)", where=QOS)
    usage_factor_safe: bool = setting(False, as_bool, "", "Flags=UsageFactorSafe",
                                      "the limits a pass checks see its jobs' time limits times usage_factor "
                                      "(whole minutes): TRES-minutes limits, MaxWall, and GrpWall with "
                                      "enforce_safe (acct_policy.c acct_policy_job_runnable_post_select, "
                                      "_pre_select; djsb/model/tres_minutes.py)", where=QOS)


def unknown_qos(partitions: Sequence[PartitionSpec], qos: Sequence[QosSpec]) -> tuple[int, str] | None:
    """The first partition whose QOS is none of ``qos``: its index and the problem (None: none)."""
    names = [q.name for q in qos]
    for i, part in enumerate(partitions):
        if part.qos is not None and part.qos not in names:
            return i, f"partition {part.name}: QoS {part.qos!r} is none of cluster.qos ({', '.join(names)})"
    return None


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """The machine: nodes, partitions (the first is the default), QoS, the node events that take
    nodes out of service and back over a replay (:mod:`djsb.model.node_events`, time order), the
    advance reservations that keep nodes from jobs (:mod:`djsb.model.reservations`) and the
    associations' limits (:mod:`djsb.model.assoc_spec`)."""

    nodes: tuple[NodeSpec, ...]
    partitions: tuple[PartitionSpec, ...]
    qos: tuple[QosSpec, ...] = (QosSpec("normal"),)
    events: tuple[NodeEvent, ...] = ()
    reservations: tuple[AdvanceReservation, ...] = ()
    associations: tuple[AssocSpec, ...] = ()

    def __post_init__(self) -> None:
        unknown = unknown_qos(self.partitions, self.qos)
        if unknown is not None:
            raise ConfigError(unknown[1], key=f"cluster.partitions[{unknown[0]}].qos")

    @classmethod
    def homogeneous(cls, n_nodes: int, cores: int, *, memory_mb: float | None = None,
                    partition: PartitionSpec | None = None,
                    qos: tuple[QosSpec, ...] = (QosSpec("normal"),), gpus: GpuCounts = ()) -> ClusterSpec:
        """``n_nodes`` identical nodes named n0, n1, ... in one partition (default ``batch``)."""
        nodes = tuple(NodeSpec(f"n{i}", cores, memory_mb, gpus) for i in range(n_nodes))
        return cls(nodes, (partition or PartitionSpec("batch"),), qos)

    @property
    def total_cores(self) -> int:
        """Number of physical cores of the machine (S of eq. 2.2 of 004)."""
        return sum(n.cores for n in self.nodes)

    @property
    def total_gpus(self) -> int:
        """Number of GPUs of the machine, of every type."""
        return sum(count for n in self.nodes for _, count in n.gpus)
