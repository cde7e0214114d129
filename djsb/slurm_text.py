"""Parsers of values as Slurm writes them in slurm.conf and ``scontrol show config`` (slurm.conf(5)).

Each is a function from Slurm's text to the model's value, raising ValueError that says what is
wrong with the text; the declarations of the model's settings (:class:`djsb.setting.SlurmKey`) name
them, so a site's slurm.conf is read through the declarations. They sit beside
:mod:`djsb.setting`, below the model that declares with them.
"""

from __future__ import annotations

import math

from djsb.yamlnodes import parse_duration

SCHEDULER_TYPES = {"sched/backfill": "conservative", "sched/builtin": "none"}
"""sched/backfill reserves for every job it tests (backfill.c ``_attempt_backfill``): the model's
conservative backfill; sched/builtin is the main pass alone."""
SELECT_TYPES = {"select/cons_tres": "cons_tres", "select/cons_res": "cons_tres"}
"""The select plugins whose node choice the model makes: cons_res chooses CPUs as cons_tres does."""


def slurm_time(text: str) -> float:
    """Seconds in a time Slurm prints (sbatch(1) --time formats, a bare number in minutes)."""
    return parse_duration(text, "min")


def seconds(text: str) -> float:
    """Seconds given as a bare number (SchedulerParameters' intervals)."""
    return parse_duration(text, "s")


def count(text: str) -> int:
    """A whole number of jobs, >= 0."""
    if not text.isdigit():
        raise ValueError("not a whole number of jobs >= 0")
    return int(text)


MAX_ARRAY_RESERVATIONS = 1000
"""The largest bf_max_job_array_resv sched/backfill accepts (backfill.c ``MAX_BF_MAX_JOB_ARRAY_RESV``)."""


def array_reservations(text: str) -> int:
    """bf_max_job_array_resv: a whole number of tasks in 0 ... 1000 (backfill.c's
    ``_load_config`` refuses any other, keeping its default of 20 with an error in its log)."""
    if not text.isdigit() or int(text) > MAX_ARRAY_RESERVATIONS:
        raise ValueError(f"not a whole number of tasks in 0 ... {MAX_ARRAY_RESERVATIONS}")
    return int(text)


def integer(text: str) -> int:
    """A whole number, maybe negative (PriorityTier, PriorityJobFactor)."""
    try:
        return int(text)
    except ValueError:
        raise ValueError("not a whole number") from None


def time_limit(text: str) -> float | None:
    """A partition's MaxTime in seconds; UNLIMITED (INFINITE in slurm.conf) is no limit: None."""
    return None if text.upper() in ("UNLIMITED", "INFINITE") else slurm_time(text)


def oversubscribe(text: str) -> str:
    """A partition's OverSubscribe as the model shares its cores with replayed jobs: YES[:N] shares
    only between jobs that ask --oversubscribe, which replayed jobs never do, so it is NO; NO,
    FORCE[:N] and EXCLUSIVE as written."""
    value = text.upper()
    return "NO" if value.startswith("YES") else value


def partition_qos(text: str) -> str | None:
    """A partition's QOS: a QoS name, or None when it has none (scontrol prints ``N/A``)."""
    name = text.strip()
    if any(char.isspace() for char in name) or "," in name:
        raise ValueError("not one QoS name")
    return None if name.upper() in ("", "N/A") else name


def allow_qos(text: str) -> tuple[str, ...]:
    """A partition's AllowQos: the QoS names it allows, lower-cased as slurmctld reads them
    (read_config.c); ``ALL`` (Slurm's default) is every QoS: ()."""
    names = tuple(name.strip().lower() for name in text.split(",") if name.strip())
    return () if names in ((), ("all",)) else names


def count_or_unlimited(text: str) -> float:
    """A number of jobs where 0, Slurm's default, is no limit (the bf_max_job_* limits)."""
    return count(text) or math.inf


def cpus_limit(text: str) -> int | None:
    """A partition's MaxCPUsPerNode: a whole number of CPUs >= 1; UNLIMITED (INFINITE in
    slurm.conf), Slurm's default, is no limit: None."""
    if text.upper() in ("UNLIMITED", "INFINITE"):
        return None
    if not text.isdigit() or int(text) < 1:
        raise ValueError("not a whole number of CPUs >= 1 or UNLIMITED")
    return int(text)


def flag(text: str) -> bool:
    """An option given by its name alone: on."""
    return True


def yes_no(text: str) -> bool:
    """``Yes`` (any case) is on, anything else off, as slurmctld reads PriorityFavorSmall."""
    return text.lower() == "yes"


def weight(text: str) -> float:
    """A priority weight: an unsigned integer in slurm.conf(5)."""
    return _non_negative(text, "not a number >= 0")


def scheduler_type(text: str) -> str:
    """The model's backfill policy for a SchedulerType (:data:`SCHEDULER_TYPES`)."""
    if text not in SCHEDULER_TYPES:
        raise ValueError("has no model (use sched/backfill or sched/builtin)")
    return SCHEDULER_TYPES[text]


def select_type(text: str) -> str:
    """The model's node choice for a SelectType (:data:`SELECT_TYPES`)."""
    if text not in SELECT_TYPES:
        raise ValueError("has no model (the model chooses nodes as select/cons_tres does)")
    return SELECT_TYPES[text]


def kill_wait_seconds(text: str) -> float:
    """KillWait as ``scontrol show config`` prints it ("30 sec") or slurm.conf gives it ("30")."""
    return _non_negative((text.split() or [""])[0], "not a number of seconds >= 0")


def _non_negative(text: str, problem: str) -> float:
    """``text`` as a finite number >= 0; ValueError saying ``problem`` otherwise."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value < math.inf:
        raise ValueError(problem)
    return value


def preempt_type(text: str) -> str:
    """PreemptType's plugin without its ``preempt/`` prefix (``none``, ``partition_prio``, ``qos``)."""
    return text.strip().removeprefix("preempt/")


def preempt_mode(text: str) -> str:
    """PreemptMode as the model names it: off, cancel, requeue, or suspend (SUSPEND,GANG); GANG alone
    is gang scheduling without preemption, off (its GANG is :func:`preempt_gang`). SUSPEND without
    GANG is refused, as slurmctld refuses it (read_config.c ``_validate_and_set_defaults``:
    "PreemptMode=SUSPEND requires GANG too"): nothing would resume a suspended job."""
    words = _preempt_words(text)
    if words - {""} == {"SUSPEND"}:
        raise ValueError("SUSPEND requires GANG too (PreemptMode=SUSPEND,GANG), as slurmctld says")
    return _mode(words)


def preempt_gang(text: str) -> bool:
    """Whether a PreemptMode has GANG: the gang scheduler runs (gang.c ``gs_init``)."""
    preempt_mode(text)  # checks the rest
    return "GANG" in _preempt_words(text)


MIN_TIME_SLICE = 5.0
"""The shortest SchedulerTimeSlice slurmctld takes (read_config.c)."""
DEFAULT_TIME_SLICE = 30.0
"""SchedulerTimeSlice's default (``DEFAULT_SCHED_TIME_SLICE``)."""


def time_slice_seconds(text: str) -> float:
    """SchedulerTimeSlice as slurm.conf gives it ("30") or ``scontrol show config`` prints it ("30 sec"):
    below 5 s slurmctld logs an error and takes the default 30 (read_config.c)."""
    value = _non_negative((text.split() or [""])[0], "not a number of seconds >= 0")
    return value if value >= MIN_TIME_SLICE else DEFAULT_TIME_SLICE


def _preempt_words(text: str) -> set[str]:
    """The words of a PreemptMode, in upper case."""
    return {word.strip().upper() for word in text.split(",")}


def _mode(words: set[str]) -> str:
    """The model's name of the mode a PreemptMode's ``words`` give (GANG and WITHIN aside)."""
    for mode in ("CANCEL", "REQUEUE", "SUSPEND"):
        if mode in words:
            return mode.lower()
    if words <= {"OFF", "GANG", ""}:
        return "off"
    raise ValueError("expected OFF, CANCEL, REQUEUE or SUSPEND (with GANG or WITHIN)")


def partition_preempt_mode(text: str) -> str:
    """A partition's PreemptMode as the model names it: ``cluster`` when it sets none (the cluster's
    applies), else off, cancel, requeue or suspend. Its GANG has no sense and is dropped
    (preempt_partition_prio.c ``_job_preempt_mode``), so SUSPEND alone is valid here; whether
    anything resumes its jobs is the cluster's GANG's (:mod:`djsb.model.suspension`)."""
    if not text.strip():
        return "cluster"
    return _mode(_preempt_words(text))


def preempt_within(text: str) -> bool:
    """Whether a PreemptMode has WITHIN: under preempt/qos, a job may preempt one of its own QoS of
    lower priority (preempt_qos.c ``preempt_p_preemptable``)."""
    preempt_mode(text)  # checks the rest
    return "WITHIN" in {word.strip().upper() for word in text.split(",")}


def exempt_seconds(text: str) -> float:
    """PreemptExemptTime in seconds: a Slurm time (``00:05:00``), -1 or empty for none."""
    text = text.strip()
    return 0.0 if text in ("", "-1") else parse_duration(text, "min")


def job_requeue(text: str) -> bool:
    """JobRequeue: 1 (Slurm's default) requeues a batch job whose node failed, 0 does not."""
    value = (text.split() or [""])[0]
    if value not in ("0", "1"):
        raise ValueError("expected 0 or 1")
    return value == "1"


def requeue_delay(text: str) -> float:
    """How long a requeued job waits before it is eligible again: the launch credential's lifetime
    (AuthInfo's ``cred_expire``, 120 s by default, slurm_cred.c) plus 1 s, the begin time
    batch_requeue_fini sets (job_mgr.c)."""
    for item in text.split(","):
        key, _, value = item.strip().partition("=")
        if key == "cred_expire":
            if not value.isdigit() or int(value) < 5:
                raise ValueError("cred_expire must be a whole number of seconds >= 5")
            return int(value) + 1.0
    return 121.0


def over_time_seconds(text: str) -> float:
    """OverTimeLimit in seconds ("0 min" from scontrol, minutes in slurm.conf); UNLIMITED has no
    model (Slurm itself only guesses when such a job ends)."""
    first = (text.split() or [""])[0]
    if not first.isdigit():
        raise ValueError("has no model (Slurm itself only guesses when such a job ends)")
    return 60.0 * int(first)


def resv_over_run_seconds(text: str) -> float:
    """ResvOverRun in seconds ("0 min" from scontrol, minutes in slurm.conf); UNLIMITED: inf (the
    job runs on to its own limit)."""
    first = (text.split() or [""])[0]
    if first.upper() in ("UNLIMITED", "INFINITE"):
        return math.inf
    if not first.isdigit():
        raise ValueError("not a number of minutes >= 0 or UNLIMITED")
    return 60.0 * int(first)


def fair_share_algorithm(text: str) -> str:
    """Fair Tree unless PriorityFlags has NO_FAIR_TREE (Slurm's default since 19.05)."""
    return "classic" if "NO_FAIR_TREE" in text else "fair_tree"


def max_tres(text: str) -> bool:
    """Whether PriorityFlags has MAX_TRES (a job's billing is its largest weighted node TRES)."""
    return "MAX_TRES" in (flag.strip().upper() for flag in text.split(","))


def priority_tres_weights(text: str) -> tuple[tuple[str, float], ...]:
    """PriorityWeightTRES, written as TRESBillingWeights is (:func:`tres_weights`); ``(null)``, what
    ``scontrol show config`` prints when it is unset, is none."""
    return () if text.strip() == "(null)" else tres_weights(text)


def no_normal_tres(text: str) -> bool:
    """Whether PriorityFlags has NO_NORMAL_TRES (the TRES factor takes a job's TRES as they are, not
    divided by its partition's)."""
    return "NO_NORMAL_TRES" in (flag.strip().upper() for flag in text.split(","))


_WEIGHT_UNITS = {"": 1.0, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}


def tres_weights(text: str) -> tuple[tuple[str, float], ...]:
    """A partition's TRESBillingWeights, ``CPU=1.0,Mem=0.25G,GRES/gpu=2.0``: each TRES's weight
    (names in any case; a memory weight's unit is per that much memory, so ``0.25G`` is 0.25 per
    GB: 0.25 / 1024 per MB, as slurm_protocol_api.c ``_tres_weight_item`` divides it); empty is
    none. Only cpu, mem, node and gres/gpu are known."""
    weights: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, equals, value = item.partition("=")
        name = name.strip().lower()
        if name not in ("cpu", "mem", "node", "gres/gpu") or not equals:
            raise ValueError(f"{item}: expected CPU=, Mem=, Node= or GRES/gpu= and a weight")
        unit = value[-1:].upper() if value[-1:].isalpha() else ""
        try:
            weight = float(value[:-1] if unit else value)
        except ValueError:
            weight = math.nan
        if unit not in _WEIGHT_UNITS or (unit and name != "mem") or not 0 <= weight < math.inf:
            raise ValueError(f"{item}: the weight {value!r} is not a number (a unit only for Mem: "
                             "M, G, T, P)")
        weights[name] = weight / _WEIGHT_UNITS[unit]
    return tuple(weights.items())


def gres_gpus(text: str) -> tuple[tuple[str, int], ...]:
    """A node's GPUs from its ``Gres=`` (slurm.conf, ``scontrol show node``): (type, count) pairs,
    ``""`` for GPUs of no type; other generic resources are not GPUs and are left out.

    Slurm writes ``name[:type]:count`` items joined by commas, a count with an optional unit
    suffix, and ``scontrol`` may append the sockets the GPUs bind to, ``gpu:a100:4(S:0-1)``
    (gres.c ``gres_node_config_load`` / ``_node_config_init``); ``(null)`` is none.
    """
    counts: dict[str, int] = {}
    for item in _gres_items(text):
        parts = item.split(":")
        if parts[0] != "gpu":
            continue
        if len(parts) > 3:
            raise ValueError(f"{item}: expected gpu[:type]:count")
        number = parts[-1] if len(parts) > 1 else "1"
        kind = parts[1] if len(parts) == 3 else ""
        counts[kind] = counts.get(kind, 0) + _gres_count(number, item)
    return tuple((kind, n) for kind, n in counts.items() if n)


def _gres_items(text: str) -> list[str]:
    """The comma-separated items of a Gres value without their socket bindings; none for (null)."""
    text = text.strip()
    if text in ("", "(null)", "none"):
        return []
    items, depth, start = [], 0, 0
    for at, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(text[start:at])
            start = at + 1
    items.append(text[start:])
    return [item.split("(", 1)[0].strip() for item in items if item.strip()]


_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def _gres_count(number: str, item: str) -> int:
    """A Gres count with Slurm's optional K/M/G/T suffix (powers of 1024, gres.c ``_get_gres_cnt``)."""
    unit = number[-1:].upper() if number[-1:].isalpha() else ""
    digits = number[:-1] if unit else number
    if unit not in _UNITS or not digits.isdigit():
        raise ValueError(f"{item}: the count {number!r} is not a whole number")
    return int(digits) * _UNITS[unit]


def tres(text: str) -> dict[str, float]:
    """A TRES string as sacct (ReqTRES, AllocTRES) and sacctmgr (GrpTRES, MaxTRESPerUser, ...)
    write it, ``cpu=4,mem=8G,node=1,billing=4,gres/gpu=2,gres/gpu:a100=2``: each TRES's amount,
    memory in MiB (suffixes K, M, G, T as Slurm's ``slurm_tres_str``), others as counts; empty
    is none."""
    amounts: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, equals, value = item.partition("=")
        if not equals or not name or not value:
            raise ValueError(f"{item}: expected TRES=amount")
        amounts[name] = _tres_amount(name, value, item)
    return amounts


def _tres_amount(name: str, value: str, item: str) -> float:
    unit = value[-1:].upper() if value[-1:].isalpha() else ""
    number = value[:-1] if unit else value
    try:
        amount = float(number)
    except ValueError:
        amount = math.nan
    if unit not in _UNITS or not 0 <= amount < math.inf:
        raise ValueError(f"{item}: the amount {value!r} is not a number")
    if name in ("mem", "vmem"):
        return amount * _UNITS[unit] / _UNITS["M"] if unit else amount
    return amount * _UNITS[unit]


def mebibytes(text: str) -> float:
    """A memory size in MiB as sbatch (``--mem-per-gpu=4G``) and slurm.conf (``DefMemPerCPU=4096``)
    write it: a number, MiB unless suffixed K, M, G or T (powers of 1024), above 0."""
    amount = _tres_amount("mem", text.strip(), text.strip())
    if amount <= 0:
        raise ValueError(f"{text}: a memory size is above 0")
    return amount


def memory_default(text: str) -> float | None:
    """A default memory size in MiB (DefMemPerCPU, DefMemPerGPU: slurm.conf's plain number, or with
    a K, M, G or T suffix); 0, Slurm's default, and UNLIMITED (as scontrol prints an unset one) are
    none: None."""
    value = text.strip()
    if value in ("0", "") or value.upper() in ("UNLIMITED", "INFINITE"):
        return None
    return mebibytes(value)


ENFORCE_WORDS = ("1", "associations", "2", "limits", "safe", "wckeys", "qos", "all", "nojobs", "nosteps")
"""The words of AccountingStorageEnforce slurmctld accepts (read_config.c
``_validate_accounting_storage_enforce``); any other makes it refuse the whole value."""


def accounting_safe(text: str) -> bool:
    """Whether AccountingStorageEnforce, a comma list in any case, enforces ``safe``: it has the word
    ``safe``, or ``all``, which sets every bit but nojobs and nosteps, ACCOUNTING_ENFORCE_SAFE among
    them (read_config.c ``_validate_accounting_storage_enforce``). ``none``, as ``scontrol show
    config`` prints an empty one, and the empty value are off."""
    words = [word.strip().lower() for word in text.split(",")]
    if words in ([""], ["none"]):
        return False
    wrong = [word for word in words if word not in ENFORCE_WORDS]
    if wrong:
        raise ValueError(f"{wrong[0]!r} is none of associations, limits, safe, wckeys, qos, all, nojobs, "
                         "nosteps (or 1, 2)")
    return "safe" in words or "all" in words


def cpus_default(text: str) -> int | None:
    """A default CPU count per GPU (DefCpuPerGPU): a whole number; 0 and empty, how Slurm leaves it
    unset (cons_common.c ``select_p_reconfigure``: ``def_cpu_per_gpu = 0``), are none: None."""
    value = text.strip()
    if not value.isdigit():
        raise ValueError("not a whole number of CPUs >= 0")
    return int(value) or None


RESET_PERIODS = ("none", "now", "daily", "weekly", "monthly", "quarterly", "yearly")
"""PriorityUsageResetPeriod's values, as the model names them (slurm.conf(5) writes them upper-case)."""


def usage_reset_period(text: str) -> str:
    """PriorityUsageResetPeriod, any case as slurmctld compares it (read_config.c ``xstrcasecmp``), as
    one of :data:`RESET_PERIODS`."""
    value = text.strip().lower()
    if value not in RESET_PERIODS:
        raise ValueError(f"not one of {', '.join(period.upper() for period in RESET_PERIODS)}")
    return value
