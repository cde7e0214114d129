"""The busiest week of a trace and its window (djsb/workloads/window.py, 004 sec. 3.3.2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from djsb.cli import main
from djsb.workloads.job import TraceJob
from djsb.workloads.swf import Workload
from djsb.workloads.window import DAY, WEEK, Window, busiest, week_starts, window_jobs


def job(job_id: int, submit: float, cpus: int, run_time: float) -> TraceJob:
    return TraceJob(job_id, submit, run_time, cpus)


def test_week_starts_are_local_sunday_midnights() -> None:
    # UnixStartTime 1704283200 is Wednesday 2024-01-03 12:00 UTC. The first Sunday midnight (UTC) is
    # 2024-01-07 00:00, 3.5 days later: 302400 s; the next one 7 days after that.
    jobs = [job(1, 0, 1, 1), job(2, 20 * DAY, 1, 1)]
    workload = Workload(jobs, {"UnixStartTime": "1704283200", "TimeZoneString": "UTC"}, [], "t")
    assert week_starts(workload) == [302400.0, 302400.0 + WEEK, 302400.0 + 2 * WEEK]
    # Without a time zone: every 7 days from the trace's start.
    assert week_starts(Workload(jobs, {}, [], "t")) == [0.0, WEEK, 2 * WEEK]


def test_busiest_week_has_the_most_submitted_work() -> None:
    # Week 0: 10 CPUs x 100 s = 1000 CPU-s; week 1: 2 x 400 + 1 x 100 = 900; week 2: 5 x 300 = 1500.
    jobs = [job(1, DAY, 10, 100), job(2, WEEK + DAY, 2, 400), job(3, WEEK + 2 * DAY, 1, 100),
            job(4, 2 * WEEK + 3 * DAY, 5, 300)]
    assert busiest(jobs, [0.0, WEEK, 2 * WEEK]) == 2 * WEEK
    assert busiest(jobs[:3], [0.0, WEEK, 2 * WEEK]) == 0.0


def test_window_keeps_the_warmup_and_the_week_shifted_to_zero() -> None:
    # Week from 10 days, warm-up 2 days: jobs submitted in [8 d, 17 d) shifted by -8 d.
    jobs = [job(1, 7 * DAY, 1, 1), job(2, 8 * DAY, 1, 1), job(3, 12 * DAY, 1, 1), job(4, 17 * DAY, 1, 1)]
    kept = window_jobs(jobs, Window(10 * DAY, WEEK, 2 * DAY, None))
    assert [(j.job_id, j.submit) for j in kept] == [(2, 0.0), (3, 4 * DAY)]


def test_a_window_needs_a_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "w.yaml"
    config.write_text("cluster: {nodes: [{count: 1, cores: 4}]}\n"
                      "workload:\n  generator: empty\n  window: {start: busiest}\n")
    assert main(["simulate", str(config), "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"djsb: error: {config}:4: workload.window: a window is taken from a trace ('swf'), not from a generator")
