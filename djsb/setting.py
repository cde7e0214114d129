"""One declaration per config setting: a dataclass field's reader, unit, Slurm name and doc.

A field declared with :func:`setting` carries how a config writes it (:class:`Setting`); its
default is the field's own. The config readers take each key's reader from here
(:func:`readers`), so a bad value is an error at the key's own line, and the reference pages in
docs/reference/ are generated from the same declarations (:func:`table`), so the documentation
cannot drift from what is read. It sits below the model and the workload readers, so that both
declare their keys through it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from djsb.yamlnodes import Located, read_fields

T = TypeVar("T")


SCHEDULER_PARAMETERS = "SchedulerParameters"


@dataclass(frozen=True)
class SlurmKey:
    """One key of Slurm's configuration as slurm.conf and ``scontrol show config`` write it:
    ``name``, or an option of the key ``within`` (``SchedulerParameters``: ``name=value``, or
    ``name`` alone when it is a ``flag``); ``default``, Slurm's own value when the key is left out
    as Slurm prints it (None: left out, the model's default stands); ``parse``, from Slurm's text
    to a value (ValueError saying what is wrong with the text)."""

    name: str
    parse: Callable[[str], Any]
    default: str | None = None
    within: str = ""
    flag: bool = False


@dataclass(frozen=True)
class SlurmName:
    """How Slurm writes one model setting, so that a site's slurm.conf is read through the
    declarations: its ``keys`` and, for a setting made of several keys, ``combine`` (their parsed
    values, in order, to the model's value; by default the one key's value). ``label`` is how the
    reference pages name it (by default the key, ``SchedulerParameters`` options by their own name)."""

    keys: tuple[SlurmKey, ...]
    combine: Callable[..., Any] | None = None
    label: str = ""

    def __str__(self) -> str:
        return self.label or " + ".join(key.name for key in self.keys)


def slurm_key(name: str, parse: Callable[[str], Any], default: str | None = None,
              label: str = "") -> SlurmName:
    """A setting written as one slurm.conf key ``name``."""
    return SlurmName((SlurmKey(name, parse, default),), label=label)


def scheduler_parameter(name: str, parse: Callable[[str], Any], *, flag: bool = False,
                        label: str = "") -> SlurmName:
    """A setting written as the ``SchedulerParameters`` option ``name`` (Slurm's default when left out
    is the model's default, which the declaration gives)."""
    return SlurmName((SlurmKey(name, parse, within=SCHEDULER_PARAMETERS, flag=flag),), label=label)


@dataclass(frozen=True)
class Setting:
    """How one model setting is written in a config and documented: its reader (which checks
    its type, range and choices at the key's own line), its unit, the Slurm setting it mirrors
    (a :class:`SlurmName` when a site's slurm.conf gives it and the model reads it from there; text
    naming where else Slurm keeps it; empty: the model's own) and one line of documentation. The
    default is the field's."""

    read: Callable[[Located], Any]
    unit: str
    slurm: SlurmName | str
    doc: str
    where: str = "policy.scheduler"
    """The config key that sets it, when it is not its section's key of the field's name."""


def setting(default: Any, read: Callable[[Located], Any], unit: str, slurm: SlurmName | str, doc: str,
            where: str = "policy.scheduler") -> Any:
    """A field with its :class:`Setting`: one declaration per option (``default``
    :data:`dataclasses.MISSING`: a key the config must give)."""
    return field(default=default, metadata={"setting": Setting(read, unit, slurm, doc, where)})


def declared(cls: type) -> dict[str, Setting]:
    """Each declared field of dataclass ``cls``, by key."""
    return {f.name: f.metadata["setting"] for f in fields(cls) if "setting" in f.metadata}


def slurm_names(cls: type) -> dict[str, SlurmName]:
    """The declared fields of dataclass ``cls`` that a site's slurm.conf gives, by key."""
    return {name: item.slurm for name, item in declared(cls).items() if isinstance(item.slurm, SlurmName)}


def readers(cls: type) -> dict[str, Callable[[Located], Any]]:
    """The reader of each declared field of ``cls``, by key (a section's schema)."""
    return {name: s.read for name, s in declared(cls).items()}


def required(cls: type) -> tuple[str, ...]:
    """The declared fields of ``cls`` without a default: keys a config must give."""
    return tuple(f.name for f in fields(cls) if "setting" in f.metadata and f.default is dataclasses.MISSING)


def read_record(node: Located, cls: type[T]) -> T:
    """A ``cls`` from the mapping ``node``: each key read by its declared reader, the keys without
    a default required, unknown keys refused, the others left at their defaults."""
    return cls(**read_fields(node, readers(cls), required(cls)))


def values(record: Any) -> dict[str, Any]:
    """The fields of the dataclass instance ``record`` by name, as they are (:func:`dataclasses.asdict`
    would turn nested records into dicts): the keyword arguments of what the record configures."""
    return {f.name: getattr(record, f.name) for f in fields(record)}


def record_of(cls: type[T], configured: Any) -> T:
    """The ``cls`` record of an object built from one: its attributes named as ``cls``'s fields."""
    return cls(**{f.name: getattr(configured, f.name) for f in fields(cls)})  # type: ignore[arg-type]


def default_text(value: Any) -> str:
    """A default as the reference shows it (a nested record: its own table's defaults)."""
    if value is dataclasses.MISSING:
        return "required"
    if dataclasses.is_dataclass(value):
        return "below"
    if value == math.inf:
        return "unlimited"
    if value is None or value == ():
        return "none"
    return str(value).lower() if isinstance(value, bool) else str(value)


def table(cls: type) -> list[str]:
    """The Markdown table of the declared fields of ``cls``: key, default, unit, Slurm name, doc."""
    rows = ["| key | default | unit | Slurm | what |", "|---|---|---|---|---|"]
    for f in fields(cls):
        if "setting" in f.metadata:
            item = f.metadata["setting"]
            default = default_text(f.default)
            rows.append(f"| `{f.name}` | {default} | {item.unit} | {item.slurm} | {item.doc} |")
    return rows
