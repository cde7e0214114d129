"""A replay begins on idle nodes: sinfo's node states read, and the wait for them bounded. The answers
are the second mini-cluster's (``sinfo --noheader --Node --partition=oversub --format='%N %t'``) with
a 2-CPU job on m1 and a 1-CPU job on m2, then just after the first was cancelled."""

from __future__ import annotations

import pytest

from djsb.calibrate.idle_wait import busy_nodes, sinfo_argv, wait_until_idle
from djsb.errors import RunError

RUNNING = "m1 alloc\nm2 mix\nm3 idle\nm4 idle\n"
CANCELLED = "m1 comp\nm2 mix\nm3 idle\nm4 idle\n"
IDLE = "m1 idle\nm2 idle\nm3 idle\nm4 idle\n"


def test_nodes_running_or_completing_jobs_are_busy() -> None:
    assert busy_nodes(RUNNING) == ["m1", "m2"]
    assert busy_nodes(CANCELLED) == ["m1", "m2"]  # a cancelled job's node completes it
    assert busy_nodes(IDLE) == []
    # out of service (drained, down: the model's as Slurm's) is no reason to wait; draining with jobs is;
    # a flag suffix (sinfo(1): * not responding, ~ powered off) does not hide the state, and an idle
    # node that does not respond cannot take a job yet (scontrol had m3 IDLE+NOT_RESPONDING as a CI's
    # calibration began); a node in two of the partitions is named once
    assert busy_nodes("m1 drain\nm2 down*\nm3 drng\nm4 mix~\nm4 mix~\nm5 idle*\nm6 idle$\n") == ["m3", "m4", "m5"]


def test_the_replay_waits_until_the_nodes_are_idle_and_no_longer() -> None:
    answers = iter([RUNNING, CANCELLED, IDLE])
    asked: list[tuple[str, ...]] = []
    slept: list[float] = []

    def ask(argv: tuple[str, ...]) -> str:
        asked.append(argv)
        return next(answers)

    wait_until_idle(ask, ("cal_low", "cal_high"), 2.0, sleep=slept.append, clock=lambda: 0.0)
    assert slept == [2.0, 2.0]
    assert asked[0] == sinfo_argv(("cal_low", "cal_high")) == (
        "sinfo", "--noheader", "--Node", "--partition=cal_low,cal_high", "--format=%N %t")


def test_nodes_busy_past_the_timeout_end_the_calibration_in_one_line() -> None:
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(RunError) as raised:
        wait_until_idle(lambda argv: RUNNING, ("oversub",), 5.0, timeout=12.0, clock=lambda: now[0], sleep=sleep)
    assert now[0] == 15.0  # asked at 0, 5, 10 and 15 s: past 12 s at the fourth
    assert str(raised.value) == ("nodes m1, m2 of partition oversub still ran jobs after 12 s: each replay starts "
                                 "on idle nodes, as the model does")
