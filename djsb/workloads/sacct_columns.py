"""The columns of a ``sacct --parsable2`` dump that DJSB reads, each declared once in :data:`COLUMNS`.

A :class:`Column` names a field as ``sacct --format`` spells it, says what the reader takes from it,
holds the function that reads its text, and says whether ``djsb history`` asks a site for it; the
:data:`NEEDS` say which columns a dump cannot do without. The reader (:mod:`djsb.workloads.sacct`),
the ``--format`` list of ``djsb history --help`` and of docs/history.md, the sacct command of
bench/record_history.py and docs/reference/sacct.md (:func:`reference`) all come from these two
tables, so a column is asked for, read and documented in one place.

The functions that read one value are here too (times, durations, limits, memory, counts, Flags):
other readers of Slurm's text (a slurmctld log, sacctmgr's events) read its timestamps with
:func:`parse_sacct_time`. Each takes the empty text, which is also what an absent column reads as,
to the value of none.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from djsb.slurm_text import tres
from djsb.workloads.job import STARTED_BY
from djsb.yamlnodes import parse_duration

_NO_TIME = {"", "unknown", "none"}
_NO_LIMIT = {"", "unlimited", "partition_limit", "invalid", "none", "unknown"}
_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)([cn]?)$", re.IGNORECASE)
_MEM_SCALE = {"": 1.0, "K": 1.0 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}
_SCHED_FLAGS = {f"sched{name}": name for name in STARTED_BY}
_EPOCH = datetime(1970, 1, 1)
_SECOND = timedelta(seconds=1)


def parse_sacct_time(text: str) -> float | None:
    """Seconds since the epoch of a sacct timestamp read as UTC; None for Unknown/None/empty.

    Raises ValueError for anything else than ``YYYY-MM-DDTHH:MM:SS`` (optionally with fractional seconds).
    """
    value = text.strip()
    if len(value) < 19 or value[10] != "T":  # the words of no time are shorter: one test on most lines
        if value.lower() in _NO_TIME:
            return None
        raise ValueError(f"not a sacct timestamp (YYYY-MM-DDTHH:MM:SS): {text!r}")
    stamp = datetime.fromisoformat(value)
    if stamp.tzinfo is not None:
        return stamp.timestamp()
    if stamp.microsecond:
        return (stamp - _EPOCH) // _SECOND + stamp.microsecond / 1e6  # whole seconds exactly, as timegm
    return (stamp - _EPOCH).total_seconds()  # the same float, in half the time (a dump has millions)


def format_sacct_time(seconds: float) -> str:
    """A Unix time as sacct prints it (``YYYY-MM-DDTHH:MM:SS``, UTC as :func:`parse_sacct_time` reads it)."""
    return (_EPOCH + timedelta(seconds=int(seconds))).strftime("%Y-%m-%dT%H:%M:%S")


def parse_timelimit(text: str) -> float | None:
    """Seconds of a sacct Timelimit; None for UNLIMITED, Partition_Limit, INVALID or empty."""
    value = text.strip()
    if value.lower() in _NO_LIMIT:
        return None
    return slurm_duration(value)


@functools.lru_cache(maxsize=1 << 16)
def slurm_duration(text: str) -> float:
    """Seconds of a Slurm time as sacct prints Elapsed and Timelimit (``parse_duration`` in
    minutes), remembered: a dump repeats its time limits and run times over hundreds of thousands
    of lines. A pure function of the text, so no entry ever goes stale; the size bound only keeps
    the memory small on a dump of many distinct times."""
    return parse_duration(text, "min")


def parse_elapsed(text: str) -> float | None:
    """Seconds of a sacct Elapsed (a Slurm time); None when empty."""
    return slurm_duration(text) if text.strip() else None


def parse_seconds(text: str) -> float | None:
    """A number of seconds (ElapsedRaw); None when empty."""
    return float(text) if text.strip() else None


def parse_minutes(text: str) -> float | None:
    """Seconds of a whole number of minutes (TimelimitRaw); None for anything else (``UNLIMITED``,
    empty), which leaves the limit to Timelimit."""
    return float(text) * 60.0 if text.strip().isdigit() else None


def parse_count(text: str) -> int:
    """A count (CPUs, nodes); 0 when empty."""
    value = text.strip()
    return int(value) if value else 0


def parse_priority(text: str) -> int | None:
    """A job's recorded priority; None when empty."""
    value = text.strip()
    return int(value) if value else None


def parse_name(text: str) -> str | None:
    """A partition or QoS as printed; None when empty."""
    return text.strip() or None


def parse_memory(text: str) -> tuple[float, str] | None:
    """A sacct ReqMem (``4000M``, ``16G``, ``2Gc`` per CPU, ``1.50Gn`` per node) as MiB and what
    they are per (``c``, ``n``, or ``""`` for the job's total); None when empty. :func:`memory_mb`
    makes the job's total of it."""
    value = text.strip()
    if not value:
        return None
    m = _MEMORY.match(value)
    if not m:
        raise ValueError(f"not a ReqMem value: {text!r}")
    number, unit, per = m.groups()
    return float(number) * _MEM_SCALE[unit.upper()], per.lower()


def memory_mb(memory: tuple[float, str] | None, cpus: int, nodes: int | None) -> float | None:
    """A job's total MiB of a :func:`parse_memory` value, per CPU or per node multiplied out;
    None for no request or 0."""
    if memory is None:
        return None
    mb, per = memory
    if per == "c":
        mb *= cpus
    elif per == "n":
        mb *= nodes or 1
    return mb if mb > 0 else None


def parse_gpu_tres(text: str) -> tuple[int, str | None] | None:
    """The GPUs of a ReqTRES (``billing=8,cpu=8,gres/gpu:a100=2,gres/gpu=2,mem=8G,node=1``): their
    total over the job and their type when one is named; None without ``gres/gpu``. Slurm writes
    the job's ``total_gres`` under ``gres/gpu`` and again under ``gres/gpu:TYPE`` when the site
    accounts the type (gres_ctld.c ``_set_type_tres_cnt``)."""
    if "gres/gpu" not in text:
        return None
    amounts = tres(text)
    types = [name.split(":", 1)[1] for name in amounts if name.startswith("gres/gpu:")]
    count = amounts.get("gres/gpu", sum(amounts[f"gres/gpu:{kind}"] for kind in types))
    if count != int(count):
        raise ValueError(f"not a GPU count: {count}")
    return (int(count), types[0] if len(types) == 1 else None) if count else None


def started_by(flags: str) -> str | None:
    """The pass that started a job, from sacct's Flags (``SchedMain,StartRecieved`` -> ``main``):
    one of :data:`~djsb.workloads.job.STARTED_BY`, None when no pass is named."""
    for flag in flags.split(","):
        name = _SCHED_FLAGS.get(flag.strip().lower())
        if name is not None:
            return name
    return None


@dataclass(frozen=True)
class Column:
    """One field of a sacct dump the reader takes: its ``--format`` name (the header matches it in
    any case), the function that reads its text (``str``: the text as printed), what the reader
    makes of it (Markdown), and whether ``djsb history`` asks a site for it (not: another
    spelling of an asked column, read when a dump has it)."""

    name: str
    parse: Callable[[str], Any]
    meaning: str
    asked: bool = True


COLUMNS = (
    Column("JobIDRaw", str, "the job id, a plain integer; preferred to JobID"),
    Column("JobID", str, "the job id as users see it: ids with a `.` are job steps (`123.batch`, "
           "`123.extern`, `123.0`) and are skipped; without JobIDRaw, array tasks (`123_4`) and "
           "heterogeneous components (`123+1`) get fresh ids above the largest job number in the "
           "dump, in input order (the original id is kept in `Workload.extra`)"),
    Column("User", str.strip, "user name (`unknown` if empty)"),
    Column("UID", str.strip, "the user as `u<uid>` when there is no User", asked=False),
    Column("Account", str.strip, "account (`unknown` if empty)"),
    Column("Partition", parse_name, "as printed (none if empty)"),
    Column("QOS", parse_name, "as printed (none if empty)"),
    Column("Submit", parse_sacct_time, "submission: `YYYY-MM-DDTHH:MM:SS` (sacct's default "
           "`SLURM_TIME_FORMAT=standard`), or `Unknown` / `None`. Times are local wall-clock without a "
           "zone, read as if UTC, so differences are right except across a DST change; they count "
           "from the first submission"),
    Column("Eligible", parse_sacct_time, "when the job could first start (after a dependency, an array "
           "throttle, `--begin`; `Unknown`: not recorded)"),
    Column("Start", parse_sacct_time, "start, what a replay is measured against; none: the job did not "
           "start"),
    Column("End", parse_sacct_time, "end; none: the job has not finished (its run time is unknown)"),
    Column("Elapsed", parse_elapsed, "run time, a Slurm time (`D-HH:MM:SS`, `HH:MM:SS`, `MM:SS[.mmm]`); "
           "without it or ElapsedRaw, End - Start"),
    Column("ElapsedRaw", parse_seconds, "run time in seconds; preferred to Elapsed", asked=False),
    Column("Timelimit", parse_timelimit, "requested time (`D-HH:MM:SS`, `HH:MM:SS`, `MM:SS`); "
           "`UNLIMITED`, `Partition_Limit`, `INVALID` or empty: none (the partition's maximum)"),
    Column("TimelimitRaw", parse_minutes, "requested time in minutes; preferred to Timelimit",
           asked=False),
    Column("ReqCPUS", parse_count, "CPUs when neither AllocCPUS nor NCPUS is above 0"),
    Column("AllocCPUS", parse_count, "CPUs: the first of AllocCPUS, NCPUS, ReqCPUS above 0"),
    Column("NCPUS", parse_count, "CPUs when AllocCPUS is not above 0", asked=False),
    Column("ReqMem", parse_memory, "memory: `<number>[KMGTP]`, MiB by default (sacct >= 21.08 "
           "prints the job's total `mem` TRES request); the suffixes `c` (per CPU) and `n` (per "
           "allocated node) of older Slurm are multiplied out; `0` or empty: none"),
    Column("ReqTRES", parse_gpu_tres, "the GPUs the job asked (`gres/gpu=N`, with `gres/gpu:TYPE=N` its "
           "type; the site's AccountingStorageTRES must list gres/gpu), when the SubmitLine names no "
           "`--gres`/`--gpus*` (an `#SBATCH` line of the script): N over the whole job"),
    Column("NNodes", parse_count, "the nodes Slurm allocated: the job's node count without a SubmitLine; "
           "multiplies ReqMem's per-node suffix"),
    Column("NodeList", str.strip, "the nodes the job ran on (a hostlist): recorded, and where a replay "
           "from `--start` places the jobs running then"),
    Column("State", str.strip, "`COMPLETED`, `TIMEOUT`, `CANCELLED by <uid>`...: whether the job ran "
           "(the skip rules); kept in `Workload.extra[job_id][\"State\"]` and recorded"),
    Column("Reason", str.strip, "the job's last pending reason, recorded"),
    Column("Flags", started_by, "`SchedMain` / `SchedBackfill` / `SchedSubmit`: the pass that started "
           "the job (Slurm 22.05 prints them with `StartRecieved`, its own spelling)"),
    Column("Priority", parse_priority, "the job's priority, recorded"),
    Column("SubmitLine", str.strip, "the sbatch command (Slurm >= 20.11): the node count it asked "
           "(`-N`/`--nodes`, the minimum of a range; none when it asked none: a job of `--ntasks=8` "
           "alone may take any number of nodes), its GPUs (`--gres`/`--gpus*`) with `--cpus-per-gpu` "
           "and `--mem-per-gpu` (ReqMem is then their memory: the job holds `--mem-per-gpu` for each GPU "
           "it holds on a node), recorded with the options the model may not reproduce"),
    Column("JobName", parse_name, "the job's name (`--job-name`; none if empty): the jobs of a user and "
           "name are what a `singleton` dependency waits for"),
    Column("Reservation", parse_name, "the advance reservation the job ran in (`--reservation`, or a "
           "MAGNETIC one that drew it); if empty, the SubmitLine's `--reservation`: replayed as the job's "
           "`reservation`"),
)
"""The columns the reader takes, in the order ``djsb history`` asks for them."""

SACCT_FORMAT = ",".join(column.name for column in COLUMNS if column.asked)
"""The ``--format`` list ``djsb history`` asks a site's dump for."""


@dataclass(frozen=True)
class Need:
    """What a dump cannot do without: any one of ``alternatives`` (each a set of columns present
    together) meets it; else ``error`` is what the reader says."""

    alternatives: tuple[tuple[str, ...], ...]
    error: str


NEEDS = (
    Need((("JobID",), ("JobIDRaw",)),
         "no JobID column in the header: run sacct with --parsable2 and without --noheader"),
    Need((("Submit",),), "no Submit column: add Submit to sacct --format"),
    Need((("Elapsed",), ("ElapsedRaw",), ("Start", "End")),
         "no run time: add Elapsed (or Start and End) to sacct --format"),
    Need((("AllocCPUS",), ("NCPUS",), ("ReqCPUS",)),
         "no CPU count: add AllocCPUS (or NCPUS) to sacct --format"),
)
"""The needs in the order the reader checks them (its first unmet one is the error)."""


def unmet(names: Collection[str]) -> Need | None:
    """The first of :data:`NEEDS` the header's column ``names`` (lower case) do not meet, if any."""
    for need in NEEDS:
        if not any(all(name.lower() in names for name in together) for together in need.alternatives):
            return need
    return None


def required(column: Column) -> str:
    """Whether a dump needs ``column``: ``yes``, ``one of A / B and C`` (the alternatives of the
    need it meets), or empty."""
    for need in NEEDS:
        if any(column.name in together for together in need.alternatives):
            if len(need.alternatives) == 1:
                return "yes"
            return "one of " + " / ".join(" and ".join(together) for together in need.alternatives)
    return ""


def reference() -> str:
    """The Markdown reference of the sacct columns (docs/reference/sacct.md is this text)."""
    rows = [f"| `{column.name}` | {'yes' if column.asked else ''} | {required(column)} | {column.meaning} |"
            for column in COLUMNS]
    return "\n".join([
        "# The sacct dump (`djsb history DUMP`)",
        "",
        "Generated from djsb/workloads/sacct_columns.py (`make reference`); a test fails when this file and "
        "the declarations differ. A site's dump is",
        "",
        "```sh",
        f"sacct -a -X -P -S START -E END --format={SACCT_FORMAT} > dump.txt",
        "```",
        "",
        "Columns are found by their header name in any case and any order (`--parsable`'s trailing `|`",
        "is taken too); *asked*: in that `--format`, else another spelling read when a dump has it;",
        "*required*: a dump without it (or its alternatives) is refused.",
        "",
        "| column | asked | required | what the reader takes from it |",
        "|---|---|---|---|",
        *rows,
        "",
    ])
