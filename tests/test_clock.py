"""The wall clock's sleep is cut short by a signal handler, and a flood of signals never hangs or
kills a process waiting on it (a ``threading.Event`` set from a handler can: the handler may run
while the main thread holds the Event's lock, inside its own wait)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from djsb.clock import WAKE_STEP_S, WallClock

ROOT = Path(__file__).resolve().parents[1]

SLEEPER = """
import signal, sys, time
from djsb.clock import WallClock
clock = WallClock()
signal.signal(signal.SIGUSR1, lambda signum, frame: clock.wake())
print("ready", flush=True)
sleeps, end = 0, time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    clock.sleep(0.00002)
    sleeps += 1
signal.signal(signal.SIGUSR1, signal.SIG_IGN)
print("done", sleeps, flush=True)
"""


def test_wake_cuts_a_sleep_short_and_is_consumed() -> None:
    clock = WallClock()
    threading.Timer(0.2, clock.wake).start()
    started = time.monotonic()
    clock.sleep(30.0)
    assert time.monotonic() - started < 0.2 + 10 * WAKE_STEP_S
    # the wake was used up: the next sleep lasts its time
    started = time.monotonic()
    clock.sleep(0.3)
    assert time.monotonic() - started >= 0.3


def test_a_wake_before_the_sleep_ends_it_at_once() -> None:
    clock = WallClock()
    clock.wake()
    started = time.monotonic()
    clock.sleep(30.0)
    assert time.monotonic() - started < 1.0


def test_a_flood_of_waking_signals_neither_hangs_nor_kills_the_sleeper() -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", SLEEPER, "2"], stdout=subprocess.PIPE, text=True,
                               cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert sleeper.stdout is not None and sleeper.stdout.readline() == "ready\n"
    sent = 0
    while sleeper.poll() is None and sent < 200_000:
        try:
            os.kill(sleeper.pid, signal.SIGUSR1)
        except ProcessLookupError:
            break
        sent += 1
    try:
        out, _ = sleeper.communicate(timeout=30)
    finally:
        sleeper.kill()
    assert sleeper.returncode == 0 and out.startswith("done"), (sleeper.returncode, out, sent)
    assert sent > 1000
