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

Not modelled: a QoS's UsageFactor and NoDecay flag, PriorityUsageResetPeriod, usage a site had
before the replay, and the default time limit ``_validate_time_limit`` derives for a job asking
none (limit / TRES).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from djsb.model.job import SimJob
from djsb.model.tres import Tres, TresLimits, vector

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

    def alone(self, minutes: Tres, grp_too: bool) -> str:
        """The reason of the first of these limits the job's ``minutes`` exceed by themselves, or "":
        MaxTRESMins, GrpTRESRunMins, and GrpTRESMins with ``grp_too`` (safe limits; strict checking at
        submission). Such a job can never run."""
        kinds = (("per_job", self.per_job), ("run", self.run), ("grp", self.grp if grp_too else None))
        for kind, limit in kinds:
            if limit is not None:
                for i in range(4):
                    if minutes[i] and minutes[i] > limit[i]:
                        return self.reasons[kind][i]
        return ""


class _Running:
    """A running job as the usages count it: its TRES, start, limit and the keys it charges."""

    __slots__ = ("tres", "start", "limit_secs", "keys")

    def __init__(self, tres: Tres, start: float, minutes: int, keys: Sequence[Key]) -> None:
        self.tres = tres
        self.start = start
        self.limit_secs = minutes * 60
        self.keys = tuple(keys)


class MinuteUsage:
    """``usage_tres_raw`` and ``grp_used_tres_run_secs`` of every key that holds a Grp TRES-minutes
    limit, kept as slurmctld keeps them. ``decay``: (PriorityDecayHalfLife, PriorityCalcPeriod, its
    phase) of priority/multifactor's decay thread, None without one (priority/basic); ``safe``:
    AccountingStorageEnforce has ``safe``; ``start``: the replay's clock at its start."""

    def __init__(self, decay: tuple[float, float, float] | None, safe: bool, start: float = 0.0) -> None:
        self.safe = safe
        self.decay = decay
        self.usage: dict[Key, list[float]] = {}
        self.run: dict[Key, list[float]] = {}
        self.jobs: dict[int, _Running] = {}
        self.waiting = False
        """Whether a job was held by a usage that the decay thread's next run may lower (then the
        passes run again after it)."""
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
        """One run of ``_decay_thread`` at ``at``: decay every usage (``_apply_decay``), then charge
        each running job since the last run (``_apply_new_usage``)."""
        delta = at - self.last_ran
        if delta > 0 and self.factor != 1.0:
            real = max(self.factor ** delta, sys.float_info.min)  # DBL_MIN, as _decay_thread floors it
            for usage in self.usage.values():
                for i in range(4):
                    usage[i] *= real
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
        tres = running.tres
        for key in running.keys:
            usage, left = self.usage[key], self.run[key]
            for i in range(4):
                if tres[i]:
                    usage[i] += run_decay * tres[i]
                    left[i] = max(0.0, left[i] - spent * tres[i])

    # ------------------------------------------------------------- starts and ends
    def began(self, job: SimJob, tres: Tres, keys: Sequence[Key]) -> None:
        """A job starts charging ``keys``: its TRES times its limit added to their run seconds
        (``_adjust_limit_usage``, ACCT_POLICY_JOB_BEGIN); one running since before the decay
        thread's last run (at the replay's start) less what it ran until then, as
        ``_init_grp_used_tres_run_secs`` takes it off when slurmctld restarts."""
        assert job.start is not None
        running = self.jobs[job.job_id] = _Running(tres, job.start, limit_minutes(job), keys)
        spent = max(0.0, self.last_ran - job.start) if self.decay is not None else 0.0
        for key in keys:
            left = self.run.setdefault(key, [0.0, 0.0, 0.0, 0.0])
            self.usage.setdefault(key, [0.0, 0.0, 0.0, 0.0])
            for i in range(4):
                left[i] = max(0.0, left[i] + tres[i] * (running.limit_secs - spent))

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
    def holds(self, limits: MinuteLimits, minutes: Tres) -> str:
        """The reason GrpTRESMins of ``limits`` holds a job of ``minutes`` for now, or ""
        (``_validate_tres_usage_limits`` with the usage in minutes as ``curr_usage``, the running
        jobs' minutes left as ``tres_usage``, ``safe_limits`` from AccountingStorageEnforce)."""
        limit = limits.grp
        if limit is None:
            return ""
        usage = self.usage.get(limits.key)
        left = self.run.get(limits.key)
        for i in range(4):
            if limit[i] == math.inf:
                continue
            used = int(usage[i] / 60.0) if usage is not None else 0
            if minutes[i] and used >= limit[i]:
                return self._held(limits.reasons["grp"][i])
            if self.safe:
                if minutes[i] > limit[i]:
                    return limits.reasons["grp"][i]
                running = int(left[i]) // 60 if left is not None else 0
                if minutes[i] and minutes[i] + running > limit[i] - used:
                    return self._held(limits.reasons["grp"][i])
        return ""

    def holds_running(self, limits: MinuteLimits, minutes: Tres) -> str:
        """The reason GrpTRESRunMins or MaxTRESMinsPerJob of ``limits`` holds the job for now, or ""
        (``_validate_tres_usage_limits`` with the running jobs' minutes left and ``safe_limits``
        true, then ``_validate_tres_limits_for_qos``/``_for_assoc`` on the job's minutes)."""
        limit = limits.run
        if limit is not None:
            left = self.run.get(limits.key)
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

    def _held(self, reason: str) -> str:
        """A usage holds a job: with a decay thread, its next run may free it."""
        if self.decay is not None:
            self.waiting = True
        return reason
