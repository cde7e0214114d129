"""Priority plugins and policy presets by name: ``policy.priority.plugin`` and ``policy.preset``
of ``djsb simulate``.

Each plugin file registers a *reader* of its ``policy.priority`` section: given the section (a
located YAML mapping, see djsb/yamlnodes.py) and the plugin of the preset it refines (None
without a preset, or when the preset uses another plugin), it returns the configured plugin. A
plugin's options are a record whose fields are declared with :func:`djsb.setting.setting`
(read by :func:`plugin_options`, documented in docs/reference/priority.md by
djsb/model/priority/reference.py), so a bad key is reported with its file, line and key path.
A preset registers a function returning a fresh (priority plugin, scheduler options) pair. A new
plugin or preset is one decorated function in a file of this package.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from djsb.model.priority.base import PriorityPlugin
from djsb.model.scheduler import SchedulerConfig
from djsb.registry import Registry
from djsb.setting import readers
from djsb.yamlnodes import Located, as_str, read_fields

T = TypeVar("T")

PriorityReader = Callable[[Located, "PriorityPlugin | None"], PriorityPlugin]
Preset = Callable[[], tuple[PriorityPlugin, SchedulerConfig]]

PRIORITY_PLUGINS: Registry[PriorityReader] = Registry("priority plugin", "djsb.model.priority")
PRESETS: Registry[Preset] = Registry("preset", "djsb.model.priority")


@dataclass(frozen=True)
class NoOptions:
    """The options of a plugin that has none: its section holds ``plugin`` alone."""


def plugin_options(node: Located, start: T) -> T:
    """A plugin's options from its section: the record ``start`` with each key the section gives
    read by its declared reader (an unknown key is an error at its line); ``plugin`` names the
    plugin (djsb/model/sections.py read_priority)."""
    given = read_fields(node, {"plugin": as_str, **readers(type(start))})
    given.pop("plugin", None)
    return dataclasses.replace(start, **given)  # type: ignore[type-var]
