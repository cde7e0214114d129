"""A QoS's UsageFactor and Flags=NoDecay, and PriorityUsageResetPeriod, in the usage fair share reads
(djsb/model/priority/accounts.py, charged by djsb/model/priority/multifactor.py) and in the usages
of the TRES-minutes limits (djsb/model/tres_minutes.py). Every expected number is worked by hand from
the Slurm 22.05 function cited: priority_multifactor.c ``_apply_new_usage`` (a running job's
``real_decay``, ``run_decay`` and ``tres_time_delta`` times its QoS's ``usage_factor``; a NoDecay QoS
charged ``run_delta`` undecayed), ``_apply_decay`` (a NoDecay QoS skipped), ``_decay_thread`` (at the
top of a run, ``now >= next_reset``: ``_reset_usage``, then the decay and the running jobs' charge),
``_next_reset`` (the calendar), ``_reset_usage`` (``usage_raw`` and ``usage_tres_raw`` of every
association and QoS to 0), acct_policy.c ``_adjust_limit_usage`` (a start adds TRES x limit x factor
to ``grp_used_tres_run_secs``), ``_qos_job_runnable_post_select`` / ``acct_policy_job_runnable_post_select``
(usages cleared when the factor is 0) and priority_basic.c ``priority_p_job_end`` (TRES x limit taken
off, no factor).

Every run is on one node of 4 cores with passes at every event (sched_interval 0), the decay thread
every PriorityCalcPeriod of 300 s from 0."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from support import FIVE_JOBS, assert_edited_experiment_error, reasons, starts

from djsb.errors import ConfigError
from djsb.model import ClusterSpec, QosSpec, SchedulerConfig, Simulation, StartState
from djsb.model.assoc_spec import AssocSpec
from djsb.model.cluster_spec import NodeSpec, PartitionSpec
from djsb.model.invariants import InvariantChecker
from djsb.model.priority.base import PriorityContext, PriorityPlugin
from djsb.model.priority.multifactor import MultifactorOptions, MultifactorPriority, MultifactorWeights
from djsb.model.usage_reset import next_reset
from djsb.simulate.experiment import load_experiment
from djsb.slurmsite.qos_text import parse_qos
from djsb.slurmsite.slurm_config import SlurmConfigError, from_slurm, priority_plugin
from djsb.workloads.job import TraceJob

DAY = 86400.0
CPU: Any = 0
"""The CPU's place in a usage vector (cpu, mem, node, gres/gpu)."""
ELEVEN_PM = DAY - 3600.0
"""A clock whose 0 is 23:00 on Thursday 1 January 1970 (UTC): its first midnight is at 3600 s."""


def job(job_id: int, submit: float, cpus: int, run: float, qos: str | None = None, user: str = "u1",
        limit: float | None = None) -> TraceJob:
    """A job of ``user`` in account a1 asking ``cpus`` for ``limit`` seconds (by default its run time)."""
    return TraceJob(job_id, submit, run, cpus, requested_time=run if limit is None else limit, user=user,
                    account="a1", qos=qos)


def multifactor(half_life: float = 0.0, reset: str = "none", **kwargs: Any) -> MultifactorPriority:
    """priority/multifactor with PriorityDecayHalfLife ``half_life`` (0: no decay), PriorityCalcPeriod
    300 s and PriorityUsageResetPeriod ``reset``."""
    return MultifactorPriority(MultifactorWeights(fairshare=1000), decay_half_life=half_life, calc_period=300.0,
                               usage_reset=reset, **kwargs)


def simulation(jobs: list[TraceJob], *qos: QosSpec, associations: tuple[AssocSpec, ...] = (),
               priority: PriorityPlugin | None = None, epoch: float = 0.0) -> Simulation:
    """``jobs`` on one node of 4 cores under the QoS ``qos`` (normal first), ``associations`` and
    ``priority`` (none: priority/basic), the clock's 0 at the Unix time ``epoch``."""
    spec = ClusterSpec((NodeSpec("n0", 4),), (PartitionSpec("batch"),), qos or (QosSpec("normal"),),
                       associations=associations)
    config = SchedulerConfig(sched_interval=0.0, bf_interval=0.0, bf_resolution=0.0, backfill="easy")
    return Simulation(jobs, spec, config, priority, checker=InvariantChecker(spec),
                      start=StartState(0.0, epoch=epoch))


def fair_share_usage(priority: MultifactorPriority, now: float) -> dict[str, float]:
    """Each user's RawUsage in the model's tree at ``now``."""
    priority.settle_usage(now)
    tree = priority.tree
    return {user: tree.usage(node, now) for (user, _), node in tree.users.items()}


def minutes_usage(sim: Simulation, key: tuple[str, ...]) -> list[float]:
    """The ``usage_tres_raw`` (TRES-seconds) of a QoS ``(name,)`` or association ``(user, account)``."""
    assert sim.limits.minutes is not None
    return sim.limits.minutes.usage[key]


# ------------------------------------------------------------------ UsageFactor


def test_usage_factor_multiplies_what_a_job_charges_to_fair_share() -> None:
    # No decay: _apply_new_usage charges billable_tres (the CPUs) x run_delta x usage_factor to the
    # association, every run and at the end. u1's job (QoS half, UsageFactor 0.5) 2 CPUs x 1000 s
    # charges 2 x 1000 x 0.5 = 1000; u2's (QoS normal, 1) 2 x 1000 = 2000; u3's (QoS free, 0) nothing.
    priority = multifactor()
    jobs = [job(1, 0, 2, 1000, "half"), job(2, 0, 2, 1000, user="u2"), job(3, 1000, 4, 500, "free", "u3")]
    simulation(jobs, QosSpec("normal"), QosSpec("half", usage_factor=0.5), QosSpec("free", usage_factor=0.0),
               priority=priority).run()
    assert fair_share_usage(priority, 2000.0) == {"u1": 1000.0, "u2": 2000.0, "u3": 0.0}


def test_usage_factor_multiplies_the_decayed_usage_too() -> None:
    # PriorityDecayHalfLife 1000 s. The model decays continuously (djsb/model/priority/accounts.py): a
    # rate r charged over [0, T] is worth r x integral of 2^-((T - t)/h) dt = r h / ln 2 x (1 - 2^-(T/h))
    # at T. u1's job, 4 CPUs in QoS double (UsageFactor 2) over [0, 1000]: r = 8, T = h:
    # 8 x 1000 / ln 2 x 1/2 = 4000 / ln 2 = 5770.78 cpu-s at 1000.
    priority = multifactor(1000.0)
    simulation([job(1, 0, 4, 1000, "double")], QosSpec("normal"), QosSpec("double", usage_factor=2.0),
               priority=priority).run()
    assert fair_share_usage(priority, 1000.0)["u1"] == pytest.approx(4000.0 / math.log(2), rel=1e-12)


def test_usage_factor_multiplies_the_grp_tres_mins_usage_of_the_qos_and_the_association() -> None:
    # No decay (decay_factor 1). Job 1, 4 CPUs in QoS normal (UsageFactor 0.5), runs [0, 1800): each
    # decay thread run at 300, ..., 1800 adds tres_run_decay = 4 x 300 x 0.5 = 600 cpu-s to the QoS and
    # to a1: 3600 cpu-s = 60 min at 1800. Job 2 (1 CPU, 1 min) at 1800: 60 < 90 (GrpTRESMins cpu=90),
    # it starts at once; its end at 1860 adds 1 x 60 x 0.5 = 30: 3630 cpu-s.
    jobs = [job(1, 0, 4, 1800), job(2, 1800, 1, 60)]
    half = QosSpec("normal", grp_tres_mins=(("cpu", 90),), usage_factor=0.5)
    sim = simulation(jobs, half, associations=(AssocSpec("a1", grp_tres_mins=(("cpu", 100000),)),),
                     priority=multifactor())
    assert starts(sim.run()) == {1: 0, 2: 1800}
    assert minutes_usage(sim, ("normal",))[CPU] == 3630.0
    assert minutes_usage(sim, ("", "a1"))[CPU] == 3630.0
    # UsageFactor 1: 4 x 1800 = 7200 cpu-s = 120 min >= 90, never decaying: job 2 never starts
    full = simulation(jobs, QosSpec("normal", grp_tres_mins=(("cpu", 90),)), priority=multifactor()).run()
    assert list(full.rejected["job_id"]) == [2]
    assert "QOSGrpCPUMinutesLimit" in full.rejected["reason"].iloc[0]


def test_a_qos_with_usage_factor_0_is_checked_as_if_no_usage_were_kept() -> None:
    # a1 GrpTRESMins cpu=90, no decay. Job 1 (QoS normal) 4 CPUs x 1800 s: a1's usage 7200 cpu-s =
    # 120 min. At 1800 job 2 (QoS free, UsageFactor 0) finds a1's usage cleared ("Clear usage if factor
    # is 0 so that jobs can run", acct_policy_job_runnable_post_select) and starts; job 3 (QoS normal)
    # finds 120 >= 90 and never starts.
    jobs = [job(1, 0, 4, 1800), job(2, 1800, 1, 60, "free"), job(3, 1800, 1, 60)]
    result = simulation(jobs, QosSpec("normal"), QosSpec("free", usage_factor=0.0),
                        associations=(AssocSpec("a1", grp_tres_mins=(("cpu", 90),)),),
                        priority=multifactor()).run()
    assert starts(result) == {1: 0, 2: 1800}
    assert list(result.rejected["job_id"]) == [3]


def test_usage_factor_multiplies_the_run_minutes_a_start_adds() -> None:
    # a1 GrpTRESRunMins cpu=150. Job 1, 2 CPUs x 60 min in QoS normal (UsageFactor 0.5): its start adds
    # 2 x 3600 x 0.5 = 3600 s = 60 min (_adjust_limit_usage: time_limit_secs *= usage_factor). Job 2,
    # 1 CPU x 60 min (its own minutes not multiplied without UsageFactorSafe): 60 + 60 <= 150, starts at
    # 0 too. With UsageFactor 1 job 1 adds 120 min: 60 + 120 > 150, job 2 waits until the decay thread
    # has taken 30 min off (2 CPUs x 300 s = 10 min a run): at 900.
    jobs = [job(1, 0, 2, 3600), job(2, 0, 1, 3600)]
    limit = (AssocSpec("a1", grp_tres_run_mins=(("cpu", 150),)),)
    half = QosSpec("normal", usage_factor=0.5)
    assert starts(simulation(jobs, half, associations=limit, priority=multifactor()).run()) == {1: 0, 2: 0}
    assert starts(simulation(jobs, associations=limit, priority=multifactor()).run()) == {1: 0, 2: 900}


def test_under_priority_basic_a_job_s_end_takes_off_its_minutes_without_the_factor() -> None:
    # priority/basic, a1 GrpTRESRunMins cpu=150, QoS normal UsageFactor 2. Job 1, 2 CPUs x 60 min:
    # 0 + 120 <= 150, it starts; its start adds 2 x 3600 x 2 = 14400 s (_adjust_limit_usage), its end at
    # 3600 takes off 2 x 3600 = 7200 s only (priority_basic.c priority_p_job_end has no factor): 120 min
    # are left for good. Job 2, 1 CPU x 60 min at 3600: 60 + 120 > 150, it never starts.
    jobs = [job(1, 0, 2, 3600), job(2, 3600, 1, 3600)]
    sim = simulation(jobs, QosSpec("normal", usage_factor=2.0),
                     associations=(AssocSpec("a1", grp_tres_run_mins=(("cpu", 150),)),))
    result = sim.run()
    assert starts(result) == {1: 0}
    assert sim.limits.minutes is not None and sim.limits.minutes.run[("", "a1")][CPU] == 7200.0
    assert "AssocGrpCPURunMinutesLimit" in result.rejected["reason"].iloc[0]


# ------------------------------------------------------------------ NoDecay


def test_no_decay_keeps_the_qos_s_usage_and_decays_the_association_s() -> None:
    # PriorityDecayHalfLife 1 h (decay_factor d = 1 - 0.693 / 3600), job 1 4 CPUs over [0, 1800), QoS
    # normal with Flags=NoDecay. Its QoS's usage_tres_raw: _apply_decay skips it and _apply_new_usage
    # charges tres_run_nodecay = 4 x 300 (run_delta undecayed) each run: 7200 cpu-s = 120 min at 1800,
    # and after. With GrpTRESMins cpu=90 on the QoS, job 2 (1 CPU, 1 min, at 1800) never starts; with
    # it on a1 instead, a1's usage decays as without the flag (tests/test_model_tres_minutes.py works
    # it: 98.51 min at 1800, 87.77 at 2400): job 2 starts at 2400.
    jobs = [job(1, 0, 4, 1800), job(2, 1800, 1, 60)]
    sim = simulation(jobs, QosSpec("normal", grp_tres_mins=(("cpu", 90),), no_decay=True),
                     priority=multifactor(3600.0))
    result = sim.run()
    assert starts(result) == {1: 0}
    assert minutes_usage(sim, ("normal",))[CPU] == 7200.0
    assert "QOSGrpCPUMinutesLimit" in result.rejected["reason"].iloc[0]
    on_assoc = simulation(jobs, QosSpec("normal", no_decay=True),
                          associations=(AssocSpec("a1", grp_tres_mins=(("cpu", 90),)),),
                          priority=multifactor(3600.0)).run()
    assert starts(on_assoc) == {1: 0, 2: 2400}
    assert reasons(on_assoc)[2] == "AssocGrpCPUMinutesLimit"


def test_no_decay_leaves_fair_share_as_it_was() -> None:
    # The association's usage_raw is decayed and charged decayed whatever its job's QoS's flags
    # (_apply_decay, _apply_new_usage): the same usage with NoDecay as without.
    usage = []
    for flag in (False, True):
        priority = multifactor(1000.0)
        simulation([job(1, 0, 4, 1000)], QosSpec("normal", no_decay=flag), priority=priority).run()
        usage.append(fair_share_usage(priority, 1000.0)["u1"])
    assert usage[0] == usage[1] == pytest.approx(4 * 500.0 / math.log(2), rel=1e-12)


# ------------------------------------------------------------------ PriorityUsageResetPeriod


@pytest.mark.parametrize(("period", "last", "now", "expected"), [
    # 1970-01-01 was a Thursday (tm_wday 4): DAILY the next midnight, WEEKLY 7 - 4 = 3 days on (Sunday 4th)
    ("daily", 0.0, 0.0, DAY),
    ("weekly", 0.0, 0.0, 3 * DAY),
    # from noon on Sunday 4th: 7 - 0 days after its midnight, Sunday 11th
    ("weekly", 3.5 * DAY, 3.5 * DAY, 10 * DAY),
    # MONTHLY from the 15th of January: 1 February, day 31; from 10 December 1970: 1 January 1971, day 365
    ("monthly", 14 * DAY, 14 * DAY, 31 * DAY),
    ("monthly", 343 * DAY, 343 * DAY, 365 * DAY),
    # QUARTERLY from 31 March (tm_mon 2 < 3): 1 April, day 31 + 28 + 31 = 90; from 1 April (tm_mon 3):
    # 1 July, day 90 + 30 + 31 + 30 = 181; from 5 November: 1 January 1971
    ("quarterly", 89 * DAY, 89 * DAY, 90 * DAY),
    ("quarterly", 90 * DAY, 90 * DAY, 181 * DAY),
    ("quarterly", 308 * DAY, 308 * DAY, 365 * DAY),
    ("yearly", 151 * DAY, 151 * DAY, 365 * DAY),
    # DAILY skips the midnights a whole day behind the clock: from 0 with the clock at day 5 + 10 s,
    # tmp = 1 day, raised while tmp + 1 day < now: 5 days (the last midnight, already passed)
    ("daily", 0.0, 5 * DAY + 10, 5 * DAY),
])
def test_next_reset_is_slurm_s_calendar(period: str, last: float, now: float, expected: float) -> None:
    assert next_reset(period, last, now) == expected


def test_a_daily_reset_zeroes_the_grp_tres_mins_usage_and_keeps_the_running_job_s_last_stretch() -> None:
    # The clock's 0 is 23:00 (epoch 23 h): _next_reset(DAILY, last_reset = the start) is the midnight at
    # 3600. No decay; job 1, 1 CPU over [0, 4200), QoS GrpTRESMins cpu=100000 (so the usage is kept).
    # Runs at 300, ..., 3300 add 300 each: 3300. The run at 3600 resets it to 0 first, then charges job
    # 1's run_delta since 3300: 300; 3900: 600; its end at 4200: 900 cpu-s.
    sim = simulation([job(1, 0, 1, 4200)], QosSpec("normal", grp_tres_mins=(("cpu", 100000),)),
                     priority=multifactor(reset="daily"), epoch=ELEVEN_PM)
    sim.run()
    assert minutes_usage(sim, ("normal",))[CPU] == 900.0
    # without the reset: 4200
    kept = simulation([job(1, 0, 1, 4200)], QosSpec("normal", grp_tres_mins=(("cpu", 100000),)),
                      priority=multifactor(), epoch=ELEVEN_PM)
    kept.run()
    assert minutes_usage(kept, ("normal",))[CPU] == 4200.0


def test_a_daily_reset_frees_a_job_held_by_grp_tres_mins() -> None:
    # Clock 0 at midnight (epoch 0): the first boundary is the next midnight, 86400, a decay thread run
    # (288 x 300). Job 1, 4 CPUs x 1800 s: 120 min of usage, never decaying. Job 2 (1 CPU, 1 min, at
    # 3600): 120 >= 90, held until the run at 86400 resets the usage to 0, where it starts.
    jobs = [job(1, 0, 4, 1800), job(2, 3600, 1, 60)]
    result = simulation(jobs, QosSpec("normal", grp_tres_mins=(("cpu", 90),)),
                        priority=multifactor(reset="daily")).run()
    assert starts(result) == {1: 0, 2: DAY}
    assert reasons(result)[2] == "QOSGrpCPUMinutesLimit"


def test_a_daily_reset_zeroes_fair_share_and_keeps_what_the_running_jobs_ran_since_the_last_run() -> None:
    # Clock 0 at 23:00, no decay, midnight at 3600 (a run). u2's job, 2 CPUs over [0, 1000): 2000,
    # charged at its end. u1's job, 1 CPU over [0, 4200). The run at 3600 sets every usage_raw to 0
    # (_reset_usage), then charges u1's job since the run before, 3300: 300 (_apply_new_usage); then
    # u1 goes on to 300 + 600 = 900 at its end. u2 keeps 0.
    priority = multifactor(reset="daily")
    simulation([job(1, 0, 1, 4200), job(2, 0, 2, 1000, user="u2")], priority=priority, epoch=ELEVEN_PM).run()
    assert fair_share_usage(priority, 5000.0) == {"u1": 900.0, "u2": 0.0}
    assert priority.tree.root.total == 900.0
    none = multifactor()
    simulation([job(1, 0, 1, 4200), job(2, 0, 2, 1000, user="u2")], priority=none, epoch=ELEVEN_PM).run()
    assert fair_share_usage(none, 5000.0) == {"u1": 4200.0, "u2": 2000.0}


def test_now_drops_the_usage_the_replay_starts_with() -> None:
    # PriorityUsageResetPeriod=NOW: _reset_usage at the decay thread's first run, when slurmctld starts:
    # the 5000 cpu-s sshare gave u1 are gone at the start; NONE keeps them.
    spec = ClusterSpec((NodeSpec("n0", 4),), (PartitionSpec("batch"),))
    for period, expected in (("now", 0.0), ("none", 5000.0)):
        priority = multifactor(reset=period, usage={("u1", "a1"): 5000.0})
        priority.setup(PriorityContext(spec, (("u1", "a1"),)))
        assert fair_share_usage(priority, 0.0) == {"u1": expected}


# ------------------------------------------------------------------ where they are read


def test_sacctmgr_s_usage_factor_and_no_decay_are_read() -> None:
    # sacctmgr prints UsageFactor as 0.500000 and a QoS's flags comma-separated (NoDecay)
    line = "half|0|||DenyOnLimit,NoDecay|||||||||||||||0.500000"
    table = parse_qos(f"normal|0{'|' * 18}1.000000\n{line}\n")
    assert table.qos == (QosSpec("normal"), QosSpec("half", deny_on_limit=True, usage_factor=0.5,
                                                     no_decay=True))
    with pytest.raises(ConfigError) as raised:
        parse_qos(f"normal|0{'|' * 18}-1\n", "qos.txt", "--qos")
    assert "UsageFactor '-1' is not a number >= 0" in str(raised.value) and "--qos" in str(raised.value)


def test_priority_usage_reset_period_is_read_from_slurm_conf() -> None:
    assert from_slurm(MultifactorOptions, {"PriorityUsageResetPeriod": "QUARTERLY"})["usage_reset"] == "quarterly"
    assert from_slurm(MultifactorOptions, {})["usage_reset"] == "none"
    factory, _ = priority_plugin({"PriorityType": "priority/multifactor", "PriorityUsageResetPeriod": "Daily"})
    plugin = factory()
    assert isinstance(plugin, MultifactorPriority) and plugin.usage_reset == "daily"
    with pytest.raises(SlurmConfigError, match="PriorityUsageResetPeriod = 'FORTNIGHTLY': not one of NONE"):
        from_slurm(MultifactorOptions, {"PriorityUsageResetPeriod": "FORTNIGHTLY"})


SIMULATE = FIVE_JOBS + """\
cluster:
  nodes:
    - {count: 1, cores: 4}
  qos:
    - {name: normal, usage_factor: 0.5, no_decay: true}
policy:
  priority: {plugin: multifactor, usage_reset: weekly}
"""
"""A simulate config with a QoS's UsageFactor and NoDecay (line 7) and a reset period (line 9)."""


def test_the_settings_are_read_from_a_config(tmp_path: Path) -> None:
    path = tmp_path / "sim.yaml"
    path.write_text(SIMULATE)
    experiment = load_experiment(path)
    assert experiment.cluster.qos[0] == QosSpec("normal", usage_factor=0.5, no_decay=True)
    priority = experiment.priority
    assert isinstance(priority, MultifactorPriority) and priority.usage_reset == "weekly"


@pytest.mark.parametrize(("old", "new", "line", "key", "needle"), [
    ("usage_factor: 0.5", "usage_factor: -1", 7, "cluster.qos[0].usage_factor", "must be a finite number >= 0"),
    ("no_decay: true", "no_decay: often", 7, "cluster.qos[0].no_decay", "true or false"),
    ("usage_reset: weekly", "usage_reset: fortnightly", 9, "policy.priority.usage_reset",
     "expected one of none, now, daily"),
])
def test_a_bad_setting_is_blamed_at_its_line(tmp_path: Path, old: str, new: str, line: int, key: str,
                                             needle: str) -> None:
    assert_edited_experiment_error(tmp_path, SIMULATE, old, new, line, key, needle)
