"""Batch scripts from jinja2 templates, with every printed value shell-quoted.

Each scheduler's job script is a ``batch.sh.j2`` beside its module (job_modules/<name>/). Templates
render with autoescape off (this is shell, not HTML), and :func:`render_batch_script` refuses to
print any value that did not go through the ``shquote`` (one word) or ``shjoin`` (a list of words)
filter, so no value reaches the job's shell unquoted by mistake. The script is written next to the
job's output (:func:`script_path`) so a user can review what ran, as PSI/J does.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

import jinja2


class Quoted(str):
    """Text already quoted for the shell: the only kind of value a batch template may print."""


def shquote(value: Any) -> Quoted:
    """One shell word (shlex.quote of the value's text)."""
    return Quoted(shlex.quote(str(value)))


def shjoin(values: Iterable[Any]) -> Quoted:
    """Shell words separated by spaces (shlex.join of the values' texts)."""
    return Quoted(shlex.join(str(value) for value in values))


def _only_quoted(value: Any) -> Any:
    if value is None or isinstance(value, Quoted):
        return value
    raise jinja2.TemplateError(f"batch template prints {value!r} without the shquote/shjoin filter")


def render_batch_script(template: Path, **values: Any) -> str:
    """The script ``template`` renders with ``values`` (ValueError-free: template errors propagate)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(template.parent), autoescape=False,
                             undefined=jinja2.StrictUndefined, finalize=_only_quoted,
                             keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["shquote"] = shquote
    env.filters["shjoin"] = shjoin
    return env.get_template(template.name).render(**values)


def script_path(stdout_path: str) -> str:
    """Where a job's batch script is kept for review: beside its stdout, with the suffix .sh."""
    return str(PurePosixPath(stdout_path).with_suffix(".sh"))
