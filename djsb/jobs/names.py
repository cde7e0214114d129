"""Names a scheduler is given (partition, account, QOS, queue, project), checked by its documented rules.

Each check returns the name or raises ValueError saying which rule it breaks; the option readers
(djsb.jobs.options) turn that into ``file:line: job_module.options.X: message`` at ``djsb validate``
time, so a bad name never reaches sbatch/qsub/bsub in the middle of a run. The commands are always
built with shlex quoting, so these checks are about early, clear errors, not about shell safety.

- Slurm documents no character set for partition, account or QOS names (slurm.conf(5) PartitionName,
  sacctmgr(1)), but its parsers split lists at ',' and ``key=value`` at '=', treat white space and
  '#' as separators and comments, and keep account and QOS names in lower case in the database
  (sacctmgr(1), NOTE): a Slurm name is letters, digits, '_', '-' and '.'; --partition takes a
  comma-separated list of them (sbatch(1)).
- Grid Engine: a queue, project, parallel environment or complex name is an ``object_name``: up to 512
  ASCII printing characters except space and / : ' \\ [ ] { } | ( ) @ % , " (sge_types(5)).
- LSF: a queue name is up to 59 letters, digits, '_' and '-', and not ``default``, which LSF reserves
  (lsb.queues(5) QUEUE_NAME); a project name is up to 511 characters (bsub(1) -P), for which LSF
  names no character set, so the Slurm set (letters, digits, '_', '-', '.') is required.
"""

from __future__ import annotations

import re

_SLURM_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_SGE_FORBIDDEN = frozenset(" /:'\\[]{}|()@%,\"")
_LSF_QUEUE = re.compile(r"[A-Za-z0-9_-]{1,59}")
# Names are shown with repr() in messages, so a newline or NUL in one stays visible on one line.


def slurm_name(name: str) -> str:
    """A Slurm account or QOS name: letters, digits, '_', '-', '.' (see the module's notes)."""
    if not _SLURM_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a Slurm name (letters, digits, '_', '-' and '.' only)")
    return name


def slurm_partitions(names: str) -> str:
    """sbatch --partition: one Slurm name, or several separated by commas (sbatch(1))."""
    for name in names.split(","):
        if not _SLURM_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a Slurm partition name (letters, digits, '_', '-' "
                             "and '.'; several partitions separated by commas)")
    return names


def sge_object_name(name: str) -> str:
    """A Grid Engine object_name (sge_types(5)): queue, project, parallel environment, complex."""
    bad = sorted({char for char in name if char in _SGE_FORBIDDEN or not " " < char <= "~"})
    if not name or len(name) > 512 or bad:
        detail = f"contains {', '.join(map(repr, bad))}" if bad else "must have 1 to 512 characters"
        raise ValueError(f"{name!r} is not a Grid Engine object name ({detail}; sge_types(5) allows "
                         "ASCII printing characters except space and /:'\\[]{}|()@%,\")")
    return name


def lsf_queue_name(name: str) -> str:
    """An LSF queue name (lsb.queues(5) QUEUE_NAME)."""
    if not _LSF_QUEUE.fullmatch(name) or name == "default":
        raise ValueError(f"{name!r} is not an LSF queue name (1 to 59 letters, digits, '_' and '-'; "
                         "not the reserved name default)")
    return name


def lsf_project_name(name: str) -> str:
    """An LSF project name (bsub(1) -P: up to 511 characters; see the module's notes)."""
    if len(name) > 511 or not _SLURM_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not an LSF project name (up to 511 letters, digits, '_', '-' "
                         "and '.')")
    return name
