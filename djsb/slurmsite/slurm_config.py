"""The model's configuration read from a running Slurm: ``scontrol show config`` and
``scontrol show partition`` / ``scontrol show node``, the association tree of ``sacctmgr show
assoc`` and the usage of ``sshare`` (pure functions of their text; the commands are in
:data:`ASSOCIATIONS_COMMAND` and :data:`SSHARE_COMMAND`, neither needs more than a user's rights).

``SchedulerType`` sched/backfill becomes conservative backfilling (sched/backfill reserves for
every job it tests, backfill.c's _attempt_backfill), sched/builtin none; ``SchedulerParameters``
give the intervals and limits under Slurm's names (slurm.conf(5): bf_window is in minutes, the
other times in seconds; an option left out keeps Slurm's default, which is also
:class:`~djsb.model.scheduler.SchedulerConfig`'s). A partition's nodes, CPUs (``CPUTot``),
memory (``RealMemory``) and GPUs (``Gres``) make the model's cluster.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from djsb import slurm_text
from djsb.errors import ConfigError, RunError, excerpt
from djsb.jobs.hostlist import expand_hostlist, split_host_list
from djsb.model import ClusterSpec, NodeSpec, PartitionSpec, SchedulerConfig
from djsb.model.cluster_spec import QosSpec, by_weight
from djsb.model.priority.accounts import ROOT, AccountSpec
from djsb.model.priority.base import PriorityPlugin
from djsb.model.priority.fifo import FifoPriority
from djsb.model.priority.multifactor import MultifactorOptions, MultifactorPriority, MultifactorWeights
from djsb.setting import SCHEDULER_PARAMETERS, slurm_names
from djsb.slurm_text import gres_gpus
from djsb.slurmsite.recompute_watch import calc_phase
from djsb.slurmsite.slurm_conf import canonical

T = TypeVar("T", int, float)

CONFIG_LINE = re.compile(r"^(\w[\w/()]*)\s*=\s*(.*?)\s*$")
SLURM_LIKE: dict[str, Any] = {"bf_will_run": True, "node_select": "cons_tres"}
"""Model options on by default when the model stands for a Slurm (a calibration, a site's history):
the backfill plan and node choice as Slurm makes them."""
MODELLED: tuple[type, ...] = (SchedulerConfig, MultifactorWeights, MultifactorOptions)
"""The records whose settings a Slurm configuration gives (:func:`from_slurm`)."""
PRIORITY_TYPE = "PriorityType"
"""The key that chooses the priority plugin (priority/basic: FIFO; priority/multifactor)."""
UNMODELLED_WEIGHTS = ("PriorityWeightAssoc",)
"""Priority weights read only to note that the model has none of them."""
NOTED_ONLY = ("GresTypes", *UNMODELLED_WEIGHTS)
"""Keys a replay reads only to note what the model does not reproduce; every other key it reads is
named by a declaration (:func:`read_keys`)."""
CTLD_LOG_FILE = "SlurmctldLogFile"
OBSERVATION_KEYS = (CTLD_LOG_FILE,)
"""Keys read to find where Slurm records what it did (a calibration's measurements), not settings of
the model."""


def read_keys() -> tuple[str, ...]:
    """The keys of Slurm's configuration the model reads, as the declarations of :data:`MODELLED`
    name them (with SchedulerParameters for its options) and :data:`PRIORITY_TYPE`, in declaration
    order: the keys a what-if may change."""
    keys = [key.within or key.name
            for cls in MODELLED for slurm in slurm_names(cls).values() for key in slurm.keys]
    keys.insert(keys.index(slurm_names(MultifactorWeights)["age"].keys[0].name), PRIORITY_TYPE)
    return tuple(dict.fromkeys(keys))


def partition_keys_read() -> set[str]:
    """The keys of a partition's record the model reads, as :class:`PartitionSpec` declares them."""
    return {key.name for slurm in slurm_names(PartitionSpec).values() for key in slurm.keys}


def scheduler_parameters_read() -> set[str]:
    """The SchedulerParameters options the model reads, as the declarations name them."""
    return {key.name for cls in MODELLED for slurm in slurm_names(cls).values() for key in slurm.keys
            if key.within == SCHEDULER_PARAMETERS}
TOTAL_CYCLES = re.compile(r"^\s*Total cycles:\s*(\d+)\s*$", re.MULTILINE)
BACKFILL_WHEN = re.compile(r"^\s*Last cycle when:.*\((\d+)\)\s*$", re.MULTILINE)


SHOW_CONFIG_COMMAND = ("env", "SLURM_TIME_FORMAT=%s", "scontrol", "show", "config")
"""``scontrol show config`` with its times (BOOT_TIME) in Unix seconds."""
ASSOCIATION_COLUMNS = ("Account", "User", "ParentName", "Share", "GrpJobs", "GrpTRES", "MaxJobs", "MaxSubmit",
                       "MaxTRES", "MaxWall", "GrpTRESMins", "GrpTRESRunMins", "MaxTRESMins", "GrpSubmit",
                       "GrpWall", "MaxTRESPerNode", "Partition")
"""The columns sacctmgr prints for :data:`ASSOCIATIONS_COMMAND`: fair share's four, then the limits
(:mod:`djsb.slurmsite.assoc_text`)."""
PARTITION_COLUMN = ASSOCIATION_COLUMNS.index("Partition")
ASSOCIATIONS_COMMAND = ("sacctmgr", "--noheader", "--parsable2", "show", "associations",
                        "format=Account,User,ParentName,Share,GrpJobs,GrpTRES,MaxJobs,MaxSubmitJobs,MaxTRES,"
                        "MaxWallDurationPerJob,GrpTRESMins,GrpTRESRunMins,MaxTRESMinsPerJob,GrpSubmitJobs,GrpWall,"
                        "MaxTRESPerNode,Partition")
"""Every association: an account's row has no user and names its parent account; a user's row
names its account, the parent of a user association; then their limits (:data:`ASSOCIATION_COLUMNS`)."""
SSHARE_COMMAND = ("sshare", "--all", "--noheader", "--parsable2", "--format=Account,User,RawUsage")
"""Each association's RawUsage (decayed CPU-seconds; sshare indents an account by its depth)."""


class SlurmConfigError(RunError):
    """Slurm's answer lacks what the model needs (an unknown partition, an unsupported scheduler)."""


def parse_show_config(text: str) -> dict[str, str]:
    """``Key = value`` lines of ``scontrol show config`` (the first of a repeated key wins)."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        match = CONFIG_LINE.match(line)
        if match:
            values.setdefault(match.group(1), match.group(2))
    return values


def scheduler_parameters(value: str) -> dict[str, str]:
    """``SchedulerParameters``: ``key=value`` items and bare flags (value ``""``)."""
    items = (item.strip() for item in value.split(",") if item.strip() and value != "(null)")
    return dict((*item.split("=", 1), "")[:2] for item in items)  # type: ignore[misc]


JOB_DEFAULTS = "JobDefaults"
"""How scontrol shows DefCpuPerGPU and DefMemPerGPU, which a slurm.conf writes as keys of their own:
``JobDefaults=DefCpuPerGPU=2,DefMemPerGPU=1024`` (``(null)`` for none), in ``show partition`` and
``show config`` alike (read_config.c ``job_defaults_str``)."""


def job_defaults(value: str) -> dict[str, str]:
    """A ``JobDefaults`` value as its keys, ``{"DefCpuPerGPU": "2", ...}``; a pair without ``=``
    (Slurm's ``job_defaults_list`` refuses it) is a :class:`SlurmConfigError`."""
    pairs: dict[str, str] = {}
    for item in value.split(","):
        if not item.strip() or value.strip() == "(null)":
            continue
        key, equals, text = item.partition("=")
        if not equals:
            raise SlurmConfigError(f"{JOB_DEFAULTS} = {excerpt(value)}: {item.strip()!r} is not KEY=VALUE")
        pairs[canonical(key.strip())] = text.strip()
    return pairs


def from_slurm(cls: type, config: Mapping[str, str]) -> dict[str, Any]:
    """The settings of ``cls`` that ``config`` (``scontrol show config`` or a slurm.conf) gives, by
    field: every field declared with a :class:`~djsb.setting.SlurmName`, read as the declaration says
    (a key left out takes Slurm's default, or leaves the model's when Slurm's is not declared). So a
    setting the model adds is read from a site's files by its declaration alone; what scontrol shows
    within ``JobDefaults`` is read as the slurm.conf key it was."""
    if JOB_DEFAULTS in config:
        config = {**job_defaults(config[JOB_DEFAULTS]), **config}
    params = scheduler_parameters(config.get(SCHEDULER_PARAMETERS, ""))
    found: dict[str, Any] = {}
    for name, slurm in slurm_names(cls).items():
        parsed = []
        for key in slurm.keys:
            text = (params if key.within == SCHEDULER_PARAMETERS else config).get(key.name)
            if text is None or (key.within and not text and not key.flag):
                text = key.default
            if text is None:
                break
            try:
                parsed.append(key.parse(text))
            except ValueError as exc:
                raise SlurmConfigError(f"{key.name} = {excerpt(text)}: {exc}") from None
        else:
            found[name] = slurm.combine(*parsed) if slurm.combine is not None else parsed[0]
    return found


def one_default_memory(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` read by :func:`from_slurm` (the cluster's or a partition's) with DefMemPerCPU left
    out where DefMemPerNode is given: Slurm keeps one default memory and reads DefMemPerNode first,
    ignoring a DefMemPerCPU beside it with an error in its log (read_config.c: cluster-wide in
    ``_validate_and_set_defaults``, on a partition line in ``_parse_partitionname``: "DefMemPerCPU
    ignored, since it's mutually exclusive with DefMemPerNode")."""
    if settings.get("def_mem_per_node") is not None:
        settings["def_mem_per_cpu"] = None
    return settings


def scheduler_config(config: Mapping[str, str]) -> SchedulerConfig:
    """The model's scheduler options from ``scontrol show config`` (or a slurm.conf)."""
    return dataclasses.replace(SchedulerConfig(), **one_default_memory(from_slurm(SchedulerConfig, config)))


def last_backfill_cycle(sdiag: str) -> float | None:
    """When sched/backfill last ran (Unix seconds), from ``sdiag``'s "Backfilling stats" section
    ("Last cycle when: <date> (<epoch>)"); None if it has not run since slurmctld started. Its
    passes follow each other every bf_interval (plus a pass's own milliseconds), so this gives
    their phase on Slurm's clock."""
    section = sdiag.partition("Backfilling stats")[2]
    match = BACKFILL_WHEN.search(section)
    return float(match.group(1)) if match else None


def scheduler_cycles(sdiag: str) -> dict[str, int]:
    """How many passes each scheduler has made: sdiag's "Total cycles" of the "Main schedule
    statistics" section (``main``) and of "Backfilling stats" (``backfill``), those it shows."""
    main, _, backfill = sdiag.partition("Backfilling stats")
    found = {name: TOTAL_CYCLES.search(text) for name, text in
             (("main", main.partition("Main schedule statistics")[2]), ("backfill", backfill))}
    return {name: int(match.group(1)) for name, match in found.items() if match}


@dataclass(frozen=True)
class Associations:
    """Slurm's association tree as the model's fair share takes it: the accounts (parent and
    RawShares), each user's RawShares, every (user, account) pair (siblings without jobs still
    hold shares), and notes on what it could not take."""

    accounts: dict[str, AccountSpec]
    user_shares: dict[str, float]
    pairs: tuple[tuple[str, str], ...]
    notes: tuple[str, ...] = ()


def site_lines(text: str, fields: int, source: str, key: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, its ``|``-separated fields) of each non-empty line of a sacctmgr or sshare
    answer; a line with fewer than ``fields`` fields, or a non-printable character, is not such an
    answer: ConfigError naming ``source``, the line and ``key``, quoting at most a short excerpt."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) < fields or not line.isprintable():
            raise ConfigError(f"{excerpt(line)} is not a line of {fields} '|'-separated fields",
                              source=source, line=number, key=key)
        yield number, parts


def parse_associations(text: str, source: str = "sacctmgr show associations",
                       key: str = "associations") -> Associations:
    """:data:`ASSOCIATIONS_COMMAND`'s answer. The model gives a user one RawShares in every account
    (a note when Slurm's differ); a share it cannot read (``parent``) counts as 1, with a note. A user
    association of one partition (its Partition column) is left out of the fair-share tree, with a
    note: its jobs count in the user's association in its account."""
    accounts: dict[str, AccountSpec] = {}
    user_shares: dict[str, float] = {}
    pairs: list[tuple[str, str]] = []
    notes: list[str] = []
    for _, fields in site_lines(text, 4, source, key):
        if not fields[0]:
            continue
        account, user, parent, share = (field.strip() for field in fields[:4])
        partition = fields[PARTITION_COLUMN].strip() if len(fields) > PARTITION_COLUMN else ""
        if user and partition:
            notes.append(f"association {user}@{account} of partition {partition}: its own fair-share leaf "
                         f"(Share {share}, usage) has no model; its jobs count in {user}@{account}")
            continue
        try:
            shares = float(share)
        except ValueError:
            notes.append(f"association {user or account}: Share {share!r} counts as 1")
            shares = 1.0
        if not user:
            if account != ROOT:
                accounts[account] = AccountSpec(parent=parent or ROOT, shares=shares)
            continue
        if user_shares.setdefault(user, shares) != shares:
            notes.append(f"user {user} has RawShares {user_shares[user]:g} and {shares:g} in different "
                         f"accounts: the model gives it {user_shares[user]:g} in every one")
        pairs.append((user, account))
    return Associations(accounts, user_shares, tuple(pairs), tuple(notes))


def parse_sshare_usage(text: str, source: str = "sshare", key: str = "usage") -> dict[tuple[str, str], float]:
    """:data:`SSHARE_COMMAND`'s answer: each user association's RawUsage, by (user, account)."""
    usage: dict[tuple[str, str], float] = {}
    for number, fields in site_lines(text, 3, source, key):
        if fields[1].strip():
            raw = site_number(fields[2] or "0", float, source, number, key)
            usage[(fields[1].strip(), fields[0].strip())] = raw
    return usage


def site_number(text: str, kind: Callable[[str], T], source: str, line: int, key: str) -> T:
    """``text`` read by ``kind`` (int, float) and finite, or ConfigError naming where it stands."""
    try:
        value = kind(text.strip())
    except ValueError:
        value = None
    if value is None or not math.isfinite(float(value)):
        raise ConfigError(f"{excerpt(text)} is not a number", source=source, line=line, key=key)
    return value


def fair_share_used(config: Mapping[str, str]) -> bool:
    """Whether Slurm's priority has a fair-share term (then associations and usage are read)."""
    return (config.get(PRIORITY_TYPE) == "priority/multifactor"
            and from_slurm(MultifactorWeights, config)["fairshare"] > 0)


def priority_plugin(config: dict[str, str], associations: Associations | None = None,
                    usage: dict[tuple[str, str], float] | None = None,
                    decay_runs: Sequence[tuple[float, float]] = (),
                    ) -> tuple[Callable[[], PriorityPlugin], list[str]]:
    """The model's priority plugin for ``PriorityType`` (a factory: a plugin keeps one run's
    state), and notes on what it could not take. ``priority/basic`` is FIFO; ``priority/multifactor``
    takes ``PriorityWeight{Age,FairShare,JobSize,Partition,QOS}``, ``PriorityMaxAge``,
    ``PriorityDecayHalfLife``, ``PriorityCalcPeriod``, ``PriorityFavorSmall`` and Fair Tree unless
    ``PriorityFlags`` has NO_FAIR_TREE (slurm.conf(5)), a job's billing as its largest weighted TRES
    with MAX_TRES (usage charged by the partitions' TRESBillingWeights), and the job size factor as
    Slurm computes it (node and CPU fractions, ``job_size: slurm``); the shares are sacctmgr's
    (``associations``; without them every user has an equal share) and the usage at the start
    sshare's (``usage``; without it none). The priorities are recomputed when Slurm's decay thread
    runs: every PriorityCalcPeriod from the thread's start (priority_multifactor.c,
    ``_decay_thread``: its timer starts at its own start), at the phase of ``decay_runs`` (when
    it was seen to run, each bracketed by two Unix times: :mod:`djsb.slurmsite.recompute_watch`).
    Without them, at the phase of ``BOOT_TIME`` (in Unix seconds when asked with SLURM_TIME_FORMAT=%s), which
    only bounds the thread's start: the plugin loads after the boot, a second or more later on a
    loaded host; without either at phase 0. Both fallbacks come with a note."""
    kind = config.get(PRIORITY_TYPE, "priority/basic")
    if kind == "priority/basic":
        return FifoPriority, []
    if kind != "priority/multifactor":
        return FifoPriority, [f"PriorityType {kind} has no model: the model orders the queue FIFO"]
    weights = MultifactorWeights(**from_slurm(MultifactorWeights, config))
    options: dict[str, Any] = {**from_slurm(MultifactorOptions, config), "job_size": "slurm"}
    if associations is not None:
        options.update(accounts=associations.accounts, user_shares=associations.user_shares)
    boot = config.get("BOOT_TIME", "")
    seen = calc_phase(list(decay_runs), options["calc_period"])
    notes: list[str] = []
    if seen is not None:
        options["calc_phase"], half = seen
        notes.append(f"the decay thread was seen recomputing the priorities in {len(decay_runs)} "
                     f"interval(s): the model's recomputations fall {seen[0]:.2f} s (± {half:.2f}) into its "
                     f"{options['calc_period']:g} s period")
    elif boot.isdigit():
        options["calc_phase"] = float(boot) % options["calc_period"]
        notes.append("no recomputation of the priorities was seen: the model's fall at the phase of "
                     "slurmctld's BOOT_TIME, which the decay thread starts after")
    else:
        notes.append("no recomputation of the priorities was seen and BOOT_TIME is not given: the model's "
                     "fall at the start of each period of its own clock")
    notes += list(associations.notes) if associations is not None else [] if not weights.fairshare else [
        "fair share: the associations' shares are not read (sacctmgr): every user has an equal share"]
    options["usage"] = dict(usage or {})
    notes += [f"{key} = {config[key]} has no model" for key in UNMODELLED_WEIGHTS
              if config.get(key, "0") not in ("0", "(null)", "")]
    flags = {flag.strip() for flag in config.get("PriorityFlags", "").split(",")}
    flags -= {"", "(null)", "NO_FAIR_TREE", "MAX_TRES", "NO_NORMAL_TRES"}
    notes += [f"PriorityFlags {flag} has no model" for flag in sorted(flags)]
    if seen is None and not boot.isdigit():
        notes.append("BOOT_TIME not in Unix seconds: the model recomputes priorities at phase 0, not when "
                     "Slurm's decay thread does")
    return lambda: MultifactorPriority(weights, **options), notes


def cluster_spec(partitions: list[dict[str, str]], nodes: list[dict[str, str]], name: str,
                 others: Sequence[str] = (), qos: tuple[QosSpec, ...] = (QosSpec("normal"),)) -> ClusterSpec:
    """Partition ``name`` (the model's first, its default), the partitions ``others`` and their
    nodes as the model's cluster, with the QoS ``qos``.

    A partition's settings are read as :class:`~djsb.model.PartitionSpec` declares them
    (:func:`from_slurm`: MaxTime, PriorityTier, PriorityJobFactor, OverSubscribe). A node's GPUs are
    its ``Gres`` (:func:`~djsb.slurm_text.gres_gpus`; none when the record has no ``Gres``, as
    slurm.conf's node lines without one).
    """
    records = {p.get("PartitionName"): p for p in partitions}
    by_name = {n["NodeName"]: n for n in nodes if "NodeName" in n}
    members: dict[str, list[str]] = {}
    for wanted in dict.fromkeys((name, *others)):
        record = records.get(wanted)
        if record is None:
            raise SlurmConfigError(f"no partition {wanted!r} in scontrol show partition (there: "
                                   f"{', '.join(str(p) for p in records)})")
        hosts = [host for item in split_host_list(record.get("Nodes", "")) for host in expand_hostlist(item)]
        missing = [host for host in hosts if host not in by_name]
        if missing:
            raise SlurmConfigError(f"partition {wanted}: nodes {', '.join(missing)} not in scontrol show "
                                   "node")
        members[wanted] = hosts
    used = {host for hosts in members.values() for host in hosts}
    hosts = [host for host in by_name if host in used]  # scontrol's node order
    specs = by_weight([NodeSpec(host, int(by_name[host]["CPUTot"]), float(by_name[host]["RealMemory"]),
                                _node_gpus(by_name[host]), _node_weight(by_name[host])) for host in hosts])
    names = {q.name.lower(): q.name for q in qos}
    parts = [_partition(records[part], members[part], hosts, names) for part in members]
    declared = [records[part].get("OverSubscribe", "NO") for part in members]
    return ClusterSpec(specs, _with_rows(parts, declared, [set(members[part]) for part in members]), qos)


def _with_rows(parts: list[PartitionSpec], declared: list[str],
               nodes: list[set[str]]) -> tuple[PartitionSpec, ...]:
    """``parts`` with a ``YES:N`` partition kept as declared (the model reads YES as NO, its replayed
    jobs never asking ``--oversubscribe``) where its N rows matter: where it shares nodes with a
    partition that does not share cores (NO), whose jobs cons_common's ``_verify_node_state`` keeps
    off nodes running its jobs (:mod:`djsb.model.partition_rows`); not beside an exclusive partition
    or one sharing cores N' != N ways, which the model cannot hold on one node."""
    kinds: list[tuple[str, int]] = []
    for part, text in zip(parts, declared, strict=True):
        value = text.strip().upper()
        try:
            share = PartitionSpec(part.name, oversubscribe=value).share
        except ConfigError:
            value, share = part.oversubscribe, part.share
        kinds.append((value.split(":")[0], share))
    kept = list(parts)
    for i, (kind, share) in enumerate(kinds):
        if kind != "YES" or share < 2:
            continue
        beside = [kinds[j] for j in range(len(parts)) if j != i and nodes[i] & nodes[j]]
        if any(k == "NO" for k, _ in beside) and not any(
                k == "EXCLUSIVE" or (n > 1 and n != share) for k, n in beside):
            kept[i] = dataclasses.replace(parts[i], oversubscribe=declared[i].strip().upper())
    return tuple(kept)


def unknown_partition_qos(partitions: Sequence[Mapping[str, str]], qos: Sequence[QosSpec]) -> list[str]:
    """A note for each partition whose QOS is none of ``qos``: :func:`cluster_spec` leaves it out, as
    slurmctld does one its database lacks (partition_mgr.c: "Partition %s has an invalid qos")."""
    names = {q.name.lower() for q in qos}
    notes = []
    for record in partitions:
        name = slurm_text.partition_qos(record.get("QOS", ""))
        if name is not None and name.lower() not in names:
            notes.append(f"partition {record.get('PartitionName')}: QOS={name} is none of the QoS read "
                         "(--qos): its limits are not enforced")
    return notes


def _node_weight(record: dict[str, str]) -> int:
    """A node record's Weight (1, Slurm's default, without one)."""
    text = record.get("Weight", "1")
    if not text.isdigit():
        raise SlurmConfigError(f"node {record.get('NodeName')}: Weight={text}: not a whole number >= 0")
    return int(text)


def _node_gpus(record: dict[str, str]) -> tuple[tuple[str, int], ...]:
    """A node record's GPUs from its ``Gres``; a value Slurm would not write is the record's error."""
    try:
        return gres_gpus(record.get("Gres", ""))
    except ValueError as error:
        raise SlurmConfigError(f"node {record.get('NodeName')}: Gres={record.get('Gres')}: {error}") from None


def _partition(record: dict[str, str], members: list[str], hosts: list[str],
               qos: Mapping[str, str]) -> PartitionSpec:
    """A partition of ``scontrol show partition`` (or a slurm.conf) with its ``members`` of the
    cluster's ``hosts``: its declared settings read as their declarations say; its QOS (``QoS`` as
    scontrol spells it) as the one of ``qos`` (by lower-cased name) it names, left out if none."""
    every = len(members) == len(hosts)
    read = from_slurm(PartitionSpec, {canonical(key): value for key, value in record.items()})
    settings = one_default_memory(read)
    if settings.get("qos") is not None:
        settings["qos"] = qos.get(settings["qos"].lower())
    return PartitionSpec(record["PartitionName"], nodes=None if every else tuple(members), **settings)
