"""The command's entry points: ``python -m djsb`` is ``djsb``, and ``--version`` names the installed
version (pyproject.toml's, through the package metadata pip wrote)."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys


def djsb(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "djsb", *args], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def test_version_is_the_installed_one() -> None:
    done = djsb("--version")
    assert (done.returncode, done.stdout) == (0, f"djsb {importlib.metadata.version('djsb')}\n")


def test_python_dash_m_runs_the_command() -> None:
    done = djsb("--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: djsb ")
    for command in ("run", "validate", "report", "simulate", "sweep", "calibrate"):
        assert command in done.stdout
    assert djsb("no-such-command").returncode == 2
