"""The registry of the papers ``djsb reproduce`` knows: each ``paper_NNN.py`` of this package
registers one function ``(out_dir, full) -> Reproduction`` under the paper's number."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from djsb.registry import Registry
from djsb.reproduce.checks import Reproduction

Experiment = Callable[[Path, bool], Reproduction]
PAPERS: Registry[Experiment] = Registry("paper", "djsb.reproduce")

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
"""The repository's configs/, whose paper configs the reproductions start from."""
