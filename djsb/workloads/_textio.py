"""Opening trace files: plain or gzip (by content, not by name), as a text stream, with located errors."""

from __future__ import annotations

import gzip
import io
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, TextIO

from djsb.errors import TraceError

_GZIP_MAGIC = b"\x1f\x8b"
# Errors a corrupt or truncated gzip stream raises while it is being read.
STREAM_ERRORS = (OSError, EOFError, gzip.BadGzipFile, ValueError)


@contextmanager
def open_trace_text(path: str | os.PathLike) -> Iterator[TextIO]:
    """Yield a text stream over ``path``; gzip is detected by its magic bytes and decompressed as a stream.

    Undecodable bytes become U+FFFD instead of raising, so a stray byte in one record makes that record
    malformed (skipped with a reason) rather than the whole file unreadable. A missing or unreadable file
    raises TraceError naming it.
    """
    source = os.fspath(path)
    try:
        raw = open(source, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise TraceError(f"cannot open trace: {exc.strerror or exc}", source=source) from exc
    try:
        try:
            magic = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
        except OSError as exc:
            raise TraceError(f"cannot read trace: {exc.strerror or exc}", source=source) from exc
        binary: io.BufferedIOBase
        if magic == _GZIP_MAGIC:
            binary = io.BufferedReader(gzip.GzipFile(fileobj=raw, mode="rb"), buffer_size=1 << 20)
        else:
            binary = raw
        text = io.TextIOWrapper(binary, encoding="utf-8", errors="replace", newline=None)
        try:
            yield text
        finally:
            text.close()
    finally:
        raw.close()


@contextmanager
def atomic_output(path: str | os.PathLike) -> Iterator[TextIO]:
    """Yield a text stream that replaces ``path`` only when the block succeeds (gzip if it ends in .gz)."""
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".djsb-", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise TraceError(f"cannot write: {exc.strerror or exc}", source=target) from exc
    try:
        with os.fdopen(fd, "wb") as raw:
            binary: IO[bytes] | gzip.GzipFile = raw
            gz = None
            if target.endswith(".gz"):
                gz = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0)
                binary = gz
            text = io.TextIOWrapper(binary, encoding="utf-8", newline="\n")
            try:
                yield text
                text.flush()
            finally:
                text.detach()  # the wrapper must not close (or later flush into) the file itself
                if gz is not None:
                    gz.close()
        os.replace(tmp, target)
    except OSError as exc:
        _remove_quietly(tmp)
        raise TraceError(f"cannot write: {exc.strerror or exc}", source=target) from exc
    except BaseException:
        _remove_quietly(tmp)
        raise


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
