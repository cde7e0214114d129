"""A site's QoS as ``sacctmgr show qos`` prints them, read into the model's :class:`QosSpec`.

:data:`QOS_COMMAND` asks, one line per QoS, the columns of :data:`QOS_FORMAT`: the priority, the job
counts (MaxJobsPU, MaxJobsPA, GrpJobs, MaxSubmitPU; empty when unlimited), MaxWall (a Slurm time),
Flags (DenyOnLimit, OverPartQOS, NoDecay, UsageFactorSafe) and the TRES limits (MaxTRES per job,
MaxTRESPerNode, MaxTRESPU, MaxTRESPA, GrpTRES: ``cpu=64,gres/gpu=4,mem=16G``), and what preempt/qos
reads of a QoS:
the QoS its jobs may preempt (Preempt, comma-separated names), how long its jobs run on once
preempted (GraceTime) and what they do then (PreemptMode: ``cluster``, the cluster's, or CANCEL,
REQUEUE, OFF, with WITHIN), then the
TRES-minutes limits GrpTRESMins, GrpTRESRunMins and MaxTRESMins (MaxTRESMinsPerJob;
:mod:`djsb.model.tres_minutes`), and UsageFactor (what its jobs' usage is multiplied by; ``1.000000``
as sacctmgr prints it, empty: 1). A file of fewer columns (the first three alone, or without the
last ones: what DJSB asked before) still reads, and :attr:`QosTable.preempt_lists` says whether it
gave the Preempt lists. Of a TRES limit the model counts cpu, mem, node and gres/gpu
(:mod:`djsb.model.tres`); any other (billing, a license, a typed GPU) is left out with a note.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from djsb.errors import ConfigError, excerpt
from djsb.model.cluster_spec import QosSpec
from djsb.model.tres import TRES_NAMES, TresLimits
from djsb.slurm_text import slurm_time, tres
from djsb.slurmsite.slurm_config import site_lines, site_number

QOS_FORMAT = ("Name", "Priority", "MaxJobsPU", "MaxWall", "Flags", "MaxTRES", "MaxTRESPerNode", "MaxTRESPU",
              "MaxTRESPA", "GrpTRES", "GrpJobs", "MaxJobsPA", "MaxSubmitPU", "Preempt", "GraceTime",
              "PreemptMode", "GrpTRESMins", "GrpTRESRunMins", "MaxTRESMins", "UsageFactor")
"""The columns asked of ``sacctmgr show qos`` (sacctmgr(1) QOS fields), in this order."""
QOS_COMMAND = ("sacctmgr", "--noheader", "--parsable2", "show", "qos", "format=" + ",".join(QOS_FORMAT))
"""Every QoS with its priority and limits (a user's rights suffice)."""
_TRES_COLUMNS = ("MaxTRES", "MaxTRESPerNode", "MaxTRESPU", "MaxTRESPA", "GrpTRES", "GrpTRESMins",
                 "GrpTRESRunMins", "MaxTRESMins")


@dataclass(frozen=True)
class QosTable:
    """The QoS of a site, ``normal`` first (the model's default, as it is an association's unless
    the site set another), what of their limits the model leaves out, and whether the file gave the
    QoS' Preempt lists (preempt/qos has nothing to go by without them)."""

    qos: tuple[QosSpec, ...]
    notes: list[str]
    preempt_lists: bool = False


def parse_qos(text: str, source: str = "sacctmgr show qos", key: str = "qos") -> QosTable:
    """:data:`QOS_COMMAND`'s answer (or its first three columns alone): one :class:`QosSpec` per
    line; a value that is not one is ConfigError naming ``source``, the line and ``key``."""
    found, notes = [], []
    preempt_lists = True
    for number, fields in site_lines(text, 3, source, key):
        values = dict(zip(QOS_FORMAT, (field.strip() for field in fields), strict=False))
        preempt_lists = preempt_lists and "Preempt" in values
        name = values["Name"]
        if not name or any(char.isspace() for char in name):
            raise ConfigError(f"{excerpt(name)} is not a QoS name", source=source, line=number, key=key)
        counts = {column: site_number(values[column], int, source, number, key) if values.get(column)
                  else None for column in ("MaxJobsPU", "GrpJobs", "MaxJobsPA", "MaxSubmitPU")}
        flags = values.get("Flags", "").lower()
        limits: dict[str, TresLimits] = {}
        for column in _TRES_COLUMNS:
            limits[column], left = tres_limit(values.get(column, ""), column, source, number, key)
            notes += [f"QoS {name}: {column} {item} has no model (only {', '.join(TRES_NAMES)} are counted)"
                      for item in left]
        mode, within = _preempt_mode(name, values.get("PreemptMode", ""), notes, source, number, key)
        factor = site_number(values["UsageFactor"], float, source, number, key) if values.get("UsageFactor") \
            else 1.0
        if factor < 0:
            raise ConfigError(f"UsageFactor {excerpt(values['UsageFactor'])} is not a number >= 0",
                              source=source, line=number, key=key)
        found.append(QosSpec(
            name, site_number(values["Priority"] or "0", int, source, number, key),
            max_jobs_per_user=counts["MaxJobsPU"],
            max_wall=_time(values.get("MaxWall", ""), "MaxWall", source, number, key),
            deny_on_limit="denyonlimit" in flags, over_part_qos="overpartqos" in flags,
            grp_jobs=counts["GrpJobs"],
            max_jobs_per_account=counts["MaxJobsPA"], max_submit_jobs_per_user=counts["MaxSubmitPU"],
            max_tres_per_job=limits["MaxTRES"], max_tres_per_node=limits["MaxTRESPerNode"],
            max_tres_per_user=limits["MaxTRESPU"], max_tres_per_account=limits["MaxTRESPA"],
            grp_tres=limits["GrpTRES"], grp_tres_mins=limits["GrpTRESMins"],
            grp_tres_run_mins=limits["GrpTRESRunMins"], max_tres_mins_per_job=limits["MaxTRESMins"],
            preempt=tuple(name.strip() for name in values.get("Preempt", "").split(",") if name.strip()),
            grace_time=_time(values.get("GraceTime", ""), "GraceTime", source, number, key) or 0.0,
            preempt_mode=mode, preempt_within=within, usage_factor=factor, no_decay="nodecay" in flags,
            usage_factor_safe="usagefactorsafe" in flags))
    ordered = tuple(sorted(found, key=lambda q: q.name != "normal"))
    return QosTable(ordered, notes, preempt_lists and bool(found))


def _preempt_mode(name: str, text: str, notes: list[str], source: str, line: int,
                  key: str) -> tuple[str, bool]:
    """A QoS's PreemptMode (``cluster``, ``cancel``, ``within,requeue``, ``suspend``...; empty: cluster)
    as :class:`QosSpec` keeps it. Its GANG has no sense and is dropped (preempt_qos.c
    ``_job_preempt_mode``); GANG alone leaves the cluster's mode, with a note."""
    words = {word.strip().lower() for word in text.split(",") if word.strip()} - {"cluster"}
    unknown = words - {"off", "cancel", "requeue", "suspend", "gang", "within"}
    if unknown:
        raise ConfigError(f"PreemptMode {excerpt(text)} is not one (cluster, off, cancel, requeue, suspend, "
                          "gang, within)", source=source, line=line, key=key)
    mode = next((word for word in ("cancel", "requeue", "suspend", "off") if word in words), "cluster")
    if "gang" in words and mode == "cluster":
        notes.append(f"QoS {name}: PreemptMode {text}: GANG on a QoS has no sense (Slurm drops it)")
    return mode, "within" in words


def _time(text: str, column: str, source: str, line: int, key: str) -> float | None:
    """A time column in seconds (``2-00:00:00``, ``01:00:00``); empty is none (MaxWall: no limit)."""
    if not text:
        return None
    try:
        return slurm_time(text)
    except ValueError:
        raise ConfigError(f"{column} {excerpt(text)} is not a Slurm time", source=source, line=line,
                          key=key) from None


def tres_limit(text: str, column: str, source: str, line: int, key: str) -> tuple[TresLimits, Sequence[str]]:
    """A TRES limit column: the limits on the TRES the model counts, in its order, and the items
    on any other TRES (``billing=100``); a node count under MaxTRESPerNode is one of those."""
    try:
        amounts = tres(text)
    except ValueError as exc:
        raise ConfigError(f"{column}: {exc}", source=source, line=line, key=key) from None
    counted = [name for name in TRES_NAMES if name != "node" or column != "MaxTRESPerNode"]
    left = [f"{name}={amount:g}" for name, amount in amounts.items() if name not in counted]
    for name in counted:
        if name in amounts and amounts[name] != math.floor(amounts[name]):
            raise ConfigError(f"{column}: {name}={amounts[name]:g} is not a whole amount", source=source,
                              line=line, key=key)
    return tuple((name, int(amounts[name])) for name in counted if name in amounts), left
