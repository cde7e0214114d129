"""Slurm's GRES and TRES strings read by djsb/slurm_text.py: the forms slurm.conf(5), gres.conf(5),
``scontrol show node`` and sacct(1) write, and the mini-cluster's own recorded output."""

from __future__ import annotations

from pathlib import Path

import pytest

from djsb.slurm_text import gres_gpus, tres

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize(("text", "gpus"), [
    ("gpu:a100:4", (("a100", 4),)),
    ("gpu:4", (("", 4),)),
    ("gpu", (("", 1),)),
    ("gpu:a100:2,gpu:v100:2", (("a100", 2), ("v100", 2))),
    ("gpu:a100:4(S:0-1),nic:1", (("a100", 4),)),  # scontrol appends the sockets; a NIC is no GPU
    ("gpu:tesla:2(S:0,1),gpu:tesla:1(S:1)", (("tesla", 3),)),  # the same type on two socket sets
    ("gpu:1K", (("", 1024),)),
    ("(null)", ()),
    ("", ()),
    ("gpu:a100:0", ()),
])
def test_a_node_s_gres_gives_its_gpus_by_type(text: str, gpus: tuple[tuple[str, int], ...]) -> None:
    assert gres_gpus(text) == gpus


@pytest.mark.parametrize("text", ["gpu:a100:two", "gpu:a:b:3", "gpu:a100:-1", "gpu:4X"])
def test_a_gres_count_that_is_not_a_count_is_an_error_naming_the_item(text: str) -> None:
    with pytest.raises(ValueError, match="gpu"):
        gres_gpus(text)


def test_a_tres_string_gives_each_amount_memory_in_mib() -> None:
    assert tres("billing=4,cpu=4,gres/gpu:a100=2,gres/gpu=2,mem=8G,node=1") == {
        "billing": 4, "cpu": 4, "gres/gpu:a100": 2, "gres/gpu": 2, "mem": 8 * 1024, "node": 1}
    assert tres("cpu=2,mem=512K") == {"cpu": 2, "mem": 0.5}
    assert tres("mem=2T") == {"mem": 2 * 1024 * 1024}
    assert tres("") == {}


@pytest.mark.parametrize("text", ["cpu", "cpu=", "=4", "cpu=four", "cpu=-1", "mem=4Q"])
def test_a_tres_item_without_an_amount_is_an_error_naming_it(text: str) -> None:
    with pytest.raises(ValueError, match="expected TRES=amount|is not a number"):
        tres(text)


def test_the_mini_cluster_s_recorded_allocations_read_as_tres() -> None:
    """Every ReqTRES and AllocTRES of the mini-cluster's sacct output (columns 16 and 17) reads, and
    a job's allocated CPUs agree with its AllocCPUS column (13)."""
    lines = (FIXTURES / "sacct" / "minicluster-22.05-allocations.txt").read_text().splitlines()
    rows = [line.split("|") for line in lines if line[:1].isdigit()]
    assert rows
    for row in rows:
        requested, allocated = tres(row[15]), tres(row[16])
        assert requested["cpu"] >= 1 and requested["node"] >= 1
        if allocated:
            assert allocated["cpu"] == int(row[12])
