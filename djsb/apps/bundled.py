"""The bundled application djsb-stream: its sources, where its binary is, and building it there.

Its one copy of the source and build rules is this package's ``djsb_stream.c`` and ``Makefile``
(package data, so a ``pip install`` has them). A command's ``{apps}`` is, in this order:
``$DJSB_APPS_DIR``; a checkout's ``apps/bin`` once ``make -C apps`` built djsb-stream there; else a
per-user cache, ``$XDG_CACHE_HOME/djsb/apps-HASH/bin`` (``~/.cache`` without it), where HASH is a
digest of the sources, so each source version is built there once, on first use, and never goes
stale. A build copies the sources into a directory of its own beside the cache's, runs ``make``
there (as a login node's staging does) and moves the binary into place in one rename, so two
processes building at once never leave a half-written program.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from djsb.errors import InputError, one_line
from djsb.progress import say

SOURCE_DIR = Path(__file__).resolve().parent
"""The apps' sources and Makefile, in the installed package as in a checkout."""
CHECKOUT_BIN = SOURCE_DIR.parents[1] / "apps" / "bin"
"""Where ``make -C apps`` builds in a checkout (nothing is there in an installed package)."""
PROGRAM = "djsb-stream"
SOURCE_SUFFIXES = (".c", ".h")
BUILD_TIMEOUT_S = 300.0
NO_BUILD_HINT = f"or set DJSB_APPS_DIR to a directory holding a built {PROGRAM}"


class AppBuildError(InputError):
    """The bundled app cannot be built on this machine (no compiler, no make, a failed build): the
    machine, not a run, is to fix, and the message says how."""


def app_sources(source_dir: Path = SOURCE_DIR) -> dict[str, str]:
    """The apps' sources by file name: the Makefile and every C source or header."""
    files = [source_dir / "Makefile",
             *sorted(p for p in source_dir.iterdir() if p.suffix in SOURCE_SUFFIXES)]
    return {file.name: file.read_text() for file in files}


def source_hash(sources: Mapping[str, str]) -> str:
    """A digest of the sources (names and contents, in name order): 16 hex digits of SHA-256."""
    digest = hashlib.sha256()
    for name in sorted(sources):
        data = sources[name].encode()
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    """The per-user cache of built apps: $XDG_CACHE_HOME/djsb, else ~/.cache/djsb."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "djsb"


def _is_program(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def apps_dir(*, build: bool) -> Path:
    """Where ``{apps}`` is on this machine (the order is the module's docstring's); with ``build``,
    the cache's djsb-stream is built first when it is not there yet."""
    if os.environ.get("DJSB_APPS_DIR"):
        return Path(os.environ["DJSB_APPS_DIR"])
    if _is_program(CHECKOUT_BIN / PROGRAM):
        return CHECKOUT_BIN
    sources = app_sources()
    bin_dir = cache_root() / f"apps-{source_hash(sources)}" / "bin"
    if build and not _is_program(bin_dir / PROGRAM):
        build_program(sources, bin_dir)
    return bin_dir


def _missing_tool(compiler: str) -> str | None:
    """Why the build cannot start here (no make, no compiler), or None."""
    if shutil.which("make") is None:
        return f"no 'make' on PATH (install make, {NO_BUILD_HINT})"
    words = shlex.split(compiler)
    if not words or shutil.which(words[0]) is None:
        return f"no C compiler {compiler!r} (install gcc or set CC to a C compiler, {NO_BUILD_HINT})"
    return None


def build_program(sources: Mapping[str, str], bin_dir: Path) -> Path:
    """Build djsb-stream from ``sources`` with ``make`` and ``$CC`` (gcc by default) into
    ``bin_dir``; the path of the program. Raises AppBuildError with one line saying what to do."""
    compiler = os.environ.get("CC") or "gcc"
    missing = _missing_tool(compiler)
    if missing is not None:
        raise AppBuildError(f"cannot build the bundled {PROGRAM}: {missing}")
    say(f"building the bundled {PROGRAM} into {bin_dir} (once per version of its source)")
    bin_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=bin_dir.parent, prefix=".build-") as work:
        for name, text in sources.items():
            (Path(work) / name).write_text(text)
        argv = ["make", "-C", work, f"CC={compiler}", "BINDIR=bin", f"bin/{PROGRAM}"]
        try:
            made = subprocess.run(argv, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise AppBuildError(f"building the bundled {PROGRAM} took over {BUILD_TIMEOUT_S:.0f} s "
                                f"({shlex.join(argv)})") from None
        if made.returncode != 0:
            tail = one_line("\n".join((made.stderr or made.stdout).strip().splitlines()[-3:]))
            raise AppBuildError(f"building the bundled {PROGRAM} with {compiler!r} failed "
                                f"(exit {made.returncode}): {tail}")
        bin_dir.mkdir(exist_ok=True)
        program = bin_dir / PROGRAM
        os.replace(Path(work) / "bin" / PROGRAM, program)
    return program
