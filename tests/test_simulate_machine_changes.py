"""``djsb simulate`` with ``cluster.node_events`` and ``cluster.reservations``: the jobs,
out_of_service.csv and the capacity lost, worked by hand; a bad event or reservation is one line naming
its key and line, exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from djsb.cli import main

# SWF: job, submit, wait, run, procs, cpu, mem, req procs, req time, req mem, status, uid, gid, app,
# queue, partition, preceding job, think time
TRACE = """\
1 0 0 100 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1
2 20 0 50 2 -1 -1 2 50 -1 1 1 1 -1 1 -1 -1 -1
"""
CONFIG = """\
seed: 1
workload: {{swf: t.swf, estimate: requested, at_time_limit: kill}}
policy: {{preset: textbook}}
output: {{plots: false}}
cluster:
  nodes: [{{count: 2, cores: 2}}]
{changes}"""
"""Two nodes of 2 cores, the trace above, textbook EASY, and the machine's ``changes``."""
EVENTS = CONFIG.format(changes="""\
  node_events:
    - {at: 10, nodes: n1, state: drain, reason: disk}
    - {at: 50, nodes: n0, state: DRAIN, reason: bios}
    - {at: 120, nodes: "n[0-1]", state: RESUME}
""")


def write(tmp_path: Path, config: str) -> Path:
    (tmp_path / "t.swf").write_text(TRACE)
    path = tmp_path / "c.yaml"
    path.write_text(config)
    return path


def test_drained_nodes_hold_a_job_back_and_their_capacity_is_counted_lost(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["simulate", str(write(tmp_path, EVENTS)), "-o", str(out)]) == 0
    jobs = pd.read_csv(out / "jobs.csv").set_index("job_id")
    # job 1 runs 0..100 on n0 (drained under it at 50: it goes on); job 2, submitted at 20, finds
    # n1 drained since 10 and n0 busy, then drained: it starts when both resume at 120
    assert jobs[["start", "end", "nodes", "state"]].values.tolist() == [
        [0.0, 100.0, "n0", "COMPLETED"], [120.0, 170.0, "n0", "COMPLETED"]]
    outages = pd.read_csv(out / "out_of_service.csv")
    assert outages.values.tolist() == [["n1", "DRAIN", 10.0, 120.0, 2, "disk"],
                                       ["n0", "DRAIN", 50.0, 120.0, 2, "bios"]]
    metrics = json.loads((out / "metrics.json").read_text())
    # n1 110 s x 2 cores + n0 70 s x 2 = 360 core-s, of 4 cores x the makespan 170 s = 680
    assert metrics["out_of_service_core_seconds"] == 360.0
    assert metrics["capacity_lost"] == pytest.approx(360 / 680)
    assert metrics["units"]["capacity_lost"] == "1"


RESERVED = CONFIG.format(changes="""\
  reservations:
    - {name: maint, nodes: n1, start: 30, duration: 60, flags: "MAINT,IGNORE_JOBS"}
""")


def test_a_reservation_keeps_a_job_off_its_node_until_its_window_ends(tmp_path: Path) -> None:
    # job 1 holds n0 0..100; job 2 (limit 50, at 20) would run over [20, 70) into n1's window
    # [30, 90): it waits for its end, 90, and runs on n1 to 140 (no reason but Resources: n0, busy,
    # would hold it)
    out = tmp_path / "out"
    assert main(["simulate", str(write(tmp_path, RESERVED)), "-o", str(out)]) == 0
    jobs = pd.read_csv(out / "jobs.csv", keep_default_na=False).set_index("job_id")
    assert jobs[["start", "end", "nodes", "reason"]].values.tolist() == [
        [0.0, 100.0, "n0", "None"], [90.0, 140.0, "n1", "Resources"]]


@pytest.mark.parametrize(("config", "old", "new", "message"), [
    (EVENTS, "state: drain", "state: drained", "c.yaml:8: cluster.node_events[0].state: expected one of DRAIN, "
                                               "FAIL, DOWN, RESUME, got 'drained'"),
    (EVENTS, "nodes: n1,", "nodes: n9,", "c.yaml:8: cluster.node_events[0].nodes: unknown node 'n9'"),
    (EVENTS, "at: 50,", "at: -5,", "c.yaml:9: cluster.node_events[1].at: must be a time >= 0 s"),
    (RESERVED, "flags: \"MAINT,IGNORE_JOBS\"", "flags: OVERLAP",
     "c.yaml:8: cluster.reservations[0].flags: flag OVERLAP has no model"),
    (RESERVED, "nodes: n1,", "nodes: n5,", "c.yaml:8: cluster.reservations[0].nodes: unknown node 'n5'"),
    (RESERVED, "duration: 60", "duration: 0", "c.yaml:8: cluster.reservations[0].duration: must be a time > 0 s"),
])
def test_a_bad_event_or_reservation_is_one_line_naming_its_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], config: str, old: str, new: str, message: str) -> None:
    assert main(["simulate", str(write(tmp_path, config.replace(old, new))), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
