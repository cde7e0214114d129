"""``djsb reproduce PAPER``: a paper's headline experiments, our numbers beside the paper's.

Each ``paper_NNN.py`` registers the experiment of paper NNN (``/work/shared/papers``) in
:data:`~djsb.reproduce.papers.PAPERS`; it runs the existing runners as library calls at a size
that fits a laptop (or the paper's size with ``full``), and pairs each claim of the paper, declared
with its rule before measuring, with our measured interval; the verdict is computed from the two
(:mod:`djsb.reproduce.checks`). The writer turns the result into ``reproduce.csv``, ``setup.csv``
and ``report.html`` (:mod:`djsb.reproduce.writer`).
"""

from __future__ import annotations

from pathlib import Path

from djsb.reproduce.papers import PAPERS
from djsb.reproduce.writer import write_outputs


def reproduce(paper: str, out_dir: Path, full: bool = False) -> Path:
    """Run paper ``paper``'s experiments into ``out_dir`` and write its reports; return reproduce.csv."""
    return write_outputs(PAPERS.get(paper)(out_dir, full), out_dir)


__all__ = ["PAPERS", "reproduce"]
