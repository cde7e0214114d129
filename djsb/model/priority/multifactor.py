"""Slurm's multifactor priority (paper 004 eq. 2.1-2.4; SchedMD priority_multifactor.html).

P = w_age a + w_size s + w_fs f + w_qos q + w_part p, truncated to an integer as Slurm stores it
(uint32), with every factor in [0, 1]:

* age a = min(1, (now - eligible) / PriorityMaxAge) (eq. 2.1; Slurm default MaxAge 7 days);
* job size s = r / S, or (S - r + 1) / S with PriorityFavorSmall (eq. 2.2; S = machine cores);
  with ``job_size: slurm`` as Slurm 22.05 computes it (priority_multifactor.c,
  ``_get_priority_internal``): the mean of the node fraction n / N and the CPU fraction r / S
  (n the job's minimum node count, 1 unless it asked for more; N the machine's nodes), or with
  PriorityFavorSmall the mean of (N - n) / N and (S - r) / S;
* QoS q = QoS priority / the largest QoS priority (eq. 2.3; 0 when all are 0);
* partition p = PriorityJobFactor / the largest PriorityJobFactor (priority_multifactor.html);
* fair share f from the Classic (eq. 2.5) or Fair Tree (eq. 2.6, default since Slurm 19.05)
  algorithm over the association tree, usage decayed with PriorityDecayHalfLife.

The usage a job charges to its association is its billing times the seconds it runs times its QoS's
UsageFactor (priority_multifactor.c ``_apply_new_usage``: ``real_decay *= qos->usage_factor``; a QoS's
NoDecay flag spares only the QoS's own usage, never the association's, so fair share ignores it).
PriorityUsageResetPeriod sets every association's usage to 0 at the decay thread's first run at or
after each calendar boundary (``_decay_thread``, ``_reset_usage``; :mod:`djsb.model.usage_reset`): what
the running jobs ran since the run before is charged after the reset, as that run charges it; NOW drops
the usage the replay starts with (the thread's first run, at slurmctld's start).

Fair share factors and every pending job's priority are recomputed every PriorityCalcPeriod
(default 5 min), as Slurm's decay thread does; a new job gets its priority at submission from the
current fair share table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from djsb import slurm_text
from djsb.errors import ConfigError
from djsb.model.billing import billing
from djsb.model.cluster_spec import ClusterSpec
from djsb.model.job import SimJob
from djsb.model.priority.accounts import AccountSpec, AccountTree
from djsb.model.priority.base import PriorityContext, PriorityPlugin
from djsb.model.priority.classic import classic_factors
from djsb.model.priority.fair_tree import fair_tree_factors
from djsb.model.priority.plugins import PRIORITY_PLUGINS, plugin_options
from djsb.model.tres import TRES_NAMES, Tres, TresWeights, read_billing_weights
from djsb.model.tres_usage import least_tres
from djsb.model.usage_reset import UsageReset, run_at, usage_reset
from djsb.setting import SlurmName, read_record, record_of, setting, slurm_key, values
from djsb.yamlnodes import Located, as_bool, as_duration, as_number, as_str, one_of

DAY = 86400.0
JOB_SIZE_FORMULAS = ("cpus", "slurm")
"""The job size factor: paper 004's r / S, or Slurm 22.05's mean of node and CPU fractions."""
FAIRSHARE_ALGORITHMS: dict[str, Callable[[AccountTree], Mapping[tuple[str, str], float]]] = {
    "fair_tree": fair_tree_factors,
    "classic": classic_factors,
}


PRIORITY = "policy.priority"
WEIGHTS = "policy.priority.weights"
"""Where a config writes the multifactor plugin's keys and its weights."""


def _weight(key: str) -> SlurmName:
    """A PriorityWeight* key: an unsigned integer, 0 when left out (slurm.conf(5))."""
    return slurm_key(key, slurm_text.weight, "0")


@dataclass(frozen=True, slots=True)
class MultifactorWeights:
    """PriorityWeight* of slurm.conf."""

    age: float = setting(0.0, as_number, "", _weight("PriorityWeightAge"), "weight of the age factor",
                         where=WEIGHTS)
    fairshare: float = setting(0.0, as_number, "", _weight("PriorityWeightFairShare"),
                               "weight of the fair share factor", where=WEIGHTS)
    job_size: float = setting(0.0, as_number, "", _weight("PriorityWeightJobSize"),
                              "weight of the job size factor", where=WEIGHTS)
    partition: float = setting(0.0, as_number, "", _weight("PriorityWeightPartition"),
                               "weight of the partition factor", where=WEIGHTS)
    qos: float = setting(0.0, as_number, "", _weight("PriorityWeightQOS"), "weight of the QoS factor",
                         where=WEIGHTS)
    tres: TresWeights = setting((), read_billing_weights, "",
                                slurm_key("PriorityWeightTRES", slurm_text.priority_tres_weights, ""),
                                "weight of each TRES's factor, `{cpu: 1000, gres/gpu: 2000}` or "
                                "`CPU=1000,GRES/gpu=2000` (cpu, mem, node, gres/gpu; none: no TRES term)",
                                where=WEIGHTS)


def fairshare_algorithm(node: Located) -> str:
    """A fair share algorithm's name (a key of :data:`FAIRSHARE_ALGORITHMS`)."""
    name = as_str(node)
    if name not in FAIRSHARE_ALGORITHMS:
        choices = " or ".join(FAIRSHARE_ALGORITHMS)
        raise node.error(f"unknown fair share algorithm {name!r} (choose {choices})")
    return name


def accounts(node: Located) -> dict[str, AccountSpec]:
    """Accounts by name, each an :class:`AccountSpec` mapping."""
    return {name: read_record(account, AccountSpec) for name, account in node.items()}


def user_shares(node: Located) -> dict[str, float]:
    """Users' RawShares by name."""
    return {name: as_number(shares) for name, shares in node.items()}


@dataclass(frozen=True)
class MultifactorOptions:
    """The ``policy.priority`` keys of ``plugin: multifactor`` (slurm.conf's Priority* settings and
    sacctmgr's associations); the keys not given keep the preset's values, else Slurm's defaults."""

    weights: MultifactorWeights = setting(MultifactorWeights(), lambda n: read_record(n, MultifactorWeights),
                                          "", "PriorityWeight*",
                                          "the factors' weights (the weights not given: 0)", where=PRIORITY)
    max_age: float = setting(7 * DAY, lambda n: as_duration(n, unit="s", minimum=1), "s",
                             slurm_key("PriorityMaxAge", slurm_text.slurm_time, "7-00:00:00"),
                             "the wait at which the age factor reaches 1 (>= 1 s)", where=PRIORITY)
    favor_small: bool = setting(False, as_bool, "", slurm_key("PriorityFavorSmall", slurm_text.yes_no, "No"),
                                "the smaller the job, the larger its job size factor", where=PRIORITY)
    max_tres: bool = setting(False, as_bool, "", slurm_key("PriorityFlags", slurm_text.max_tres, ""),
                             "a job bills its largest weighted TRES, not their sum (PriorityFlags=MAX_TRES; "
                             "the partitions' billing_weights)", where=PRIORITY)
    raw_tres: bool = setting(False, as_bool, "", slurm_key("PriorityFlags", slurm_text.no_normal_tres, ""),
                             "the TRES factor takes a job's TRES as they are, not as a fraction of its "
                             "partition's (PriorityFlags=NO_NORMAL_TRES)", where=PRIORITY)
    fairshare: str = setting("fair_tree", fairshare_algorithm, "",
                             slurm_key("PriorityFlags", slurm_text.fair_share_algorithm, ""),
                             "fair_tree (Slurm's default since 19.05) or classic "
                             "(PriorityFlags=NO_FAIR_TREE)",
                             where=PRIORITY)
    decay_half_life: float = setting(7 * DAY, lambda n: as_duration(n, unit="s"), "s",
                                     slurm_key("PriorityDecayHalfLife", slurm_text.slurm_time, "7-00:00:00"),
                                     "past usage halves every half-life (0: no decay)", where=PRIORITY)
    calc_period: float = setting(300.0, lambda n: as_duration(n, unit="s", minimum=1), "s",
                                 slurm_key("PriorityCalcPeriod", slurm_text.slurm_time, "00:05:00"),
                                 "how often fair share and pending jobs' priorities are recomputed (>= 1 s)",
                                 where=PRIORITY)
    usage_reset: str = setting("none", one_of(*slurm_text.RESET_PERIODS), "",
                               slurm_key("PriorityUsageResetPeriod", slurm_text.usage_reset_period, "NONE"),
                               "when every usage (fair share's, GrpTRESMins') is set to 0: none, now (once, "
                               "at the start), daily, weekly (Sunday), monthly, quarterly or yearly, at the "
                               "decay thread's first run from the midnight starting the period (the calendar "
                               "of the replay's start: djsb/model/usage_reset.py)", where=PRIORITY)
    accounts: Mapping[str, AccountSpec] | None = setting(None, accounts, "", "sacctmgr account",
                                                         "accounts by name (below; none: users under root)",
                                                         where=PRIORITY)
    user_shares: Mapping[str, float] | None = setting(None, user_shares, "shares", "sacctmgr Fairshare",
                                                      "each user's RawShares by name (none: 1 each)",
                                                      where=PRIORITY)


def vector_of(weights: TresWeights) -> tuple[float, ...]:
    """Weights as one per TRES of :data:`~djsb.model.tres.TRES_NAMES` (0: not weighted)."""
    given = dict(weights)
    return tuple(given.get(name, 0.0) for name in TRES_NAMES)


def partition_tres(cluster: ClusterSpec) -> dict[str, Tres]:
    """Each partition's TRES by name (slurmctld's ``part_ptr->tres_cnt``): its nodes' CPUs, memory
    (MB; 0 where not modelled), node count and GPUs."""
    found = {}
    for part in cluster.partitions:
        nodes = [n for n in cluster.nodes if part.nodes is None or n.name in part.nodes]
        found[part.name] = (sum(n.cores for n in nodes), int(sum(n.memory_mb or 0 for n in nodes)),
                            len(nodes), sum(count for n in nodes for _, count in n.gpus))
    return found


class MultifactorPriority(PriorityPlugin):
    """``PriorityType=priority/multifactor``. ``usage``: the RawUsage (decayed CPU-seconds) each
    (user, account) association has when the replay starts, as sshare shows it on a live Slurm;
    ``tree`` holds the usage the replay accrues."""

    name = "multifactor"

    def __init__(self, weights: MultifactorWeights, *, max_age: float = MultifactorOptions.max_age,
                 favor_small: bool = MultifactorOptions.favor_small,
                 max_tres: bool = MultifactorOptions.max_tres,
                 raw_tres: bool = MultifactorOptions.raw_tres,
                 fairshare: str = MultifactorOptions.fairshare,
                 decay_half_life: float = MultifactorOptions.decay_half_life,
                 calc_period: float = MultifactorOptions.calc_period,
                 accounts: Mapping[str, AccountSpec] | None = None,
                 user_shares: Mapping[str, float] | None = None,
                 usage: Mapping[tuple[str, str], float] | None = None, job_size: str = "cpus",
                 calc_phase: float = 0.0, usage_reset: str = MultifactorOptions.usage_reset) -> None:
        if fairshare not in FAIRSHARE_ALGORITHMS:
            raise ConfigError(f"unknown fair share algorithm {fairshare!r}; choose "
                              f"{' or '.join(FAIRSHARE_ALGORITHMS)}", key="policy.priority.fairshare")
        if job_size not in JOB_SIZE_FORMULAS:
            raise ConfigError(f"unknown job size formula {job_size!r}; choose "
                              f"{' or '.join(JOB_SIZE_FORMULAS)}", key="policy.priority.job_size")
        if max_age <= 0 or calc_period <= 0:
            raise ConfigError("max_age and calc_period must be > 0", key="policy.priority")
        if usage_reset not in slurm_text.RESET_PERIODS:
            raise ConfigError(f"unknown usage reset period {usage_reset!r}; choose "
                              f"{', '.join(slurm_text.RESET_PERIODS)}", key="policy.priority.usage_reset")
        self.weights = weights
        self.max_age = max_age
        self.favor_small = favor_small
        self.max_tres = max_tres
        self.raw_tres = raw_tres
        self.tres_weights = vector_of(weights.tres)
        """PriorityWeightTRES per TRES of :data:`~djsb.model.tres.TRES_NAMES` (0: none)."""
        self.part_tres: dict[str, Tres] = {}
        self.billed: dict[int, float] = {}
        """What each running job billed at its start, when its partition weighs TRES."""
        self.fairshare = fairshare
        self.algorithm = FAIRSHARE_ALGORITHMS[fairshare]
        self.decay_half_life = decay_half_life
        self.calc_period = calc_period
        self.calc_phase = calc_phase
        self.accounts = dict(accounts or {})
        self.user_shares = dict(user_shares or {})
        self.usage = dict(usage or {})
        self.job_size = job_size
        self.fs_table: Mapping[tuple[str, str], float] = {}
        self.tree = AccountTree((), self.accounts, self.user_shares, decay_half_life)
        self.usage_reset = usage_reset
        self.factored = False
        """Whether some QoS has a UsageFactor other than 1 (else a job's rate is its billing alone)."""
        self.reset: UsageReset | None = None
        """The calendar resets of PriorityUsageResetPeriod (None: none)."""
        self.reset_at = math.inf
        """The decay thread's run at which usage is next reset (inf: never)."""
        self.charging: dict[int, tuple[str, str, float, float]] = {}
        """With calendar resets, each running job's user, account, rate and the instant it was first
        charged from: what a reset leaves of its usage."""

    def setup(self, ctx: PriorityContext) -> None:
        """Build the association tree (its clock from the replay's start, charged with the usage the
        associations already had) and the normalisers of eq. 2.2-2.3."""
        self.tree = AccountTree(ctx.associations, self.accounts, self.user_shares, self.decay_half_life,
                                start=ctx.start)
        if self.usage_reset != "now":  # NOW: reset at the decay thread's first run, at the start
            for (user, account), cpu_seconds in self.usage.items():
                self.tree.add_usage(user, account, cpu_seconds, ctx.start)
        self.factored = any(q.usage_factor != 1.0 for q in ctx.cluster.qos)
        self.reset = usage_reset(self.usage_reset, ctx.epoch, ctx.start)
        self.reset_at = run_at(self.reset.boundary, self.calc_period, self.calc_phase) \
            if self.reset is not None else math.inf
        self.charging = {}
        self.total_cores = ctx.cluster.total_cores
        self.total_nodes = len(ctx.cluster.nodes)
        self.max_qos = max((q.priority for q in ctx.cluster.qos), default=0)
        self.max_part = max((p.priority_job_factor for p in ctx.cluster.partitions), default=0)
        if any(self.tres_weights):
            self.part_tres = partition_tres(ctx.cluster)
        self.refresh_fairshare(ctx.start)

    def refresh_fairshare(self, now: float) -> None:
        """Decay and charge usage up to ``now`` and recompute every user's fair share factor."""
        self.settle_usage(now)
        self.fs_table = self.algorithm(self.tree)

    def settle_usage(self, now: float) -> None:
        """Every association's usage up to ``now``, with the resets due by then."""
        if now >= self.reset_at:
            self._reset_usage(now)
        self.tree.settle(now)

    def _reset_usage(self, now: float) -> None:
        """Each reset due by ``now``, at its decay thread run ``at`` (``_decay_thread``: ``_reset_usage``
        first, then ``_apply_new_usage``): every association's usage up to ``at`` set to 0, then each
        running job's stretch since the run before (``g_last_ran``; since it was first charged, if later)
        charged again, decayed to ``at`` as the model decays usage continuously."""
        assert self.reset is not None
        while now >= self.reset_at:
            at = self.reset_at
            self.tree.reset(at)
            previous = at - self.calc_period
            for user, account, rate, since in self.charging.values():
                self.tree.charge_between(user, account, rate, max(previous, since), at)
            self.reset.advance(at)
            self.reset_at = run_at(self.reset.boundary, self.calc_period, self.calc_phase)

    def factors(self, job: SimJob, now: float) -> dict[str, float]:
        """The five factors of eq. 2.4 for ``job`` at ``now``."""
        trace = job.trace
        cores, nodes = self.total_cores, self.total_nodes
        if self.job_size == "slurm":
            n = trace.nodes or 1
            size = (((nodes - n) / nodes + (cores - trace.cpus) / cores) / 2 if self.favor_small
                    else (n / nodes + trace.cpus / cores) / 2)
            size = min(1.0, max(0.0, size))
        else:
            size = (cores - trace.cpus + 1) / cores if self.favor_small else trace.cpus / cores
        return {
            "age": min(1.0, max(0.0, now - job.eligible) / self.max_age),
            "size": size,
            "fairshare": self.fs_table.get((trace.user, trace.account), 1.0),
            "qos": job.qos.priority / self.max_qos if self.max_qos > 0 else 0.0,
            "partition": job.part.spec.priority_job_factor / self.max_part if self.max_part > 0 else 0.0,
            "tres": self._tres(job) if self.part_tres else 0.0,
        }

    def _tres(self, job: SimJob) -> float:
        """The TRES term, weighted (priority_multifactor.c ``_get_tres_factors`` then
        ``_get_tres_prio_weighted``): the sum over TRES of PriorityWeightTRES times the job's TRES
        (``tres_req_cnt`` of a pending job: its CPUs, memory, least node count and GPUs) divided by
        its partition's (``part_ptr->tres_cnt``; as they are with NO_NORMAL_TRES; a TRES the
        partition has none of adds nothing)."""
        total = self.part_tres[job.part.spec.name]
        term = 0.0
        for weight, value, whole in zip(self.tres_weights, least_tres(job), total, strict=True):
            if self.raw_tres:
                term += weight * value
            elif value and whole:
                term += weight * (value / whole)
        return term

    def on_submit(self, job: SimJob, now: float) -> None:
        """Priority from the current fair share table and age 0."""
        job.factors = self.factors(job, now)
        job.update_sort_key()
        self._prioritise((job,), now)

    def on_start(self, job: SimJob, now: float) -> None:
        """Start charging the job's billing (its CPUs, or its weighted TRES: djsb.model.billing) times
        its QoS's UsageFactor to its association."""
        rate: float = job.trace.cpus
        if job.part.spec.billing_weights:
            rate = self.billed[job.job_id] = billing(job, self.max_tres)
        if self.factored and job.qos.usage_factor != 1.0:
            rate = self.billed[job.job_id] = rate * job.qos.usage_factor
        if now >= self.reset_at:
            self._reset_usage(now)
        if self.reset is not None:
            self.charging[job.job_id] = (job.trace.user, job.trace.account, rate, now)
        self.tree.job_started(job.trace.user, job.trace.account, rate, now)

    def on_end(self, job: SimJob, now: float) -> None:
        """Stop charging the job's billing."""
        rate = self.billed.pop(job.job_id, job.trace.cpus) if self.billed else job.trace.cpus
        if now >= self.reset_at:
            self._reset_usage(now)
        if self.reset is not None:
            self.charging.pop(job.job_id, None)
        self.tree.job_ended(job.trace.user, job.trace.account, rate, now)

    def recompute(self, queue: Sequence[SimJob], now: float) -> None:
        """Refresh fair share, then every pending job's priority."""
        self.refresh_fairshare(now)
        self._prioritise(queue, now)

    def _prioritise(self, jobs: Iterable[SimJob], now: float) -> None:
        """The age and fair share factors of ``jobs`` at ``now`` (as :meth:`factors` gives them)
        and their priority P of eq. 2.4, in the order of their sort keys (set before). Only age and
        fair share change between two computations (size, QoS and partition are fixed at
        submission), so those two are updated in the job's factors, which nobody else holds while
        it is pending.

        Every ``calc_period`` this runs over the whole queue, the model's costliest loop after the
        backfill pass, hence locals and ``min``/``max`` written as the conditionals they are: the
        same arithmetic in the same order, the same floats bit for bit."""
        fs_table, max_age = self.fs_table, self.max_age
        w = self.weights
        w_age, w_size, w_fs, w_qos, w_part = w.age, w.job_size, w.fairshare, w.qos, w.partition
        tres_on = bool(self.part_tres)  # a TRES term (fixed at submission) only when weighted
        for job in jobs:
            trace, f = job.trace, job.factors
            waited = now - job.eligible
            age = (waited if waited > 0.0 else 0.0) / max_age
            age = f["age"] = age if age < 1.0 else 1.0
            fairshare = f["fairshare"] = fs_table.get((trace.user, trace.account), 1.0)
            total = (w_age * age + w_size * f["size"] + w_fs * fairshare + w_qos * f["qos"]
                     + w_part * f["partition"])
            if tres_on:
                total += f["tres"]
            priority = job.priority = float(int(total))
            key = job.sort_key
            job.sort_key = (key[0], -priority, key[2], key[3])


@PRIORITY_PLUGINS.register("multifactor")
def read_multifactor(node: Located, base: PriorityPlugin | None) -> PriorityPlugin:
    """``{plugin: multifactor, ...}`` (:class:`MultifactorOptions`); the keys not given keep the
    preset's values (``base``), else Slurm's defaults."""
    start = (record_of(MultifactorOptions, base) if isinstance(base, MultifactorPriority)
             else MultifactorOptions())
    return MultifactorPriority(**values(plugin_options(node, start)))
