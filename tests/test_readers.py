"""The one reader of each kind of config value (djsb.yamlnodes): choices, sizes, paths (times:
test_durations.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from djsb.errors import ConfigError
from djsb.yamlnodes import Located, as_path, as_size, one_of


def node(value: object) -> Located:
    return Located(value, 7, "section.key", "c.yaml")


def test_one_choice_reader_for_strings_and_booleans() -> None:
    read = one_of("auto", True, False)
    assert read(node(" auto ")) == "auto"
    assert read(node(False)) is False
    with pytest.raises(ConfigError) as bad:
        read(node("sometimes"))
    assert bad.value.one_line() == "c.yaml:7: section.key: expected one of auto, true, false, got 'sometimes'"


def test_a_size_and_a_path() -> None:
    assert as_size(node("2GiB")) == 2 * 1024**3
    with pytest.raises(ConfigError, match="expected a size"):
        as_size(node("lots"))
    assert as_path(node("test_readers.py"), Path(__file__).parent) == Path(__file__)
    with pytest.raises(ConfigError, match="c.yaml:7: section.key: file not found"):
        as_path(node("nope.swf"), Path(__file__).parent)
