"""Wrapper geometry and splits at Autosubmit's limits (paper 004 sec. 2.8, figs. 2.6-2.8), worked by hand."""

from __future__ import annotations

import itertools

import pytest

from djsb.errors import ConfigError
from djsb.workflows.dag import Workflow, WorkflowJob, grid, horizontal, vertical
from djsb.workflows.wrappers import STRATEGIES, UNLIMITED, WrapperLimits, pack, run_time, wrapper_parents

VERTICAL_004 = vertical(7, 96, 1800)  # 004 sec. 3.3.2: 7 sequential jobs x 96 CPUs x 30 min
HORIZONTAL_004 = horizontal(12, 96, 1800)  # 12 independent jobs x 96 CPUs x 30 min


def geometry(workflow: Workflow, strategy: str, limits: WrapperLimits = UNLIMITED) -> list[tuple]:
    """(inner jobs, CPUs, time limit) of each wrapper."""
    return [(len(w.jobs), w.cpus, w.time_limit) for w in pack(workflow, strategy, limits)]


def two_chains() -> Workflow:
    """Chain a: a0 (10 CPUs, 100 s) -> a1 (20 CPUs, 50 s); chain b: b0 (5, 300) -> b1 (5, 10)."""
    return Workflow((WorkflowJob("a0", 10, 100, 100), WorkflowJob("a1", 20, 50, 50, ("a0",)),
                     WorkflowJob("b0", 5, 300, 300), WorkflowJob("b1", 5, 10, 10, ("b0",))))


def test_thesis_workflows_wrapped_as_one_job() -> None:
    # 004 sec. 3.3.2: the vertical workflow wrapped is one job of 96 CPUs and 7 x 30 min = 210 min
    # (12600 s); the horizontal one is one job of 12 x 96 = 1152 CPUs and 30 min.
    assert geometry(VERTICAL_004, "vertical") == [(7, 96, 12600.0)]
    assert geometry(HORIZONTAL_004, "horizontal") == [(12, 1152, 1800.0)]
    assert geometry(VERTICAL_004, "none") == [(1, 96, 1800.0)] * 7
    # The other elemental kind does not apply: a chain has one job per level, 12 jobs are 12 chains.
    assert geometry(VERTICAL_004, "horizontal") == [(1, 96, 1800.0)] * 7
    assert geometry(HORIZONTAL_004, "vertical") == [(1, 96, 1800.0)] * 12


def test_vertical_is_max_cpus_and_summed_time() -> None:
    # Chain a: max(10, 20) = 20 CPUs, 100 + 50 = 150 s; chain b: 5 CPUs, 300 + 10 = 310 s.
    assert geometry(two_chains(), "vertical") == [(2, 20, 150.0), (2, 5, 310.0)]


def test_horizontal_is_summed_cpus_and_max_time() -> None:
    # Level 0 {a0, b0}: 10 + 5 = 15 CPUs, max(100, 300) = 300 s; level 1 {a1, b1}: 20 + 5 = 25
    # CPUs, max(50, 10) = 50 s, and it waits for the level-0 wrapper (its jobs' parents).
    wrappers = pack(two_chains(), "horizontal")
    assert [(w.cpus, w.time_limit) for w in wrappers] == [(15, 300.0), (25, 50.0)]
    assert wrapper_parents(wrappers, two_chains()) == [(), (0,)]


def test_horizontal_vertical_is_sequential_stages_of_parallel_jobs() -> None:
    # 004 sec. 2.8: "horizontal jobs that run sequentially in lock-step". Stages {a0 | b0} then
    # {a1 | b1}: CPUs max(10 + 5, 20 + 5) = 25, time max(100, 300) + max(50, 10) = 350 s.
    (wrapper,) = pack(two_chains(), "horizontal-vertical")
    assert wrapper.stages == ((("a0",), ("b0",)), (("a1",), ("b1",)))
    assert (wrapper.cpus, wrapper.time_limit) == (25, 350.0)


def test_vertical_horizontal_is_parallel_chains() -> None:
    # 004 sec. 2.8: "multiple vertical wrappers joined in a single horizontal". Chains a0->a1 |
    # b0->b1 side by side: CPUs max(10, 20) + max(5, 5) = 25, time max(100 + 50, 300 + 10) = 310 s.
    (wrapper,) = pack(two_chains(), "vertical-horizontal")
    assert wrapper.stages == ((("a0", "a1"), ("b0", "b1")),)
    assert (wrapper.cpus, wrapper.time_limit) == (25, 310.0)


def test_run_time_uses_the_inner_run_times() -> None:
    # Requested 2400 s each, run 1800 s: limit 3 x 2400 = 7200 s, runs 3 x 1800 = 5400 s.
    (wrapper,) = pack(vertical(3, 96, 1800, 2400), "vertical")
    assert (wrapper.time_limit, run_time(wrapper, vertical(3, 96, 1800, 2400))) == (7200.0, 5400.0)


def test_vertical_split_at_max_jobs() -> None:
    # 7 jobs, at most 3 per wrapper: 3 + 3 + 1, each waiting for the previous one.
    wrappers = pack(VERTICAL_004, "vertical", WrapperLimits(max_jobs=3))
    assert [(len(w.jobs), w.time_limit) for w in wrappers] == [(3, 5400.0), (3, 5400.0), (1, 1800.0)]
    assert wrapper_parents(wrappers, VERTICAL_004) == [(), (0,), (1,)]


def test_vertical_split_at_max_wallclock() -> None:
    # MaxTime 4000 s: 2 x 1800 = 3600 fits, 3 x 1800 = 5400 does not: 2 + 2 + 2 + 1 jobs.
    assert geometry(VERTICAL_004, "vertical", WrapperLimits(max_wallclock=4000)) == \
        [(2, 96, 3600.0)] * 3 + [(1, 96, 1800.0)]


def test_horizontal_split_at_max_cpus() -> None:
    # MaxCPUs 500: 5 x 96 = 480 fits, 6 x 96 = 576 does not: 5 + 5 + 2 jobs (480, 480, 192 CPUs).
    assert geometry(HORIZONTAL_004, "horizontal", WrapperLimits(max_cpus=500)) == \
        [(5, 480, 1800.0), (5, 480, 1800.0), (2, 192, 1800.0)]


def test_horizontal_split_at_max_jobs() -> None:
    assert geometry(HORIZONTAL_004, "horizontal", WrapperLimits(max_jobs=4)) == [(4, 384, 1800.0)] * 3


def test_horizontal_vertical_split_at_max_wallclock() -> None:
    # 3 chains x 4 jobs of 10 CPUs x 100 s: 4 stages of 3 parallel jobs (30 CPUs, 100 s each). MaxTime
    # 250 s holds 2 stages (200 s): 2 wrappers of 6 jobs, the second after the first.
    workflow = grid(3, 4, 10, 100)
    wrappers = pack(workflow, "horizontal-vertical", WrapperLimits(max_wallclock=250))
    assert [(len(w.jobs), w.cpus, w.time_limit) for w in wrappers] == [(6, 30, 200.0)] * 2
    assert wrapper_parents(wrappers, workflow) == [(), (0,)]


def test_horizontal_vertical_split_at_max_cpus() -> None:
    # MaxCPUs 25: a level of 3 x 10 = 30 CPUs is cut into 2 + 1 jobs, run as two stages; the 8
    # stages (20, 10, 20, 10, ... CPUs, 100 s each) fit one wrapper of 20 CPUs and 800 s.
    (wrapper,) = pack(grid(3, 4, 10, 100), "horizontal-vertical", WrapperLimits(max_cpus=25))
    assert [len(stage) for stage in wrapper.stages] == [2, 1] * 4
    assert (wrapper.cpus, wrapper.time_limit) == (20, 800.0)


def test_vertical_horizontal_split_at_max_wallclock() -> None:
    # MaxTime 250 s: each chain of 4 x 100 s is cut into two segments of 2 jobs (200 s); the first
    # segments of the 3 chains run in one wrapper (30 CPUs, 200 s), the second ones in another after it.
    workflow = grid(3, 4, 10, 100)
    wrappers = pack(workflow, "vertical-horizontal", WrapperLimits(max_wallclock=250))
    assert [(len(w.jobs), w.cpus, w.time_limit) for w in wrappers] == [(6, 30, 200.0)] * 2
    assert wrappers[1].stages == ((("sim0_2", "sim0_3"), ("sim1_2", "sim1_3"), ("sim2_2", "sim2_3")),)
    assert wrapper_parents(wrappers, workflow) == [(), (0,)]


def test_vertical_horizontal_split_at_max_cpus() -> None:
    # MaxCPUs 25: two chains side by side take 20 CPUs, a third would take 30: wrappers of 2 and 1 chains.
    assert geometry(grid(3, 4, 10, 100), "vertical-horizontal", WrapperLimits(max_cpus=25)) == \
        [(8, 20, 400.0), (4, 10, 400.0)]


def test_a_job_over_the_partition_limits_is_refused() -> None:
    with pytest.raises(ConfigError, match="'sim0' alone asks 96 CPUs, above the partition's MaxCPUs 64"):
        pack(VERTICAL_004, "none", WrapperLimits(max_cpus=64))
    with pytest.raises(ConfigError, match="alone asks 1800 s, above the partition's MaxTime 1000 s"):
        pack(VERTICAL_004, "vertical", WrapperLimits(max_wallclock=1000))
    with pytest.raises(ConfigError, match="unknown strategy 'diagonal'"):
        pack(VERTICAL_004, "diagonal")


DIAMOND = Workflow((WorkflowJob("ini", 4, 60, 60), WorkflowJob("s1", 48, 600, 700, ("ini",)),
                    WorkflowJob("s2", 48, 900, 1000, ("ini",)), WorkflowJob("p1", 8, 120, 150, ("s1",)),
                    WorkflowJob("post", 16, 300, 300, ("p1", "s2")), WorkflowJob("clean", 1, 10, 10, ("post",))))


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("workflow", [DIAMOND, grid(3, 5, 32, 500, 600), HORIZONTAL_004, VERTICAL_004])
def test_every_packing_is_valid_under_every_limit(strategy: str, workflow: Workflow) -> None:
    # Invariants: each job in exactly one wrapper, no limit exceeded, a wrapper's parents come
    # before it, and inside a wrapper every job's parents run in an earlier stage or earlier in its chain.
    for max_jobs, max_wallclock, max_cpus in itertools.product((None, 1, 2, 5), (None, 1800, 4000), (None, 96, 200)):
        limits = WrapperLimits(max_jobs, max_wallclock, max_cpus)
        wrappers = pack(workflow, strategy, limits)
        names = [name for w in wrappers for name in w.jobs]
        assert sorted(names) == sorted(job.name for job in workflow.jobs)
        assert all(limits.allows(len(w.jobs), w.cpus, w.time_limit) for w in wrappers)
        parents = wrapper_parents(wrappers, workflow)
        assert all(p < i for i, ps in enumerate(parents) for p in ps)
        for w in wrappers:
            before: set[str] = set()
            for stage in w.stages:
                for chain in stage:
                    earlier = set(before)
                    for name in chain:
                        inside = set(workflow.by_name[name].after) & set(w.jobs)
                        assert inside <= earlier
                        earlier.add(name)
                before |= {name for chain in stage for name in chain}
