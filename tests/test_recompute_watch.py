"""Seeing Slurm's decay thread recompute the priorities: squeue's answers in, the whole seconds of
its runs and their phase out."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from djsb.slurmsite.recompute_watch import RecomputeWatch, calc_phase, parse_priorities

# squeue --noheader --states=PENDING --format='%i %Q' on the mini-cluster (Slurm 22.05): job id,
# then the integer priority; an array's pending tasks show as one line with the bracketed range
SQUEUE = """\
2660 101875
2661 26875
2670_[1-3] 26875
"""


def test_parse_priorities() -> None:
    assert parse_priorities(SQUEUE) == {"2660": 101875, "2661": 26875, "2670_[1-3]": 26875}
    assert parse_priorities("") == {}


def scripted(answers: list[tuple[float, str | None]]) -> tuple[RecomputeWatch, Iterator[float]]:
    """A watch whose clock and squeue follow ``answers``: (when it is asked, what it answers)."""
    times = iter(t for t, _ in answers for _ in (0, 1))  # look() reads the clock before and after asking
    replies = iter(reply for _, reply in answers)
    return RecomputeWatch(lambda: next(replies), clock=lambda: next(times)), times


def test_a_change_between_two_answers_is_a_run_between_them() -> None:
    watch, _ = scripted([(100.2, "1 5\n2 9\n"), (100.5, "1 5\n2 9\n"), (100.8, "1 5\n2 9\n3 4\n"),
                         (101.05, "1 7\n3 4\n"), (101.3, "1 7\n")])
    for _ in range(5):
        watch.look()
    # a job that appeared (3) or left (2) is no change; 1's 5 -> 7 came after the answer asked at
    # 100.8 and before the one that came at 101.05
    assert watch.runs == [(100.8, 101.05)]


def test_a_failed_answer_widens_the_bracket() -> None:
    watch, _ = scripted([(105.9, "1 5\n"), (106.5, None), (108.1, "1 6\n"), (108.4, "1 8\n")])
    for _ in range(4):
        watch.look()
    assert watch.runs == [(105.9, 108.1), (108.1, 108.4)]


def test_asks_no_more_often_than_every() -> None:
    asked: list[float] = []
    now = [0.0]

    def ask() -> str:
        asked.append(now[0])
        return "1 5\n"

    watch = RecomputeWatch(ask, clock=lambda: now[0], every=0.25)
    for step in range(11):  # looks every 0.1 s for 1 s
        now[0] = step / 10
        watch.look()
    assert asked == [0.0, 0.3, 0.6, 0.9]


def test_calc_phase_narrows_the_brackets_folded_onto_one_period() -> None:
    assert calc_phase([], 60) is None
    # a thread that started at 31.95 s past a minute (its timer keeps the microseconds), seen in
    # three brackets of 0.3 s: 31.8-32.1, 31.7-32.0 and 31.9-32.2 past three minutes (1795637640 =
    # 29927294 * 60); their common part 31.9-32.0
    base = 1795637640.0
    phase = calc_phase([(base + 31.8, base + 32.1), (base + 60 + 31.7, base + 60 + 32.0),
                        (base + 120 + 31.9, base + 120 + 32.2)], 60)
    assert phase is not None and phase == pytest.approx((31.95, 0.05))
    # folded across the period's end: 59.9-60.2 and 59.8-60.1 share 59.9-60.1, the phase 0.0 (60 = 0)
    phase = calc_phase([(base + 59.9, base + 60.2), (base + 119.8, base + 120.1)], 60)
    assert phase is not None and phase[0] % 60 == pytest.approx(0.0, abs=1e-6) and phase[1] == pytest.approx(0.1)
    # brackets with nothing in common (one run seen late): the median midpoint, half the spread
    phase = calc_phase([(base + 31.8, base + 32.0), (base + 91.8, base + 92.0), (base + 152.5, base + 152.7)], 60)
    assert phase is not None and phase == pytest.approx((31.9, 0.35))
    # a bracket wider than half the period says nothing
    assert calc_phase([(base, base + 40)], 60) is None
