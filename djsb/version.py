"""The installed distribution's version, for ``djsb --version`` and a run's meta.json."""

from __future__ import annotations

import importlib.metadata


def djsb_version() -> str:
    """The version pip installed (pyproject.toml's), or "unknown" when run from a source tree that
    was never installed."""
    try:
        return importlib.metadata.version("djsb")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
