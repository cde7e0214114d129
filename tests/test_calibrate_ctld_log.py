"""slurmctld's log as a calibration reads it (djsb/calibrate/ctld_log.py): the parser on the
mini-cluster's own log, the clock put on Unix time, the passes that started jobs put at their
instant, and the replay of a calibration run on a loaded machine (tests/fixtures/calibrate/loaded:
its run 1 as saved, sdiag's pass brackets and the log written during it), which the model follows
only with the log's instants."""

from __future__ import annotations

import calendar
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from bench.readme_numbers import loaded_replay
from djsb.calibrate.compare import compare
from djsb.calibrate.ctld_log import (
    BACKFILL,
    END,
    MAIN,
    SUBMIT,
    CtldEvent,
    clock_offset,
    located_passes,
    log_instants,
    log_reader,
    logged_starts,
    parse_ctld_log,
    unlogged_note,
)
from djsb.calibrate.model_replay import run_times, submission_times
from djsb.workloads.job import TraceJob

LOADED = Path(__file__).parent / "fixtures" / "calibrate" / "loaded"


def utc(stamp: str) -> float:
    """``2026-11-29T13:34:56.522`` as Unix seconds (UTC)."""
    whole, millis = stamp.split(".")
    return calendar.timegm(pd.Timestamp(whole).timetuple()) + int(millis) / 1000


def test_the_mini_clusters_log_gives_each_jobs_instants() -> None:
    events = parse_ctld_log((LOADED / "slurmctld.log").read_text())
    kinds = pd.Series([e.event for e in events]).value_counts().to_dict()
    # 32 jobs: each queued and ended once; 14 started by the main scheduler, 18 by backfill (the
    # log's "sched: Allocate" and "sched/backfill: _start_job" lines, counted with grep)
    assert kinds == {SUBMIT: 32, END: 32, MAIN: 14, BACKFILL: 18}
    of_5480 = {e.event: e.stamp for e in events if e.slurm_id == 5480}
    # [2026-11-29T13:34:56.522] _slurm_rpc_submit_batch_job: JobId=5480 ...
    # [2026-11-29T13:34:56.527] sched/backfill: _start_job: Started JobId=5480 in oversub on n4
    # [2026-11-29T13:34:57.680] _job_complete: JobId=5480 done
    assert of_5480 == pytest.approx({SUBMIT: utc("2026-11-29T13:34:56.522"),
                                     BACKFILL: utc("2026-11-29T13:34:56.527"),
                                     END: utc("2026-11-29T13:34:57.680")}, abs=1e-6)


def test_an_array_task_a_zone_and_a_log_without_milliseconds() -> None:
    text = ("[2026-11-29T14:34:56.522+01:00] sched: Allocate JobId=123_4(127) NodeList=n1 #CPUs=1 Partition=p\n"
            "[2026-11-29T13:34:57.000Z] _job_complete: JobId=127 done\n"
            "[2026-11-29T13:34:56] _slurm_rpc_submit_batch_job: JobId=128 InitPrio=1 usec=9\n"
            "[2026-11-29T13:34:58.001] _job_complete: JobId=127 WEXITSTATUS 0\n")
    # the task's own id (127) is in parentheses; +01:00 is an hour ahead of UTC; a stamp without
    # milliseconds (LogTimeFormat=iso8601) and a complete line that is not "done" give nothing
    assert parse_ctld_log(text) == [CtldEvent(utc("2026-11-29T13:34:56.522"), MAIN, 127),
                                    CtldEvent(utc("2026-11-29T13:34:57.000"), END, 127)]


def test_the_logs_clock_is_put_on_unix_time_by_whole_quarter_hours() -> None:
    # Slurm recorded submits at Unix seconds 1000 and 2000 (truncated); a controller on UTC+01:00
    # logged them at 1000.4 + 3600 and 2000.7 + 3600: the median gap 3600.55 is 3600 and 0.55 s.
    logged = [CtldEvent(4600.4, SUBMIT, 7), CtldEvent(5600.7, SUBMIT, 8), CtldEvent(5601.0, END, 7)]
    assert clock_offset(logged, {7: 1000.0, 8: 2000.0}) == 3600.0
    # a gap of 3603 s leaves 3 s past the quarter hour: not the second Slurm truncated
    assert clock_offset([CtldEvent(4603.0, SUBMIT, 7)], {7: 1000.0}) is None
    assert clock_offset(logged, {9: 1000.0}) is None


def test_a_pass_that_started_jobs_is_put_at_its_first_start() -> None:
    passes = pd.DataFrame({"run": 1, "scheduler": [MAIN, BACKFILL, BACKFILL, BACKFILL],
                           "time": [10.0, 23.21, 28.2, 33.2], "uncertainty": [0.05, 0.08, 0.08, 0.08]})
    starts = pd.DataFrame({"time": [23.26, 23.259, 40.0, 9.9], "scheduler": [BACKFILL, BACKFILL, BACKFILL, MAIN]})
    located = located_passes(passes, starts)
    # two jobs started at 23.26 and 23.259, within the first backfill bracket (23.13-23.29): that
    # pass ran at 23.259; the main pass started one at 9.9 (its bracket 9.95-10.05 ends after it:
    # sdiag's counter steps at a pass's end); the start at 40 is after every bracket; the second
    # and third backfill passes started nothing and keep their brackets
    assert located["time"].tolist() == [9.9, 23.259, 28.2, 33.2]
    assert located["uncertainty"].tolist() == [0.0005, 0.0005, 0.08, 0.08]


def test_a_requeued_job_counts_its_last_run_and_every_start_locates_a_pass() -> None:
    # Slurm id 9 (job 1, Slurm's submit second 100 of origin 50): queued at 100.2, started by the
    # main scheduler at 101.0, preempted and requeued, ended at 104.0, started again by backfill at
    # 110.5 and done at 120.5. Its run is the last (110.5 to 120.5); both starts locate passes.
    text = "\n".join(f"[2026-11-29T00:00:{stamp}] {message}" for stamp, message in (
        ("00.200", "_slurm_rpc_submit_batch_job: JobId=9 InitPrio=1 usec=9"),
        ("01.000", "sched: Allocate JobId=9 NodeList=n1 #CPUs=1 Partition=p"),
        ("04.000", "_job_complete: JobId=9 done"),
        ("10.500", "sched/backfill: _start_job: Started JobId=9 in p on n1"),
        ("20.500", "_job_complete: JobId=9 done")))
    origin = utc("2026-11-29T00:00:00.000") - 50.0
    replay = pd.DataFrame({"slurm_id": [9], "submit": [50.0], "origin": [origin]},
                          index=pd.Index([1], name="job_id"))
    logged = parse_ctld_log(text)
    instants = log_instants(logged, replay)
    assert instants is not None
    assert instants.loc[1].tolist() == pytest.approx([50.2, 60.5, 70.5, 2, 0.0])
    assert logged_starts(logged, replay).values.tolist() == [[51.0, MAIN], [60.5, BACKFILL]]


def test_a_job_arrays_one_submission_is_every_tasks() -> None:
    # sbatch --array=0-1 answered 20 (jobs 1 and 2, its tasks 0 and 1; Slurm's submit second 100 of
    # origin 50), logged once under that id at 100.2; task 0 started as 21 at 101.0 (logged
    # 20_0(21)), task 1 kept the array's id and started at 102.0. Both were queued at 100.2.
    text = "\n".join(f"[2026-11-29T00:00:{stamp}] {message}" for stamp, message in (
        ("00.200", "_slurm_rpc_submit_batch_job: JobId=20 InitPrio=1 usec=9"),
        ("01.000", "sched: Allocate JobId=20_0(21) NodeList=n1 #CPUs=1 Partition=p"),
        ("02.000", "sched: Allocate JobId=20_1(20) NodeList=n2 #CPUs=1 Partition=p"),
        ("05.000", "_job_complete: JobId=20_0(21) done"),
        ("06.000", "_job_complete: JobId=20_1(20) done")))
    origin = utc("2026-11-29T00:00:00.000") - 50.0
    replay = pd.DataFrame({"slurm_id": [21, 20], "submitted_id": [20, 20], "submit": [50.0, 50.0],
                           "origin": [origin, origin]}, index=pd.Index([1, 2], name="job_id"))
    instants = log_instants(parse_ctld_log(text), replay)
    assert instants is not None
    assert instants[["ctld_submit", "ctld_start", "ctld_end"]].values.ravel().tolist() == \
        pytest.approx([50.2, 51.0, 55.0, 50.2, 52.0, 56.0])
    # a replay saved before the column: a job's own id is the one it was submitted as
    alone = log_instants(parse_ctld_log(text), replay.drop(columns="submitted_id"))
    assert alone is not None and alone["ctld_submit"].isna().tolist() == [True, False]


def test_a_suspended_job_runs_its_time_less_its_suspensions() -> None:
    # Slurm id 9 (job 1): queued at 100.2, started at 101.0, suspended by the gang scheduler at
    # 103.0 and resumed at 110.5 (7.5 s), suspended again at 112.0 and resumed at 113.0 (1 s), done
    # at 120.0; Slurm id 10 (job 2), started at 101.0, suspended at 103.0 and ended (cancelled)
    # while suspended at 105.25 (2.25 s). A failed suspension ("gang: suspending JobId=9: <error>")
    # is no suspension. Job 1 ran 120.0 - 101.0 - 8.5 = 10.5 s of work.
    text = "\n".join(f"[2026-11-29T00:00:{stamp}] {message}" for stamp, message in (
        ("00.200", "_slurm_rpc_submit_batch_job: JobId=9 InitPrio=1 usec=9"),
        ("00.300", "_slurm_rpc_submit_batch_job: JobId=10 InitPrio=1 usec=9"),
        ("01.000", "sched: Allocate JobId=9 NodeList=n1 #CPUs=1 Partition=p"),
        ("01.000", "sched: Allocate JobId=10 NodeList=n2 #CPUs=1 Partition=p"),
        ("03.000", "gang: suspending JobId=9"),
        ("03.000", "gang: suspending JobId=10"),
        ("05.250", "_job_complete: JobId=10 done"),
        ("06.000", "gang: suspending JobId=9: Job is already suspended"),
        ("10.500", "gang: resuming JobId=9"),
        ("12.000", "gang: suspending JobId=9"),
        ("13.000", "gang: resuming JobId=9"),
        ("20.000", "_job_complete: JobId=9 done")))
    origin = utc("2026-11-29T00:00:00.000") - 50.0
    replay = pd.DataFrame({"slurm_id": [9, 10], "submit": [50.0, 50.0], "origin": [origin, origin]},
                          index=pd.Index([1, 2], name="job_id"))
    instants = log_instants(parse_ctld_log(text), replay)
    assert instants is not None
    assert instants["ctld_suspended"].tolist() == pytest.approx([8.5, 2.25])
    reference = pd.DataFrame({"submit": [0.0], "start": [51.0], "end": [70.0], "state": ["COMPLETED"],
                              **{name: [instants.at[1, name]] for name in instants.columns}},
                             index=pd.Index([1], name="job_id"))
    assert run_times([TraceJob(1, 0.0, 10.0, 1)], reference).tolist() == pytest.approx([10.5])


def test_a_job_suspended_as_it_starts_counts_that_suspension() -> None:
    # gang.c's gs_job_start suspends a job that does not fit the active row inside select_nodes, so
    # "gang: suspending" comes just before the scheduler's "sched: Allocate" (node_scheduler.c 2792,
    # job_scheduler.c 1902 in 22.05). Slurm id 13 (job 1), as the mini-cluster logged it under
    # PreemptMode=GANG: allocated and suspended at 04:06.938, resumed at 04:30.047, suspended at
    # 05:08.718, resumed at 05:31.827: 23.109 s twice. Slurm id 14 (job 2): suspended at 04:30.000 in its
    # first run, requeued (the log says nothing), allocated again at 04:40.000 and done at 04:45.000:
    # the first run's suspension is not the second's.
    text = """\
[2026-11-30T00:04:06.700] _slurm_rpc_submit_batch_job: JobId=13 InitPrio=4294901747 usec=255
[2026-11-30T00:04:06.800] _slurm_rpc_submit_batch_job: JobId=14 InitPrio=4294901746 usec=255
[2026-11-30T00:04:06.938] gang: suspending JobId=13
[2026-11-30T00:04:06.938] sched: Allocate JobId=13 NodeList=n4 #CPUs=1 Partition=cal_gang
[2026-11-30T00:04:07.000] sched: Allocate JobId=14 NodeList=n3 #CPUs=1 Partition=cal_gang
[2026-11-30T00:04:30.000] gang: suspending JobId=14
[2026-11-30T00:04:30.047] gang: resuming JobId=13
[2026-11-30T00:04:40.000] sched: Allocate JobId=14 NodeList=n3 #CPUs=1 Partition=cal_gang
[2026-11-30T00:04:45.000] _job_complete: JobId=14 done
[2026-11-30T00:05:08.718] gang: suspending JobId=13
[2026-11-30T00:05:31.827] gang: resuming JobId=13
[2026-11-30T00:05:32.871] _job_complete: JobId=13 done
"""
    origin = utc("2026-11-30T00:04:00.000") - 50.0
    replay = pd.DataFrame({"slurm_id": [13, 14], "submit": [56.0, 56.0], "origin": [origin, origin]},
                          index=pd.Index([1, 2], name="job_id"))
    instants = log_instants(parse_ctld_log(text), replay)
    assert instants is not None
    assert instants["ctld_suspended"].tolist() == pytest.approx([2 * 23.109, 0.0])
    assert instants["ctld_starts"].tolist() == [1, 2]
    assert instants["ctld_start"].tolist() == pytest.approx([56.938, 90.0])


def test_submissions_and_run_times_come_from_the_log_where_it_has_them() -> None:
    # job 1: sbatch returned at 5.3 in Slurm's second 5, the log queued it at 5.25, started it at
    # 6.1 and ended it at 16.4: submitted 5.25, ran 10.3. Job 2 has no log instants: its
    # submission is sbatch's return (7.2), its run its sleep 3 plus the mean overhead of the
    # completed runs less the sleeps ((11 - 10) + (4 - 3)) / 2 = 1. Job 3 was preempted after 0.9 s
    # (the log's 8.2 to 9.1): it runs its sleep 5 plus that overhead, 6 (whether the model preempts
    # it is the model's decision), and its short run (1 - 5) is not an overhead.
    reference = pd.DataFrame({"submit": [5.0, 7.0, 7.0], "sent": [5.3, 7.2, 7.4], "start": [6.0, 8.0, 8.0],
                              "end": [17.0, 12.0, 9.0], "state": ["COMPLETED", "COMPLETED", "PREEMPTED"],
                              "ctld_submit": [5.25, None, 7.35], "ctld_start": [6.1, None, 8.2],
                              "ctld_end": [16.4, None, 9.1]},
                             index=pd.Index([1, 2, 3], name="job_id"))
    jobs = [TraceJob(1, 0.0, 10.0, 1), TraceJob(2, 2.0, 3.0, 1), TraceJob(3, 2.0, 5.0, 1)]
    assert submission_times(reference).tolist() == pytest.approx([5.25, 7.2, 7.35])
    assert run_times(jobs, reference).tolist() == pytest.approx([10.3, 4.0, 6.0])


def test_the_log_is_read_from_where_it_stood_when_the_replay_began(tmp_path: Path) -> None:
    def run(command: str) -> tuple[int, str]:
        done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=30)
        return done.returncode, done.stdout

    log = tmp_path / "slurm ctld.log"  # a space: the path is quoted
    log.write_text("[2026-11-29T13:00:00.000] _job_complete: JobId=1 done\n")
    read = log_reader(run, str(log))
    with log.open("a") as more:
        more.write("[2026-11-29T13:00:01.000] _slurm_rpc_submit_batch_job: JobId=2 InitPrio=1 usec=9\n"
                   "[2026-11-29T13:00:01.500] backfill: beginning\n")
    assert read() == "[2026-11-29T13:00:01.000] _slurm_rpc_submit_batch_job: JobId=2 InitPrio=1 usec=9\n"
    assert log_reader(run, str(tmp_path / "missing.log"))() is None


def test_a_replay_on_a_loaded_machine_is_followed_with_the_logs_instants() -> None:
    # On a loaded machine job 12 (Slurm id 5480) was queued at .522 and backfilled at .527 by a pass
    # sdiag bracketed at .40-.56 around .48; sbatch returned at .524. Placed at .48 the pass ran
    # before the job came, so the model backfilled it one bf_interval later and the jobs behind it
    # moved: the calibration's targets (mean wait within 10 %, tau >= 0.8) are missed. With the
    # passes at the log's instants the model takes Slurm's every decision: tau 1 and the mean wait
    # within 1 %, each start within the second Slurm recorded it in.
    slurm, blurred = loaded_replay(with_log=False)
    missed = compare(slurm, blurred)
    assert abs(missed.mean_wait_error) > 0.10 or missed.tau < 0.8, missed
    slurm, model = loaded_replay(with_log=True)
    followed = compare(slurm, model)
    assert followed.tau == pytest.approx(1.0)
    assert abs(followed.mean_wait_error) < 0.01
    assert ((model["start"] - slurm["start"]).between(0.0, 1.0)).all()


def test_a_replay_without_the_log_says_so() -> None:
    slurm = pd.read_csv(LOADED / "slurm_1.csv", index_col="job_id")
    (note,) = unlogged_note({"SlurmctldLogFile": "/var/log/slurmctld.log"}, slurm)
    assert "/var/log/slurmctld.log could not be read" in note
    assert "syslog" in unlogged_note({}, slurm)[0]
    instants = log_instants(parse_ctld_log((LOADED / "slurmctld.log").read_text()), slurm)
    assert instants is not None
    assert unlogged_note({}, slurm.join(instants)) == []
