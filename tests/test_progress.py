"""djsb.progress: the finish-time arithmetic with an injected clock, and what the lines say."""

from __future__ import annotations

import io
import time

import pytest

from djsb.progress import NORMAL, QUIET, Progress, estimate_finish, format_duration, set_verbosity


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def clock_text(epoch: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(epoch))


def test_finish_is_extrapolated_from_the_observed_rate() -> None:
    # started at 100, 3 of 10 done at 130: 30 s / 3 = 10 s per unit, 7 left -> 70 s -> finish at 200
    assert estimate_finish(3, 10, started=100, now=130) == pytest.approx(200)


def test_work_done_before_this_process_does_not_count() -> None:
    # resumed with 4 of 10 done; 6 done 60 s later: 2 units in 60 s = 30 s each, 4 left -> 120 s -> 180
    assert estimate_finish(6, 10, started=0, now=60, done_at_start=4) == pytest.approx(180)


def test_no_estimate_without_progress_and_now_when_done() -> None:
    assert estimate_finish(4, 10, started=0, now=60, done_at_start=4) is None
    assert estimate_finish(0, 10, started=5, now=5) is None
    assert estimate_finish(10, 10, started=0, now=60) == 60


@pytest.mark.parametrize(("seconds", "text"), [(45, "45s"), (59.6, "1m00s"), (200, "3m20s"), (7500, "2h05m")])
def test_format_duration(seconds: float, text: str) -> None:
    # 200 s = 3 min 20 s; 7500 s = 2 h + 300 s = 2 h 05 min
    assert format_duration(seconds) == text


def test_plain_lines_say_count_percent_and_eta() -> None:
    clock, out = FakeClock(1000.0), io.StringIO()
    progress = Progress("cells", 4, stream=out, clock=clock, tty=False)
    clock.now = 1010.0
    progress.advance()
    # 1 of 4 in 10 s: 3 left at 10 s each -> 30 s, finish at 1040
    assert out.getvalue() == f"djsb: cells 1/4 (25%), ETA 30s ({clock_text(1040.0)})\n"
    clock.now = 1040.0
    progress.update(4)
    assert out.getvalue().splitlines()[-1] == "djsb: cells 4/4 (100%), done in 40s"
    assert "\r" not in out.getvalue()


def plain_lines(label: str, total: int, updates: tuple[tuple[float, int], ...]) -> list[str]:
    """The lines a Progress without a terminal (a line at most every 30 s) prints for ``updates``:
    (clock time, done count) each, reported in turn from a clock started at 0."""
    clock, out = FakeClock(0.0), io.StringIO()
    progress = Progress(label, total, stream=out, clock=clock, tty=False, line_every=30)
    for now, done in updates:
        clock.now = now
        progress.update(done)
    return out.getvalue().splitlines()


def test_plain_lines_are_throttled_but_the_last_always_shows() -> None:
    lines = plain_lines("jobs", 100, ((10, 10), (20, 20), (45, 45), (50, 100)))
    # a line at 10 s; 20 s is within 30 s of it; 45 s is 35 s after it; the end always prints
    assert [line.split()[2] for line in lines] == ["10/100", "45/100", "100/100"]


def test_terminal_bar_redraws_in_place_and_messages_scroll_above_it() -> None:
    out = io.StringIO()
    progress = Progress("cells", 2, stream=out, tty=True)
    assert out.getvalue().startswith("\rdjsb: cells:   0%") and "0/2" in out.getvalue()
    progress.advance()
    drawn = len(out.getvalue())
    progress.log("submitted job 7")
    # the bar is cleared, the message printed on its own line, and the bar drawn again under it
    after = out.getvalue()[drawn:]
    assert "djsb: submitted job 7\n" in after
    assert after.index("djsb: submitted job 7") < after.rindex("djsb: cells")
    progress.close()
    # redrawn in place (\r): the last drawing is half done, and its line ended
    last = out.getvalue().split("\r")[-1]
    assert last.startswith("djsb: cells:  50%") and " 1/2 " in last and last.endswith("\n")


def test_a_resumed_bar_starts_at_the_work_done_before() -> None:
    out = io.StringIO()
    progress = Progress("points", 10, done=4, stream=out, tty=True)
    progress.advance(2)
    progress.close()
    assert "6/10" in out.getvalue().split("\r")[-1]


def test_quiet_shows_neither_bar_nor_lines(capsys: pytest.CaptureFixture[str]) -> None:
    set_verbosity(QUIET)
    try:
        for tty in (True, False):
            progress = Progress("cells", 2, tty=tty)
            progress.advance()
            progress.log("a message")
            progress.update(2)
            progress.close()
    finally:
        set_verbosity(NORMAL)
    assert capsys.readouterr().err == ""


def test_the_end_shows_once_however_often_it_is_reported() -> None:
    # a sweep's client reports the finished count after every poll: the last polls all say 3/3
    lines = plain_lines("points", 3, ((5, 1), (70, 3), (71, 3), (140, 3)))
    # 1/3 in 5 s: 2 left at 5 s each -> ETA 10 s, at 15; the end at 70 s (1m10s), not again at 71 or 140
    assert lines == [f"djsb: points 1/3 (33%), ETA 10s ({clock_text(15.0)})",
                     "djsb: points 3/3 (100%), done in 1m10s"]
