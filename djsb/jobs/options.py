"""A job module's options, read with the same typed, line-numbered readers as the rest of the config.

A module declares its options as a mapping name -> :class:`Option` (a reader from djsb.yamlnodes, a
default and a help line). :func:`read_options` checks the ``job_module.options`` mapping against it:
from the config file (a :class:`Located` tree) an error says ``file:line: job_module.options.X:
message`` like every other key; from a plain dict (a module built in code, a test, a bench) the same
checks run and the error names the key without a line.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from djsb.errors import ConfigError
from djsb.setting import declared
from djsb.yamlnodes import Located, as_int, describe, read_fields
from djsb.yamlnodes import one_of as one_of  # the choice reader, part of the job-module API

OPTIONS_KEY = "job_module.options"

Reader = Callable[[Located], Any]


@dataclass(frozen=True)
class Option:
    """One option: how to read it, its value when absent, and what it means (for the docs)."""

    read: Reader
    default: Any
    help: str


def declared_options(cls: type) -> dict[str, Option]:
    """The options of a module that declares them as the fields of dataclass ``cls`` with
    :func:`djsb.setting.setting` (reader, default, doc in one place, and a generated reference): that
    declaration in the form :func:`read_options` takes."""
    settings = declared(cls)
    return {f.name: Option(settings[f.name].read, f.default, settings[f.name].doc)
            for f in fields(cls) if f.name in settings}


@dataclass(frozen=True)
class OptionValues:
    """Options after reading: every declared option (defaults filled in), and where each was written,
    so a check that spans options can still point at the line of the one it blames."""

    values: Mapping[str, Any]
    node: Located

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)

    def error(self, name: str, message: str) -> ConfigError:
        """A ConfigError at option ``name``: its line when it was written, else the options' line."""
        child = self.node.get(name)
        if child is not None:
            return child.error(message)
        return ConfigError(message, source=self.node.source or None, line=self.node.line or None,
                           key=f"{self.node.key}.{name}")


def located(value: Any, key: str = OPTIONS_KEY) -> Located:
    """A plain value (options built in code) as a Located tree without a file or line."""
    if isinstance(value, Located):
        return value
    if isinstance(value, Mapping):
        value = {str(k): located(v, f"{key}.{k}") for k, v in value.items()}
    elif isinstance(value, (list, tuple)):
        value = [located(v, f"{key}[{i}]") for i, v in enumerate(value)]
    return Located(value, 0, key, "")


def read_options(schema: Mapping[str, Option] | None, options: Mapping[str, Any] | Located) -> OptionValues:
    """Check ``options`` against ``schema``: unknown keys and bad values raise ConfigError. Without a
    schema (a module that reads its options itself) every option is passed through unchecked."""
    node = located(options)
    if schema is None:
        node.mapping()  # raises unless the options are a mapping
        return OptionValues(node.plain(), node)
    given = read_fields(node, {name: option.read for name, option in schema.items()})
    return OptionValues({name: given.get(name, option.default) for name, option in schema.items()}, node)


def option_error(name: str, message: str) -> ConfigError:
    """A ConfigError at ``job_module.options.<name>`` found while running (no config line at hand)."""
    return ConfigError(message, key=f"{OPTIONS_KEY}.{name}")


# -- readers for the kinds of values modules take ----------------------------------------------

def as_name(node: Located) -> str:
    """A name (queue, partition, project): a non-empty string of printing characters, no white space."""
    if not isinstance(node.value, str) or not node.value or not node.value.isprintable() \
            or re.search(r"\s", node.value):
        raise node.error(f"expected a name, got {describe(node.value)}")
    return node.value


def checked_name(check: Callable[[str], str]) -> Reader:
    """A reader of a scheduler-bound name: a string that ``check`` (djsb.jobs.names) accepts."""
    def read(node: Located) -> str:
        if not isinstance(node.value, str):
            raise node.error(f"expected a name, got {describe(node.value)}")
        try:
            return check(node.value)
        except ValueError as exc:
            raise node.error(str(exc)) from None
    return read


# An option: -x, -pe, --ntasks, --mem-per-cpu, optionally followed by =VALUE.
_OPTION_NAME = re.compile(r"--?[A-Za-z0-9][A-Za-z0-9_.-]*")
# Words a shell would read as operators: alone in an argument list they show the user expects a shell.
_SHELL_OPERATORS = frozenset({";", ";;", "&", "&&", "|", "||", "|&", "<", ">", ">>", "<<", "2>", "2>&1",
                              "&>"})


def check_arguments(words: Sequence[str]) -> tuple[str, ...]:
    """Extra scheduler arguments, each one option or one value: the first is an option, an option's
    name (before any '=') is letters, digits, '_', '.', '-', and no word holds a control character
    (newline, NUL...), is a shell operator alone, or asks for command substitution ($( or `): the
    words are passed to the scheduler's command as they are, never run by a shell, so such a word
    is a mistake. Returns the words, or raises ValueError."""
    for index, word in enumerate(words):
        if not word.isprintable():
            raise ValueError(f"argument {index + 1} {word!r} holds a control character (newline, NUL...)")
        if word in _SHELL_OPERATORS or "$(" in word or "`" in word:
            raise ValueError(f"argument {index + 1} {word!r} is shell syntax; the arguments are passed "
                             "as they are, never run by a shell")
        if word.startswith("-") and not _OPTION_NAME.fullmatch(word.split("=", 1)[0]):
            raise ValueError(f"argument {index + 1} {word!r} is not an option such as -x, -pe or "
                             "--name=value")
        if index == 0 and not word.startswith("-"):
            raise ValueError(f"the first argument {word!r} is not an option (options start with '-')")
    return tuple(words)


def as_arguments(node: Located) -> tuple[str, ...]:
    """Extra command-line arguments: a list, or one string split as the shell would; each one option
    or one value (:func:`check_arguments`)."""
    if isinstance(node.value, str):
        try:
            words = shlex.split(node.value)
        except ValueError as exc:
            raise node.error(f"cannot split the arguments: {exc}") from None
    else:
        items = node.value if isinstance(node.value, list) else [node]
        if any(isinstance(w.value, bool) or not isinstance(w.value, (str, int, float)) for w in items):
            raise node.error(f"expected a list of arguments, got {describe(node.value)}")
        words = [str(item.value) for item in items]
    try:
        return check_arguments(words)
    except ValueError as exc:
        raise node.error(str(exc)) from None


def as_tasks_per_node(node: Located) -> int | dict[str, int]:
    """Tasks per node: one whole number >= 1 for every application, or a mapping app -> number."""
    if node.is_mapping():
        return {app: as_int(child, 1) for app, child in node.items()}
    return as_int(node, 1)


def tasks_per_node_for(option: int | Mapping[str, int], app: str) -> int | None:
    """The tasks_per_node value for ``app``: the one number, or the app's entry (None: not given)."""
    return option.get(app) if isinstance(option, Mapping) else option
