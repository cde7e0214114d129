"""Paper 002 sec. III-D abandon rules on hand-built eviction histories."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from djsb.errors import ConfigError
from djsb.pool.abandon import Evidence, Verdict, build_abandon
from djsb.pool.tasks import EndCause, Run
from djsb.yamlnodes import load_yaml

HOUR = 3600.0
# Three deallocations: a user after 1 h, a reboot after 2 h, a failure after 0.5 h.
# deallocations = 3; accrued = 1 + 2 + 0.5 = 3.5 h; longest single run = 2 h.
HISTORY = [Run(0.0, 1 * HOUR, EndCause.USER), Run(2 * HOUR, 4 * HOUR, EndCause.REBOOT),
           Run(10 * HOUR, 10.5 * HOUR, EndCause.OTHER)]


def verdict(rule: dict[str, object], history: list[Run] = HISTORY, evidence: Evidence | None = None) -> Verdict:
    from djsb.pool.config import located

    policy = build_abandon(located(rule, "policy.abandon"))
    return policy.verdict(history, evidence or Evidence(random.Random(1)))


@pytest.mark.parametrize(("rule", "expected"), [
    ({"rule": "N1", "n": 3}, Verdict.ABANDON),   # 3 deallocations >= 3
    ({"rule": "N1", "n": 4}, Verdict.RETRY),
    ({"rule": "N2", "n": 3}, Verdict.RETRY),     # the user eviction ignored: 2 < 3
    ({"rule": "N2", "n": 2}, Verdict.ABANDON),
    ({"rule": "N3", "n": 3}, Verdict.RETRY),     # the reboot ignored: 2 < 3
    ({"rule": "N3", "n": 2}, Verdict.ABANDON),
    ({"rule": "A1", "t_hours": 3.4}, Verdict.ABANDON),  # accrued 3.5 h > 3.4
    ({"rule": "A1", "t_hours": 3.5}, Verdict.RETRY),    # not > 3.5
    ({"rule": "A2", "t_hours": 3.0}, Verdict.RETRY),    # without the user's 1 h run: 2.5 h
    ({"rule": "A2", "t_hours": 2.4}, Verdict.ABANDON),
    ({"rule": "A3", "t_hours": 2.0}, Verdict.RETRY),    # without the reboot's 2 h run: 1.5 h
    ({"rule": "A3", "t_hours": 1.4}, Verdict.ABANDON),
    ({"rule": "I1", "t_hours": 1.9}, Verdict.ABANDON),  # longest single run 2 h > 1.9
    ({"rule": "I1", "t_hours": 2.0}, Verdict.RETRY),    # not > 2 (002: "individual time > t")
    ({"rule": "I1", "t_hours": 2.5}, Verdict.RETRY),    # ... though accrued 3.5 h > 2.5
    ({"rule": "X0"}, Verdict.RETRY),
    ({"rule": "R1", "p": 0.0}, Verdict.RETRY),
    ({"rule": "R1", "p": 1.0}, Verdict.ABANDON),
    ({"rule": "D", "n": 3, "m": 2, "d_hours": 90}, Verdict.DEDICATE),
    ({"rule": "D", "n": 4, "m": 2, "d_hours": 90}, Verdict.RETRY),
])
def test_rule_on_hand_built_history(rule: dict[str, object], expected: Verdict) -> None:
    assert verdict(rule) is expected


def test_accrued_rule_abandons_where_individual_rule_retries() -> None:
    # Same bound 2.5 h: A1 sums the runs (3.5 h > 2.5), I1 looks at the longest (2 h < 2.5).
    assert verdict({"rule": "A1", "t_hours": 2.5}) is Verdict.ABANDON
    assert verdict({"rule": "I1", "t_hours": 2.5}) is Verdict.RETRY


def test_x0_never_abandons_even_after_many_evictions() -> None:
    history = [Run(float(i), i + 0.5, EndCause.OTHER) for i in range(1946)]  # 002's worst bad task
    assert verdict({"rule": "X0"}, history) is Verdict.RETRY


def test_i1_is_a_watchdog_on_each_run() -> None:
    from djsb.pool.config import located

    assert build_abandon(located({"rule": "I1", "t_hours": 6})).run_limit() == 6 * HOUR
    assert math.isinf(build_abandon(located({"rule": "A1", "t_hours": 6})).run_limit())


def test_i1_abandons_a_run_its_watchdog_stopped() -> None:
    # The watchdog of I1(0.5 h) stopped the last run at 0.5 h: the task was still running, so its
    # individual time goes past 0.5 h; the same 0.5 h run ended by a user is retried.
    stopped = [Run(0.0, 0.25 * HOUR, EndCause.USER), Run(2 * HOUR, 2.5 * HOUR, EndCause.LIMIT)]
    assert verdict({"rule": "I1", "t_hours": 0.5}, stopped) is Verdict.ABANDON
    evicted = [Run(0.0, 0.5 * HOUR, EndCause.USER)]
    assert verdict({"rule": "I1", "t_hours": 0.5}, evicted) is Verdict.RETRY


def _abandon_share(rule: dict[str, object], draws: int = 20000) -> float:
    evidence = Evidence(random.Random(7))
    return sum(verdict(rule, HISTORY, evidence) is Verdict.ABANDON for _ in range(draws)) / draws


def test_exponential_rules_follow_one_minus_exp() -> None:
    # E1: P = 1 - exp(-k n) = 1 - exp(-0.1 * 3) = 0.2592; E2 on accrued hours:
    # 1 - exp(-0.2 * 3.5) = 0.5034. 20000 draws: standard error <= 0.0036, so +-0.015 is > 4 sigma.
    assert _abandon_share({"rule": "E1", "k": 0.1}) == pytest.approx(1 - math.exp(-0.3), abs=0.015)
    assert _abandon_share({"rule": "E2", "k": 0.2}) == pytest.approx(1 - math.exp(-0.7), abs=0.015)
    assert _abandon_share({"rule": "R1", "p": 0.3}) == pytest.approx(0.3, abs=0.015)


def test_percentile_rules_use_completed_tasks() -> None:
    evidence = Evidence(random.Random(1), completed_deallocations=[0, 0, 0, 1, 1, 1, 2, 2, 3, 9],
                        completed_accrued=[h * HOUR for h in (1, 1, 1, 2, 2, 2, 3, 3, 3, 4)])
    # Nearest rank of p = 90 over 10 values: ceil(0.9 * 10) = 9th smallest = 3 deallocations, 3 h.
    assert verdict({"rule": "P1", "p": 90, "min_history": 10}, HISTORY, evidence) is Verdict.RETRY  # 3 > 3 no
    four = [*HISTORY, Run(11 * HOUR, 11.1 * HOUR, EndCause.OTHER)]
    assert verdict({"rule": "P1", "p": 90, "min_history": 10}, four, evidence) is Verdict.ABANDON
    assert verdict({"rule": "P1", "p": 90, "min_history": 11}, four, evidence) is Verdict.RETRY  # no history yet
    # Accrued 3.5 h > the 90th percentile 3 h; the 100th is 4 h.
    assert verdict({"rule": "P2", "p": 90, "min_history": 10}, HISTORY, evidence) is Verdict.ABANDON
    assert verdict({"rule": "P2", "p": 100, "min_history": 10}, HISTORY, evidence) is Verdict.RETRY


def test_bad_rule_names_file_line_and_key(tmp_path: Path) -> None:
    path = tmp_path / "pool.yaml"
    path.write_text("policy:\n  abandon:\n    rule: N9\n")
    node = load_yaml(path).get("policy").get("abandon")  # type: ignore[union-attr]
    with pytest.raises(ConfigError) as err:
        build_abandon(node)  # type: ignore[arg-type]
    assert err.value.one_line().startswith(f"{path}:3: policy.abandon.rule: unknown abandon policy 'N9'")
    path.write_text("policy:\n  abandon:\n    rule: N1\n    n: 0\n")
    with pytest.raises(ConfigError, match=r":4: policy.abandon.n: must be >= 1"):
        build_abandon(load_yaml(path).get("policy").get("abandon"))  # type: ignore[union-attr,arg-type]
