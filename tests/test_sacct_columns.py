"""The sacct columns are declared once (djsb/workloads/sacct_columns.py): the reader reads every
declared column and refuses a dump without a needed one, and the --format lists shown to users
(``djsb history --help``, docs/history.md, docs/reference/sacct.md) and run by bench/record_history.py
are the table's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import record_history
from djsb.cli import build_parser
from djsb.completion import subcommands
from djsb.errors import TraceError
from djsb.workloads.sacct import parse_sacct_parsable2
from djsb.workloads.sacct_columns import COLUMNS, NEEDS, SACCT_FORMAT, Need, reference, unmet

ROOT = Path(__file__).resolve().parents[1]
BASE = {"JobIDRaw": "5", "Submit": "2024-01-01T00:00:00", "Start": "2024-01-01T00:00:10",
        "End": "2024-01-01T00:01:10", "ReqCPUS": "2"}
"""The fewest columns a dump needs, as one job's line."""
TWO_VALUES = {
    "JobIDRaw": ("5", "6"), "JobID": ("5", "5_1"), "User": ("alice", "bob"), "UID": ("1001", "1002"),
    "Account": ("a", "b"), "Partition": ("p", "q"), "QOS": ("normal", "high"),
    "Submit": ("2024-01-01T00:00:00", "2024-01-01T00:00:05"),
    "Eligible": ("2024-01-01T00:00:00", "2024-01-01T00:00:05"),
    "Start": ("2024-01-01T00:00:10", "2024-01-01T00:00:20"), "End": ("2024-01-01T00:01:10", "2024-01-01T00:02:10"),
    "Elapsed": ("00:01:00", "00:02:00"), "ElapsedRaw": ("60", "120"), "Timelimit": ("00:10:00", "00:20:00"),
    "TimelimitRaw": ("10", "20"), "ReqCPUS": ("2", "3"), "AllocCPUS": ("4", "8"), "NCPUS": ("4", "8"),
    "ReqMem": ("1G", "2G"), "ReqTRES": ("cpu=2,gres/gpu=1", "cpu=2,gres/gpu:a100=2,gres/gpu=2"), "NNodes": ("1", "2"), "NodeList": ("n1", "n2"), "State": ("COMPLETED", "TIMEOUT"),
    "Reason": ("None", "Priority"), "Flags": ("SchedMain", "SchedBackfill"), "Priority": ("100", "200"),
    "SubmitLine": ("sbatch -N 1 x", "sbatch -N 2 x"), "Reservation": ("proj", "maint"),
    "JobName": ("step", "other"),
}
"""Two values of each column that make two different jobs or records."""


def dump(fields: dict[str, str]) -> str:
    return "|".join(fields) + "\n" + "|".join(fields.values()) + "\n"


@pytest.mark.parametrize("column", [column.name for column in COLUMNS])
def test_every_declared_column_is_read(column: str) -> None:
    assert set(TWO_VALUES) == {declared.name for declared in COLUMNS}, "a column without test values"
    read = []
    for value in TWO_VALUES[column]:
        workload = parse_sacct_parsable2(dump({**BASE, column: value}))
        assert len(workload.jobs) == 1, workload.skipped
        read.append((workload.jobs, workload.recorded, workload.extra, workload.time_origin))
    assert read[0] != read[1], f"{column} is not read"


@pytest.mark.parametrize("need", NEEDS, ids=[need.error.split(":")[0] for need in NEEDS])
def test_a_dump_without_a_needed_column_is_refused_naming_it(need: Need) -> None:
    alternatives = {name for together in need.alternatives for name in together}
    fields = {name: TWO_VALUES[name][0] for name in SACCT_FORMAT.split(",") if name not in alternatives}
    with pytest.raises(TraceError) as err:
        parse_sacct_parsable2(dump(fields), source="dump.txt")
    assert str(err.value) == f"dump.txt:1: {need.error}"


def test_the_asked_columns_meet_every_need_and_are_declared_once() -> None:
    names = [column.name.lower() for column in COLUMNS]
    assert len(names) == len(set(names))
    assert unmet({name.lower() for name in SACCT_FORMAT.split(",")}) is None
    for need in NEEDS:
        assert all(name.lower() in names for together in need.alternatives for name in together)


def test_the_help_the_docs_and_the_recording_ask_for_the_table_s_format(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # argparse wraps its help to the terminal's width
    help_text = subcommands(build_parser())["history"].parser.format_help()
    assert re.findall(r"sacct -a -X -P --format=(\S+)", help_text) == [SACCT_FORMAT]
    history = (ROOT / "docs" / "history.md").read_text()
    asked = re.findall(r"`sacct -a -X -P -S START -E END --format=(\S+) > dump.txt`", history)
    assert asked == [SACCT_FORMAT]
    assert record_history.FORMAT.startswith(SACCT_FORMAT + ",")


def test_the_reference_page_is_the_table() -> None:
    page = (ROOT / "docs" / "reference" / "sacct.md").read_text()
    assert page == reference(), "docs/reference/sacct.md is stale: run make reference"
    for column in COLUMNS:
        assert f"| `{column.name}` |" in page
