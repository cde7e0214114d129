"""A site's slurm.conf read offline, as the records ``scontrol show config / partition / node`` give.

So the readers of :mod:`djsb.slurmsite.slurm_config` (scheduler options, priority plugin,
cluster) take a site's files as they take a live Slurm's answers. The grammar is slurm.conf(5)'s:
``Key=Value`` items, keys case-insensitive, ``#`` to the end of a line (``\\#`` is a literal ``#``), a
``\\`` at the end of a line continues it, values may be double-quoted, ``Include FILE`` reads another
file (relative to the including file's directory; a glob pattern reads each match, sorted). A line
that starts with ``NodeName``, ``PartitionName`` (or another record keyword of
:data:`RECORD_KEYS`) is one record of that kind; ``NodeName=DEFAULT`` / ``PartitionName=DEFAULT`` set
the defaults of the records after it. Every other item is a setting (the last one given wins, as
slurmctld reads the file).

Records come out as scontrol prints them: one per node (``NodeName=n[1-4]`` is four), with
``CPUTot`` (``CPUs``, else Boards x Sockets x CoresPerSocket x ThreadsPerCore, each 1 by default) and
``RealMemory`` (1 MB by default, as Slurm's); a partition's ``Nodes=ALL`` lists every node, and
``MaxTime=INFINITE`` is ``UNLIMITED``. Settings and record fields keep Slurm's canonical spelling
(``schedulertype`` is ``SchedulerType``) for the keys the model reads.
"""

from __future__ import annotations

import glob
import os
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from djsb.errors import ConfigError, TraceError, excerpt
from djsb.jobs.hostlist import expand_hostlist, split_host_list
from djsb.workloads._textio import SITE_FILE_CHARS, read_bounded

RECORD_KEYS = ("NodeName", "PartitionName", "NodeSet", "FrontendName", "DownNodes", "SwitchName")
"""Keywords that start a record line instead of a setting."""

CANONICAL = (
    "SchedulerType", "SchedulerParameters", "SelectType", "SelectTypeParameters", "PriorityType",
    "PriorityWeightAge", "PriorityWeightFairShare", "PriorityWeightJobSize", "PriorityWeightPartition",
    "PriorityWeightQOS", "PriorityWeightAssoc", "PriorityWeightTRES", "PriorityMaxAge",
    "PriorityDecayHalfLife", "PriorityCalcPeriod", "PriorityFavorSmall", "PriorityFlags",
    "PriorityUsageResetPeriod", "KillWait",
    "OverTimeLimit", "PreemptType", "PreemptMode", "DefMemPerCPU", "DefMemPerGPU", "DefMemPerNode",
    "DefCpuPerGPU", "MaxMemPerCPU", "MaxMemPerNode", "MaxCPUsPerNode", "EnforcePartLimits", "GresTypes",
    "AccountingStorageEnforce", "ClusterName", "Include", "CPUs", "Boards", "Sockets", "CoresPerSocket",
    "ThreadsPerCore", "RealMemory", "State",
    "Gres", "Features", "Feature", "Weight", "Nodes", "Default", "MaxTime", "DefaultTime", "OverSubscribe",
    "PriorityTier", "PriorityJobFactor", "QOS", "AllowAccounts", "AllowQos", "MaxNodes", "MinNodes",
    "TRESBillingWeights", "JobRequeue", "AuthInfo", "PreemptExemptTime", "GraceTime", "ResvOverRun",
    "SchedulerTimeSlice",
    *RECORD_KEYS,
)
"""Slurm's spelling of the keys the model reads (slurm.conf(5)); others keep the file's."""

_CANONICAL = {key.lower(): key for key in CANONICAL}
MAX_INCLUDE_DEPTH = 16
"""Includes nested deeper than this are a loop (slurmctld stops at a few levels too)."""


@dataclass(frozen=True)
class SlurmConf:
    """A slurm.conf's settings (``config``) and its records, as scontrol shows them."""

    config: dict[str, str]
    partitions: list[dict[str, str]]
    nodes: list[dict[str, str]]
    sources: list[str] = field(default_factory=list)
    """The files read, the main one first (then each include, in the order read)."""


def canonical(key: str) -> str:
    """Slurm's spelling of ``key`` (case-insensitive), or ``key`` as written."""
    return _CANONICAL.get(key.lower(), key)


def logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(first line number, text) of each logical line: comments stripped, continued lines joined
    where the backslash stood, with nothing between (parse_config.c ``_strip_continuation`` writes the
    next line over the backslash): ``...,bf_resolution=1800,`` and a backslash, then ``bf_window=10080``
    on the next line, is one SchedulerParameters value."""
    pending, first = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw).rstrip()
        if not pending:
            first = number
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        line, pending = pending + line, ""
        if line.strip():
            yield first, line.strip()
    if pending.strip():
        yield first, pending.strip()


def _strip_comment(line: str) -> str:
    out, i = [], 0
    while i < len(line):
        if line[i] == "\\" and line[i + 1:i + 2] == "#":
            out.append("#")
            i += 2
            continue
        if line[i] == "#":
            break
        out.append(line[i])
        i += 1
    return "".join(out)


def items(line: str, source: str, number: int) -> list[tuple[str, str]]:
    """The ``Key=Value`` items of one logical line (values unquoted)."""
    try:
        words = shlex.split(line, posix=True)
    except ValueError as exc:
        raise ConfigError(f"{exc} (unbalanced quotes?)", source=source, line=number) from None
    found = []
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise ConfigError(f"{excerpt(word)} is not Key=Value", source=source, line=number)
        found.append((canonical(key), value))
    return found


def parse_slurm_conf(text: str, *, source: str = "slurm.conf",
                     include: Callable[[str, str, int], list[tuple[str, str]]] | None = None) -> SlurmConf:
    """A slurm.conf's text as settings and records. ``include(pattern, source, line)`` gives the
    (path, text) of each file an ``Include`` names; without it an ``Include`` is an error."""
    config: dict[str, str] = {}
    defaults: dict[str, dict[str, str]] = {}
    records: dict[str, list[dict[str, str]]] = {key: [] for key in RECORD_KEYS}
    nodes: list[dict[str, str]] = []
    sources = [source]

    def read(text: str, source: str, depth: int) -> None:
        for number, line in logical_lines(text):
            head = line.split(None, 1)
            if head[0].lower() == "include":
                if include is None or len(head) < 2:
                    raise ConfigError("Include needs a file and a reader of files", source=source,
                                      line=number)
                if depth >= MAX_INCLUDE_DEPTH:
                    raise ConfigError(f"includes nested more than {MAX_INCLUDE_DEPTH} deep (a loop?)",
                                      source=source, line=number)
                for path, included in include(head[1].strip(), source, number):
                    sources.append(path)
                    read(included, path, depth + 1)
                continue
            pairs = items(line, source, number)
            kind, name = pairs[0]
            if kind in records:
                fields = dict(pairs[1:])
                if name.upper() == "DEFAULT":
                    defaults.setdefault(kind, {}).update(fields)
                    continue
                record = {kind: name, **defaults.get(kind, {}), **fields}
                records[kind].append(record)
                if kind == "NodeName":
                    try:
                        nodes.extend(_node_records(record))
                    except ValueError as exc:
                        raise ConfigError(str(exc), source=source, line=number,
                                          key="NodeName") from None
                continue
            config.update(pairs)

    read(text, source, 0)
    partitions = [_partition_record(record, nodes) for record in records["PartitionName"]]
    return SlurmConf(config, partitions, nodes, sources)


def _node_records(record: dict[str, str]) -> list[dict[str, str]]:
    """One record per node of a NodeName line, with CPUTot and RealMemory as scontrol shows them."""
    fields = dict(record)
    if "CPUs" in fields:
        cpus = int(fields["CPUs"])
    else:
        cpus = 1
        for key in ("Boards", "Sockets", "CoresPerSocket", "ThreadsPerCore"):
            cpus *= int(fields.get(key, "1"))
    fields["CPUTot"] = str(cpus)
    fields.setdefault("RealMemory", "1")
    if "Feature" in fields:
        fields.setdefault("Features", fields.pop("Feature"))
    names = [host for item in split_host_list(record["NodeName"]) for host in expand_hostlist(item)]
    return [{**fields, "NodeName": name} for name in names]


def _partition_record(record: dict[str, str], nodes: list[dict[str, str]]) -> dict[str, str]:
    """A PartitionName line as scontrol shows it: ``ALL`` nodes listed, ``INFINITE`` as ``UNLIMITED``."""
    fields = dict(record)
    if fields.get("Nodes", "").upper() == "ALL":
        fields["Nodes"] = ",".join(node["NodeName"] for node in nodes)
    if fields.get("MaxTime", "").upper() in ("INFINITE", "UNLIMITED"):
        fields["MaxTime"] = "UNLIMITED"
    return fields


def read_slurm_conf(path: str | os.PathLike[str]) -> SlurmConf:
    """A slurm.conf file and its includes (each relative to the file that includes it)."""
    main = Path(path)

    def text_of(file: Path, source: str, line: int) -> str:
        """The text of ``file``, which ``source`` includes at ``line`` (0: the main file itself)."""
        try:
            return read_bounded(file, what="a slurm.conf", most=SITE_FILE_CHARS)
        except TraceError as exc:
            if not line:
                raise
            raise ConfigError(f"cannot read {file}: {exc.message}", source=source, line=line) from None

    def include(pattern: str, source: str, line: int) -> list[tuple[str, str]]:
        base = Path(source).parent
        full = pattern if os.path.isabs(pattern) else str(base / pattern)
        matches = sorted(glob.glob(full)) if glob.has_magic(full) else [full]
        if not matches:
            raise ConfigError(f"Include {pattern}: no file matches", source=source, line=line)
        return [(match, text_of(Path(match), source, line)) for match in matches]

    return parse_slurm_conf(text_of(main, str(main), 0), source=str(main), include=include)


GRES_KEYS = {key.lower(): key for key in ("AutoDetect", "Count", "Cores", "File", "Flags", "Links",
                                            "MultipleFiles", "Name", "NodeName", "Type")}
"""gres.conf's keys (case-insensitive) in gres.conf(5)'s spelling."""


def parse_gres_conf(text: str, source: str = "gres.conf") -> list[dict[str, str]]:
    """The records of a gres.conf (gres.conf(5): one ``Name=`` line per resource, with NodeName,
    Type, Count, File...; ``AutoDetect=`` alone sets the detection), as key/value dicts, in order."""
    return [{GRES_KEYS.get(key.lower(), key): value for key, value in items(line, source, number)}
            for number, line in logical_lines(text)]


def read_gres_conf(slurm_conf: Path) -> tuple[Path, list[dict[str, str]]] | None:
    """The gres.conf beside ``slurm_conf`` (where slurmctld reads it) and its records; None when
    there is none."""
    path = slurm_conf.parent / "gres.conf"
    if not path.is_file():
        return None
    return path, parse_gres_conf(read_bounded(path, what="a gres.conf", most=SITE_FILE_CHARS), str(path))


def gres_notes(path: Path, records: list[dict[str, str]]) -> list[str]:
    """One note per record of a gres.conf the model does not follow (by Name and Type, with its
    nodes and count). slurmctld schedules by each node's ``Gres=`` of slurm.conf, which the model
    reads; gres.conf tells slurmd the devices behind it, so a GPU line is noted only for what binds
    the GPUs (``Cores=``, ``Links=``), and any other resource (mps, shard, nic) for not being
    placed."""
    found: dict[tuple[str, str], list[str]] = {}
    for record in records:
        if "Name" not in record:
            found.setdefault((f"AutoDetect={record.get('AutoDetect', '')}",
                              ": the model takes each node's GPUs from slurm.conf's Gres="), [])
            continue
        what = record["Name"] + (f" ({record['Type']})" if record.get("Type") else "")
        where = record.get("NodeName", "every node") + (f" x{record['Count']}" if record.get("Count") else "")
        bound = [f"{key}={record[key]}" for key in ("Cores", "Links") if key in record]
        if record["Name"] != "gpu":
            verdict = " has no model: only GPUs are placed, and a job's request of it is replayed without it"
        elif bound:
            verdict = f": {' '.join(bound)} has no model: the model binds no GPU to cores or to another GPU"
        else:
            continue
        found.setdefault((what, verdict), []).append(where)
    return [f"{path}: {what}{' on ' + ', '.join(where) if where else ''}{verdict}"
            for (what, verdict), where in found.items()]
