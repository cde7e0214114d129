"""Usage-based TRES-minutes limits as Slurm 22.05 enforces them (``AccountingStorageEnforce=limits``):
GrpTRESMins, GrpTRESRunMins and MaxTRESMinsPerJob of a QoS and of an association (MaxTRESMins).

A job's TRES-minutes are its TRES (``tres_req_cnt`` on the nodes picked: its CPUs, memory in MB,
node count and GPUs) times its time limit in whole minutes (acct_policy.c
``acct_policy_job_runnable_post_select``: ``job_tres_time_limit[i] = time_limit * tres_req_cnt[i]``).
Two usages are kept per QoS and per association that sets a Grp one, as slurmctld keeps them:

* ``usage_tres_raw``, TRES-seconds of past and running jobs, decayed. Only priority/multifactor's
  decay thread (priority_multifactor.c ``_decay_thread``) adds to it and decays it, every
  PriorityCalcPeriod: each usage times ``decay_factor ** delta`` (``_apply_decay``, with
  ``decay_factor = 1 - 0.693 / PriorityDecayHalfLife`` per second, 1 with no half-life), then each
  running job's TRES times ``run_delta * decay_factor ** run_delta`` for the ``run_delta`` seconds it
  ran since the last run (``_apply_new_usage``); a job's end adds its last stretch at once
  (``priority_p_job_end``). Both only under ``AccountingStorageEnforce=limits``
  (``_handle_assoc_tres_run_secs``/``_handle_qos_tres_run_secs`` return early without it). Under
  priority/basic there is no decay thread: the usage never grows (priority_basic.c).
* ``grp_used_tres_run_secs``, what the running jobs have left of their limits: a job's TRES times
  its limit added at its start (``_adjust_limit_usage``, ACCT_POLICY_JOB_BEGIN), the seconds it ran
  taken off at each decay thread run, the rest at its end (``_apply_new_usage`` with
  ``adjust_for_end``); under priority/basic all of it is taken off at its end only
  (priority_basic.c ``priority_p_job_end``).

So the usages change only at the decay thread's runs (on the PriorityCalcPeriod grid, the
multifactor plugin's ``calc_phase``), at starts and at ends: a job held by GrpTRESMins can start at
the first scheduling pass after the run at which its usage fell below the limit, never between
two runs. The model applies every run at its own instant, lazily (:meth:`MinuteUsage.catch_up`
before an instant's events), and wakes the passes at the next run while a job waits on a usage
limit (:attr:`MinuteUsage.waiting`).

The checks (``_validate_tres_usage_limits``, TRES by TRES in Slurm's order; the QoS in
``_qos_job_runnable_post_select``, the associations in the ``while (assoc_ptr)`` walk of
``acct_policy_job_runnable_post_select``; a TRES the job's QoS set skipped for the association):

* GrpTRESMins: held while ``usage_tres_raw / 60 >= limit`` (TRES_USAGE_CUR_EXCEEDS_LIMIT). With
  ``AccountingStorageEnforce=safe`` (``safe_limits``) also when the job's own minutes exceed the
  limit (forever) or its minutes plus the running jobs' minutes left exceed what the usage leaves
  (TRES_USAGE_REQ_NOT_SAFE_WITH_USAGE). Reasons QOSGrpCPUMinutesLimit, AssocGrpCPUMinutesLimit...
* GrpTRESRunMins: held when the job's minutes plus the running jobs' minutes left exceed the limit
  (the job's alone: forever). Reasons QOSGrpCPURunMinutesLimit, AssocGrpCPURunMinutesLimit...
* MaxTRESMinsPerJob: a job whose minutes exceed it never runs (``_validate_tres_limits_for_qos`` /
  ``_for_assoc``), reasons QOSMaxCpuMinutesPerJobLimit, AssocMaxCpuMinutesPerJobLimit...; with
  DenyOnLimit (``strict_checking``) sbatch refuses it, and one over GrpTRESMins or GrpTRESRunMins by
  itself (``_validate_tres_time_limits`` in ``_qos_policy_validate`` / ``_acct_policy_validate``).

A job's QoS's UsageFactor multiplies what it charges (``_apply_new_usage``: ``run_decay``,
``tres_time_delta``, so both usages, of its QoS, its partition's QoS and its associations), what its
start adds to the run seconds (acct_policy.c ``_adjust_limit_usage``: ``time_limit_secs *=
usage_factor``, truncated to whole seconds) and what a restart takes off them
(``_init_grp_used_tres_run_secs``); a job whose QoS's factor is 0 is checked as if every usage were 0
(``_qos_job_runnable_post_select`` and ``acct_policy_job_runnable_post_select``: "Clear usage if factor
is 0 so that jobs can run"). Under priority/basic its end takes off its TRES times its whole limit
without the factor (priority_basic.c ``priority_p_job_end``), as Slurm does. A QoS with Flags=NoDecay
keeps its own ``usage_tres_raw`` undecayed: ``_apply_decay`` skips it and ``_apply_new_usage`` charges it
``run_delta`` undecayed (``tres_run_nodecay``); the associations' usage decays as ever.
PriorityUsageResetPeriod sets every ``usage_tres_raw`` (not the run seconds) to 0 at the first decay
thread run at or after each boundary, before that run decays and charges (``_reset_usage``;
:mod:`djsb.model.usage_reset`); NOW has nothing to reset, the usages starting at 0.

An association's GrpWall is checked against a third usage the same thread keeps, ``grp_used_wall``:
the wall seconds of the jobs below it, decayed and charged as ``usage_tres_raw`` is (``_apply_decay``;
``_apply_new_usage`` adds each running job's ``run_decay``, times its QoS's UsageFactor, at every level
of its path), reset with it (``_reset_usage``), never grown under priority/basic
(:meth:`MinuteUsage.holds_wall`; the check is :mod:`djsb.model.assoc_limits`').

A job whose QoS has Flags=UsageFactorSafe is checked at the passes with its time limit times that
QoS's UsageFactor, truncated to whole minutes (:func:`checked_minutes`; a job without a limit only by
a factor below 1): acct_policy.c ``acct_policy_job_runnable_post_select`` multiplies ``time_limit``
before it makes ``job_tres_time_limit``, so every TRES-minutes check of its QoS and associations sees
the factored minutes (GrpTRESMins' own-minutes checks, which only safe limits make, GrpTRESRunMins
and MaxTRESMinsPerJob), and ``_qos_job_runnable_pre_select`` / ``acct_policy_job_runnable_pre_select``
multiply it for MaxWall (of the QoS and the user association) and, with safe limits, an association's
GrpWall. The man page speaks of the flag under ``safe`` only; the code multiplies the limit whatever
AccountingStorageEnforce says, so without ``safe`` the flag still changes GrpTRESRunMins,
MaxTRESMinsPerJob and MaxWall. What a job charges does not depend on the flag (``_apply_new_usage``,
``_adjust_limit_usage``), nor do the checks at submission (``_qos_policy_validate``,
``_acct_policy_validate``: the job's limit as asked).

Not modelled: usage a site had before the replay, and the default time limit ``_validate_time_limit``
derives for a job asking none (limit / TRES).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from djsb.model.job import SimJob
from djsb.model.tres import Tres, TresLimits, vector
from djsb.model.usage_reset import UsageReset, run_at

Vector = tuple[float, float, float, float]
Key = tuple[str, ...]
"""A usage's holder: ``(qos_name,)`` for a QoS, ``(user, account)`` for an association (user "" for
an account's own)."""
INFINITE_MINUTES = 0xFFFFFFFF
"""Slurm's INFINITE time limit in minutes: a job without one asks that many (its minutes exceed
every limit)."""
_NONE: Vector = (math.inf, math.inf, math.inf, math.inf)

QOS_REASONS = {
    # job_state_reason_string of the reason _get_tres_state_reason gives WAIT_QOS_GRP_UNK_MIN,
    # WAIT_QOS_GRP_UNK_RUN_MIN and WAIT_QOS_MAX_UNK_MINS_PER_JOB, by TRES (cpu, mem, node, gres)
    "grp": ("QOSGrpCPUMinutesLimit", "QOSGrpMemoryMinutes", "QOSGrpNodeMinutes", "QOSGrpGRESMinutes"),
    "run": ("QOSGrpCPURunMinutesLimit", "QOSGrpMemoryRunMinutes", "QOSGrpNodeRunMinutes",
            "QOSGrpGRESRunMinutes"),
    "per_job": ("QOSMaxCpuMinutesPerJobLimit", "QOSMaxMemoryMinutesPerJob", "QOSMaxNodeMinutesPerJob",
                "QOSMaxGRESMinutesPerJob"),
}
ASSOC_REASONS = {
    # the same for WAIT_ASSOC_GRP_UNK_MIN, WAIT_ASSOC_GRP_UNK_RUN_MIN, WAIT_ASSOC_MAX_UNK_MINS_PER_JOB
    "grp": ("AssocGrpCPUMinutesLimit", "AssocGrpMemMinutes", "AssocGrpNodeMinutes", "AssocGrpGRESMinutes"),
    "run": ("AssocGrpCPURunMinutesLimit", "AssocGrpMemRunMinutes", "AssocGrpNodeRunMinutes",
            "AssocGrpGRESRunMinutes"),
    "per_job": ("AssocMaxCpuMinutesPerJobLimit", "AssocMaxMemMinutesPerJob", "AssocMaxNodeMinutesPerJob",
                "AssocMaxGRESMinutesPerJob"),
}
MINUTE_REASONS = frozenset(r for table in (QOS_REASONS, ASSOC_REASONS) for rs in table.values() for r in rs)
"""Every reason a TRES-minutes limit gives a pending job."""


def limit_minutes(job: SimJob) -> int:
    """The job's time limit as slurmctld keeps it, in whole minutes (sbatch rounds seconds up;
    none: INFINITE)."""
    return math.ceil(job.limit / 60.0) if math.isfinite(job.limit) else INFINITE_MINUTES


def checked_minutes(job: SimJob) -> int:
    """The time limit in whole minutes the limits a pass checks see (acct_policy.c
    ``acct_policy_job_runnable_post_select``, ``acct_policy_job_runnable_pre_select``,
    ``_qos_job_runnable_pre_select``): :func:`limit_minutes`, times its QoS's UsageFactor when the QoS
    has Flags=UsageFactorSafe (``time_limit *= usage_factor`` on a ``uint32_t``: truncated), unless the
    limit is INFINITE and the factor not below 1."""
    minutes = limit_minutes(job)
    qos = job.qos
    if qos.usage_factor_safe and (minutes != INFINITE_MINUTES or qos.usage_factor < 1.0):
        return math.floor(minutes * qos.usage_factor)
    return minutes


def checked_limit(job: SimJob) -> float:
    """The job's time limit in seconds as the MaxWall checks of a pass compare it: its own, or with
    Flags=UsageFactorSafe on its QoS the minutes of :func:`checked_minutes`."""
    return job.limit if not job.qos.usage_factor_safe else checked_minutes(job) * 60.0


def job_minutes(tres: Tres, minutes: int) -> Tres:
    """``job_tres_time_limit``: each TRES times the limit in minutes."""
    return tres[0] * minutes, tres[1] * minutes, tres[2] * minutes, tres[3] * minutes


def _masked(limits: TresLimits, taken: set[str]) -> Vector | None:
    """``limits`` as a vector without the TRES in ``taken`` (None: nothing left)."""
    kept = tuple((name, amount) for name, amount in limits if name not in taken)
    return vector(kept) if kept else None


@dataclass(frozen=True, slots=True)
class MinuteLimits:
    """The TRES-minutes limits one QoS or association level imposes on a job (None: none of that
    kind), the reasons they give, and the usage key they are checked against."""

    key: Key
    grp: Vector | None
    run: Vector | None
    per_job: Vector | None
    reasons: dict[str, tuple[str, str, str, str]]

    @classmethod
    def of(cls, key: Key, grp: TresLimits, run: TresLimits, per_job: TresLimits, assoc: bool,
           taken: tuple[set[str], set[str], set[str]] = (set(), set(), set())) -> MinuteLimits | None:
        """The limits given, less the TRES ``taken`` (of each kind) by a QoS before (None: none left)."""
        limits = cls(key, _masked(grp, taken[0]), _masked(run, taken[1]), _masked(per_job, taken[2]),
                     ASSOC_REASONS if assoc else QOS_REASONS)
        return limits if (limits.grp, limits.run, limits.per_job) != (None, None, None) else None

    def alone(self, minutes: Tres, grp_too: bool, kinds: tuple[str, ...] = ("per_job", "run", "grp")) -> str:
        """The reason of the first of these limits of ``kinds``, in that order, the job's ``minutes``
        exceed by themselves, or "": MaxTRESMins, GrpTRESRunMins, and GrpTRESMins with ``grp_too`` (safe
        limits; strict checking at submission). Such a job can never run."""
        given = {"per_job": self.per_job, "run": self.run, "grp": self.grp if grp_too else None}
        for kind in kinds:
            limit = given[kind]
            if limit is not None:
                for i in range(4):
                    if minutes[i] and minutes[i] > limit[i]:
                        return self.reasons[kind][i]
        return ""


class _Running:
    """A running job as the usages count it: its TRES, start, limit, the keys it charges, its QoS's
    UsageFactor, when a QoS has NoDecay which of its keys charge undecayed (None: none), and the keys
    whose wall usage (GrpWall) it charges."""

    __slots__ = ("tres", "start", "limit_secs", "keys", "factor", "flat", "walls")

    def __init__(self, tres: Tres, start: float, minutes: int, keys: Sequence[Key], factor: float = 1.0,
                 flat: tuple[bool, ...] | None = None, walls: tuple[Key, ...] = ()) -> None:
        self.tres = tres
        self.start = start
        self.limit_secs = minutes * 60
        self.keys = tuple(keys)
        self.factor = factor
        self.flat = flat
        self.walls = walls


class MinuteUsage:
    """``usage_tres_raw`` and ``grp_used_tres_run_secs`` of every key that holds a Grp TRES-minutes
    limit, kept as slurmctld keeps them. ``decay``: (PriorityDecayHalfLife, PriorityCalcPeriod, its
    phase) of priority/multifactor's decay thread, None without one (priority/basic); ``safe``:
    AccountingStorageEnforce has ``safe``; ``start``: the replay's clock at its start; ``no_decay``: the
    keys of the QoS with Flags=NoDecay; ``reset``: PriorityUsageResetPeriod's calendar resets."""

    def __init__(self, decay: tuple[float, float, float] | None, safe: bool, start: float = 0.0,
                 no_decay: frozenset[Key] = frozenset(), reset: UsageReset | None = None) -> None:
        self.safe = safe
        self.decay = decay
        self.no_decay = no_decay
        self.reset = reset if decay is not None else None
        self.usage: dict[Key, list[float]] = {}
        self.run: dict[Key, list[float]] = {}
        self.wall: dict[Key, float] = {}
        """``grp_used_wall`` (decayed wall seconds) of each association key that sets GrpWall."""
        self.jobs: dict[int, _Running] = {}
        self.waiting = False
        """Whether a job was held by a usage that the decay thread's next run may lower (then the
        passes run again after it)."""
        self.wake = math.inf
        """The run that resets the usages, when only it may free a job a usage holds (inf: none)."""
        if decay is not None:
            half_life, period, phase = decay
            self.factor = 1.0 - 0.693 / half_life if half_life > 0 else 1.0
            self.period, self.phase = period, phase
            self.count = math.floor((start - phase) / period)
            self.last_ran = phase + self.count * period
            """The decay thread's last run (``g_last_ran``): the grid point at or before the start."""

    # ------------------------------------------------------------- the decay thread
    def next_run(self, now: float) -> float:
        """The decay thread's first run after ``now``."""
        return self.phase + (math.floor((now - self.phase) / self.period) + 1) * self.period

    def catch_up(self, now: float) -> None:
        """Apply every decay thread run up to ``now`` at its own instant."""
        if self.decay is None:
            return
        while True:
            at = self.phase + (self.count + 1) * self.period
            if at > now:
                return
            self.count += 1
            self._decay_run(at)

    def _decay_run(self, at: float) -> None:
        """One run of ``_decay_thread`` at ``at``: every usage set to 0 if a reset is due
        (``_reset_usage``), then decayed (``_apply_decay``, which skips a NoDecay QoS), then each running
        job charged since the last run (``_apply_new_usage``)."""
        if self.reset is not None and self.reset.due(at):
            for usage in self.usage.values():
                usage[:] = (0.0, 0.0, 0.0, 0.0)
            for key in self.wall:
                self.wall[key] = 0.0
            self.reset.advance(at)
        delta = at - self.last_ran
        if delta > 0 and self.factor != 1.0:
            real = max(self.factor ** delta, sys.float_info.min)  # DBL_MIN, as _decay_thread floors it
            no_decay = self.no_decay
            for key, usage in self.usage.items():
                if no_decay and key in no_decay:
                    continue
                for i in range(4):
                    usage[i] *= real
            for key in self.wall:  # an association's: _apply_decay decays every one
                self.wall[key] *= real
        for running in self.jobs.values():
            self._apply_new_usage(running, self.last_ran, at, at_end=False)
        self.last_ran = at

    def _apply_new_usage(self, running: _Running, start_period: float, end_period: float,
                         at_end: bool) -> None:
        """priority_multifactor.c ``_apply_new_usage``: the decayed TRES-seconds of the job's run from
        ``start_period`` (its start if later) to ``end_period`` added to each key's usage, and the
        seconds of its limit they stand for (all it had left, at its end) taken off its run seconds."""
        start_period = max(start_period, running.start)
        run_delta = max(0.0, end_period - start_period)
        limit_end = running.start + running.limit_secs
        if start_period >= limit_end:
            spent = 0.0
        elif at_end:
            spent = limit_end - start_period
        else:
            spent = min(run_delta, limit_end - start_period)
        run_decay = run_delta * self.factor ** run_delta
        factor = running.factor
        if factor != 1.0:  # the job's QoS's UsageFactor, on both usages of every key
            run_decay *= factor
            spent *= factor
        for key in running.walls:
            self.wall[key] += run_decay
        tres = running.tres
        flat = running.flat
        for k, key in enumerate(running.keys):
            usage, left = self.usage[key], self.run[key]
            charge = run_delta * factor if flat is not None and flat[k] else run_decay  # NoDecay: undecayed
            for i in range(4):
                if tres[i]:
                    usage[i] += charge * tres[i]
                    left[i] = max(0.0, left[i] - spent * tres[i])

    # ------------------------------------------------------------- starts and ends
    def began(self, job: SimJob, tres: Tres, keys: Sequence[Key], walls: tuple[Key, ...] = ()) -> None:
        """A job starts charging ``keys`` (and the wall usage of ``walls``): its TRES times its limit
        (times its QoS's UsageFactor,
        truncated to whole seconds) added to their run seconds (``_adjust_limit_usage``,
        ACCT_POLICY_JOB_BEGIN); one running since before the decay thread's last run (at the replay's
        start) less what it ran until then (times the factor), as ``_init_grp_used_tres_run_secs``
        takes it off when slurmctld restarts."""
        assert job.start is not None
        factor = job.qos.usage_factor
        flat = tuple(key in self.no_decay for key in keys) if self.no_decay else None
        running = self.jobs[job.job_id] = _Running(tres, job.start, limit_minutes(job), keys, factor, flat,
                                                    walls)
        for key in walls:
            self.wall.setdefault(key, 0.0)
        spent = max(0.0, self.last_ran - job.start) if self.decay is not None else 0.0
        secs = running.limit_secs
        if factor != 1.0:
            secs, spent = math.floor(secs * factor), spent * factor
        for key in keys:
            left = self.run.setdefault(key, [0.0, 0.0, 0.0, 0.0])
            self.usage.setdefault(key, [0.0, 0.0, 0.0, 0.0])
            for i in range(4):
                left[i] = max(0.0, left[i] + tres[i] * (secs - spent))

    def ended(self, job: SimJob, now: float) -> None:
        """A job ends now: its last stretch charged and its limit's rest released
        (``priority_p_job_end`` of the priority plugin)."""
        running = self.jobs.pop(job.job_id, None)
        if running is None:
            return
        if self.decay is not None:
            self._apply_new_usage(running, self.last_ran, now, at_end=True)
            return
        for key in running.keys:  # priority/basic: the whole limit taken off, no usage
            left = self.run[key]
            for i in range(4):
                left[i] = max(0.0, left[i] - running.tres[i] * running.limit_secs)

    # ------------------------------------------------------------- checks
    def holds(self, limits: MinuteLimits, minutes: Tres, cleared: bool = False) -> str:
        """The reason GrpTRESMins of ``limits`` holds a job of ``minutes`` for now, or ""
        (``_validate_tres_usage_limits`` with the usage in minutes as ``curr_usage``, the running
        jobs' minutes left as ``tres_usage``, ``safe_limits`` from AccountingStorageEnforce; both 0 when
        ``cleared``: the job's QoS's UsageFactor is 0)."""
        limit = limits.grp
        if limit is None:
            return ""
        usage = self.usage.get(limits.key) if not cleared else None
        left = self.run.get(limits.key) if not cleared else None
        for i in range(4):
            if limit[i] == math.inf:
                continue
            used = int(usage[i] / 60.0) if usage is not None else 0
            if minutes[i] and used >= limit[i]:
                return self._held(limits.reasons["grp"][i], limits.key)
            if self.safe:
                if minutes[i] > limit[i]:
                    return limits.reasons["grp"][i]
                running = int(left[i]) // 60 if left is not None else 0
                if minutes[i] and minutes[i] + running > limit[i] - used:
                    return self._held(limits.reasons["grp"][i], limits.key)
        return ""

    def holds_running(self, limits: MinuteLimits, minutes: Tres, cleared: bool = False) -> str:
        """The reason GrpTRESRunMins or MaxTRESMinsPerJob of ``limits`` holds the job for now, or ""
        (``_validate_tres_usage_limits`` with the running jobs' minutes left, 0 when ``cleared``, and
        ``safe_limits`` true, then ``_validate_tres_limits_for_qos``/``_for_assoc`` on the job's minutes)."""
        limit = limits.run
        if limit is not None:
            left = self.run.get(limits.key) if not cleared else None
            for i in range(4):
                if limit[i] == math.inf:
                    continue
                if minutes[i] > limit[i]:
                    return limits.reasons["run"][i]
                running = int(left[i]) // 60 if left is not None else 0
                if minutes[i] and minutes[i] + running > limit[i]:
                    return self._held(limits.reasons["run"][i])
        limit = limits.per_job
        if limit is not None:
            for i in range(4):
                if minutes[i] and minutes[i] > limit[i]:
                    return limits.reasons["per_job"][i]
        return ""

    def holds_wall(self, key: Key, limit: int, minutes: int, reason: str) -> str:
        """``reason`` if GrpWall ``limit`` (minutes) of association ``key`` holds a job of ``minutes`` now,
        else "" (acct_policy_job_runnable_pre_select: ``grp_used_wall / 60`` in whole minutes at or over
        it; with safe limits also that plus the job's limit over it)."""
        used = int(self.wall.get(key, 0.0) / 60.0)
        if used >= limit or (self.safe and used + minutes > limit):
            return self._held(reason, key)
        return ""

    def _held(self, reason: str, key: Key | None = None) -> str:
        """A usage holds a job (``key``'s GrpTRESMins usage; None: the running jobs' minutes left): the
        decay thread's next run may free it while jobs run or the usage decays, else only a reset may
        (then the passes run again at the run that resets), else nothing will."""
        if self.decay is None:
            return reason
        if self.jobs or (key is not None and self.factor != 1.0 and key not in self.no_decay):
            self.waiting = True
        elif key is not None and self.reset is not None:
            self.wake = min(self.wake, run_at(self.reset.boundary, self.period, self.phase))
        return reason
