"""The example configs of the checkout's configs/, for whoever installed DJSB from a wheel.

A wheel ships them as data files (pyproject.toml's ``tool.setuptools.data-files``) under the
environment's ``share/djsb/configs``; ``djsb init DIR`` copies them into a directory of the user's
own, where they can be read and edited. Configs that replay a Parallel Workloads Archive trace name
it relative to a checkout (``../../shared/data/traces/...``): copied elsewhere, their ``swf`` key
must be pointed at the downloaded trace (their first error line says which file is missing).
"""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

from djsb.errors import RunError

INSTALLED = Path("share") / "djsb" / "configs"
"""Where a wheel installs the examples, relative to the environment's data directory."""
PATTERNS = ("*.yaml", "*.csv")
"""The examples: configs, and the measured tables some of them read (footprints)."""


def examples_dir() -> Path:
    """The checkout's configs/ when DJSB runs from one (an editable install), else the installed
    copy; RunError if neither is there (an install that dropped its data files)."""
    checkout = Path(__file__).resolve().parents[1] / "configs"
    installed = Path(sysconfig.get_path("data")) / INSTALLED
    for directory in (checkout, installed):
        if directory.is_dir():
            return directory
    raise RunError(f"the example configs are not installed (neither {checkout} nor {installed}): "
                   "reinstall DJSB from its wheel or its checkout")


def copy_examples(target: Path) -> list[str]:
    """Copy every example into ``target`` (an existing directory); return their names, sorted."""
    source = examples_dir()
    names = sorted({path.name for pattern in PATTERNS for path in source.glob(pattern)})
    for name in names:
        shutil.copyfile(source / name, target / name)
    return names
