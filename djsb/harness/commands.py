"""Turn an application's command template into the argv of one task.

Placeholders (``{name}``) are filled from a fixed set of values; ``{work}`` alone in an argument
stands for the amount of work: ``--time SECONDS`` in the reference stage and ``--iterations N``
(N measured in the reference stage) in the execution stage, so a job that is stopped or slowed
really takes longer (paper 001's slowdown needs the same work in both stages).
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence

from djsb.errors import ConfigError

PLACEHOLDERS = ("apps", "cpus_per_task", "total_tasks", "memory_per_task", "exec_time", "control_file",
                "name", "work")


def work_arguments(exec_time: float, iterations: int | None) -> list[str]:
    """The ``{work}`` splice: a fixed iteration count when known, else a duration."""
    if iterations is not None:
        return ["--iterations", str(iterations)]
    return ["--time", f"{exec_time:g}"]


def expand_command(template: Sequence[str], values: Mapping[str, str], work: Sequence[str],
                   *, key: str = "command") -> tuple[str, ...]:
    """The argv for ``template``: each argument formatted with ``values``; ``{work}`` spliced in.

    No shell is involved: every argument stays one argument whatever it contains.
    """
    argv: list[str] = []
    for arg in template:
        if arg == "{work}":
            argv.extend(work)
            continue
        for _, field, _, _ in string.Formatter().parse(arg):
            if field is not None and field not in values:
                raise ConfigError(f"unknown placeholder {{{field}}} in {arg!r} (known: "
                                  f"{', '.join(PLACEHOLDERS)})", key=key)
        argv.append(arg.format_map(values))
    return tuple(argv)
