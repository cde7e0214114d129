"""Priority plugins and policy presets by name: ``policy.priority.plugin`` and ``policy.preset``
of ``djsb simulate``.

Each plugin file registers a *reader* of its ``policy.priority`` section: given the section (a
located YAML mapping, see djsb/yamlnodes.py) and the plugin of the preset it refines (None
without a preset, or when the preset uses another plugin), it returns the configured plugin, and a
bad key is reported with its file, line and key path. A preset registers a function returning a
fresh (priority plugin, scheduler options) pair. A new plugin or preset is one decorated function
in a file of this package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from djsb.model.priority.base import PriorityPlugin
from djsb.model.scheduler import SchedulerConfig
from djsb.registry import Registry
from djsb.yamlnodes import Located, as_str, read_fields

PriorityReader = Callable[[Located, "PriorityPlugin | None"], PriorityPlugin]
Preset = Callable[[], tuple[PriorityPlugin, SchedulerConfig]]

PRIORITY_PLUGINS: Registry[PriorityReader] = Registry("priority plugin", "djsb.model.priority")
PRESETS: Registry[Preset] = Registry("preset", "djsb.model.priority")


def plugin_options(node: Located, schema: dict[str, Callable[[Located], Any]]) -> dict[str, Any]:
    """A plugin's options from its section: the ``plugin`` key plus the plugin's own ``schema``."""
    options = read_fields(node, {"plugin": as_str, **schema})
    options.pop("plugin", None)
    return options
