"""Wrapper batch scripts and Slurm job arrays, without a cluster.

The scripts' behaviour on a real Slurm is tested in test_wrapper_slurm.py and test_sweep_slurm.py;
here their text (the order of the steps, the quoting), the allocation a wrapper asks for, the
queue-time/makespan arithmetic and the sbatch --array command, each worked by hand.
"""

from __future__ import annotations

import shlex

import pytest
from support import ScriptedTransport, ok, sim_request

from djsb.jobs import JobState, JobStatus
from djsb.sweep.slurm_array import array_indices
from djsb.workflows.batch_script import (
    InnerJob,
    WorkflowTimes,
    parse_record,
    render_wrapper_script,
    workflow_times,
    wrapper_request,
)
from job_modules.slurm import SlurmJobModule
from job_modules.slurm.parsers import parse_array_states

INNER = {name: InnerJob(("echo", name, "it's $(x)"), cpus) for name, cpus in (("a", 1), ("b", 2), ("c", 1))}


def step_lines(script: str) -> list[str]:
    """The lines of the script's stages: chains started in the background, waits, stage checks."""
    return [line for line in script.splitlines()
            if line.startswith(("( run_inner", "stop_if_failed ")) or line == "wait"]


def test_a_vertical_wrapper_is_one_chain_run_in_sequence() -> None:
    script = render_wrapper_script("vertical", [[["a", "b", "c"]]], INNER, "/w d")
    # one stage, one chain: a then b then c, each only if the one before succeeded (&&)
    assert step_lines(script) == [
        "( run_inner a 1 '/w d/a.out' echo a 'it'\"'\"'s $(x)' && run_inner b 2 '/w d/b.out' echo b "
        "'it'\"'\"'s $(x)' && run_inner c 1 '/w d/c.out' echo c 'it'\"'\"'s $(x)' ) &",
        "wait", "stop_if_failed 0"]
    assert "record='/w d/record.txt'" in script.splitlines()
    # each inner job is a one-task step of its own CPUs, exactly those (--exact)
    assert 'srun --exact --ntasks=1 --cpus-per-task="$cpus" --job-name="$name" --output="$output" "$@"' in script


def test_a_horizontal_wrapper_runs_its_jobs_side_by_side() -> None:
    script = render_wrapper_script("horizontal", [[["a"], ["b"], ["c"]]], INNER, "/w")
    assert step_lines(script) == ["( run_inner a 1 /w/a.out echo a 'it'\"'\"'s $(x)' ) &",
                                  "( run_inner b 2 /w/b.out echo b 'it'\"'\"'s $(x)' ) &",
                                  "( run_inner c 1 /w/c.out echo c 'it'\"'\"'s $(x)' ) &",
                                  "wait", "stop_if_failed 0"]


def test_mixed_wrappers_are_stages_of_parallel_chains() -> None:
    # horizontal-vertical: 2 sequential stages (a | b), then (c); vertical-horizontal: chains a->b | c
    hv = step_lines(render_wrapper_script("horizontal-vertical", [[["a"], ["b"]], [["c"]]], INNER, "/w"))
    assert [line.split()[2] if line.startswith("(") else line for line in hv] == \
        ["a", "b", "wait", "stop_if_failed 0", "c", "wait", "stop_if_failed 1"]
    vh = step_lines(render_wrapper_script("vertical-horizontal", [[["a", "b"], ["c"]]], INNER, "/w"))
    assert len(vh) == 4 and "run_inner a" in vh[0] and "&& run_inner b" in vh[0] and "run_inner c" in vh[1]


def test_an_inner_job_without_a_command_is_refused() -> None:
    with pytest.raises(ValueError, match="inner job\\(s\\) without a command: d"):
        render_wrapper_script("vertical", [[["a", "d"]]], INNER, "/w")


def test_the_record_parses_names_and_statuses() -> None:
    assert parse_record("a 0\nb 3\nstep two 1\n\n") == {"a": 0, "b": 3, "step two": 1}


def test_the_allocation_of_each_strategy() -> None:
    # vertical: 1 chain, Wrapper.cpus = the largest job's 2 -> 1 task of 2 CPUs
    vertical = wrapper_request("w", [[["a", "b", "c"]]], 2, 5400, 100, "/w")
    assert (vertical.total_tasks, vertical.cpus_per_task, vertical.exec_time) == (1, 2, 5400)
    # horizontal of 3 jobs: Wrapper.cpus = 1 + 2 + 1 = 4 over 3 chains -> 3 tasks of ceil(4/3) = 2 CPUs
    horizontal = wrapper_request("w", [[["a"], ["b"], ["c"]]], 4, 60, 100, "/w")
    assert (horizontal.total_tasks, horizontal.cpus_per_task) == (3, 2)
    # memory: 100 B per CPU x 2 CPUs x 3 tasks
    assert horizontal.total_memory == 600
    assert horizontal.stdout_path == "/w/w.wrapper.out"


def test_queue_time_and_makespan_by_hand() -> None:
    records = [JobStatus(JobState.COMPLETED, submit=100, start=130, end=200),
               JobStatus(JobState.COMPLETED, submit=200, start=260, end=300),
               JobStatus(JobState.COMPLETED, submit=300, start=300, end=450)]
    # queue: (130-100) + (260-200) + (300-300) = 90; makespan: 450 - 100 = 350
    assert workflow_times(records) == WorkflowTimes(queue_time=90, makespan=350)
    with pytest.raises(ValueError, match="submit, start and end"):
        workflow_times([JobStatus(JobState.RUNNING, submit=1, start=2)])


# -- Slurm job arrays ------------------------------------------------------------------------------------

def test_array_indices_as_ranges() -> None:
    assert array_indices([0, 1, 2, 3]) == "0-3"
    assert array_indices([7, 0, 1, 2, 5, 8, 9], max_parallel=4) == "0-2,5,7-9%4"
    assert array_indices([4]) == "4"


def test_an_array_submission_gives_each_task_its_own_output() -> None:
    transport = ScriptedTransport([("sbatch", ok("41\n"))])
    slurm = SlurmJobModule({"partition": "shared"}, transport)
    assert slurm.submit_own_script(sim_request(), "#!/bin/sh\nexit 0\n", array="0-3%2") == "41"
    words = shlex.split(transport.commands[0])
    # %a (the task's index) is Slurm's, so it is not doubled as a literal % would be
    assert "--array=0-3%2" in words
    assert "--output=/runs/a b/sim.out.%a" in words and "--error=/runs/a b/sim.err.%a" in words
    assert transport.files == {"/runs/a b/sim.sh": "#!/bin/sh\nexit 0\n"}


def test_array_states_parse() -> None:
    assert parse_array_states("0|COMPLETED\n1|RUNNING\n2|PENDING\n3|FAILED\n") == {
        0: JobState.COMPLETED, 1: JobState.RUNNING, 2: JobState.PENDING, 3: JobState.FAILED}
