"""sbatch command lines as sacct's SubmitLine prints them, read for their options: hand-made lines
worked by hand, and the committed mini-cluster history (Slurm 22.05), whose jobs asked tasks but no
node count, though Slurm spread a quarter of them over several nodes."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from djsb.workloads.sacct import parse_sacct_parsable2, read_sacct
from djsb.workloads.submit_line import requested_nodes, sbatch_options

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
