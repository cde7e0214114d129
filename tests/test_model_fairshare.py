"""Priority plugins worked by hand: multifactor and fair share (paper 004 eq. 2.1-2.6) on small
trees, and PSP+AGING (paper 000 Table 1 and eq. 1)."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from fractions import Fraction

import pytest

from djsb.model import ClusterSpec, SchedulerConfig, Simulation
from djsb.model.cluster_state import ClusterState
from djsb.model.job import SimJob
from djsb.model.priority import (
    AccountSpec,
    AccountTree,
    FifoPriority,
    MultifactorPriority,
    MultifactorWeights,
    PriorityContext,
    PspAgingPriority,
    marenostrum4,
)
from djsb.model.priority.classic import classic_factors
from djsb.model.priority.fair_tree import fair_tree_factors
from djsb.model.priority.psp import group_priority
from djsb.workloads.job import TraceJob


def tree_with_usage(usage: Mapping[tuple[str, str], float], accounts: dict[str, AccountSpec] | None = None,
                    user_shares: dict[str, float] | None = None) -> AccountTree:
    tree = AccountTree(usage, accounts, user_shares, half_life=0)
    for (user, account), amount in usage.items():
        tree.add_usage(user, account, amount, 0.0)
    tree.settle(0.0)
    return tree


def assert_ranked_as_a_fresh_tree(live: AccountTree, pairs: list[tuple[str, str]],
                                  accounts: dict[str, AccountSpec]) -> None:
    """``live``'s Fair Tree factors (kept up to date charge by charge) equal those of a tree built
    from scratch with the same usage."""
    live.settle(0.0)
    factors = fair_tree_factors(live)
    fresh = AccountTree(pairs, accounts, half_life=0)
    for key, assoc in live.users.items():
        fresh.add_usage(*key, assoc.total, 0.0)
    fresh.settle(0.0)
    assert factors == fair_tree_factors(fresh)


def test_classic_flat_is_eq_2_5() -> None:
    # Users under root with RawShares 1, 1, 2 (t_s = 4) and usage 30, 10, 0 (t_u = 40):
    # f = 2^(-(ru/t_u)/(rs/t_s)): A 2^-(0.75/0.25) = 0.125, B 2^-(0.25/0.25) = 0.5, C 2^0 = 1.
    tree = tree_with_usage({("A", "root"): 30, ("B", "root"): 10, ("C", "root"): 0},
                           user_shares={"A": 1, "B": 1, "C": 2})
    assert classic_factors(tree) == {("A", "root"): 0.125, ("B", "root"): 0.5, ("C", "root"): 1.0}


def test_classic_normalized_shares_down_the_tree() -> None:
    # root -> X (1), Y (3); X -> a, b; Y -> c. S_a = S_b = 1/2 * 1/4 = 1/8, S_c = 3/4.
    # Usage a 10, b 0, c 30 of 40: f_a = 2^-((1/4)/(1/8)) = 0.25, f_b = 1, f_c = 2^-((3/4)/(3/4)) = 0.5.
    accounts = {"X": AccountSpec(shares=1), "Y": AccountSpec(shares=3)}
    tree = tree_with_usage({("a", "X"): 10, ("b", "X"): 0, ("c", "Y"): 30}, accounts)
    assert classic_factors(tree) == {("a", "X"): 0.25, ("b", "X"): 1.0, ("c", "Y"): 0.5}


def test_classic_without_usage_is_one() -> None:
    tree = tree_with_usage({("a", "root"): 0, ("b", "root"): 0})
    assert set(classic_factors(tree).values()) == {1.0}


def test_fair_tree_ranks_with_ties_between_a_user_and_an_account() -> None:
    # root -> A (1), B (1), user u (2); A -> a1 (10), a2 (30); B -> b1 (0), b2 (20); u used 40.
    # Root level (shares sum 4, usage 100): LF_A = .25/.4 = 0.625, LF_B = .25/.2 = 1.25,
    # LF_u = .5/.4 = 1.25. Order: u, B (tie, users first), A. N = 5 users.
    # u: rank 5 -> 1.0. B's children: b1 LF inf, b2 (.5/1) 0.5; b1 starts tied with u -> rank 5
    # -> 1.0; b2 -> rank 3 -> 0.6. A's children: a1 .5/.25 = 2, a2 .5/.75 = 0.67 -> 0.4, 0.2.
    usage = {("u", "root"): 40, ("a1", "A"): 10, ("a2", "A"): 30, ("b1", "B"): 0, ("b2", "B"): 20}
    tree = tree_with_usage(usage, {"A": AccountSpec(), "B": AccountSpec()}, {"u": 2})
    assert fair_tree_factors(tree) == {("u", "root"): 1.0, ("b1", "B"): 1.0, ("b2", "B"): 0.6,
                                       ("a1", "A"): 0.4, ("a2", "A"): 0.2}


def test_fair_tree_merges_tied_accounts() -> None:
    # root -> A, B (equal shares, usage 10 each: LF 1 and 1, tied -> children merged).
    # a1 2 -> LF .5/.2 = 2.5; a2 8 -> 0.625; b1, b2 5 each -> 1. Merged order a1, b1, b2, a2;
    # N = 4: a1 4/4 = 1.0, b1 3/4, b2 tied 3/4, a2 1/4. (Without merging a2 would rank above b1.)
    usage = {("a1", "A"): 2, ("a2", "A"): 8, ("b1", "B"): 5, ("b2", "B"): 5}
    tree = tree_with_usage(usage)
    assert fair_tree_factors(tree) == {("a1", "A"): 1.0, ("a2", "A"): 0.25, ("b1", "B"): 0.75,
                                       ("b2", "B"): 0.75}


def test_usage_decays_with_the_half_life() -> None:
    # 10 CPUs from 0 to 100 with half-life 1000 s: usage(100) = 10 * 1000/ln2 * (1 - 2^-0.1);
    # 1000 s after the end it has halved. Without decay it is 10 * 100 = 1000 CPU-s.
    for half_life, at_end in ((1000.0, 10 * 1000 / math.log(2) * (1 - 2 ** -0.1)), (0.0, 1000.0)):
        tree = AccountTree([("u", "a")], half_life=half_life)
        tree.job_started("u", "a", 10, 0.0)
        tree.job_ended("u", "a", 10, 100.0)
        tree.settle(100.0)
        assert tree.usage(tree.users[("u", "a")], 100.0) == pytest.approx(at_end)
        tree.settle(1100.0)
        expected = at_end / 2 if half_life else at_end
        assert tree.usage(tree.users[("u", "a")], 1100.0) == pytest.approx(expected)


def test_days_without_an_event_under_a_minutes_long_half_life_decay_to_nothing() -> None:
    """5 days idle under a 5-minute PriorityDecayHalfLife is 1,440 half-lives: scaling to it is
    2^1440, past a float (OverflowError before); a real site's year at a 1-hour half-life is 8,760."""
    half_life = 300.0
    tree = AccountTree([("u", "a"), ("v", "a")], half_life=half_life)
    tree.job_started("u", "a", 1, 0.0)
    tree.job_ended("u", "a", 1, 100.0)
    later = 5 * 86400.0
    tree.job_started("v", "a", 1, later)  # charged from here: no overflow
    tree.job_ended("v", "a", 1, later + half_life)
    tree.settle(later + half_life)
    # u's 300/ln2 * (2^(1/3) - 1) = 113.3 CPU-s at t = 100 halved 1,440 times: below any float, 0
    assert tree.usage(tree.users[("u", "a")], later + half_life) == pytest.approx(0.0, abs=1e-300)
    # v's one CPU over one half-life, decayed to its end: integral of 2^-((h - s) / h) over [0, h]
    # = h/ln2 * (1 - 1/2) = 150 / 0.693147 = 216.40 CPU-s
    assert tree.usage(tree.users[("v", "a")], later + half_life) == pytest.approx(216.40, abs=0.01)
    tree.add_usage("u", "a", 50.0, 10 * later)  # charged at once, 2,880 half-lives on: no overflow
    assert tree.usage(tree.users[("u", "a")], 10 * later) == pytest.approx(50.0)


def test_marenostrum4_priority_reproduces_the_numbers_of_paper_004() -> None:
    # 004 sec. 3.4: on LUMI (360448 cores) 650 CPUs add "about 18" (650/360448 * 10000 = 18.03),
    # a 900 s wait adds 104 (900 / 10 days * 100000 = 104.17) and a fair share of 0.01 adds 1000.
    plugin, scheduler = marenostrum4()
    assert isinstance(plugin, MultifactorPriority)
    assert scheduler.bf_resolution == 1800 and scheduler.bf_window == 10080 * 60
    cluster = ClusterSpec.homogeneous(2816, 128)
    plugin.setup(PriorityContext(cluster, (("u", "a"),)))
    plugin.fs_table = {("u", "a"): 0.01}
    part = ClusterState(cluster).partitions[0]
    job = SimJob(TraceJob(1, 0, 10, 650, 10, user="u", account="a"), part, cluster.qos[0], 10, 650, 0.0)
    factors = plugin.factors(job, 900.0)
    assert factors["size"] * 10000 == pytest.approx(18.03, abs=0.01)
    assert factors["age"] * 100000 == pytest.approx(104.17, abs=0.01)
    plugin.on_submit(job, 900.0)
    assert job.priority == 1122  # int(18.03 + 104.17 + 1000)


def test_favor_small_inverts_the_size_factor() -> None:
    # eq. 2.2: s = (S - r + 1) / S; a 1-CPU job on 100 cores gets 1.0, a 100-CPU job 0.01.
    plugin = MultifactorPriority(MultifactorWeights(job_size=1), favor_small=True)
    cluster = ClusterSpec.homogeneous(100, 1)
    plugin.setup(PriorityContext(cluster, (("u", "a"),)))
    part = ClusterState(cluster).partitions[0]
    sizes = [plugin.factors(SimJob(TraceJob(1, 0, 1, r, 1, user="u", account="a"), part, cluster.qos[0],
                                   1, r, 0.0), 0.0)["size"] for r in (1, 100)]
    assert sizes == [1.0, 0.01]


def test_fair_share_reorders_the_queue() -> None:
    # One core. "heavy" runs J1 [0, 100). J2 (heavy, t=10) and J3 (light, t=20) wait.
    # The first pass (t=10) recomputes: heavy has 10 CPU-s, light none -> Fair Tree gives light
    # 1.0 (LF inf) and heavy 1/2 (N = 2). With weight 1000: J2 500, J3 1000, so J3 runs first
    # at 100 and J2 at 110. FIFO would run J2 first.
    jobs = [TraceJob(1, 0, 100, 1, 100, user="heavy"), TraceJob(2, 10, 10, 1, 10, user="heavy"),
            TraceJob(3, 20, 10, 1, 10, user="light")]
    cluster = ClusterSpec.homogeneous(1, 1)
    config = SchedulerConfig(backfill="none", sched_interval=0)
    plugin = MultifactorPriority(MultifactorWeights(fairshare=1000), decay_half_life=0, calc_period=50)
    result = Simulation(jobs, cluster, config, plugin).run().jobs.set_index("job_id")
    assert result.loc[3, "start"] == 100 and result.loc[2, "start"] == 110
    assert result.loc[3, "priority_at_start"] == 1000 and result.loc[2, "priority_at_start"] == 500
    assert result.loc[3, "factor_fairshare"] == 1.0
    fifo = Simulation(jobs, cluster, config, FifoPriority()).run().jobs.set_index("job_id")
    assert fifo.loc[2, "start"] == 100 and fifo.loc[3, "start"] == 110


def test_psp_groups_and_aging_by_hand() -> None:
    # Table 1 of 000: accuracy 0.17 -> g4 -> 25 (the paper's own example); 0.0 -> 1; 1.0 -> 49.
    assert [group_priority(Fraction(a)) for a in ("0.17", "0", "0.05", "0.78", "1")] == [25, 1, 10, 49, 49]
    # eq. (1) of 000, step 150 s, a job submitted at 0 asking 300 s, owner without history (g10,
    # 49): at 150 s p = 49 + 49 * 150/300 = 73.5; at 300 s p = 49 + 73.5 * 300/300 = 122.5.
    plugin = PspAgingPriority(time_step=150)
    cluster = ClusterSpec.homogeneous(1, 1)
    part = ClusterState(cluster).partitions[0]
    job = SimJob(TraceJob(1, 0, 300, 1, 300), part, cluster.qos[0], 300, 1, 0.0)
    plugin.on_submit(job, 0.0)
    plugin.recompute([job], 150.0)
    assert job.priority == 73.5
    plugin.recompute([job], 300.0)
    assert job.priority == 122.5


def test_psp_penalises_inaccurate_users() -> None:
    # One core. "sloppy" ran J1 using 10 s of 1000 asked (A = 0.01 -> g1 = 1); "careful" ran J2
    # using all 10 s asked (A = 1 -> g10 = 49). Both then submit at 30 while J3 holds the core
    # until 100: careful's J5 (49) runs before sloppy's J4 (1), despite J4's lower id.
    jobs = [TraceJob(1, 0, 10, 1, 1000, user="sloppy"), TraceJob(2, 10, 10, 1, 10, user="careful"),
            TraceJob(3, 20, 80, 1, 80), TraceJob(4, 30, 10, 1, 1000, user="sloppy"),
            TraceJob(5, 30, 10, 1, 10, user="careful")]
    config = SchedulerConfig(backfill="none", sched_interval=0)
    result = Simulation(jobs, ClusterSpec.homogeneous(1, 1), config, PspAgingPriority()).run()
    starts = dict(zip(result.jobs["job_id"], result.jobs["start"], strict=True))
    assert starts[5] == 100 and starts[4] == 110


def test_incremental_fair_tree_equals_a_fresh_computation() -> None:
    # The tree re-sorts only charged associations; after many random charges its factors must
    # equal those of a tree built from scratch with the same usage (independent of history).
    rng = random.Random(7)
    pairs = [(f"u{i}", f"a{i % 4}") for i in range(12)]
    accounts = {"a0": AccountSpec(), "a1": AccountSpec(shares=2), "a2": AccountSpec(parent="a1"),
                "a3": AccountSpec(parent="a1", shares=3)}
    live = AccountTree(pairs, accounts, half_life=0)
    for step in range(300):
        user, account = rng.choice(pairs)
        live.add_usage(user, account, rng.choice([1.0, 2.0, 5.0]), 0.0)
        if step % 7 == 0:
            assert_ranked_as_a_fresh_tree(live, pairs, accounts)


def test_fair_tree_same_user_in_two_tied_accounts() -> None:
    # root -> A, B (usage 10 each: tied, merged). A -> x 5, a2 5; B -> x 5, b2 5. Every child has
    # LF = (1/2) / (5/10) = 1: one tie across the merged list, so all four get rank N = 4 -> 1.0.
    usage = {("x", "A"): 5, ("a2", "A"): 5, ("x", "B"): 5, ("b2", "B"): 5}
    assert set(fair_tree_factors(tree_with_usage(usage)).values()) == {1.0}


def test_incremental_fair_tree_many_accounts_under_the_root() -> None:
    # Many small accounts under the root (a site's groups), one with sub-accounts and two users
    # directly under the root (an account's first user may tie with one of them): a charge that
    # reorders users inside one account without moving it at the root re-ranks that account's users
    # alone. Small integer usage makes ties (between users, and between accounts, merged) frequent.
    # After every charge the factors must equal those of a tree built from scratch.
    rng = random.Random(11)
    accounts = {f"g{i}": AccountSpec(shares=1 + i % 3) for i in range(20)}
    accounts |= {"s0": AccountSpec(parent="g0"), "s1": AccountSpec(parent="g0", shares=2)}
    pairs = [(f"u{i}", f"g{i % 20}") for i in range(45)] + [(f"v{i}", f"s{i % 2}") for i in range(6)]
    pairs += [("w0", "root"), ("w1", "root")]
    live = AccountTree(pairs, accounts, half_life=0)
    for _ in range(400):
        user, account = rng.choice(pairs)
        live.add_usage(user, account, rng.choice([1.0, 2.0, 3.0]), 0.0)
        assert_ranked_as_a_fresh_tree(live, pairs, accounts)
