"""The loop every line-based trace reader shares: a format's parser turns each line into a record, a skip
or nothing, and :func:`read_records` keeps the skip log and decides whether the input is that format at all.

A parser is called as ``parse(line_number, text)`` (1-based line number, the line as read) and returns

- ``None`` for a line that holds no record (blank, comment, header: not counted as a data line);
- a :class:`Skip` for a data line it does not turn into a record: the loop logs it as a
  :class:`SkippedRecord` with its line number, the skip's reason and the line without its line break;
- anything else: the record, kept in input order.

A parser keeps whatever state its format needs (ids already seen, a header being read) itself, so the
loop is the same for every format and the skip log and the malformed-input check are written once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar, final

from djsb.errors import TraceError
from djsb.workloads._textio import STREAM_ERRORS

R = TypeVar("R")


@dataclass(frozen=True)
class SkippedRecord:
    """A record not turned into a TraceJob: its 1-based line number, why, and the line itself."""

    line: int
    reason: str
    text: str


def skip_counts(skipped: Iterable[SkippedRecord]) -> dict[str, int]:
    """Reason -> number of skipped records, most frequent first."""
    return dict(Counter(record.reason for record in skipped).most_common())


def skip_reasons(skipped: Iterable[SkippedRecord]) -> str:
    """Why records were skipped, in a few words: '2 malformed_field_count, 1 run_time_unknown'."""
    return ", ".join(f"{count} {reason}" for reason, count in skip_counts(skipped).items())


@final
@dataclass(frozen=True)
class Skip:
    """Why a parser did not turn a data line into a record.

    ``malformed``: the line is not a record of the format at all (too few fields, a number that is not
    one), as opposed to a well-formed record the reader leaves out (a job step, a duplicate id). Too many
    malformed lines mean the input is not of the format, which :func:`read_records` raises.
    """

    reason: str
    malformed: bool = False


# The reasons more than one format skips a record for, with one name across formats (report.html counts
# skipped records by reason).
FIELD_COUNT = Skip("malformed_field_count", malformed=True)
CANCELLED_BEFORE_START = Skip("cancelled_before_start")
SUBMIT_UNKNOWN = Skip("submit_unknown")
NO_PROCESSORS = Skip("no_processors")
DUPLICATE_JOB_ID = Skip("duplicate_job_id")

Parser = Callable[[int, str], R | Skip | None]
"""A format's parser: (1-based line number, line as read) -> record, :class:`Skip` or None (no record)."""


def read_records(lines: Iterable[str], parse: Parser[R], *, source: str, kind: str, need: str = "",
                 start: int = 1, limit: int | None = None) -> tuple[list[R], list[SkippedRecord]]:
    """The records ``parse`` makes of ``lines`` (numbered from ``start``), and the log of the lines skipped.

    ``limit``: stop after this many records (the lines skipped before that point are still logged).
    Raises :class:`~djsb.errors.TraceError` at the first malformed line when some data lines are
    malformed and no record was read, or more than half of them are: "not ``kind``: ... malformed
    ``need``" (``kind`` such as "an SWF trace", ``need`` an optional hint on what a line must hold).
    A corrupt or truncated stream raises TraceError at the line it could not read.
    """
    records: list[R] = []
    skipped: list[SkippedRecord] = []
    append = records.append
    malformed = 0
    first_malformed = 0
    lineno = start - 1
    try:
        for lineno, text in enumerate(lines, start):  # noqa: B007 - lineno is read after a stream error
            record = parse(lineno, text)
            if record is None:
                continue
            if type(record) is Skip:  # Skip is final; an exact type test is the cheaper one per line
                skipped.append(SkippedRecord(lineno, record.reason, text.rstrip("\r\n")))
                if record.malformed:
                    malformed += 1
                    first_malformed = first_malformed or lineno
                continue
            append(record)
            if limit is not None and len(records) >= limit:
                break
    except STREAM_ERRORS as exc:
        raise TraceError(f"cannot read trace (corrupt or truncated?): {exc}", source=source,
                         line=lineno + 1) from exc
    data_lines = len(records) + len(skipped)
    if malformed and (not records or malformed * 2 > data_lines):
        raise TraceError(f"not {kind}: {malformed} of {data_lines} data lines are malformed{need}; "
                         "first here", source=source, line=first_malformed)
    return records, skipped
