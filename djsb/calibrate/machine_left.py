"""What a calibration's machine changes may have left on Slurm, recorded before each change is made,
so that a calibration killed outright (SIGKILL, a lost login node) leaves nothing behind for good.

SIGINT and SIGTERM unwind through :meth:`~djsb.calibrate.machine_changes.SlurmMachine.end`, which
deletes the replay's reservations and resumes the nodes it took out of service; SIGKILL does not.
So, as the ledger records a submission before sbatch runs (djsb.harness.ledger), the replay writes
``machine_left.json`` in the run directory before each change: a reservation's name before
``scontrol create reservation``, a node and the reason given before it is drained, failed or downed;
a node resumed leaves the record after its resume, and the whole record goes once the replay's end
undid everything. The file is small and written whole (a scratch file fsync'd and renamed over it),
so a kill leaves the last record or the one before, never half of one.

When a calibration is continued (``djsb calibrate --resume``) or started again on its directory
(``--force``), :func:`undo_left` undoes what a record holds before anything else runs: each
reservation still there is deleted (``scontrol show reservation`` answers it), each node still out
of service with the reason the calibration gave is resumed (a node an operator took out since, with
another reason, is left alone); a note in the outputs says what was undone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from djsb.jobs.scontrol import parse_show_records

LEFT_FILE = "machine_left.json"
"""The record's name in the run directory."""
OUT_OF_SERVICE = frozenset({"DRAIN", "DRAINED", "DRAINING", "DOWN", "FAIL", "FAILING"})
"""The parts of a node's ``State`` (``IDLE+DRAIN``, ``DOWN+DRAIN``, ``MIXED+FAIL``...) that a node
event of the calibration leaves it in until it is resumed."""

Run = Callable[[list[str], str], str]
"""Runs a command where Slurm is and returns its answer (RunError naming what it was for if it fails)."""
Show = Callable[[list[str]], "str | None"]
"""Runs a command where Slurm is and returns its answer, or None if it failed (nothing to show)."""


@dataclass(frozen=True)
class MachineLeft:
    """What may be left on Slurm: reservations by name, and nodes out of service with the reason
    the calibration gave (each in the order recorded)."""

    reservations: tuple[str, ...] = ()
    nodes: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.reservations or self.nodes)

    def to_json(self) -> str:
        return json.dumps({"reservations": list(self.reservations),
                           "nodes": [{"node": node, "reason": reason} for node, reason in self.nodes]},
                          indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> MachineLeft:
        data = json.loads(text)
        return cls(tuple(str(name) for name in data.get("reservations", ())),
                   tuple((str(item["node"]), str(item["reason"])) for item in data.get("nodes", ())))


NOTHING_LEFT = MachineLeft()
"""An empty record: nothing left."""


def read_left(run_dir: Path) -> MachineLeft:
    """The record in ``run_dir`` (empty without one)."""
    path = run_dir / LEFT_FILE
    return MachineLeft.from_json(path.read_text()) if path.is_file() else MachineLeft()


class MachineRecord:
    """The record of one run directory, kept in step with the changes a replay makes."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LEFT_FILE
        self.left = read_left(run_dir)

    def write(self, left: MachineLeft) -> None:
        """Make ``left`` the record, durably and whole (no file when it is empty)."""
        self.left = left
        if not left:
            self.path.unlink(missing_ok=True)
            return
        scratch = self.path.with_name(f".{LEFT_FILE}")
        with scratch.open("w") as out:
            out.write(left.to_json())
            out.flush()
            os.fsync(out.fileno())
        scratch.replace(self.path)
        _sync_directory(self.path.parent)

    def reserving(self, name: str) -> None:
        """Reservation ``name`` is about to be created."""
        if name not in self.left.reservations:
            self.write(MachineLeft((*self.left.reservations, name), self.left.nodes))

    def taking_out(self, nodes: Iterable[str], reason: str) -> None:
        """``nodes`` are about to be drained, failed or downed with ``reason``."""
        kept = tuple((node, why) for node, why in self.left.nodes if node not in set(nodes))
        self.write(MachineLeft(self.left.reservations, (*kept, *((node, reason) for node in nodes))))

    def returned(self, nodes: Iterable[str]) -> None:
        """``nodes`` were resumed."""
        back = set(nodes)
        self.write(MachineLeft(self.left.reservations,
                               tuple((node, why) for node, why in self.left.nodes if node not in back)))

    def clear(self) -> None:
        """Everything recorded was undone."""
        self.write(MachineLeft())


def _sync_directory(path: Path) -> None:
    """Make a rename in ``path`` durable."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def show_reservation(name: str) -> list[str]:
    """The command whose success says reservation ``name`` exists."""
    return ["scontrol", "show", "reservation", name]


def delete_reservation(name: str) -> list[str]:
    """The command deleting reservation ``name``."""
    return ["scontrol", "delete", f"reservationname={name}"]


def show_nodes(nodes: Iterable[str]) -> list[str]:
    """The command showing ``nodes``' records (State, Reason)."""
    return ["scontrol", "show", "node", ",".join(nodes)]


def resume_nodes(nodes: Iterable[str]) -> list[str]:
    """The command putting ``nodes`` back in service."""
    return ["scontrol", "update", f"nodename={','.join(nodes)}", "state=RESUME"]


def still_out(records: list[dict[str, str]], given: dict[str, str]) -> list[str]:
    """The nodes of ``scontrol show node`` ``records`` out of service with the reason ``given`` them
    (node -> reason; Slurm appends `` [user@time]`` to a reason)."""
    out = []
    for record in records:
        node = record.get("NodeName", "").split()[0] if record.get("NodeName") else ""
        states = set(record.get("State", "").split()[0].split("+")) if record.get("State") else set()
        reason = record.get("Reason", "")
        if node in given and states & OUT_OF_SERVICE and reason.startswith(given[node]):
            out.append(node)
    return out


def undo_left(left: MachineLeft, run: Run, show: Show) -> list[str]:
    """Undo what ``left`` says may be left on Slurm; what was done, one phrase each."""
    done: list[str] = []
    for name in left.reservations:
        if show(show_reservation(name)) is not None:
            run(delete_reservation(name), f"deleting the reservation {name} a killed calibration left")
            done.append(f"deleted reservation {name}")
    given = dict(left.nodes)
    if given:
        answer = show(show_nodes(given))
        nodes = still_out(parse_show_records(answer), given) if answer is not None else []
        if nodes:
            run(resume_nodes(nodes), "resuming the nodes a killed calibration left out of service")
            done.append(f"resumed {', '.join(nodes)}")
    return done


def undone_note(done: list[str]) -> list[str]:
    """The outputs' note of what a killed calibration left and was undone."""
    return [f"a calibration killed outright had left its machine changes on Slurm: {'; '.join(done)}"] \
        if done else []
