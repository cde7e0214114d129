"""Each replay starts on idle nodes: the model is built from ``scontrol show node``'s nodes, all free,
and replays the jobs from there, so a replay that began while other jobs still ran or completed on
the calibration's nodes (a previous replay's or a test's, cancelled and still COMPLETING), or while
a node did not respond, would measure a Slurm with less room than the model.

Before each replay the calibration asks ``sinfo`` for the state of each node of its partitions until
none is busy (allocated, mixed, completing or draining with jobs) and no idle one is flagged unable
to take a job (not responding, as a node is until its slurmd registers again after slurmctld
restarts), at most :data:`IDLE_TIMEOUT` seconds; nodes out of service (down, drained) are the model's
and Slurm's alike and are no reason to wait. Nodes still busy then end the calibration with one line
naming them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from djsb.errors import RunError

IDLE_TIMEOUT = 600.0
"""Seconds a replay waits for its nodes to be idle (a cancelled job completes within KillWait and
its epilog; a production partition never idles, and the calibration is not for one)."""
BUSY_STATES = ("alloc", "mix", "comp", "drng")
"""``sinfo --format=%t``'s states of a node running or completing jobs."""
NOT_READY = frozenset("*~#%!@^")
"""Flags sinfo(1) appends to a state (NODE STATE CODES) of a node that cannot take a job now: not
responding (``*``, as every node is until its slurmd registers again after slurmctld restarts),
powered off or powering up or down, rebooting. An idle node so flagged is waited for too."""


def sinfo_argv(partitions: Sequence[str]) -> tuple[str, ...]:
    """``sinfo`` of each node of ``partitions`` with its compact state, one ``NODE STATE`` a line."""
    return ("sinfo", "--noheader", "--Node", f"--partition={','.join(partitions)}", "--format=%N %t")


def busy_nodes(sinfo: str) -> list[str]:
    """The nodes of :func:`sinfo_argv`'s answer that run or complete jobs, or are idle but cannot
    take one now (:data:`NOT_READY`), each once."""
    busy: dict[str, None] = {}
    for line in sinfo.splitlines():
        fields = line.split()
        if len(fields) != 2:
            continue
        state = fields[1].rstrip("*~#!%$@^-+")
        if state.startswith(BUSY_STATES) or (state == "idle" and NOT_READY & set(fields[1][len(state):])):
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
