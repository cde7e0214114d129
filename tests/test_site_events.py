"""Node events and reservations of a site's accounting (djsb/slurmsite/site_events.py): parsed from
sacctmgr's real output (Slurm 22.05.8 on the mini-cluster: tests/fixtures/sacct/README.md), and
replayed by ``djsb history`` as the model's node events and reservations."""

from __future__ import annotations

import calendar
import re
import time
from pathlib import Path

import pytest

from djsb.cli import main
from djsb.errors import InputError
from djsb.model.node_events import NodeEvent as ModelEvent
from djsb.model.reservations import AdvanceReservation
from djsb.slurmsite.site_events import (
    NodeEvent,
    ReservationRecord,
    model_events,
    model_reservations,
    model_state,
    parse_node_events,
    parse_reservations,
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


def test_site_reservations_become_model_reservations() -> None:
    # origin 1000, the replay over [60, 400]: maint holds n[1-4] over [1150, 1330) -> from 150 for
    # 180 s, on the modelled n[1-3]; its MAINT and IGNORE_JOBS are the model's, OVERLAP is noted; "later"
    # begins after the replay, "gpu" holds no modelled node
    held = [ReservationRecord("maint", "n[1-4]", 1150.0, 1330.0, "MAINT,IGNORE_JOBS,OVERLAP"),
            ReservationRecord("later", "n1", 1500.0, 1600.0, "MAINT"),
            ReservationRecord("gpu", "g[1-2]", 1100.0, 1200.0, "")]
    found, notes = model_reservations(held, 1000.0, (60.0, 400.0), {"n1", "n2", "n3"})
    assert found == (AdvanceReservation("maint", "n[1-3]", 150.0, 180.0, ("MAINT", "IGNORE_JOBS")),)
    assert notes == ["reservation maint's flag(s) OVERLAP have no model: replayed as a reservation of its "
                     "nodes for no job",
                     "reservation gpu holds no node of the modelled partitions (g[1-2]): left out"]


@pytest.mark.parametrize(("state", "model"), [
    ("DOWN*", "DOWN"), ("DOWN", "DOWN"), ("IDLE+DRAIN", "DRAIN"), ("MIXED+DRAIN", "DRAIN"), ("DRAINED", "DRAIN"),
    ("DRAINING", "DRAIN"), ("DOWN*+DRAIN", "DOWN"), ("MIXED+FAIL", "FAIL"), ("IDLE", None), ("MAINT", None)])
def test_each_sacctmgr_state_takes_its_most_severe_model_state(state: str, model: str | None) -> None:
    assert model_state(state) == model


def test_site_events_become_model_events_per_node() -> None:
    # origin 1000, the replay over [100, 900]: n1 drained 1090..1130 (disk), and DOWN 1110..1120 under
    # the drain (DOWN is the more severe: 110..120), back to DRAIN until 130; n2 DOWN from 1300 to the
    # end; n3's event ended before the replay; n4's starts after it; n9 is not modelled; IDLE is no
    # outage.
    events = [NodeEvent("n1", 1090.0, 1130.0, "DRAIN", "disk"), NodeEvent("n1", 1110.0, 1120.0, "DOWN*", "gone"),
              NodeEvent("n2", 1300.0, None, "DOWN", "dead"), NodeEvent("n3", 1010.0, 1050.0, "DOWN", "before"),
              NodeEvent("n4", 1950.0, 2000.0, "DOWN", "after"), NodeEvent("n9", 1200.0, 1250.0, "DRAIN", "x"),
              NodeEvent("n2", 1200.0, 1210.0, "IDLE", "odd")]
    found, notes = model_events(events, 1000.0, (100.0, 900.0), {"n1", "n2", "n3", "n4"})
    assert found == (ModelEvent(100.0, "n1", "DRAIN", "disk"),
                     ModelEvent(110.0, "n1", "DOWN", "gone"), ModelEvent(120.0, "n1", "DRAIN", "disk"),
                     ModelEvent(130.0, "n1", "RESUME"), ModelEvent(300.0, "n2", "DOWN", "dead"))
    assert notes == ["node n9 (DRAIN) is in no modelled partition: its event is left out",
                     "node n2's state IDLE takes no node out of service in the model"]


def test_history_replays_the_events_inside_its_dump(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the dump spans 10:36:28 (first submission) to 11:07:11 (last end); n3 was out twice in it, not
    # responding (DOWN*) for 38 s from 10:39:12 and 11 s from 10:59:56: the replay takes it out of
    # service then (20 min 44 s = 1244 s apart)
    out = tmp_path / "out"
    assert main(["history", str(FIXTURES / "minicluster-22.05-allocations.txt"), "--slurm-conf",
                 str(FIXTURES / "minicluster-slurm.conf"), "--events", str(FIXTURES / "events-down-22.05.txt"),
                 "--reservations", str(FIXTURES / "reservations-22.05.txt"), "--window", "600", "--step", "60",
                 "-o", str(out)]) == 0
    outages = (out / "out_of_service.csv").read_text().splitlines()
    assert outages[0] == "node,state,start,end,cores,reason"
    rows = [line.split(",") for line in outages[1:]]
    assert [(node, state, reason) for node, state, _, _, _, reason in rows] == [("n3", "DOWN", "Not responding")] * 2
    starts, ends = [float(row[2]) for row in rows], [float(row[3]) for row in rows]
    assert [end - start for start, end in zip(starts, ends, strict=True)] == [38.0, 11.0]
    assert starts[1] - starts[0] == 1244.0
    notes = (out / "notes.txt").read_text()
    assert "node n3" not in notes and "reservation" not in notes  # the reservation came later that day


def test_an_unreadable_events_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "events.txt"
    bad.write_text("n1|2026-11-27T10:00:00|Unknown|DOWN|x|root(0)\nn1|soon|Unknown|DOWN|x|root(0)\n")
    assert main(["history", str(FIXTURES / "minicluster-22.05-allocations.txt"), "--slurm-conf",
                 str(FIXTURES / "minicluster-slurm.conf"), "--events", str(bad), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{bad}:2:" in err[0] and "not a sacct timestamp" in err[0], err


def test_a_job_of_a_reservation_the_replay_does_not_model_asks_for_none() -> None:
    # job 2 ran in "gone", which no modelled reservation is: replayed asking for none, one note
    from djsb.slurmsite.site_events import in_reservations
    from djsb.workloads.job import TraceJob
    jobs = [TraceJob(1, 0.0, 10.0, 1, reservation="maint"), TraceJob(2, 0.0, 10.0, 1, reservation="gone"),
            TraceJob(3, 0.0, 10.0, 1)]
    kept, notes = in_reservations(jobs, [AdvanceReservation("maint", "n1", 0.0, 60.0)])
    assert [job.reservation for job in kept] == ["maint", None, None]
    assert notes == ["1 job(s) ran in reservation(s) gone, which the replay does not model (no record of it "
                     "in the span, or none of its nodes): replayed as asking for none"]


def test_a_magnetic_site_reservation_is_noted() -> None:
    # sacctmgr lists associations, not Users/Accounts: the replay lets every job into it, and says so
    held = [ReservationRecord("mag", "n1", 1100.0, 1200.0, "MAGNETIC,FLEX")]
    found, notes = model_reservations(held, 1000.0, (0.0, 400.0), {"n1"})
    assert found == (AdvanceReservation("mag", "n1", 100.0, 100.0, ("MAGNETIC", "FLEX")),)
    assert notes == ["reservation mag is MAGNETIC and sacctmgr lists no Users or Accounts: every job may be "
                     "drawn into it"]
