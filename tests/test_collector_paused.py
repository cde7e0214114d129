"""The cyclic collector pause of djsb.machine: off inside the block, as it was after it."""

from __future__ import annotations

import gc

import pytest

from djsb.machine import collector_paused


@pytest.fixture(autouse=True)
def _restore_collector():  # noqa: ANN202 - fixture
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_paused_inside_enabled_after() -> None:
    gc.enable()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_enabled_again_after_an_exception() -> None:
    gc.enable()
    with pytest.raises(ValueError), collector_paused():
        raise ValueError("inside")
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled() -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
