"""Named partition layouts: ``cluster.layout`` of ``djsb simulate`` instead of ``cluster.partitions``.

``sdumont_2017`` and ``sdumont_2018``: the thin-node queues of the Santos Dumont supercomputer
before and after its policy change of 28 May 2018 (paper 003 sec. 3, Figure 1): ``cpu`` 1-1,200
cores up to 48 h and ``cpu_long`` 1-240 cores up to 744 h; after the change ``cpu`` starts at 480
cores and ``cpu_small`` takes 1-480 cores up to 2 h. The paper's fourth queue, ``cpu_scal``, has no
limits in 003 and is left out. The machine (504 thin nodes of 24 cores, 003 sec. 4.1) is
``cluster.nodes``: the layout only says what each partition admits.

``metacentrum_2013``: the queues of the MetaCentrum wagap trace (2013, field 20 of its extended
SWF), each with the largest time limit a job of that queue asked for in the trace (q_1w jobs asked
up to 1,209,540 s, two weeks, so the names are not the limits), so that every job of the trace
fits its own queue. MetaCentrum published no core limits per queue; there are none.
"""

from __future__ import annotations

from collections.abc import Callable

from djsb.model.cluster_spec import ClusterSpec, PartitionSpec
from djsb.registry import Registry
from djsb.workloads.shaping.geometry import Limits

HOUR = 3600.0
Layout = Callable[[], tuple[PartitionSpec, ...]]
LAYOUTS: Registry[Layout] = Registry("partition layout", "djsb.model")


@LAYOUTS.register("sdumont_2017")
def sdumont_2017() -> tuple[PartitionSpec, ...]:
    """Santos Dumont before 28 May 2018 (Figure 1(a) of 003)."""
    return (PartitionSpec("cpu", min_cpus=1, max_cpus=1200, max_time=48 * HOUR),
            PartitionSpec("cpu_long", min_cpus=1, max_cpus=240, max_time=744 * HOUR))


@LAYOUTS.register("sdumont_2018")
def sdumont_2018() -> tuple[PartitionSpec, ...]:
    """Santos Dumont after 28 May 2018 (Figure 1(b) of 003): cpu from 480 cores, new cpu_small."""
    return (PartitionSpec("cpu", min_cpus=480, max_cpus=1200, max_time=48 * HOUR),
            PartitionSpec("cpu_long", min_cpus=1, max_cpus=240, max_time=744 * HOUR),
            PartitionSpec("cpu_small", min_cpus=1, max_cpus=480, max_time=2 * HOUR))


METACENTRUM_QUEUES = {"q_2h": 7200, "q_4h": 14400, "q_1d": 86400, "q_2d": 172800, "q_4d": 345600,
                      "q_1w": 1209600, "q_2w": 1209600, "q_2w_plus": 5356800, "backfill": 86400,
                      "ops": 86400, "priority_long": 5356800}
"""Queue -> the largest time limit (s) a job of that queue asked for in MetaCentrum-wagap-2013
(q_1w: 1,209,540 s, rounded up to two weeks)."""


@LAYOUTS.register("metacentrum_2013")
def metacentrum_2013() -> tuple[PartitionSpec, ...]:
    """The wagap trace's queues, time limits only."""
    return tuple(PartitionSpec(name, max_time=float(limit)) for name, limit in METACENTRUM_QUEUES.items())


def partition_limits(cluster: ClusterSpec) -> tuple[Limits, ...]:
    """The geometry limits (djsb.workloads.shaping) of every partition of ``cluster``, in its order:
    what shaping fits a trace's jobs to, with max_cpus capped by the cores of the partition's nodes."""
    cores = {n.name: n.cores for n in cluster.nodes}
    return tuple(_limits(p, sum(cores[n] for n in p.nodes) if p.nodes is not None else cluster.total_cores)
                 for p in cluster.partitions)


def _limits(spec: PartitionSpec, size: int) -> Limits:
    top = min(spec.max_cpus, size) if spec.max_cpus is not None else size
    return Limits(spec.name, max(1, spec.min_cpus), top, spec.max_time)
