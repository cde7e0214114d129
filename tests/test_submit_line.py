"""sbatch command lines as sacct's SubmitLine prints them, read for their options: hand-made lines
worked by hand, and the committed mini-cluster history (Slurm 22.05), whose jobs asked tasks but no
node count, though Slurm spread a quarter of them over several nodes."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from djsb.workloads.sacct import parse_sacct_parsable2, read_sacct
from djsb.workloads.submit_line import (
    array_throttle,
    requested_dependency,
    requested_exclusive,
    requested_nodes,
    requested_requeue,
    requested_singleton,
    sbatch_options,
)

HISTORY = Path(__file__).parent / "fixtures" / "history"


def test_options_in_order_up_to_the_script() -> None:
    line = "sbatch --parsable -N2 -p batch --time=4 -w n[1-2] job.sh -N 9"
    assert sbatch_options(line) == [("--parsable", ""), ("-N", "2"), ("-p", "batch"), ("--time", "4"),
                                    ("-w", "n[1-2]")]
    assert sbatch_options("sbatch --wrap='unbalanced") == []


@pytest.mark.parametrize(("line", "nodes"), [
    ("sbatch --ntasks=8 --wrap=sleep 2", None),  # Slurm chooses how many nodes
    ("sbatch -N 2 -n 8 job.sh", 2),
    ("sbatch -N2 job.sh", 2),
    ("sbatch --nodes=3-5 job.sh", 3),  # the minimum of a range
    ("sbatch --nodes 4 job.sh", 4),
    ("sbatch -N 1 --nodes=6 job.sh", 6),  # the last one given
    ("sbatch job.sh -N 2", None),  # the script's own argument
])
def test_the_node_count_asked(line: str, nodes: int | None) -> None:
    assert requested_nodes(line) == nodes


@pytest.mark.parametrize("line", ["sbatch -N x job.sh", "sbatch --nodes=0 job.sh"])
def test_a_node_count_that_is_not_one_is_refused(line: str) -> None:
    with pytest.raises(ValueError):
        requested_nodes(line)


DUMP = """\
JobIDRaw|Submit|Start|End|Elapsed|AllocCPUS|NNodes|ReqMem|State|SubmitLine
1|2026-01-01T00:00:00|2026-01-01T00:00:00|2026-01-01T00:00:10|00:00:10|8|3|2Gn|COMPLETED|sbatch -n 8 job.sh
2|2026-01-01T00:00:00|2026-01-01T00:00:00|2026-01-01T00:00:10|00:00:10|8|2|1G|COMPLETED|sbatch -N 2 -n 8 job.sh
3|2026-01-01T00:00:00|2026-01-01T00:00:00|2026-01-01T00:00:10|00:00:10|8|2|1G|COMPLETED|
"""


def test_the_reader_takes_the_node_count_asked_not_the_one_allocated() -> None:
    jobs = {job.job_id: job for job in parse_sacct_parsable2(DUMP).jobs}
    assert jobs[1].nodes is None  # spread over 3 nodes, asked none
    assert jobs[1].memory_mb == 3 * 2048  # 2 GiB per node, on the 3 nodes it was given
    assert jobs[2].nodes == 2
    assert jobs[3].nodes == 2  # no submit line: the allocation is all the dump says


def test_the_committed_history_asked_no_node_count() -> None:
    dump = HISTORY / "site-1" / "dump.txt.gz"
    if not dump.exists():
        pytest.skip(f"{dump} is not in this checkout")
    lines = gzip.decompress(dump.read_bytes()).decode().splitlines()
    nnodes = lines[0].split("|").index("NNodes")
    spread = sum(1 for line in lines[1:] if int(line.split("|")[nnodes]) > 1)
    assert spread > 500  # Slurm spread them over several nodes ...
    assert all(job.nodes is None for job in read_sacct(dump).jobs)  # ... none of them asked it


@pytest.mark.parametrize(("line", "edges"), [
    ("sbatch --dependency=afterok:12:13,afterany:14 job.sh", ((12, "afterok"), (13, "afterok"), (14, "afterany"))),
    ("sbatch -d afternotok:5 job.sh", ((5, "afternotok"),)),
    ("sbatch -d afterok:1 --dependency afterany:2 job.sh", ((2, "afterany"),)),  # the last one given
    ("sbatch job.sh --dependency=afterok:1", None),  # the script's own argument
    ("sbatch --time=4 job.sh", None),
    ("sbatch -d after:4:5 job.sh", ((4, "after"), (5, "after"))),
    ("sbatch -d afterok:3,singleton job.sh", ((3, "afterok"),)),  # singleton: requested_singleton
    ("sbatch --array=0-3 --dependency=aftercorr:7,afterany:8 job.sh", ((7, "aftercorr"), (8, "afterany"))),
])
def test_the_dependency_asked(line: str, edges: tuple[tuple[int, str], ...] | None) -> None:
    assert requested_dependency(line) == edges


@pytest.mark.parametrize(("value", "why"), [
    ("afterok:1?afterany:2", "any-of"),
    ("after:3+5", r"a delay \(3\+5\) is not modelled"), ("afterburstbuffer:7", "afterburstbuffer is not modelled"),
    ("afterok:12_3", "12_3 is not a job id"), ("afterok:", "an empty id is not a job id"),
])
def test_a_dependency_a_replay_cannot_enforce_is_refused_saying_why(value: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        requested_dependency(f"sbatch --dependency={value} job.sh")


def test_the_features_record_s_dependencies_are_read_from_its_submit_lines() -> None:
    """The committed features record: 12 jobs each waiting afterany for one job of the record submitted
    before it, which started no later than its dependent."""
    lines = [line.split("|") for line in gzip.open(HISTORY / "features" / "dump.txt.gz", "rt").read().splitlines()]
    rows = {int(row[0]): dict(zip(lines[0], row, strict=True)) for row in lines[1:]}
    waiting = {job: requested_dependency(row["SubmitLine"]) for job, row in rows.items()}
    waiting = {job: edges for job, edges in waiting.items() if edges}
    assert len(waiting) == 12
    for job, edges in waiting.items():
        assert edges is not None and len(edges) == 1 and edges[0][1] == "afterany"
        parent = rows[edges[0][0]]
        assert parent["Submit"] <= rows[job]["Submit"] and parent["End"] <= rows[job]["Start"]


@pytest.mark.parametrize(("line", "throttle"), [
    ("sbatch --array=1-6%2 job.sh", 2), ("sbatch -a 0-99%10 job.sh", 10), ("sbatch --array=1-6 job.sh", None),
    ("sbatch --array 1,3,5%1 job.sh", 1), ("sbatch job.sh --array=1-6%2", None),
])
def test_the_throttle_of_an_array(line: str, throttle: int | None) -> None:
    assert array_throttle(line) == throttle


def test_the_features_record_s_arrays_are_read_as_throttled_arrays() -> None:
    """The committed features record: 24 arrays of 6 tasks throttled to %2 (tests/fixtures/history/
    README.md), each task's JobID ``ARRAY_TASK``; Slurm never ran more than 2 of one at once."""
    workload = read_sacct(HISTORY / "features" / "dump.txt.gz")
    tasks = [job for job in workload.jobs if job.array is not None]
    arrays: dict[int, list[tuple[float, float]]] = {}
    for task in tasks:
        assert task.array is not None and task.array[1] == 2
        outcome = workload.recorded[task.job_id]
        arrays.setdefault(task.array[0], []).append((outcome.start, outcome.start + task.run_time))
    assert len(arrays) == 24 and all(len(runs) == 6 for runs in arrays.values())
    for runs in arrays.values():
        assert max(sum(1 for s, e in runs if s <= at < e) for at, _ in runs) <= 2


def test_a_singleton_dependency_is_read() -> None:
    assert requested_singleton("sbatch -d afterok:3,singleton job.sh")
    assert requested_singleton("sbatch --dependency=singleton job.sh")
    assert not requested_singleton("sbatch -d afterok:3 job.sh") and not requested_singleton("sbatch job.sh")


def test_exclusive_is_read_without_a_value() -> None:
    # sbatch(1): --exclusive alone gives the job its nodes; =user and =mcs share them
    assert requested_exclusive("sbatch --exclusive job.sh")
    assert not requested_exclusive("sbatch --exclusive=user job.sh") and not requested_exclusive("sbatch job.sh")


def test_requeue_is_the_last_of_requeue_and_no_requeue() -> None:
    # sbatch(1): --requeue / --no-requeue; neither leaves the cluster's JobRequeue to decide
    assert requested_requeue("sbatch --requeue job.sh") is True
    assert requested_requeue("sbatch --requeue --no-requeue job.sh") is False
    assert requested_requeue("sbatch -N 2 job.sh --requeue") is None  # the script's own argument
