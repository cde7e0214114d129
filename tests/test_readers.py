"""The one reader of each kind of config value (djsb.yamlnodes): choices, sizes, times, paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from djsb.errors import ConfigError
from djsb.yamlnodes import Located, as_duration, as_path, as_size, one_of, parse_duration


def node(value: object) -> Located:
    return Located(value, 7, "section.key", "c.yaml")


@pytest.mark.parametrize(("text", "seconds"), [
    ("90", 5400.0), ("90:00", 5400.0), ("1:30:00", 5400.0), ("2-12", 216000.0), ("2-12:00:00", 216000.0),
    ("1-0:30", 88200.0), ("0:45", 45.0),
])
def test_a_time_is_read_as_sbatch_reads_it(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds
    assert as_duration(node(text)) == seconds


def test_a_number_is_seconds_and_bounds_hold_for_both_forms() -> None:
    assert as_duration(node(1.5)) == 1.5
    with pytest.raises(ConfigError, match="must be a finite number > 0"):
        as_duration(node("0"), 0.0, strict=True)
    with pytest.raises(ConfigError) as bad:
        as_duration(node("1h"))
    assert bad.value.one_line().startswith("c.yaml:7: section.key: expected seconds, or a time")


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
