"""djsb.registry: a plugin is one file in its package, found by name or alias."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from djsb.registry import Registry, UnknownName


@pytest.fixture
def toy_package(tmp_path: Path) -> Iterator[str]:
    """A package ``toyplugins`` whose two modules each register one plugin in ``toyplugins.REGISTRY``."""
    package = tmp_path / "toyplugins"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from djsb.registry import Registry\nREGISTRY: Registry[int] = Registry('toy', 'toyplugins')\n")
    (package / "one.py").write_text("from toyplugins import REGISTRY\nREGISTRY.register('one', 'uno')(1)\n")
    (package / "two.py").write_text("from toyplugins import REGISTRY\nREGISTRY.register('Two')(2)\n")
    sys.path.insert(0, str(tmp_path))
    yield "toyplugins"
    sys.path.remove(str(tmp_path))
    for name in [m for m in sys.modules if m == "toyplugins" or m.startswith("toyplugins.")]:
        del sys.modules[name]


def test_every_module_of_the_package_registers_itself(toy_package: str) -> None:
    import importlib

    registry: Registry[int] = importlib.import_module(toy_package).REGISTRY
    assert sorted(registry.names()) == ["one", "two"]
    assert registry.get("UNO") == 1 and registry.get("two") == 2
    assert registry.canonical(" Uno ") == "one"


def test_unknown_and_duplicate_names(toy_package: str) -> None:
    import importlib

    registry: Registry[int] = importlib.import_module(toy_package).REGISTRY
    with pytest.raises(UnknownName, match=r"unknown toy 'three' \(choose from one, two\)"):
        registry.get("three")
    with pytest.raises(ValueError, match="registered twice"):
        registry.register("uno")(3)
