"""The example configs reach a user who installed DJSB from a wheel: pyproject.toml ships every
file of configs/ as data, and ``djsb init DIR`` copies them into a directory of the user's own
(djsb/examples.py), through the real command line."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from djsb.outdir import MARKER

REPO = Path(__file__).resolve().parent.parent
CONFIGS = REPO / "configs"


def djsb(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "djsb", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_wheel_ships_every_example() -> None:
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")
    data_files = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    shipped = data_files["share/djsb/configs"]
    assert all(any(fnmatch.fnmatch(f"configs/{path.name}", pattern) for pattern in shipped)
               for path in CONFIGS.iterdir()), shipped


def test_init_copies_every_example_and_they_run(tmp_path: Path) -> None:
    done = djsb(tmp_path, "init", "mine")
    assert done.returncode == 0, done.stderr
    mine = tmp_path / "mine"
    assert {path.name: digest(path) for path in mine.iterdir() if path.name != MARKER} == \
        {path.name: digest(path) for path in CONFIGS.iterdir()}
    assert json.loads((mine / MARKER).read_text())["kind"] == "init"
    checked = djsb(tmp_path, "validate", "mine/local-quick.yaml", "mine/simulated-quick.yaml", "mine/sweep-seeds.yaml")
    assert checked.returncode == 0, checked.stderr
    again = djsb(tmp_path, "init", "mine")
    assert again.returncode == 2 and again.stderr.startswith("djsb: error: DIRECTORY: mine already exists and holds a "
                                                             "complete djsb init output")
    (mine / "local-quick.yaml").write_text("edited: 1\n")
    assert djsb(tmp_path, "init", "mine", "--force").returncode == 0
    assert digest(mine / "local-quick.yaml") == digest(CONFIGS / "local-quick.yaml")
