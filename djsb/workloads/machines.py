"""The ``.machines`` cluster description that comes with the MetaCentrum trace (Alea simulator format).

One cluster per line, whitespace (tab) separated::

    0	zewura	20	80	1	529426432

= cluster id, name, number of nodes, cores per node, a fifth column, memory per node in KB
(``/work/shared/data/traces/README.md``). The README leaves the fifth column unexplained ("?"); it is 1
for both clusters here and is kept as ``column5`` without interpretation. Blank lines and lines starting
with ``#`` or ``;`` are ignored; anything else that does not parse raises TraceError with the line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from djsb.errors import TraceError
from djsb.workloads._textio import STREAM_ERRORS, open_trace_text


@dataclass(frozen=True)
class MachineSpec:
    """One homogeneous cluster: ``nodes`` nodes of ``cores_per_node`` cores and ``memory_mb_per_node`` MiB."""

    cluster_id: int
    name: str
    nodes: int
    cores_per_node: int
    memory_mb_per_node: float
    column5: str = ""

    @property
    def cores(self) -> int:
        return self.nodes * self.cores_per_node

    @property
    def memory_mb(self) -> float:
        return self.nodes * self.memory_mb_per_node


def read_machines(path: str | os.PathLike) -> list[MachineSpec]:
    """Parse a ``.machines`` file into one :class:`MachineSpec` per cluster (memory KB -> MiB: / 1024)."""
    source = os.fspath(path)
    specs: list[MachineSpec] = []
    with open_trace_text(source) as stream:
        try:
            lines = list(stream)
        except STREAM_ERRORS as exc:
            raise TraceError(f"cannot read machines file: {exc}", source=source) from exc
    for lineno, line in enumerate(lines, 1):
        fields = line.split()
        if not fields or fields[0][0] in "#;":
            continue
        if len(fields) < 6:
            raise TraceError(f"expected 6 fields (id name nodes cores_per_node ? memory_kb_per_node), got "
                             f"{len(fields)}", source=source, line=lineno)
        try:
            spec = MachineSpec(int(fields[0]), fields[1], int(fields[2]), int(fields[3]),
                               float(fields[5]) / 1024.0, fields[4])
        except ValueError as exc:
            raise TraceError(f"not a machines line (id name nodes cores ? memory_kb): {exc}", source=source,
                             line=lineno) from exc
        if spec.nodes <= 0 or spec.cores_per_node <= 0 or spec.memory_mb_per_node < 0:
            raise TraceError("nodes and cores per node must be > 0 and memory >= 0", source=source,
                             line=lineno)
        specs.append(spec)
    if not specs:
        raise TraceError("no cluster in machines file", source=source)
    return specs
