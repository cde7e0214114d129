"""Each replay starts on idle nodes: the model is built from ``scontrol show node``'s nodes, all free,
and replays the jobs from there, so a replay that began while other jobs still ran or completed on
the calibration's nodes (a previous replay's or a test's, cancelled and still COMPLETING) measures a
Slurm that had less room than the model. A run of the mini-cluster calibration did so: its first
replay started while nodes were still busy, put its first jobs on the last node and held job 11 back
64 s (+24.9 % of mean wait), where the second replay, begun on idle nodes, and the model agreed
within 1 %.

Before each replay the calibration asks ``sinfo`` for the state of each node of its partitions until
none is busy (allocated, mixed, completing or draining with jobs), at most :data:`IDLE_TIMEOUT`
seconds; nodes out of service (down, drained) are the model's and Slurm's alike and are no reason
to wait. Nodes still busy then end the calibration with one line naming them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from djsb.errors import RunError

IDLE_TIMEOUT = 600.0
"""Seconds a replay waits for its nodes to be idle (a cancelled job completes within KillWait and
its epilog; a production partition never idles, and the calibration is not for one)."""
BUSY_STATES = ("alloc", "mix", "comp", "drng")
"""``sinfo --format=%t``'s states of a node running or completing jobs (a suffix such as ``*`` or
``~`` flags more: sinfo(1), NODE STATE CODES)."""


def sinfo_argv(partitions: Sequence[str]) -> tuple[str, ...]:
    """``sinfo`` of each node of ``partitions`` with its compact state, one ``NODE STATE`` a line."""
    return ("sinfo", "--noheader", "--Node", f"--partition={','.join(partitions)}", "--format=%N %t")


def busy_nodes(sinfo: str) -> list[str]:
    """The nodes of :func:`sinfo_argv`'s answer that run or complete jobs (each once)."""
    busy: dict[str, None] = {}
    for line in sinfo.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1].rstrip("*~#!%$@^-+").startswith(BUSY_STATES):
            busy[fields[0]] = None
    return list(busy)


def wait_until_idle(ask: Callable[[tuple[str, ...]], str], partitions: Sequence[str], poll_interval: float,
                    timeout: float = IDLE_TIMEOUT, clock: Callable[[], float] = time.monotonic,
                    sleep: Callable[[float], None] = time.sleep) -> None:
    """Return once no node of ``partitions`` is busy (``ask`` runs an argv where Slurm runs and
    returns its output); a :class:`RunError` naming the busy nodes after ``timeout`` seconds."""
    deadline = clock() + timeout
    while busy := busy_nodes(ask(sinfo_argv(partitions))):
        if clock() >= deadline:
            raise RunError(f"nodes {', '.join(busy)} of partition {', '.join(partitions)} still ran jobs "
                           f"after {timeout:g} s: each replay starts on idle nodes, as the model does")
        sleep(poll_interval)
