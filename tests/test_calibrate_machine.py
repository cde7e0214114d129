"""A calibration's machine changes (djsb/calibrate/machine_changes.py): the ``machine`` section read
and checked, the scontrol commands each change makes, and the model's cluster built from what a
replay did. Live: a node drained and resumed and a reservation made during a calibration on the
mini-cluster, the model within Slurm's own spread, Slurm keeping its jobs off them."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pandas as pd
import pytest
from slurm_plugin import SlurmCluster
from support import assert_calibration_error

from djsb.calibrate.compare import within_spread
from djsb.calibrate.machine_changes import COLUMNS, MachineChanges, SlurmMachine, check_nodes, model_machine
from djsb.calibrate.run import run_calibration
from djsb.calibrate.spec import load_calibration
from djsb.errors import ConfigError, RunError
from djsb.model import ClusterSpec
from djsb.model.cluster_spec import NodeSpec, PartitionSpec
from djsb.model.node_events import NodeEvent
from djsb.model.reservations import AdvanceReservation

WINDOW = Path(__file__).parent / "fixtures" / "calibrate" / "kth_sp2_window.swf"
MACHINE = """\
  node_events: [{at: 30, nodes: m2, state: DRAIN, reason: calibrate}, {at: 150, nodes: m2, state: RESUME}]
  reservations: [{name: djsb_cal, nodes: m4, start: 60, duration: 120, flags: "MAINT,IGNORE_JOBS"}]
"""
CALIBRATION = """\
# 32 KTH-SP2 jobs (times x 0.6) on the 8-CPU oversub partition; m2 drained from 30 s to 150 s, m4
# reserved (MAINT, IGNORE_JOBS) from 60 s for 2 minutes
seed: 1
workload:
  swf: {swf}
  time_scale: 0.6
slurm:
  partition: oversub
  runs: 2
  work_dir: /tmp/djsb-calibrate-machine
  poll_interval: 2
machine:
{machine}"""


def calibration_file(tmp_path: Path, machine: str = MACHINE) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(CALIBRATION.format(swf=WINDOW, machine=machine))
    return path


def test_the_machine_section_is_a_config_s_events_and_reservations(tmp_path: Path) -> None:
    changes = load_calibration(calibration_file(tmp_path)).machine
    assert changes.events == (NodeEvent(30.0, "m2", "DRAIN", "calibrate"), NodeEvent(150.0, "m2", "RESUME"))
    assert changes.reservations == (AdvanceReservation("djsb_cal", "m4", 60.0, 120.0, ("MAINT", "IGNORE_JOBS")),)
    named_m = ClusterSpec(tuple(NodeSpec(f"m{i}", 2) for i in range(1, 5)), (PartitionSpec("oversub"),))
    check_nodes(changes, named_m)  # m1-m4: nothing unknown
    with pytest.raises(ConfigError, match="unknown node 'm2'") as raised:
        check_nodes(changes, ClusterSpec.homogeneous(4, 2))
    assert raised.value.key == "machine.node_events"


@pytest.mark.parametrize(("machine", "message"), [
    ("  reservations: [{name: r, nodes: m4, start: 60, duration: 90}]\n",
     "c.yaml:13: machine.reservations[0].duration: a calibration's reservation lasts whole minutes"),
    ("  reservations: [{name: r, nodes: m4, start: 60, duration: 60, flags: DAILY}]\n",
     "does not repeat"),
    ("  node_events: [{at: 30, nodes: m2, state: SLEEP}]\n", "machine.node_events[0].state"),
    ("  typo: 1\n", "machine.typo: unknown key"),
    ("  node_events: []\n", "machine.node_events: expected a non-empty list"),
])
def test_a_bad_machine_key_is_one_line_naming_it(tmp_path: Path, machine: str, message: str) -> None:
    assert_calibration_error(calibration_file(tmp_path, machine), message)


def test_each_change_is_its_scontrol_command_at_its_instant(tmp_path: Path) -> None:
    # a clock the test moves: the reservation is created at the origin (1000) to start 60 s later,
    # read back in Unix seconds; the drain is made at the first step at or after 30 s (1031.5), the
    # resume at 150 s; the end deletes the reservation (m2 is back in service already)
    now = [1000.0]
    commands: list[list[str]] = []

    def run(argv: list[str], why: str) -> str:
        commands.append(argv)
        return "ReservationName=djsb_cal StartTime=1060 EndTime=1180 Duration=00:02:00\n" \
            if argv[:2] == ["env", "SLURM_TIME_FORMAT=%s"] else ""

    changes = load_calibration(calibration_file(tmp_path)).machine
    machine = SlurmMachine(changes, run, lambda: now[0])
    machine.begin(1000.0)
    for now[0] in (1010.0, 1031.5, 1100.0, 1151.0):
        machine.due()
    machine.end()
    assert commands == [
        ["scontrol", "create", "reservation", "reservationname=djsb_cal", "starttime=now+60", "duration=2",
         "nodes=m4", "users=root", "flags=MAINT,IGNORE_JOBS"],
        ["env", "SLURM_TIME_FORMAT=%s", "scontrol", "show", "reservation", "djsb_cal"],
        ["scontrol", "update", "nodename=m2", "state=DRAIN", "reason=calibrate"],
        ["scontrol", "update", "nodename=m2", "state=RESUME"],
        ["scontrol", "delete", "reservationname=djsb_cal"]]
    table = machine.table()
    assert list(table.columns) == list(COLUMNS)
    assert table[["kind", "what", "at"]].values.tolist() == [["reservation", "MAINT,IGNORE_JOBS", 60.0],
                                                               ["event", "DRAIN", 31.5], ["event", "RESUME", 151.0]]
    # Slurm removed the reservation at its end (1180): its delete fails, and that is no error; before
    # its end a failed delete is one
    def refusing(argv: list[str], why: str) -> str:
        if argv[1] == "delete":
            raise RunError("scontrol delete failed (Requested reservation is invalid)")
        return run(argv, why)

    for at, raises in ((1250.0, False), (1100.0, True)):
        machine = SlurmMachine(MachineChanges(reservations=changes.reservations), refusing, lambda: now[0])
        now[0] = 1000.0
        machine.begin(1000.0)
        now[0] = at
        if raises:
            with pytest.raises(RunError):
                machine.end()
        else:
            machine.end()
    # an interrupted replay: the end resumes what it left drained
    commands.clear()
    machine = SlurmMachine(MachineChanges(changes.events), run, lambda: now[0])
    now[0] = 1000.0
    machine.begin(1000.0)
    now[0] = 1040.0
    machine.due()
    machine.end()
    assert commands[-1] == ["scontrol", "update", "nodename=m2", "state=RESUME"]


def test_the_model_replays_what_slurm_was_given_on_its_clock() -> None:
    done = pd.DataFrame([["reservation", "djsb_cal", "m4", "MAINT,IGNORE_JOBS", 60.0, 180.0],
                         ["event", math.nan, "m2", "DRAIN", 31.5, math.nan],
                         ["event", math.nan, "m2", "RESUME", 151.0, math.nan]], columns=list(COLUMNS))
    cluster = model_machine(ClusterSpec.homogeneous(4, 2), done, origin=1000.0)
    assert cluster.events == (NodeEvent(1031.5, "m2", "DRAIN"), NodeEvent(1151.0, "m2", "RESUME"))
    assert cluster.reservations == (AdvanceReservation("djsb_cal", "m4", 1060.0, 120.0, ("MAINT", "IGNORE_JOBS")),)


# -- live: the changes made on the mini-cluster during a calibration --------------------------------

OUT = os.environ.get("DJSB_CALIBRATE_FULL")
@pytest.fixture(scope="module")
def machine_calibration(slurm_cluster: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The calibration of :data:`CALIBRATION` run on the mini-cluster (twice on Slurm; 9 minutes): its
    output directory."""
    if OUT is None:
        pytest.skip("the machine-change calibration runs only with DJSB_CALIBRATE_FULL=DIR (9 minutes)")
    if not {"m2", "m4"} <= set(slurm_cluster.nodes):
        pytest.skip(f"the calibration drains m2 and reserves m4 of the calibrations' cluster "
                    f"(.ci/slurm-second.env); this one has {', '.join(slurm_cluster.nodes)}")
    out = Path(OUT) / "machine"
    if not (out / "comparison.json").is_file():
        print(run_calibration(calibration_file(tmp_path_factory.mktemp("machine")), out))
    return out


@pytest.mark.slurm
@pytest.mark.slow
@pytest.mark.alone
def test_slurm_kept_its_jobs_off_the_drained_and_the_reserved_node(machine_calibration: Path) -> None:
    # in both runs, no job started on m2 while it was drained, and none ran on m4 while it was reserved
    for run in (1, 2):
        done = pd.read_csv(machine_calibration / f"machine_{run}.csv")
        replay = pd.read_csv(machine_calibration / f"slurm_{run}.csv", index_col="job_id")
        assert len(replay) == 32
        drain = done.loc[done["what"] == "DRAIN", "at"].item()
        resume = done.loc[done["what"] == "RESUME", "at"].item()
        begin, end = done.loc[done["kind"] == "reservation", ["at", "end"]].values[0]
        assert end - begin == 120.0  # whole seconds, as Slurm keeps them
        started = replay.loc[replay["nodes"].str.contains("m2"), "start"]
        assert not ((started > drain) & (started < resume)).any(), run
        on_m4 = replay[replay["nodes"].str.contains("m4")]
        assert not ((on_m4["start"] < end) & (on_m4["end"] > begin)).any(), run


@pytest.mark.slurm
@pytest.mark.slow
@pytest.mark.alone
def test_the_model_with_the_machine_changes_is_within_slurms_spread(machine_calibration: Path) -> None:
    # the rule of the other live calibrations (compare.within_spread: the mean wait within Slurm's two
    # runs', 10 % of run 1's either side; the model replays run 1's passes and machine changes).
    # Measured (2026-11-29): first +43.4 % (tau 0.83) against Slurm's own 3.2 %: the main pass let the
    # 6-CPU job 9, which the nodes neither drained (m2) nor reserved (m4) could hold even idle, block
    # its partition (Resources), where Slurm's _pick_best_nodes answers ESLURM_NODE_NOT_AVAIL and goes
    # on to the jobs behind it. With that rule (tests/test_model_node_events.py) the same run replays at
    # +0.1 % (68.1 s against 68.0 s), and a new calibration measured -8.8 % (tau 0.91) against Slurm's
    # own 17.2 %.
    comparison = json.loads((machine_calibration / "comparison.json").read_text())
    figures = comparison["model vs slurm_1"]
    own = comparison["slurm_2 vs slurm_1"]
    print(f"model vs slurm_1: {figures}; Slurm's own run 2 vs run 1: {own}")
    assert within_spread(figures["mean_wait_b"], (own["mean_wait_a"], own["mean_wait_b"])), (figures, own)
