"""Performance model of STREAM-like, memory-bound MPI+OpenMP jobs sharing nodes (pure functions).

The simulated job module (job_modules/simulated.py) advances a *fluid* model: between two events
every running job progresses at a constant rate, 1.0 being its speed alone on its own placement at
its full thread count, so a job alone finishes after exactly its ``exec_time`` of work. The rate
is the product of the pieces below, each a small function with the source of its modelling choice:

1. Node throughput (:func:`node_throughput`): a roofline for a kernel of fixed arithmetic
   intensity (Williams, Waterman, Patterson, "Roofline", CACM 52(4), 2009): what the node's
   running threads can stream is capped both by how many cores they occupy times what one core
   can draw alone (a core's bandwidth is bounded by its outstanding cache misses, Little's law;
   McCalpin's STREAM single-thread results show it well below the socket's) and by the node's
   sustainable memory bandwidth (STREAM triad).
2. Processor sharing (:func:`thread_speed`): under oversubscription ``k`` runnable threads on a
   core each get ``1/k`` of it (Kleinrock's processor-sharing discipline, which the Linux CFS
   scheduler approximates, load-balancing runnable threads over a node's cores), and the memory
   bandwidth is shared in proportion to each thread's demand; since every thread of a node then
   demands the same, each gets ``throughput / threads``.
3. Synchronisation (:func:`task_throughput`, :func:`job_throughput`): STREAM's OpenMP loops are
   statically scheduled and end in an implicit barrier, and its MPI version synchronises the tasks
   around each kernel, so a task advances at its slowest thread and a job at its slowest task
   (bulk-synchronous parallel model, Valiant, CACM 33(8), 1990). A malleable task shrunk to fewer
   threads splits the same arrays over them: its throughput is ``threads x thread speed``, so a
   memory-bound task loses little when bandwidth, not cores, is the bottleneck.
4. Time-slicing losses (:func:`progress_rate`): threads of a bulk-synchronous job time-sliced
   without coscheduling wait at barriers for descheduled siblings, and pay context switches and
   cache refills (Ousterhout, ICDCS 1982; Feitelson & Rudolph, JPDC 16(4), 1992; Iancu et al.,
   IPDPS 2010). The model lumps these into one efficiency factor applied to the progress of every
   job with a thread on an oversubscribed node: a calibration parameter, not a derivation.
5. Suspension: a suspended job (stop&continue) keeps its memory but has no runnable thread, so it
   neither uses a core nor draws bandwidth and makes no progress (the module applies this by
   leaving it out of the runnable threads); after a resume it may stall for a fixed overhead.
   Its resident memory alone slows nothing while the node has memory to spare: measured with
   djsb-stream, an analytics next to a stopped 4 GiB job runs as fast as alone
   (bench/bench_footprint.py, ``slowdown_ana_stopcont``).
6. Working set (:func:`cache_gain`): STREAM's bandwidth depends on how many bytes the kernels
   sweep. A working set that fits the last-level cache streams from it, several times faster than
   from memory; far beyond it every sweep misses and the bandwidth is memory's (the "memory
   mountain" of Bryant and O'Hallaron, Computer Systems: A Programmer's Perspective, sec. 6.6).
   The runnable threads of a node share its cache, so the working set that decides their
   bandwidth is the sum of the runnable jobs' footprints on the node (a suspended job's memory is
   not swept); a job alone sweeps only its own. The gain as a function of working set / cache size
   is a measured curve (bench/bench_footprint.py: one thread's bandwidth at each footprint over
   its bandwidth at the largest), applied to both bounds of the roofline.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence


def cache_gain(working_set: float, cache: float, curve: Sequence[tuple[float, float]]) -> float:
    """Bandwidth multiplier of a node sweeping ``working_set`` bytes through a ``cache``-byte
    last-level cache: ``curve`` is (working set / cache, gain) points in increasing order,
    interpolated linearly in log(working set / cache); the first gain below the first point, 1
    beyond the last (far beyond the cache every sweep misses). 1 without a curve or a cache size.
    """
    if not curve or cache <= 0 or working_set <= 0:
        return 1.0
    x = working_set / cache
    if x <= curve[0][0]:
        return curve[0][1]
    for (x0, g0), (x1, g1) in itertools.pairwise(curve):
        if x <= x1:
            return g0 + (g1 - g0) * math.log(x / x0) / math.log(x1 / x0)
    return 1.0


def node_throughput(runnable_threads: int, cores: int, core_bandwidth: float,
                    memory_bandwidth: float, gain: float = 1.0) -> float:
    """GB/s the runnable threads of one node stream together: min(busy cores x per-core, node),
    times the working set's cache ``gain``.

    The busy cores are min(threads, cores): threads beyond the cores only time-share them.
    """
    if runnable_threads <= 0:
        return 0.0
    return gain * min(min(runnable_threads, cores) * core_bandwidth, memory_bandwidth)


def thread_speed(runnable_threads: int, cores: int, core_bandwidth: float, memory_bandwidth: float,
                 gain: float = 1.0) -> float:
    """GB/s of one of ``runnable_threads`` equal threads on a node: its fair share of the throughput.

    Processor sharing gives each thread min(1, cores/threads) of a core and bandwidth is shared in
    proportion to demand; both shares are equal among a node's threads, hence throughput / threads.
    """
    if runnable_threads <= 0:
        return 0.0
    return node_throughput(runnable_threads, cores, core_bandwidth, memory_bandwidth, gain) / runnable_threads


def task_throughput(threads_per_task: int, thread_speeds: Iterable[float]) -> float:
    """GB/s of one task of a job: its threads times the slowest thread speed among its nodes.

    The OpenMP barrier makes a task wait for its slowest thread, and the MPI synchronisation makes
    the job wait for its slowest task, so the job's tasks all advance at the slowest one's rate.
    """
    return threads_per_task * min(thread_speeds)


def job_throughput(threads_per_task: int, runnable_by_node: Iterable[int], cores: int,
                   core_bandwidth: float, memory_bandwidth: float) -> float:
    """GB/s per task of a job whose nodes have ``runnable_by_node`` runnable threads in all."""
    return task_throughput(threads_per_task, (thread_speed(n, cores, core_bandwidth, memory_bandwidth)
                                              for n in runnable_by_node))


def progress_rate(throughput: float, alone_throughput: float, *, oversubscribed: bool,
                  timeslice_efficiency: float) -> float:
    """Seconds of work done per second: throughput relative to the job alone, less time-slicing losses."""
    if alone_throughput <= 0:
        raise ValueError("a job alone must make progress")
    rate = throughput / alone_throughput
    return rate * timeslice_efficiency if oversubscribed else rate


def time_to_finish(remaining: float, rate: float) -> float:
    """Seconds until ``remaining`` work is done at ``rate``; infinite when the job does not progress."""
    if remaining <= 0:
        return 0.0
    return remaining / rate if rate > 0 else math.inf
