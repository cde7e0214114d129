"""Slurm's clocks read from a site's record: the decay thread's runs bracketed by the priorities a
sacct dump recorded (djsb/history/recorded_priorities.py), and the replay's clock counted from a
multiple of bf_resolution on the Unix clock, on which slurmctld floors its reservations."""

from __future__ import annotations

from pathlib import Path

import pytest

from djsb.history.inputs import SiteFiles
from djsb.history.recorded_priorities import decay_runs
from djsb.history.replay import replay_history
from djsb.history.start import clock_step
from djsb.slurmsite.recompute_watch import calc_phase
from djsb.workloads.job import RecordedOutcome, TraceJob
from djsb.workloads.sacct import parse_sacct_parsable2

RECORD = Path(__file__).parent / "fixtures" / "history" / "site-1"


def job(job_id: int, submit: float, *, user: str = "u1", cpus: int = 1) -> TraceJob:
    return TraceJob(job_id, submit, 5.0, cpus, requested_time=60.0, user=user, account="a1", partition="batch",
                    qos="normal")


def test_changes_of_priority_between_like_jobs_started_at_once_bracket_the_runs() -> None:
    jobs = [job(1, 0.0), job(2, 10.0), job(3, 20.0), job(4, 30.0),
            job(5, 15.0, cpus=2),  # another request: its priority is not compared with the 1-CPU jobs'
            job(6, 25.0),  # waited 10 s: its priority may have been recomputed while it pended
            job(7, 40.0, user="u2"), job(8, 50.0, user="u2")]
    starts = {1: 0.5, 2: 10.5, 3: 20.5, 4: 30.5, 5: 15.5, 6: 35.0, 7: 40.5, 8: 50.5}
    priorities = {1: 100, 2: 100, 3: 150, 4: 150, 5: 999, 6: 7, 7: 10, 8: 20}
    recorded = {i: RecordedOutcome(starts[i], priority=priorities[i]) for i in starts}
    # u1's 1-CPU jobs change between the submission at 10 and the start at 20.5; u2's between 40 and 50.5
    assert decay_runs(jobs, recorded) == [(10.0, 20.5), (40.0, 50.5)]
    # on a 30-s period both fold onto (10, 20.5): the runs fall 15.25 s into it, give or take 5.25 s
    assert calc_phase(decay_runs(jobs, recorded), 30.0) == pytest.approx((15.25, 5.25))
    # a dump without priorities brackets nothing
    assert decay_runs(jobs, {i: RecordedOutcome(starts[i]) for i in starts}) == []


def test_the_clock_counts_from_the_multiple_of_bf_resolution_before_the_first_submission() -> None:
    # 2023-11-14T22:13:57 is Unix 1,700,000,037; / 60 = 28,333,333.95: the multiple at or before it is
    # 28,333,333 x 60 = 1,699,999,980, 57 s before the first submission
    dump = ("JobIDRaw|Submit|Start|End|Elapsed|ReqCPUS|State\n"
            "1|2023-11-14T22:13:57|2023-11-14T22:13:58|2023-11-14T22:14:00|00:00:02|1|COMPLETED\n"
            "2|2023-11-14T22:14:03|2023-11-14T22:14:05|2023-11-14T22:14:06|00:00:01|1|COMPLETED\n")
    aligned = parse_sacct_parsable2(dump, align=clock_step(60.0))
    assert aligned.time_origin == 1_699_999_980
    assert [job.submit for job in aligned.jobs] == [57.0, 63.0]
    assert aligned.recorded[2].start == 65.0
    assert parse_sacct_parsable2(dump).time_origin == 1_700_000_037  # without: the first submission
    assert clock_step(0.0) == 1.0 and clock_step(60.0) == 60.0  # whole seconds at least


def test_a_replay_of_a_committed_record_reads_its_decay_thread_and_counts_on_slurms_grid() -> None:
    if not RECORD.is_dir():
        pytest.skip(f"{RECORD} is not here")
    replay = replay_history(SiteFiles(RECORD / "dump.txt.gz", RECORD / "slurm.conf", RECORD / "assoc.txt",
                                      RECORD / "qos.txt"), window=120.0, step=30.0)
    assert replay.origin % 60 == 0  # bf_resolution's default, as the record's slurm.conf leaves it
    assert 0 <= replay.result.jobs["submit"].min() < 60
    assert any(note.startswith("the decay thread was seen recomputing the priorities") for note in replay.notes)
