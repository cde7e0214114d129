"""An sbatch command line as sacct's SubmitLine prints it (Slurm >= 20.11), read for its options.

A record's other fields say what a job was given; only its submit line says what it asked. The node
count is the case in point: sacct's NNodes of a finished job is how many nodes Slurm allocated, and
a job that asked ``--ntasks=8`` alone may have been spread over 1 to 8 of them.
"""

from __future__ import annotations

import shlex

from djsb.workloads.gpus import OPTIONS as GPU_OPTIONS
from djsb.workloads.gpus import GpuRequest

SHORT_WITH_VALUE = frozenset(
    {"-w", "-x", "-C", "-d", "-p", "-q", "-A", "-t", "-n", "-N", "-c", "-J", "-o", "-e", "-D", "-G", "-a"})
"""sbatch's short options that take a value (the next word, or the rest of the word: ``-N2``)."""
LONG_WITH_VALUE = frozenset({
    "--account", "--array", "--begin", "--chdir", "--comment", "--constraint", "--cpus-per-gpu",
    "--cpus-per-task", "--dependency", "--error", "--exclude", "--export", "--gpus", "--gpus-per-node",
    "--gpus-per-socket", "--gpus-per-task", "--gres", "--job-name", "--licenses", "--mail-type",
    "--mail-user", "--mem", "--mem-per-cpu", "--mem-per-gpu", "--nodelist", "--nodes", "--ntasks",
    "--ntasks-per-gpu", "--ntasks-per-node", "--output", "--partition", "--qos", "--reservation",
    "--signal", "--switches", "--time", "--time-min", "--wrap"})
"""sbatch's long options whose value may be the next word (``--nodes 4``) as well as ``--nodes=4``
(sbatch(1)); any other long option without ``=`` is read as a flag."""


def sbatch_options(line: str) -> list[tuple[str, str]]:
    """The options of the sbatch command ``line`` in their order, up to its script (what follows is
    the script's own arguments): (name as written, ``--nodes`` or ``-N``; value, ``""`` for a
    flag). A line whose quoting cannot be read gives none."""
    try:
        words = shlex.split(line)
    except ValueError:
        return []
    options: list[tuple[str, str]] = []
    index = 1
    while index < len(words):
        word = words[index]
        if not word.startswith("-"):
            break
        if word.startswith("--"):
            name, equals, value = word.partition("=")
            if not equals and name in LONG_WITH_VALUE and index + 1 < len(words):
                index += 1
                value = words[index]
        elif word[:2] in SHORT_WITH_VALUE:
            name, value = word[:2], word[2:]
            if not value and index + 1 < len(words):
                index += 1
                value = words[index]
        else:
            name, value = word, ""
        options.append((name, value))
        index += 1
    return options


def requested_nodes(line: str) -> int | None:
    """The node count the sbatch command ``line`` asked for (``-N``/``--nodes`` N, or the minimum N
    of N-M; the last one given, as sbatch reads it), None if it asked none (Slurm chose how many).
    Raises ValueError for a count that is not one."""
    values = [value for name, value in sbatch_options(line) if name in ("-N", "--nodes")]
    if not values:
        return None
    value = values[-1]
    count = int(value.split("-", 1)[0])
    if count < 1:
        raise ValueError(f"not a node count: {value!r}")
    return count


def requested_gpus(line: str) -> GpuRequest | None:
    """The GPUs the sbatch command ``line`` asked: its last ``--gres``, ``--gpus``,
    ``--gpus-per-node`` or ``--gpus-per-task`` that asks any (the model holds one GPU request per
    job), with its last ``--cpus-per-gpu`` and ``--mem-per-gpu`` (MiB unless suffixed K, M, G, T);
    None if it asked none. Raises ValueError for a request that is not one."""
    options = sbatch_options(line)
    requests = [GpuRequest.from_option(name, value) for name, value in options if name in GPU_OPTIONS]
    request = next((request for request in reversed(requests) if request is not None), None)
    return None if request is None else request.bringing(dict(options))


def requested_cpus_per_task(line: str) -> int | None:
    """The CPUs per task the sbatch command ``line`` asked (its last ``-c``/``--cpus-per-task``,
    sbatch(1)), None if it asked none. Raises ValueError for a count that is not one."""
    values = [value for name, value in sbatch_options(line) if name in ("-c", "--cpus-per-task")]
    if not values:
        return None
    if not values[-1].isdigit() or int(values[-1]) < 1:
        raise ValueError(f"--cpus-per-task={values[-1]}: not a CPU count")
    return int(values[-1])


DEPENDENCY_KINDS = ("after", "afterok", "afterany", "afternotok", "aftercorr")
"""The ``--dependency`` types a replay enforces (djsb/model/dependency.py)."""


def requested_dependency(line: str) -> tuple[tuple[int, str], ...] | None:
    """The parents the sbatch command ``line`` waited for, each with its type, from its last
    ``--dependency``/``-d`` (sbatch(1): ``type:id[:id...]`` items joined by ``,``, all to be
    satisfied; a ``singleton`` item names no parent: :func:`requested_singleton`); None if it asked
    none (``aftercorr:123`` names array 123, whose task of each dependent task's index it waits for:
    djsb/model/aftercorr.py; another type on ``123`` or ``123_*``, the job id of an array, waits for
    the whole array: djsb/model/array_dependency.py). Raises ValueError for one a replay cannot
    enforce: items joined by ``?`` (any one satisfies), the type afterburstbuffer, a delay
    (``+time``), an array task (``123_4``), or a malformed list."""
    values = [value for name, value in sbatch_options(line) if name in ("-d", "--dependency")]
    if not values:
        return None
    value = values[-1]
    if "?" in value:
        raise ValueError(f"--dependency={value}: any-of (?) is not modelled")
    edges = []
    for item in value.split(","):
        kind, _, ids = item.partition(":")
        if item == "singleton":
            continue
        if kind not in DEPENDENCY_KINDS:
            raise ValueError(f"--dependency={value}: {kind or 'an empty type'} is not modelled")
        for text in ids.split(":"):
            if "+" in text:
                raise ValueError(f"--dependency={value}: a delay ({text}) is not modelled")
            if text.endswith("_*") and text[:-2].isdigit():  # the whole array (Slurm's INFINITE task)
                text = text[:-2]
            if not text.isdigit():
                raise ValueError(f"--dependency={value}: {text or 'an empty id'} is not a job id")
            edges.append((int(text), kind))
    return tuple(edges)


def array_throttle(line: str) -> int | None:
    """The most tasks of the array the sbatch command ``line`` submitted that may run at once (its
    last ``--array``/``-a``'s ``%N``, sbatch(1)), None without one. Raises ValueError for an N that
    is not a count."""
    values = [value for name, value in sbatch_options(line) if name in ("-a", "--array")]
    if not values or "%" not in values[-1]:
        return None
    limit = values[-1].rsplit("%", 1)[1]
    if not limit.isdigit() or int(limit) < 1:
        raise ValueError(f"--array={values[-1]}: the throttle {limit!r} is not a count")
    return int(limit)


def requested_reservation(line: str) -> str | None:
    """The reservation the sbatch command ``line`` asked for (its last ``--reservation``, sbatch(1)),
    None without one."""
    values = [value for name, value in sbatch_options(line) if name == "--reservation"]
    return values[-1].strip() or None if values else None


def requested_singleton(line: str) -> bool:
    """Whether the sbatch command ``line``'s last ``--dependency``/``-d`` has a ``singleton`` item."""
    values = [value for name, value in sbatch_options(line) if name in ("-d", "--dependency")]
    return bool(values) and "singleton" in values[-1].split(",")


def requested_requeue(line: str) -> bool | None:
    """Whether the sbatch command ``line`` let Slurm requeue the job: its last ``--requeue`` (True)
    or ``--no-requeue`` (False); None when it says neither (the cluster's JobRequeue then)."""
    said = [name == "--requeue" for name, _ in sbatch_options(line) if name in ("--requeue", "--no-requeue")]
    return said[-1] if said else None


def requested_exclusive(line: str) -> bool:
    """Whether the sbatch command ``line`` asked whole nodes for the job alone: its last
    ``--exclusive`` has no value (``--exclusive=user`` or ``=mcs`` shares them with other jobs)."""
    values = [value for name, value in sbatch_options(line) if name == "--exclusive"]
    return bool(values) and not values[-1]
