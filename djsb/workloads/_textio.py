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
from djsb.machine import MEMORY_SHARE, memory_bytes

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
        raise TraceError(f"cannot open: {exc.strerror or exc}", source=source) from exc
    try:
        try:
            magic = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
        except OSError as exc:
            raise TraceError(f"cannot read: {exc.strerror or exc}", source=source) from exc
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


TEXT_EXPANSION = 8
"""A text read whole takes up to this many times its size while it is parsed (the text, its lines
and the records built from them): bench/bench_read_bounds.py measured 5.2 on a 177 MiB sacct dump of
243,000 jobs; the margin covers text that is not ASCII (two or four bytes a character in memory)."""
MAX_LINE_CHARS = 1 << 20
"""The longest line any input may have: 1 Mi characters, far above a real record (a sacct line with
its SubmitLine, a slurm.conf NodeName line, a slurmctld log line are at most a few KiB), far below
what a file with no line ends (/dev/zero, /dev/urandom) would load before its first line ended."""
CHUNK_CHARS = 1 << 20
SITE_FILE_CHARS = 64 << 20
"""The most characters of a site's configuration file (slurm.conf with its includes, gres.conf, a
sacctmgr or sshare answer): a real one is kilobytes, a large site's associations a few MiB."""


def most_text_chars() -> int:
    """The most characters an input read whole may hold: :data:`TEXT_EXPANSION` times that must fit
    in the share of memory a command may fill (djsb.machine)."""
    return int(memory_bytes() * MEMORY_SHARE / TEXT_EXPANSION)


def read_bounded(path: str | os.PathLike, *, what: str, key: str | None = None,
                 most: int | None = None) -> str:
    """The text of ``path`` (plain or gzip, as :func:`open_trace_text`), read in chunks and refused
    as soon as it is longer than ``most`` characters (by default :func:`most_text_chars`) or a line
    than :data:`MAX_LINE_CHARS`, so
    that no input (a device, a decompression bomb) can fill the memory: TraceError naming the file,
    the line and ``key`` (the option that gave it), and that it is not ``what`` it should be."""
    source = os.fspath(path)
    limit = most if most is not None else most_text_chars()
    chunks: list[str] = []
    total = lines = pending = 0
    with _naming(key), open_trace_text(source) as stream:
        while chunk := _read_chunk(stream, source, key):
            total += len(chunk)
            if total > limit:
                raise TraceError(f"more than {limit:,} characters: not {what}?", source=source, key=key)
            lengths = [len(part) for part in chunk.split("\n")]
            lengths[0] += pending
            longest = max(lengths)
            if longest > MAX_LINE_CHARS:
                raise TraceError(f"a line longer than {MAX_LINE_CHARS:,} characters: not {what}?",
                                 source=source, line=lines + lengths.index(longest) + 1, key=key)
            lines += len(lengths) - 1
            pending = lengths[-1]
            chunks.append(chunk)
    return "".join(chunks)


@contextmanager
def _naming(key: str | None) -> Iterator[None]:
    """A TraceError raised inside names ``key`` (the option that gave the file) if it names none."""
    try:
        yield
    except TraceError as exc:
        if exc.key is None and key is not None:
            exc.key = key
            exc.args = (exc.one_line(),)
        raise


def _read_chunk(stream: TextIO, source: str, key: str | None) -> str:
    try:
        return stream.read(CHUNK_CHARS)
    except STREAM_ERRORS as exc:
        raise TraceError(f"cannot read: {exc}", source=source, key=key) from exc


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
