"""The bundled djsb-stream as an installed package finds it: its sources shipped as package data,
built on first use into a per-user cache with the real compiler, and one line naming the config's
line when no compiler is there (djsb/apps/bundled.py)."""

from __future__ import annotations

import fnmatch
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from djsb import apps
from djsb.apps import bundled
from djsb.cli import main

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This process sees djsb as a pip install does: no checkout apps/bin, no DJSB_APPS_DIR, and a
    cache of its own (returned)."""
    monkeypatch.setattr(bundled, "CHECKOUT_BIN", tmp_path / "no-checkout" / "bin")
    monkeypatch.delenv("DJSB_APPS_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_the_wheel_ships_every_source_the_build_reads() -> None:
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    shipped = patterns["djsb.apps"]
    names = apps.app_sources()
    assert {"Makefile", "djsb_stream.c"} <= set(names)
    assert all(any(fnmatch.fnmatch(name, pattern) for pattern in shipped) for name in names), (names, shipped)


def test_the_first_use_builds_into_the_cache_and_the_program_runs(
        installed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("gcc") is None or shutil.which("make") is None:
        pytest.skip("gcc/make not installed: cannot build djsb-stream")
    bin_dir = apps.apps_dir(build=True)
    digest = apps.source_hash(apps.app_sources())
    assert bin_dir == installed / "djsb" / f"apps-{digest}" / "bin"
    assert "building the bundled djsb-stream" in capsys.readouterr().err
    ran = subprocess.run([str(bin_dir / "djsb-stream"), "--elements", "1000", "--iterations", "2",
                          "--threads", "1"], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    report = json.loads(ran.stdout)
    assert report["app"] == "djsb-stream" and report["iterations"] == 2 and report["validated"] is True
    built = (bin_dir / "djsb-stream").stat().st_mtime_ns
    assert apps.apps_dir(build=True) == bin_dir
    assert (bin_dir / "djsb-stream").stat().st_mtime_ns == built
    assert "building" not in capsys.readouterr().err
    assert [p.name for p in bin_dir.parent.parent.iterdir()] == [bin_dir.parent.name]  # no build dir left


def test_another_source_version_is_built_apart() -> None:
    sources = apps.app_sources()
    changed = {**sources, "djsb_stream.c": sources["djsb_stream.c"] + "\n/* another version */\n"}
    assert apps.source_hash(changed) != apps.source_hash(sources)
    assert apps.source_hash(dict(reversed(list(sources.items())))) == apps.source_hash(sources)


@pytest.mark.parametrize(("compiler", "says"), [
    ("/nonexistent/bin/cc", "no C compiler '/nonexistent/bin/cc' (install gcc or set CC"),
    ("", None),
])
def test_a_missing_compiler_is_one_line_naming_the_config(
        installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        compiler: str, says: str | None) -> None:
    """CC naming no program: one line at the section whose command needs the app, exit 2, nothing
    left in the cache. An empty CC is gcc's default, so it builds wherever gcc is."""
    monkeypatch.setenv("CC", compiler)
    config = tmp_path / "local-quick.yaml"
    shutil.copy(REPO / "configs" / "local-quick.yaml", config)
    if says is None:
        if shutil.which("gcc") is None or shutil.which("make") is None:
            pytest.skip("gcc/make not installed: cannot build djsb-stream")
        assert main(["validate", str(config)]) == 0
        return
    assert main(["validate", str(config)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    line = f"djsb: error: {config}:16: simulation: cannot build the bundled djsb-stream: {says}"
    assert err.splitlines()[-1].startswith(line), err
    assert [ln for ln in err.splitlines() if "error" in ln] == err.splitlines()[-1:]
    assert not (installed / "djsb").exists()


def test_a_failed_build_is_one_line_with_the_compilers_last_words(
        installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compiler that exists but fails (here `false`): the build's exit status, no binary."""
    if shutil.which("make") is None or shutil.which("false") is None:
        pytest.skip("make/false not installed")
    monkeypatch.setenv("CC", "false")
    with pytest.raises(apps.AppBuildError) as raised:
        apps.apps_dir(build=True)
    assert "building the bundled djsb-stream with 'false' failed (exit 2)" in raised.value.message
    assert "\n" not in raised.value.message
    assert not list((installed / "djsb").glob("apps-*/bin/djsb-stream"))
