"""A calibration killed outright leaves no machine change behind (djsb/calibrate/machine_left.py):
each change is recorded in the run directory before it is made, and what a record holds is undone
when the calibration is continued or started again there. Without a cluster: the commands are
recorded by a fake ``run``; the live test on the mini-cluster is in tests/test_calibrate_killed.py."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path

from test_calibrate_machine import calibration_file

from djsb.calibrate.machine_changes import MachineChanges, SlurmMachine
from djsb.calibrate.machine_left import (
    LEFT_FILE,
    MachineLeft,
    MachineRecord,
    delete_reservation,
    read_left,
    resume_nodes,
    show_nodes,
    show_reservation,
    undo_left,
    undone_note,
)
from djsb.calibrate.run_dir import CalibrationDir
from djsb.calibrate.spec import load_calibration
from djsb.model.node_events import NodeEvent
from djsb.model.reservations import AdvanceReservation


def recording(ran: list[list[str]]) -> Callable[[list[str], str], str]:
    """A ``run`` that records each command in ``ran`` and answers nothing."""
    def run(argv: list[str], why: str) -> str:
        ran.append(argv)
        return ""
    return run


SHOWN = "ReservationName=djsb_cal StartTime=1060 EndTime=1180 Duration=00:02:00\n"


def test_each_change_is_recorded_before_it_is_made_and_the_record_goes_at_the_end(tmp_path: Path) -> None:
    # the record as each command finds it: the reservation's name before its create, m2 with its reason
    # before its drain, m2 gone once resumed, nothing (no file) once the end undid everything
    changes = MachineChanges((NodeEvent(30.0, "m2", "DRAIN", "calibrate"), NodeEvent(150.0, "m2", "RESUME")),
                             (AdvanceReservation("djsb_cal", "m4", 60.0, 120.0),))
    seen: list[tuple[str, MachineLeft]] = []
    now = [1000.0]

    def run(argv: list[str], why: str) -> str:
        seen.append((" ".join(argv[:3]), read_left(tmp_path)))
        return SHOWN if argv[0] == "env" else ""

    machine = SlurmMachine(changes, run, lambda: now[0], MachineRecord(tmp_path))
    machine.begin(1000.0)
    for now[0] in (1031.0, 1151.0):
        machine.due()
    machine.end()
    reserved = MachineLeft(("djsb_cal",))
    assert seen == [("scontrol create reservation", reserved), ("env SLURM_TIME_FORMAT=%s scontrol", reserved),
                    ("scontrol update nodename=m2", MachineLeft(("djsb_cal",), (("m2", "calibrate"),))),
                    ("scontrol update nodename=m2", MachineLeft(("djsb_cal",), (("m2", "calibrate"),))),
                    ("scontrol delete reservationname=djsb_cal", reserved)]
    assert not (tmp_path / LEFT_FILE).exists()


def test_a_kill_leaves_the_record_whole(tmp_path: Path) -> None:
    # killed after the drain (no end): the record names the reservation and m2, in JSON written whole
    changes = load_calibration(calibration_file(tmp_path)).machine
    machine = SlurmMachine(changes, lambda argv, why: SHOWN if argv[0] == "env" else "", lambda: 1040.0,
                           MachineRecord(tmp_path))
    machine.begin(1000.0)
    machine.due()
    assert json.loads((tmp_path / LEFT_FILE).read_text()) == {
        "reservations": ["djsb_cal"], "nodes": [{"node": "m2", "reason": "calibrate"}]}
    assert not (tmp_path / f".{LEFT_FILE}").exists()
    assert read_left(tmp_path) == MachineLeft(("djsb_cal",), (("m2", "calibrate"),))


NODES = """\
NodeName=m2 Arch=x86_64 CoresPerSocket=1
   State=IDLE+DRAIN ThreadsPerCore=1
   Reason=calibrate [root@2026-01-01T10:00:00]

NodeName=m3 Arch=x86_64 CoresPerSocket=1
   State=IDLE+DRAIN ThreadsPerCore=1
   Reason=disk failure [admin@2026-01-01T10:05:00]

NodeName=m5 Arch=x86_64 CoresPerSocket=1
   State=IDLE ThreadsPerCore=1
"""


def test_the_undo_deletes_reservations_still_there_and_resumes_nodes_still_out_with_its_reason() -> None:
    # djsb_cal still exists: deleted; old_resv is gone (show fails): nothing. m2 is drained with the
    # calibration's reason: resumed; m3 was drained since by an operator (another reason) and m5 is
    # back in service: both left alone
    left = MachineLeft(("djsb_cal", "old_resv"), (("m2", "calibrate"), ("m3", "calibrate"), ("m5", "calibrate")))
    ran: list[list[str]] = []
    shown: list[list[str]] = []

    def show(argv: list[str]) -> str | None:
        shown.append(argv)
        if argv[2] == "node":
            return NODES
        return SHOWN if argv[3] == "djsb_cal" else None

    done = undo_left(left, recording(ran), show)
    assert shown == [["scontrol", "show", "reservation", "djsb_cal"], ["scontrol", "show", "reservation", "old_resv"],
                     ["scontrol", "show", "node", "m2,m3,m5"]]
    assert ran == [["scontrol", "delete", "reservationname=djsb_cal"],
                   ["scontrol", "update", "nodename=m2", "state=RESUME"]]
    assert done == ["deleted reservation djsb_cal", "resumed m2"]
    assert undone_note(done) == ["a calibration killed outright had left its machine changes on Slurm: "
                                 "deleted reservation djsb_cal; resumed m2"]
    assert undone_note(undo_left(MachineLeft(), lambda argv, why: "", show)) == []


def test_the_undo_commands_are_argv_lists_a_shell_keeps_whole() -> None:
    # a name with a space and a shell's metacharacters stays one argument through shlex.join (what
    # the calibration's ask() runs) and back
    name = "cal resv;rm -rf x"
    for argv in (show_reservation(name), delete_reservation(name), show_nodes(["m[1-2]", "m4"]),
                 resume_nodes(["m2", "m4"])):
        assert shlex.split(shlex.join(argv)) == argv
    assert delete_reservation(name) == ["scontrol", "delete", "reservationname=cal resv;rm -rf x"]
    assert resume_nodes(["m2", "m4"]) == ["scontrol", "update", "nodename=m2,m4", "state=RESUME"]


def test_the_run_dir_undoes_its_record_once_and_a_new_one_takes_a_replaced_one_s(tmp_path: Path) -> None:
    config = calibration_file(tmp_path)
    jobs = load_calibration(config).jobs
    out = tmp_path / "out"
    left = MachineLeft(("djsb_cal",), (("m2", "calibrate"),))
    run_dir = CalibrationDir.create(out, config, 1, jobs, left)  # --force over a killed calibration's dir
    assert read_left(out) == left
    ran: list[list[str]] = []
    assert run_dir.undo_machine_left(recording(ran),
                                     lambda argv: NODES if argv[2] == "node" else SHOWN) == \
        ["deleted reservation djsb_cal", "resumed m2"]
    assert not (out / LEFT_FILE).exists() and run_dir.machine_record.left == MachineLeft()
    assert run_dir.undo_machine_left(recording(ran), lambda argv: SHOWN) == []
    assert len(ran) == 2
    run_dir.release()
