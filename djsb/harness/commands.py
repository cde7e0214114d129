"""Turn an application's command template into the argv of one task.

Placeholders (``{name}``) are filled from a fixed set of values; ``{work}`` alone in an argument
stands for the amount of work: ``--time SECONDS`` in the reference stage and ``--iterations N``
(N measured in the reference stage) in the execution stage, so a job that is stopped or slowed
really takes longer (paper 001's slowdown needs the same work in both stages).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def work_arguments(exec_time: float, iterations: int | None) -> list[str]:
    """The ``{work}`` splice: a fixed iteration count when known, else a duration."""
    if iterations is not None:
        return ["--iterations", str(iterations)]
    return ["--time", f"{exec_time:g}"]


def expand_command(template: Sequence[str], values: Mapping[str, str],
                   work: Sequence[str]) -> tuple[str, ...]:
    """The argv for ``template``: each argument formatted with ``values``; ``{work}`` spliced in.

    The config reader has checked every placeholder (djsb.config.experiment.PLACEHOLDERS). No shell
    is involved: every argument stays one argument whatever it contains.
    """
    argv: list[str] = []
    for arg in template:
        if arg == "{work}":
            argv.extend(work)
        else:
            argv.append(arg.format_map(values))
    return tuple(argv)
