"""A calibration under fair share, without a cluster: the association tree and usage read from
sacctmgr's and sshare's answers (texts in the formats Slurm 22.05 prints), the users dealt to
accounts, and the usage the model accrues against a hand-worked integral of decayed CPU-seconds."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from djsb.calibrate.fairshare import decay_tolerance, end_charge_note, model_usage, snapshot, usage_table
from djsb.calibrate.spec import with_accounts
from djsb.model import ClusterSpec, NodeSpec, PartitionSpec, Simulation, StartState
from djsb.model.priority.accounts import AccountSpec
from djsb.model.priority.multifactor import MultifactorPriority, MultifactorWeights
from djsb.slurmsite.slurm_config import parse_associations, parse_sshare_usage, priority_plugin
from djsb.workloads.job import TraceJob

# sacctmgr --noheader --parsable2 show associations format=Account,User,ParentName,Share
ASSOCIATIONS = """\
root|||1
root|root||1
cal_a|||40
cal_a|root||1
cal_b|||30
cal_b|root||1
cal_c|||30
cal_c|root||1
"""
# sshare --all --noheader --parsable2 --format=Account,User,RawUsage: accounts indented by depth
SSHARE = """\
root||5400
 root|root|0
 cal_a||3000
  cal_a|root|3000
 cal_b||2400
  cal_b|root|2400
 cal_c||0
  cal_c|root|0
"""
START = 1_764_000_000.0
"""A Unix second: the model runs on Slurm's clock in a calibration."""


def test_associations_from_sacctmgr() -> None:
    tree = parse_associations(ASSOCIATIONS)
    assert tree.accounts == {"cal_a": AccountSpec("root", 40), "cal_b": AccountSpec("root", 30),
                             "cal_c": AccountSpec("root", 30)}
    assert tree.user_shares == {"root": 1.0}
    assert tree.pairs == (("root", "root"), ("root", "cal_a"), ("root", "cal_b"), ("root", "cal_c"))
    assert tree.notes == ()
    odd = parse_associations(ASSOCIATIONS.replace("cal_b|root||1", "cal_b|root||5").replace("cal_c|||30",
                                                                                             "cal_c|||parent"))
    assert odd.accounts["cal_c"] == AccountSpec("root", 1.0)
    assert odd.notes == ("user root has RawShares 1 and 5 in different accounts: the model gives it 1 in every one",
                         "association cal_c: Share 'parent' counts as 1")


def test_usage_from_sshare_keeps_user_associations() -> None:
    assert parse_sshare_usage(SSHARE) == {("root", "root"): 0.0, ("root", "cal_a"): 3000.0,
                                          ("root", "cal_b"): 2400.0, ("root", "cal_c"): 0.0}


def test_multifactor_takes_sacctmgrs_shares_and_sshares_usage() -> None:
    config = {"PriorityType": "priority/multifactor", "PriorityWeightFairShare": "1000",
              "PriorityDecayHalfLife": "00:10:00", "PriorityCalcPeriod": "00:01:00", "BOOT_TIME": "1795627508"}
    factory, notes = priority_plugin(config, parse_associations(ASSOCIATIONS), parse_sshare_usage(SSHARE),
                                     decay_runs=[(1795627570.2, 1795627570.4)])
    plugin = factory()
    assert notes == ["the decay thread was seen recomputing the priorities in 1 interval(s): the model's "
                     "recomputations fall 10.30 s (± 0.10) into its 60 s period"]
    assert isinstance(plugin, MultifactorPriority)
    assert plugin.accounts["cal_a"] == AccountSpec("root", 40)
    assert plugin.usage[("root", "cal_b")] == 2400.0
    assert (plugin.decay_half_life, plugin.calc_period) == (600.0, 60.0)


def test_users_are_dealt_to_accounts_in_order_of_their_first_job() -> None:
    jobs = [TraceJob(i, float(i), 10.0, 1, user=user) for i, user in enumerate(["u7", "u2", "u7", "u9", "u4"])]
    dealt = with_accounts(jobs, ("a", "b", "c"))
    assert [job.account for job in dealt] == ["a", "b", "a", "c", "a"]
    assert with_accounts(jobs, ()) == jobs


def test_model_usage_is_the_decayed_cpu_seconds_of_the_jobs() -> None:
    # Half-life h = 600 s. cal_a starts with 1000 CPU-s and runs 2 CPUs for 100 s; cal_b 1 CPU for
    # 50 s (both from their start, about a second after START: the first pass). At T = START+200 a
    # job's usage is cpus * int_start^end 2^(-(T-t)/h) dt = cpus * h/ln2 * (2^(-(T-end)/h) - 2^(-(T-start)/h)),
    # the initial usage 1000 * 2^(-200/h)
    h, t = 600.0, START + 200
    plugin = MultifactorPriority(MultifactorWeights(fairshare=1000), decay_half_life=h, calc_period=60,
                                 accounts={"cal_a": AccountSpec(), "cal_b": AccountSpec()},
                                 usage={("root", "cal_a"): 1000.0})
    cluster = ClusterSpec((NodeSpec("n1", 4),), (PartitionSpec("p"),))
    jobs = [TraceJob(1, START, 100.0, 2, requested_time=120.0, user="root", account="cal_a"),
            TraceJob(2, START, 50.0, 1, requested_time=60.0, user="root", account="cal_b")]
    ran = Simulation(jobs, cluster, priority=plugin, start=StartState(START)).run().jobs.set_index("job_id")
    assert (ran["end"] - ran["start"]).tolist() == [100.0, 50.0]
    usage = model_usage(plugin, t)

    def charged(job: int, cpus: int) -> float:
        return cpus * h / math.log(2) * (2 ** (-(t - ran.loc[job, "end"]) / h) - 2 ** (-(t - ran.loc[job, "start"]) / h))

    assert usage[("root", "cal_a")] == pytest.approx(1000 * 2 ** (-200 / h) + charged(1, 2))
    assert usage[("root", "cal_b")] == pytest.approx(charged(2, 1))

    # sshare before and after, against the model: accrued = after - before on each side
    sshare = pd.concat([snapshot("before", START, "cal_a|root|1000\ncal_b|root|0\n"),
                        snapshot("after", START + 200, "cal_a|root|1180\ncal_b|root|48\n")])
    table = usage_table(sshare, plugin).set_index("account")
    assert table.loc["cal_a", "slurm_accrued"] == 180.0
    assert table.loc["cal_a", "model_accrued"] == pytest.approx(usage[("root", "cal_a")] - 1000)
    assert table.loc["cal_b", "difference"] == pytest.approx(usage[("root", "cal_b")] - 48)


def test_decay_tolerance_by_hand() -> None:
    # one calc period of undecayed usage, 1 - 2^(-P/h), plus P ln2 / h
    assert decay_tolerance(3600.0, 60.0) == pytest.approx((1 - 2 ** (-1 / 60)) + math.log(2) / 60)
    assert decay_tolerance(0.0, 60.0) == 0.0


def test_job_size_factor_as_slurm_computes_it() -> None:
    # 4 nodes of 2 CPUs: a 3-CPU job on its minimum of 1 node weighs (1/4 + 3/8) / 2 = 0.3125 with
    # PriorityWeightJobSize 10000: 3125; favouring small jobs ((4-1)/4 + (8-3)/8) / 2 = 0.6875
    cluster = ClusterSpec(tuple(NodeSpec(f"n{i}", 2) for i in range(1, 5)), (PartitionSpec("p"),))
    for favor_small, expected in ((False, 3125.0), (True, 6875.0)):
        plugin = MultifactorPriority(MultifactorWeights(job_size=10000), favor_small=favor_small, job_size="slurm")
        sim = Simulation([TraceJob(1, 0.0, 10.0, 8, requested_time=60.0), TraceJob(2, 0.0, 10.0, 3, requested_time=60.0)],
                         cluster, priority=plugin)
        sim.run()
        assert sim.jobs[2].priority == expected


def test_usage_charged_at_a_jobs_end_only_when_limits_are_enforced() -> None:
    assert end_charge_note({"AccountingStorageEnforce": "associations,limits,qos"}) == []
    assert end_charge_note({"AccountingStorageEnforce": "safe"}) == []  # safe implies limits
    assert end_charge_note({"AccountingStorageEnforce": "none"}) == [
        "AccountingStorageEnforce = none: Slurm charges a job's fair-share usage only at its decay thread's "
        "runs while the job runs, not the rest at its end (acct_policy.c); the model charges all of it"]


@pytest.mark.parametrize(("phase", "first"), [(0.0, 2), (25.0, 3)])
def test_priorities_are_recomputed_when_the_decay_thread_runs(phase: float, first: int) -> None:
    # One CPU. Job 1 (account a) runs 0-50; jobs 2 (a) and 3 (b) queue at 1 and 10 with equal
    # priority (no usage yet at the start's computation): 2 ahead. Recomputations fall at
    # phase + k * 60: with phase 0 the next is at 60, after job 1 ended, so job 2 starts at 50;
    # with phase 25 the one due at 25 runs at the pass of job 1's end, when a has usage and b none:
    # job 3 goes ahead and starts at 50. (Recomputing at the first pass, at 10, would start 3 either way.)
    plugin = MultifactorPriority(MultifactorWeights(fairshare=1000), calc_period=60, calc_phase=phase,
                                 accounts={"a": AccountSpec(), "b": AccountSpec()})
    cluster = ClusterSpec((NodeSpec("n1", 1),), (PartitionSpec("p"),))
    jobs = [TraceJob(1, 0.0, 50.0, 1, requested_time=60.0, account="a"),
            TraceJob(2, 1.0, 10.0, 1, requested_time=60.0, account="a"),
            TraceJob(3, 10.0, 10.0, 1, requested_time=60.0, account="b")]
    ran = Simulation(jobs, cluster, priority=plugin).run().jobs.set_index("job_id")
    assert ran.loc[1, "end"] == ran.loc[first, "start"]
    assert ran["start"].idxmin() == 1 and ran.drop(index=1)["start"].idxmin() == first
