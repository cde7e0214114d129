"""A Slurm sweep's record of its job arrays and what a later client does with their live tasks
(djsb.sweep.arrays): the ledger, the squeue of the live tasks by token, the plan, and the order of
the client's steps, each worked by hand. The live sequence is in tests/test_sweep_slurm.py."""

from __future__ import annotations

import shlex
from collections.abc import Collection
from pathlib import Path

import pytest
from support import ok
from test_slurm_module import module

from djsb.harness.ledger import SUBMITTING, read_entries
from djsb.jobs import JobRequest, JobState
from djsb.sweep import slurm_array
from djsb.sweep.arrays import ArrayLedger, ArrayPlan, plan_arrays
from djsb.sweep.slurm_array import ArraySettings, run_slurm_array
from djsb.sweep.spec import read_sweep
from djsb.sweep.sweep_dir import SweepDirectory
from job_modules.slurm.parsers import parse_tagged_array_tasks

# squeue --noheader --me --array --states=all --format=%i|%T|%k as Slurm 22.05 printed it for an
# array 2 (0-5%2) after scancel --state=PENDING, plus a plain job and another user's array
LISTING = """\
2_1|RUNNING|djsb-abc123
2_0|RUNNING|djsb-abc123
2|CANCELLED|djsb-abc123
7|RUNNING|djsb-def456
9_0|PENDING|not ours
9_1|COMPLETED|djsb-abc999
"""


def test_array_tasks_are_read_from_squeue_and_the_arrays_own_record_is_skipped() -> None:
    # 2|CANCELLED stands for 2_2..2_5 cancelled while pending; 7 is not an array; 9_0 carries no token
    assert parse_tagged_array_tasks(LISTING) == [
        ("2", 1, JobState.RUNNING, "abc123"), ("2", 0, JobState.RUNNING, "abc123"),
        ("9", 1, JobState.COMPLETED, "abc999")]


def test_live_array_tasks_are_one_squeue_of_this_users_tasks_filtered_by_token() -> None:
    slurm, transport = module([("squeue", ok(LISTING))])
    # abc999's only task ended; def456 is no array: only array 2's two running tasks are live
    assert slurm.live_array_tasks(["abc123", "abc999", "def456"]) == {
        "2": {1: JobState.RUNNING, 0: JobState.RUNNING}}
    assert len(transport.commands) == 1
    assert shlex.split(transport.commands[0]) == ["squeue", "--noheader", "--me", "--array", "--states=all",
                                                  "--format=%i|%T|%k"]


def test_a_lost_sbatch_reply_of_an_array_finds_the_arrays_id() -> None:
    # the retried sbatch looks for its token: an array with pending tasks is listed as 40_[2-5%2]
    slurm, _ = module([("squeue", ok("40_[2-5%2]|PENDING|djsb-feed\n40_1|RUNNING|djsb-feed\n"))])
    assert slurm.find_submitted("feed") == "40"


def test_the_ledger_records_each_array_before_and_after_sbatch(tmp_path: Path) -> None:
    first = ArrayLedger(tmp_path)
    assert first.attempt == 1 and first.arrays() == []
    first.submitting("aaa", "0-15%3")
    first.submitted("aaa", "202")
    second = ArrayLedger(tmp_path)  # a client that resumes: its rows are attempt 2
    second.submitting("bbb", "14%3")  # killed before sbatch answered: no id
    with (tmp_path / "slurm" / "arrays.csv").open("a") as handle:
        handle.write("3,submitted,ccc")  # a row a crash tore: left out
    arrays = ArrayLedger(tmp_path).arrays()
    assert [(a.attempt, a.token, a.name, a.job_id) for a in arrays] == [
        (1, "aaa", "0-15%3", "202"), (2, "bbb", "14%3", None)]
    assert ArrayLedger(tmp_path).attempt == 3


def test_the_plan_adopts_live_tasks_and_submits_only_the_points_nobody_runs() -> None:
    # 16 points; 0-9 finished; array 202 still runs 10-12 and queues 13 and 15; 14 was cancelled
    plan = plan_arrays(range(10, 16), {"202": [12, 10, 11, 13, 15]})
    assert plan.adopt == {"202": [10, 11, 12, 13, 15]} and plan.submit == [14] and plan.wait == ["202"]
    # two earlier arrays, one whose point 9 already finished (its task still exiting): both waited
    # for, nothing new, and point 9 counted once, as finished, not adopted as well (2 adopted)
    plan = plan_arrays([10, 11], {"202": [9, 10], "216": [11]})
    assert plan.adopt == {"202": [10], "216": [11]} and plan.submit == [] and plan.wait == ["202", "216"]
    # an array whose only live task is a finished point's: waited for, adopting nothing
    plan = plan_arrays([11], {"202": [9], "216": [11]})
    assert plan.adopt == {"216": [11]} and plan.wait == ["202", "216"]
    # no earlier array alive: every unfinished point in the new array
    assert plan_arrays([3, 7], {}) == ArrayPlan({}, [3, 7], [])


class FakeArrays:
    """A Slurm module that records the client's calls: array 202 of an earlier client runs point 3
    and queues point 4; every array has ended when first polled."""

    def __init__(self, ledger: Path) -> None:
        self.ledger = ledger
        self.calls: list[str] = []

    def live_array_tasks(self, tokens: Collection[str]) -> dict[str, dict[int, JobState]]:
        self.calls.append(f"live {sorted(tokens)}")
        return {"202": {3: JobState.RUNNING, 4: JobState.PENDING}}

    def array_states(self, job_id: str) -> dict[int, JobState]:
        self.calls.append(f"states {job_id}")
        return {0: JobState.COMPLETED}

    def submit_own_script(self, request: JobRequest, script: str, *, array: str | None = None) -> str:
        recorded = read_entries(self.ledger)[-1]  # written before sbatch, with the token sbatch carries
        assert (recorded.event, recorded.token, recorded.name) == (SUBMITTING, request.token, array)
        self.calls.append(f"sbatch {array}")
        return "216"

    def cancel(self, job_id: str) -> None:
        self.calls.append(f"cancel {job_id}")

    def close(self) -> None:
        return None


def test_a_client_waits_for_the_adopted_array_then_submits_the_rest(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "sweep.yaml"
    config.write_text("a: 1\nsweep:\n  grid:\n    a: [1, 2, 3, 4, 5, 6]\n")
    directory = SweepDirectory(tmp_path / "out")
    directory.claim(read_sweep(config))
    ArrayLedger(directory.path).submitting("t202", "0-5%2")
    ArrayLedger(directory.path).submitted("t202", "202")
    fake = FakeArrays(directory.path / "slurm" / "arrays.csv")
    monkeypatch.setattr(slurm_array, "load_job_module", lambda *args: fake)
    outcome = run_slurm_array(read_sweep(config), ArraySettings({}, max_parallel=2, poll_interval=0.01),
                              directory, [2, 3, 4, 5], config, progress=lambda done: None)
    # points 3 and 4 are array 202's; 2 and 5 go into a new array, submitted once 202 has ended
    assert fake.calls == ["live ['t202']", "states 202", "sbatch 2,5%2", "states 216"]
    assert [(a.name, a.job_id) for a in ArrayLedger(directory.path).arrays()] == [("0-5%2", "202"),
                                                                                  ("2,5%2", "216")]
    assert sorted(outcome.failed) == [2, 3, 4, 5]  # the fake ran nothing: no point was written
