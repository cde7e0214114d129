"""The local job module on real processes: pinning, stop&continue, malleability, cancel."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

import pytest
from support import cpu_seconds, wait_until

from djsb.errors import JobModuleError
from djsb.jobs import JobRequest, JobState
from job_modules.local import LocalJobModule, lent_slices, parse_cpu_list, stat_state_and_group

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")


def test_parse_cpu_list() -> None:
    assert parse_cpu_list("0-3,6") == (0, 1, 2, 3, 6)
    assert parse_cpu_list(5) == (5,)
    assert parse_cpu_list([1, 0]) == (1, 0)


def test_lent_slices_take_the_tail_of_each_task() -> None:
    # two simulation tasks on CPUs 0-3 and 4-7; an analytics of 4 CPUs takes 2 from each task's tail
    assert lent_slices([(0, 1, 2, 3), (4, 5, 6, 7)], 4) == (2, 3, 6, 7)
    # 3 CPUs: ceil(3/2) = 2 from each tail, the first 3 of them
    assert lent_slices([(0, 1, 2, 3), (4, 5, 6, 7)], 3) == (2, 3, 6)


def test_stat_state_and_group_counts_fields_after_the_command_name() -> None:
    # proc(5): pid (comm) state ppid pgrp ...; a command name may hold ") " itself
    assert stat_state_and_group("4242 (a) b (c) T 1 4240 4240 0 -1 4194560 93 0") == ("T", 4240)
    own = Path("/proc/self/stat").read_text()
    assert stat_state_and_group(own) == ("R", os.getpgid(0))


def request(tmp_path: Path, name: str, argv: list[str], cpus: int = 2, colocate: str | None = None) -> JobRequest:
    return JobRequest(name=name, app="simulation", total_tasks=1, cpus_per_task=cpus, total_memory=64 << 20,
                      exec_time=1, argv=tuple(argv), stdout_path=str(tmp_path / f"{name}.out"),
                      stderr_path=str(tmp_path / f"{name}.err"), colocate_with=colocate)


def wait_done(module: LocalJobModule, job_id: str, timeout: float = 60) -> None:
    wait_until(lambda: module.poll([job_id])[job_id].state.finished, timeout, f"job {job_id} to finish")


def proc_states(pid: int) -> set[str]:
    """The state letter of every thread of ``pid`` (from /proc, an independent view)."""
    states = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        stat = (task / "stat").read_text()
        states.add(stat[stat.rindex(")") + 2])
    return states


def group_size(pgid: int) -> int:
    """How many processes are in process group ``pgid`` (from /proc)."""
    size = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            size += stat_state_and_group(stat.read_text())[1] == pgid
        except (FileNotFoundError, ProcessLookupError):
            continue  # it ended while we looked
    return size


def test_pinning_and_colocation(tmp_path: Path) -> None:
    module = LocalJobModule({"cpus": "0-1"})
    sim = module.submit(request(tmp_path, "sim", ["sleep", "5"]))
    ana = module.submit(request(tmp_path, "ana", ["sleep", "5"], cpus=1, colocate=sim))
    try:
        assert os.sched_getaffinity(int(sim)) == {0, 1}
        assert os.sched_getaffinity(int(ana)) == {1}
    finally:
        module.close()
    assert module.poll([sim])[sim].state is JobState.CANCELLED


def test_stop_and_continue_stops_every_thread_and_delays_the_end(tmp_path: Path, apps_bin: Path) -> None:
    module = LocalJobModule({})
    app = str(apps_bin / "djsb-stream")
    # alone: about 1.5 s of iterations (fewer on a loaded machine), counted by the app
    alone = module.submit(request(tmp_path, "alone", [app, "--elements", "2000000", "--threads", "2",
                                                      "--time", "1.5"]))
    wait_done(module, alone)
    iterations = json.loads((tmp_path / "alone.out").read_text())["iterations"]
    # the same work, suspended for 2 s once it has started computing
    job = module.submit(request(tmp_path, "stopped", [app, "--elements", "2000000", "--threads", "2",
                                                      "--iterations", str(iterations)]))
    pid = int(job)
    wait_until(lambda: cpu_seconds(pid) > 0.05, 30, "the job to start computing")
    module.suspend(job)
    wait_until(lambda: proc_states(pid) == {"T"}, 10, "every thread of the job to be stopped")
    held_from, cpu_held = time.monotonic(), cpu_seconds(pid)
    assert module.poll([job])[job].state is JobState.SUSPENDED
    time.sleep(2.0)  # the experiment: the job stays stopped for 2 s
    assert cpu_seconds(pid) == cpu_held  # not one clock tick of CPU while stopped, however loaded the machine
    held = time.monotonic() - held_from
    module.resume(job)
    wait_until(lambda: "T" not in proc_states(pid), 10, "the job's threads to run again")
    wait_done(module, job)
    status = module.poll([job])[job]
    assert status.state is JobState.COMPLETED and status.start is not None and status.end is not None
    report = json.loads((tmp_path / "stopped.out").read_text())
    assert report["iterations"] == iterations and report["validated"] is True
    # The time it was held stopped shows in the execution time: in the app's own (monotonic) clock,
    # and in the module's start and end, which hold the app's whole run (10 ms for the clock reads).
    # Compared with what was observed, not with a run alone, so a loaded machine does not matter.
    assert held >= 2.0
    assert report["elapsed_s"] >= held
    assert status.end - status.start >= report["elapsed_s"] - 0.01


def test_shrink_through_the_control_file(tmp_path: Path, apps_bin: Path) -> None:
    module = LocalJobModule({"cpus": "0-1"})
    control = tmp_path / "sim.threads"
    control.write_text("2\n")
    job = module.submit(request(tmp_path, "sim", [str(apps_bin / "djsb-stream"), "--elements", "2000000",
                                                  "--threads", "2", "--time", "3", "--control", str(control)]))
    pid = int(job)  # its main thread is thread 0 of every team, pinned to CPU 0 when it runs alone
    wait_until(lambda: cpu_seconds(pid) > 0.05, 30, "the job to start computing")
    control.write_text("1\n")
    wait_until(lambda: os.sched_getaffinity(pid) == {0}, 10, "the job to shrink to one thread on CPU 0")
    control.write_text("2\n")
    wait_until(lambda: os.sched_getaffinity(pid) == {0, 1}, 10, "the job to grow back to CPUs 0-1")
    wait_done(module, job)
    report = json.loads((tmp_path / "sim.out").read_text())
    assert report["threads_min_seen"] == 1
    assert [threads for _, threads in report["thread_changes"]][-2:] == [1, 2]
    assert report["validated"] is True


def test_cancel_kills_the_whole_group(tmp_path: Path) -> None:
    module = LocalJobModule({"kill_grace": 0.5})
    script = "trap '' TERM; sleep 30 & sleep 30; wait"
    job = module.submit(request(tmp_path, "stubborn", ["sh", "-c", script]))
    wait_until(lambda: group_size(int(job)) == 3, 10, "the shell and its two sleeps")
    module.suspend(job)
    module.cancel(job)
    assert module.poll([job])[job].state is JobState.CANCELLED
    # no process of the group is left, the background sleep included
    wait_until(lambda: group_size(int(job)) == 0, 5, "every process of the cancelled job's group to end")


def test_another_module_finds_a_job_by_its_token_and_cancels_it(tmp_path: Path) -> None:
    first = LocalJobModule({"cpus": "0-1"})
    job = request(tmp_path, "sim", ["sleep", "30"])
    job_id = first.submit(job)
    first.suspend(job_id)
    try:
        # a second harness (here: a second module) knows only the token the first wrote ahead
        second = LocalJobModule({"cpus": "0-1", "kill_grace": 1})
        assert second.find_by_token([job.token, "0" * 32]) == {job.token: job_id}
        assert proc_states(int(job_id)) == {"T"}
        second.cancel(job_id)
        assert second.find_by_token([job.token]) == {}
        wait_done(first, job_id, timeout=5)  # the first module's reaper saw it end
        assert first.poll([job_id])[job_id].exit_code == -15  # SIGTERM did it, within the grace
    finally:
        first.close()


def test_a_job_pinned_to_a_cpu_this_process_may_not_use_is_a_module_error(tmp_path: Path) -> None:
    module = LocalJobModule({})
    beyond = max(os.sched_getaffinity(0)) + 1
    pinned = dataclasses.replace(request(tmp_path, "sim", ["sleep", "5"], cpus=1), cpu_list=(beyond,))
    try:
        with pytest.raises(JobModuleError, match=f"local: cannot start sleep: its process group or its pinning "
                                                 f"to CPUs {beyond} failed"):
            module.submit(pinned)
    finally:
        module.close()
