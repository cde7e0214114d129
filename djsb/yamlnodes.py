"""YAML read with line numbers, and the one reader of each kind of value every config holds.

``load_yaml`` returns a :class:`Located` tree: plain values plus the line each came from. Readers
walk it with :meth:`Located.get` and friends and raise :class:`ConfigError` at the right place,
so every error names the file, the line and the key path. Every command, job module and plugin
reads its values with the readers below: whole numbers, numbers, booleans, strings, a choice
(:func:`one_of`), a size (:func:`as_size`), a time (:func:`as_duration`) and a file
(:func:`as_path`); they sit at the bottom of the layers (docs/architecture.md) so that all can.
"""

from __future__ import annotations

import difflib
import inspect
import math
import re
import types
import typing
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from djsb.errors import ConfigError
from djsb.machine import too_many


@dataclass(frozen=True)
class Located:
    """A YAML value with where it was written: ``value`` is a scalar, a list or a dict of Located."""

    value: Any
    line: int
    key: str
    source: str

    def error(self, message: str) -> ConfigError:
        return ConfigError(message, source=self.source, line=self.line, key=self.key or "(top level)")

    def is_mapping(self) -> bool:
        return isinstance(self.value, dict)

    def mapping(self) -> dict[str, Located]:
        if not isinstance(self.value, dict):
            raise self.error(f"expected a mapping of keys, got {describe(self.value)}")
        return self.value

    def get(self, name: str) -> Located | None:
        return self.mapping().get(name)

    def items(self) -> Iterator[tuple[str, Located]]:
        return iter(self.mapping().items())

    def check_keys(self, allowed: set[str] | frozenset[str]) -> None:
        """Reject keys the schema does not know: a typo must not be silently ignored."""
        for name, child in self.mapping().items():
            if name not in allowed:
                raise child.error(unknown_key(name, allowed))

    def plain(self) -> Any:
        """The value with the line information stripped."""
        if isinstance(self.value, dict):
            return {k: v.plain() for k, v in self.value.items()}
        if isinstance(self.value, list):
            return [v.plain() for v in self.value]
        return self.value


def unknown_key(name: str, allowed: Iterable[str]) -> str:
    """The message for a key the schema does not know: the closest known key when one is near
    (a misspelling), else every known key."""
    known = sorted(allowed)
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
    if close:
        return f"unknown key: did you mean {close[0]!r}?"
    return f"unknown key (known keys here: {', '.join(known)})"


def check_arguments(node: Located, function: Callable[..., Any], given: Iterable[str]) -> None:
    """Keys of ``node`` that will be passed to ``function`` as keyword arguments, checked against
    its parameters first, so a misspelt one gets :func:`unknown_key`'s message at its line instead
    of Python's TypeError, and each value against its parameter's annotation (:func:`check_type`),
    so a word where a number belongs is refused at its line and not by the function's arithmetic."""
    parameters = inspect.signature(function).parameters
    hints = typing.get_type_hints(function)
    for name in given:
        if name not in parameters:
            raise (node.get(name) or node).error(unknown_key(name, parameters))
        child = node.get(name)
        if child is not None and name in hints:
            check_type(child, hints[name])


_SCALAR_TYPES: dict[type, tuple[str, Callable[[Any], bool]]] = {
    bool: ("true or false", lambda v: isinstance(v, bool)),
    int: ("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    float: ("a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
    str: ("a string", lambda v: isinstance(v, str)),
    type(None): ("nothing (null)", lambda v: v is None),
}
"""The scalar annotations :func:`check_type` checks: what a value of each is called, and the test."""


def check_type(node: Located, annotation: Any) -> None:
    """``node``'s value is of the scalar type ``annotation`` names (bool, int, float, str, or a
    union of them with None); any other annotation is left to the function that takes the value."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    options = typing.get_args(annotation) if union else (annotation,)
    if not all(option in _SCALAR_TYPES for option in options):
        return
    if not any(_SCALAR_TYPES[option][1](node.value) for option in options):
        names = " or ".join(_SCALAR_TYPES[option][0] for option in options)
        raise node.error(f"expected {names}, got {describe(node.value)}")


DESCRIBED_CHARACTERS = 60
"""How much of a long string an error message quotes (a CSV read as YAML is one string of the
whole file, which a one-line message must not repeat)."""


def describe(value: Any) -> str:
    """A short human description of a YAML value's type, for error messages."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    if isinstance(value, str) and len(value) > DESCRIBED_CHARACTERS:
        return f"str of {len(value)} characters {value[:DESCRIBED_CHARACTERS]!r}..."
    return f"{type(value).__name__} {value!r}"


def _child_key(parent: str, name: str) -> str:
    return f"{parent}.{name}" if parent else name


def _scalar(node: yaml.Node) -> Any:
    """The Python value of a composed scalar (an empty value, ``key:`` alone, is None)."""
    return yaml.constructor.SafeConstructor().construct_object(node, deep=True)


def _convert(node: yaml.Node, key: str, source: str, line: int | None = None) -> Located:
    """Convert a composed node; a mapping's value takes its key's line, where a user looks for it."""
    line = node.start_mark.line + 1 if line is None else line
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Located] = {}
        for key_node, value_node in node.value:
            name = str(_scalar(key_node))
            if name in out:
                raise ConfigError("duplicate key", source=source, line=key_node.start_mark.line + 1,
                                  key=_child_key(key, name))
            out[name] = _convert(value_node, _child_key(key, name), source, key_node.start_mark.line + 1)
        return Located(out, line, key, source)
    if isinstance(node, yaml.SequenceNode):
        items = [_convert(item, f"{key}[{i}]", source) for i, item in enumerate(node.value)]
        return Located(items, line, key, source)
    return Located(_scalar(node), line, key, source)


ALIAS_VALUES = 100_000
"""How many entries (keys, values, items) aliases (``*name``) may add to a document beyond those
written in it: enough to share a few blocks of a config many times, and a bound on "billion laughs"
documents, whose few lines of nested aliases expand to billions of values."""


def _children(node: yaml.Node) -> list[yaml.Node]:
    """A composed node's keys and values (a mapping's), items (a sequence's) or nothing (a scalar)."""
    if isinstance(node, yaml.MappingNode):
        return [item for pair in node.value for item in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _expanded_sizes(root: yaml.Node, source: str) -> dict[int, int]:
    """The number of entries under each node of a composed document (by ``id``) with its aliases
    expanded, computed once per node written, so an alias bomb is measured without being built.
    A value that contains an alias of itself (it would never end) is a ConfigError."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    pending: list[tuple[yaml.Node, bool]] = [(root, False)]
    while pending:
        node, children_done = pending.pop()
        if children_done:
            open_nodes.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes[id(child)] for child in _children(node))
            continue
        if id(node) in sizes:
            continue
        if id(node) in open_nodes:
            raise ConfigError("an alias refers to a value that contains it (it would never end)",
                              source=source, line=node.start_mark.line + 1)
        open_nodes.add(id(node))
        pending.append((node, True))
        pending.extend((child, False) for child in _children(node) if id(child) not in sizes)
    return sizes


def _named_values(node: yaml.Node) -> list[tuple[str, yaml.Node, int]]:
    """A composed node's values with their key (``name``, or ``[i]`` in a sequence) and line; a
    key that is not a scalar is named ``(key)``, never constructed (it may be an alias bomb)."""
    if isinstance(node, yaml.MappingNode):
        return [(str(k.value) if isinstance(k, yaml.ScalarNode) else "(key)", v, k.start_mark.line + 1)
                for k, v in node.value]
    if isinstance(node, yaml.SequenceNode):
        return [(f"[{i}]", v, v.start_mark.line + 1) for i, v in enumerate(node.value)]
    return []


def _check_aliases(root: yaml.Node, source: str) -> None:
    """Refuse a document whose aliases expand it by more than :data:`ALIAS_VALUES` entries, naming
    the innermost value that alone goes beyond the bound (where the aliases pile up)."""
    sizes = _expanded_sizes(root, source)
    written = len(sizes)
    if sizes[id(root)] - written <= ALIAS_VALUES:
        return
    node, line, key = root, 1, ""
    while True:
        big = [(name, child, at) for name, child, at in _named_values(node)
               if sizes[id(child)] > ALIAS_VALUES]
        if not big:
            break
        name, node, line = big[0]
        key = f"{key}{name}" if name.startswith("[") else _child_key(key, name)
    raise ConfigError(f"aliases expand this value to {sizes[id(node)]} entries (the file writes {written}); "
                      f"at most {ALIAS_VALUES} may come from aliases", source=source, line=line,
                      key=key or "(top level)")


def load_yaml(path: Path) -> Located:
    """Parse ``path`` into a located tree; unreadable or malformed YAML is a ConfigError."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the file ({exc.strerror})", source=source) from exc
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[:exc.start].count(b"\n") + 1
        raise ConfigError(f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}): "
                          "save the file as UTF-8", source=source, line=line) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"invalid YAML: {problem}", source=source,
                          line=mark.line + 1 if mark else None) from exc
    if node is None:
        raise ConfigError("the file is empty", source=source)
    _check_aliases(node, source)
    return _convert(node, "", source, 1)


def as_int(node: Located, minimum: int = 0) -> int:
    """A whole number >= ``minimum`` (a YAML boolean is not a number)."""
    if isinstance(node.value, bool) or not isinstance(node.value, int):
        raise node.error(f"expected a whole number >= {minimum}, got {describe(node.value)}")
    if node.value < minimum:
        raise node.error(f"must be >= {minimum}, got {node.value}")
    return node.value


def check_count(node: Located, count: int, each_bytes: int, what: str) -> None:
    """Refuse ``count`` items of ``what`` (written at ``node``, or derived from it) when, at
    ``each_bytes`` each, they are more than this machine lets one command hold (djsb.machine)."""
    problem = too_many(count, each_bytes, what)
    if problem is not None:
        raise node.error(problem)


def as_count(node: Located, minimum: int, *, each_bytes: int, what: str) -> int:
    """A whole number >= ``minimum`` of things that each take ``each_bytes`` of memory once made
    (nodes, jobs, cells), bounded by what the machine can hold (:func:`check_count`)."""
    count = as_int(node, minimum)
    check_count(node, count, each_bytes, what)
    return count


def as_number(node: Located, minimum: float = 0.0, strict: bool = False) -> float:
    """A finite number >= ``minimum`` (> with ``strict``)."""
    value = node.value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise node.error(f"expected a number, got {describe(value)}")
    if value < minimum or (strict and value == minimum) or math.isinf(value):
        bound = f"> {minimum:g}" if strict else f">= {minimum:g}"
        raise node.error(f"must be a finite number {bound}, got {value}")
    return float(value)


def as_bool(node: Located) -> bool:
    """true or false, nothing else (YAML's yes/no are not accepted by the safe loader anyway)."""
    if not isinstance(node.value, bool):
        raise node.error(f"expected true or false, got {describe(node.value)}")
    return node.value


def as_str(node: Located) -> str:
    """A non-empty string, stripped."""
    if not isinstance(node.value, str) or not node.value.strip():
        raise node.error(f"expected a non-empty string, got {describe(node.value)}")
    return node.value.strip()


def read_fields(node: Located, schema: dict[str, Callable[[Located], Any]],
                required: tuple[str, ...] = ()) -> dict[str, Any]:
    """Each known key of a mapping read by its schema function; unknown or missing keys are errors."""
    node.check_keys(frozenset(schema))
    for name in required:
        if node.get(name) is None:
            raise node.error(f"missing key {name!r}")
    return {name: schema[name](child) for name, child in node.items()}


def one_of(*choices: Any) -> Callable[[Located], Any]:
    """A reader accepting exactly one of ``choices``: strings (matched after stripping white space)
    or YAML booleans; the error lists them."""
    def read(node: Located) -> Any:
        value = node.value.strip() if isinstance(node.value, str) else node.value
        for choice in choices:
            if value is choice or (isinstance(choice, str) and value == choice):
                return choice
        shown = ", ".join(str(c).lower() if isinstance(c, bool) else str(c) for c in choices)
        got = repr(node.value) if isinstance(node.value, str) else describe(node.value)
        raise node.error(f"expected one of {shown}, got {got}")
    return read


# K/M/G/T are powers of 1024 as in Slurm's --mem (and djsb-stream's --memory); KB/MB/GB/TB powers of 1000.
_SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4,
               "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
               "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4}
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(text: str | int | float) -> int:
    """Bytes in a size such as 4GiB, 50MiB, 1.5G (= 1.5 GiB, as Slurm reads it), 2GB or 1024 (bytes).

    Raises ValueError with the accepted units when the text is not a size.
    """
    if isinstance(text, bool):
        raise ValueError("expected a size such as 4GiB or 50MiB, got a boolean")
    if isinstance(text, (int, float)):
        if text <= 0:
            raise ValueError("a size must be positive")
        return int(text)
    match = _SIZE_RE.match(str(text))
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _SIZE_UNITS:
        raise ValueError(f"expected a size such as 4GiB, 50MiB, 512M or 1024 (bytes), got {text!r}")
    value = float(match.group(1)) * _SIZE_UNITS[unit]
    if value < 1:
        raise ValueError("a size must be at least one byte")
    return int(value)


def as_size(node: Located) -> int:
    """A size in bytes (:func:`parse_size`)."""
    try:
        return parse_size(node.value)
    except ValueError as exc:
        raise node.error(str(exc)) from None


TimeUnit = Literal["s", "min", "h", "day"]
"""The unit a key gives a bare number of time in (its documentation says which)."""
TIME_UNITS: dict[str, tuple[float, str]] = {
    "s": (1.0, "seconds"), "min": (60.0, "minutes"), "h": (3600.0, "hours"), "day": (86400.0, "days")}
UNLIMITED = math.inf
"""A time read as ``UNLIMITED`` or ``INFINITE``, where the key accepts no limit: later than any time."""
_NO_LIMIT_WORDS = frozenset({"unlimited", "infinite"})

# sbatch(1) --time's forms with a separator: "minutes:seconds", "hours:minutes:seconds", "days-hours",
# "days-hours:minutes" and "days-hours:minutes:seconds", each with the seconds every field stands for.
# Seconds may have a fraction, as sacct prints them (10:00.250).
_WHOLE, _SECONDS = r"(\d+)", r"(\d+(?:\.\d+)?)"
_SLURM_TIMES: tuple[tuple[re.Pattern[str], tuple[int, ...]], ...] = (
    (re.compile(f"{_WHOLE}:{_SECONDS}"), (60, 1)),
    (re.compile(f"{_WHOLE}:{_WHOLE}:{_SECONDS}"), (3600, 60, 1)),
    (re.compile(f"{_WHOLE}-{_WHOLE}"), (86400, 3600)),
    (re.compile(f"{_WHOLE}-{_WHOLE}:{_WHOLE}"), (86400, 3600, 60)),
    (re.compile(f"{_WHOLE}-{_WHOLE}:{_WHOLE}:{_SECONDS}"), (86400, 3600, 60, 1)),
)
_BARE_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _grammar(unit: TimeUnit, unlimited: bool) -> str:
    """What a key of ``unit`` accepts, for its error messages."""
    words = ", or UNLIMITED" if unlimited else ""
    return (f"a number of {TIME_UNITS[unit][1]} (quoted or not), or a Slurm time MM:SS, HH:MM:SS, D-HH, "
            f"D-HH:MM or D-HH:MM:SS{words}")


def _seconds(value: str | float, unit: TimeUnit) -> float | None:
    """Seconds in a number of ``unit`` (quoted or not) or in one of Slurm's forms; None if neither."""
    if not isinstance(value, str):
        return float(value) * TIME_UNITS[unit][0]
    text = value.strip()
    if _BARE_NUMBER.fullmatch(text):
        return float(text) * TIME_UNITS[unit][0]
    for form, scales in _SLURM_TIMES:
        match = form.fullmatch(text)
        if match:
            return float(sum(float(part) * scale for part, scale in zip(match.groups(), scales, strict=True)))
    return None


def parse_duration(value: str | float, unit: TimeUnit, *, unlimited: bool = False) -> float:
    """Seconds in a time as Slurm users write one: a bare number (an int, a float or the same quoted)
    in ``unit``, or one of sbatch --time's forms with ``:`` or ``-`` (``5:30`` is 330 s,
    ``1-02:03:04`` is 93784 s). ``UNLIMITED`` / ``INFINITE`` (any case) are :data:`UNLIMITED` when
    ``unlimited``, else refused. sbatch reads a bare number as minutes; here it is the key's unit,
    so that ``90`` and ``"90"`` always mean the same. Raises ValueError naming the grammar."""
    expected = _grammar(unit, unlimited)
    got = repr(value) if isinstance(value, str) else describe(value)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"expected {expected}, got {got}")
    if isinstance(value, str) and value.strip().lower() in _NO_LIMIT_WORDS:
        if unlimited:
            return UNLIMITED
        raise ValueError(f"no limit ({value.strip()}) is not accepted here: expected {expected}")
    try:
        seconds = _seconds(value, unit)
    except OverflowError:  # a whole number too large for a float
        seconds = None
    if seconds is None or not math.isfinite(seconds):
        raise ValueError(f"expected {expected}, got {got}")
    return seconds


def as_duration(node: Located, *, unit: TimeUnit, minimum: float = 0.0, strict: bool = False,
                unlimited: bool = False) -> float:
    """A time in seconds >= ``minimum`` seconds (> with ``strict``), read by :func:`parse_duration`
    with the key's ``unit``; :data:`UNLIMITED` only where the key accepts no limit (``unlimited``)."""
    try:
        seconds = parse_duration(node.value, unit, unlimited=unlimited)
    except ValueError as exc:
        raise node.error(str(exc)) from None
    if seconds != UNLIMITED and (seconds < minimum or (strict and seconds == minimum)):
        bound = f"> {minimum:g}" if strict else f">= {minimum:g}"
        raise node.error(f"must be a time {bound} s, got {node.value!r} ({seconds:g} s)")
    return seconds


def as_time_limit(node: Located, *, unit: TimeUnit, minimum: float = 0.0,
                  strict: bool = False) -> float | None:
    """A time limit (a partition's MaxTime, a job's --time) in seconds, or None for ``UNLIMITED`` /
    ``INFINITE``: no limit, as the model's specs hold it."""
    seconds = as_duration(node, unit=unit, minimum=minimum, strict=strict, unlimited=True)
    return None if seconds == UNLIMITED else seconds


def as_path(node: Located, base: Path) -> Path:
    """An existing file: absolute, or relative to ``base`` (the config file's directory)."""
    path = Path(as_str(node))
    path = path if path.is_absolute() else base / path
    if not path.exists():
        raise node.error(f"file not found: {path}")
    return path
