"""What this machine can hold: the CPUs this process may use and the memory a command may fill.

Every size a config sets (nodes, jobs, cells, sweep points) and every worker count a command line
sets is checked against these before anything is allocated, so no input can exhaust a shared login
node: a value beyond them is refused as bad input, naming its key, while the rest of the machine is
still free to print the message. The bounds are estimates (an item's measured cost times the count
must fit), not promises that anything below them fits alongside whatever else the machine runs.

It also pauses Python's cyclic garbage collector over a bulk computation (:func:`collector_paused`).
A replay builds hundreds of thousands of long-lived objects (parsed records, jobs, events, result
rows) and leaves next to nothing in reference cycles. The cyclic collector, triggered by allocation
counts alone, keeps walking the whole growing heap to free nothing: on ``djsb history`` of a
120,000-job sacct dump its collections take about 6 % of the run, and pausing it moves the peak
memory by under 2 % (505 -> 502 MB there, 1,923 -> 1,950 MB on five times that dump). Reference
counting frees everything that is not in a cycle while the collector is paused; when the pause ends
the collector is enabled again and collects the few cycles left at its next run.
"""

from __future__ import annotations

import gc
import os
import resource
from collections.abc import Iterator
from contextlib import contextmanager

MEMORY_SHARE = 0.5
"""The part of the memory one command may plan to fill: the rest is left to the operating system,
the interpreter's own footprint, copies made along the way (a table read as rows then as a
DataFrame) and the other users of a shared node."""


NODE_BYTES = 1024
"""Memory of one node of the scheduler model in a replay: 0.92 KB measured (peak RSS of ``djsb
simulate`` on 1,000 and on 50,000 four-core nodes with 100 jobs, 117.7 and 163.0 MB)."""

JOB_BYTES = 2048
"""Memory of one job replayed on the model: 1.76 KB measured (peak RSS of ``djsb simulate`` of
1,000 and of 30,000 generated jobs on 16 cores, 119.7 and 170.8 MB)."""

RUN_JOB_BYTES = 2048
"""Memory of one job of a ``djsb run``: its jobs.csv row, which ``--resume`` and ``djsb report``
read whole, is 1.76 KB as read (tracemalloc on 25,000 rows of a simulated run's jobs.csv)."""

POINT_BYTES = 2048
"""Memory of one point of a sweep: its entry in the sweep's manifest (0.29 KB measured with
tracemalloc on 20,000 points) and its row of scalar metrics in sweep.csv (about a jobs.csv row)."""


COMPUTER_DAY_BYTES = 1536
"""Memory of one computer of a cycle-stealing pool per simulated day (its sessions, sleeps and
reboots): 1.4 KB measured (peak RSS of ``djsb pool`` with 160 and 1,600 computers over 35 days,
127.1 and 198.1 MB). A pool task costs about a job (1.36 KB measured with 2,000 and 20,000 tasks)."""


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask: a Slurm job's or taskset's allotment,
    not every core of the node)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def memory_bytes() -> int:
    """The memory this process may use: the physical memory, or less when an address-space limit
    (``ulimit -v``, RLIMIT_AS) is set lower."""
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    limit, _ = resource.getrlimit(resource.RLIMIT_AS)
    return physical if limit == resource.RLIM_INFINITY else min(physical, limit)


def most_items(each_bytes: int) -> int:
    """How many items of ``each_bytes`` (a measured per-item cost) one command may hold:
    :data:`MEMORY_SHARE` of :func:`memory_bytes`, divided by the cost."""
    return max(1, int(memory_bytes() * MEMORY_SHARE) // each_bytes)


def gib(size: float) -> str:
    """A number of bytes in GiB, for messages ("24.0 GiB")."""
    return f"{size / 1024**3:.1f} GiB"


def too_many(count: int, each_bytes: int, what: str) -> str | None:
    """Why ``count`` items of ``each_bytes`` are more than one command may hold, or None if they fit
    (:func:`most_items`)."""
    most = most_items(each_bytes)
    if count <= most:
        return None
    return (f"{count} {what} would need about {gib(count * each_bytes)} of memory, more than one command "
            f"may take here (half the {gib(memory_bytes())} this process may use): at most {most}")


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector disabled inside the block, enabled again after it if it was before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
