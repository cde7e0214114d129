"""Node events and reservations of a site's accounting (djsb/slurmsite/site_events.py): parsed from
sacctmgr's real output (Slurm 22.05.8 on the mini-cluster: tests/fixtures/sacct/README.md), and
noted by ``djsb history``, one note each, since the model keeps every node in service and holds no
reservation."""

from __future__ import annotations

import calendar
import re
import time
from pathlib import Path

import pytest

from djsb.cli import main
from djsb.errors import InputError
from djsb.slurmsite.site_events import (
    NodeEvent,
    ReservationRecord,
    parse_node_events,
    parse_reservations,
    site_event_notes,
)

FIXTURES = Path(__file__).parent / "fixtures" / "sacct"


def seconds(text: str) -> float:
    return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%S")))


def test_node_events_of_a_killed_slurmd_and_a_drain() -> None:
    down = parse_node_events((FIXTURES / "events-down-22.05.txt").read_text())
    # 19 lines: the cluster's registration (no node: left out) and 18 times n3 did not respond
    assert len(down) == 18 and {e.node for e in down} == {"n3"} and {e.state for e in down} == {"DOWN*"}
    assert down[0] == NodeEvent("n3", seconds("2026-11-27T10:39:12"), seconds("2026-11-27T10:39:50"), "DOWN*",
                                "Not responding")
    (drain,) = parse_node_events((FIXTURES / "events-drain-22.05.txt").read_text())
    assert drain.end is not None
    assert (drain.node, drain.state, drain.reason, drain.end - drain.start) == ("m4", "DRAIN", "probe drain", 3.0)


def test_a_reservation() -> None:
    (held,) = parse_reservations((FIXTURES / "reservations-22.05.txt").read_text())
    assert held == ReservationRecord("maintenance", "m[1-2]", seconds("2026-11-27T19:23:38"),
                                     seconds("2026-11-27T19:26:38"), "MAINT,IGNORE_JOBS,SPEC_NODES")


@pytest.mark.parametrize(("text", "message"), [
    ("n1|2026-11-27T10:00:00|Unknown", "events.txt:1: expected 6 '|'-separated fields, got 3"),
    ("\nn1|yesterday|Unknown|DOWN|x|root(0)", "events.txt:2: not a sacct timestamp"),
    ("n1|Unknown|Unknown|DOWN|x|root(0)", "events.txt:1: node n1's event has no start"),
])
def test_a_bad_event_line_is_named(text: str, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        parse_node_events(text, "events.txt")


def test_notes_of_what_overlaps_the_history_only() -> None:
    events = [NodeEvent("n1", 90.0, 130.0, "DRAIN", "disk"), NodeEvent("n2", 300.0, None, "DOWN", "gone"),
              NodeEvent("n3", 10.0, 50.0, "DOWN*", "before")]
    held = [ReservationRecord("maint", "n[1-4]", 150.0, 330.0, "MAINT"),
            ReservationRecord("later", "n5", 500.0, 600.0, "MAINT")]
    notes = site_event_notes(events, held, begin=60.0, end=400.0)
    assert notes == [
        "node n1 was DRAIN (disk) for 40 s from 30 s into the history: the model keeps it in service",
        "node n2 was DOWN (gone) to the end from 240 s into the history: the model keeps it in service",
        "reservation maint held n[1-4] (MAINT) for 180 s from 90 s into the history: the model holds no "
        "reservation, its nodes run other jobs"]


def test_history_notes_the_events_inside_its_dump(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the dump spans 10:36:28 (first submission) to 11:07:11 (last end); n3 was out twice in it
    assert main(["history", str(FIXTURES / "minicluster-22.05-allocations.txt"), "--slurm-conf",
                 str(FIXTURES / "minicluster-slurm.conf"), "--events", str(FIXTURES / "events-down-22.05.txt"),
                 "--reservations", str(FIXTURES / "reservations-22.05.txt"), "--window", "600", "--step", "60",
                 "-o", str(tmp_path / "out")]) == 0
    noted = [line for line in (tmp_path / "out" / "notes.txt").read_text().splitlines()
             if line.startswith(("node n3", "reservation"))]
    assert noted == [
        "node n3 was DOWN* (Not responding) for 38 s from 164 s into the history: the model keeps it in service",
        "node n3 was DOWN* (Not responding) for 11 s from 1408 s into the history: the model keeps it in service"]
    assert "node n3 was DOWN*" in capsys.readouterr().err


def test_an_unreadable_events_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "events.txt"
    bad.write_text("n1|2026-11-27T10:00:00|Unknown|DOWN|x|root(0)\nn1|soon|Unknown|DOWN|x|root(0)\n")
    assert main(["history", str(FIXTURES / "minicluster-22.05-allocations.txt"), "--slurm-conf",
                 str(FIXTURES / "minicluster-slurm.conf"), "--events", str(bad), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{bad}:2:" in err[0] and "not a sacct timestamp" in err[0], err
